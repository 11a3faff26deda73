// Value inputs on the CUDA executor (plan.h: valueInputNames, InputShape::value): a graph input
// that a node reads as a value operand (Resize's scales, Slice's starts, Pad's pads, ReduceSum's
// axes) is planned for its data, so that the node runs on the device as the CUDA kernels check it
// (fake_device.h: checkAsTheCudaKernels), with the reference's answer; a new value plans again and
// the same value reuses its plan.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fake_device.h"
#include "model_feeds.h"
#include "onnxopt/ir/builder.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/plan.h"
#include "test_models.h"

namespace onnxopt::runtime {
namespace {

kernels::HostTensor int64s(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  kernels::HostTensor t = kernels::HostTensor::zeros(DataType::kInt64, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) t.set<int64_t>(static_cast<int64_t>(i), values[i]);
  return t;
}

/// An executor on a fake device that refuses what the CUDA kernels refuse.
struct CheckedSession {
  std::shared_ptr<test::FakeDeviceLog> log = std::make_shared<test::FakeDeviceLog>();
  std::unique_ptr<CudaExecutor> executor;

  explicit CheckedSession(const ir::Model& model) {
    auto device = std::make_unique<test::FakeDevice>(log);
    device->checkAsTheCudaKernels();
    auto created = CudaExecutor::createOn(model, CudaOptions{}, std::move(device));
    EXPECT_TRUE(created.isOk()) << created.status().toString();
    if (created.isOk()) executor = std::move(created).value();
  }
};

/// Whether the plan's node of `op` in the executor's last run ran on the device: placed there
/// with its dims known when planning (a dynamic node runs on the CPU).
bool ranOnDevice(const CudaExecutor& cuda, const std::string& op) {
  auto plan = cuda.lastPlan();
  EXPECT_TRUE(plan);
  if (plan) {
    for (const PlannedNode& pn : plan->nodes) {
      if (pn.op == op) return pn.placement == Placement::kDevice && !pn.dynamic;
    }
  }
  ADD_FAILURE() << "no " << op << " in the plan";
  return false;
}

/// Runs `model` on `x` with value input `name` at `first`, `second`, then `first` again: each on
/// the device and right, the second a new plan, the third the first's.
void expectPlannedPerValue(const std::string& text, const kernels::HostTensor& x,
                           const std::string& name, const kernels::HostTensor& first,
                           const kernels::HostTensor& second, const std::string& op) {
  if (!kernels::cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  auto model = test::parseInferred(text);
  ASSERT_TRUE(model);
  EXPECT_EQ(valueInputNames(*model, kernels::cudaCapabilities()), std::set<std::string>{name});
  CheckedSession session(*model);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  test::expectMatchesReference(cuda, *model, {{"x", x}, {name, first}});
  EXPECT_TRUE(ranOnDevice(cuda, op)) << cuda.lastSummary();
  EXPECT_EQ(cuda.planMisses(), 1);
  test::expectMatchesReference(cuda, *model, {{"x", x}, {name, second}});
  EXPECT_TRUE(ranOnDevice(cuda, op)) << cuda.lastSummary();
  EXPECT_EQ(cuda.planMisses(), 2);
  EXPECT_EQ(cuda.planHits(), 0);
  test::expectMatchesReference(cuda, *model, {{"x", x}, {name, first}});
  EXPECT_EQ(cuda.planMisses(), 2);
  EXPECT_EQ(cuda.planHits(), 1);
  EXPECT_GT(session.log->launches, 0);
  EXPECT_TRUE(session.log->errors.empty()) << session.log->errors.front();
}

TEST(CudaValueInputs, ResizeScalesInputRunsOnTheDevice) {
  expectPlannedPerValue(R"(
<ir_version: 8, opset_import: ["" : 19]>
g (float[1,1,2,3] x, float[4] scales) => (float y) {
  y = Resize<mode = "nearest">(x, , scales)
}
)",
                        test::ramp({1, 1, 2, 3}, 0.5f), "scales", test::floats({4}, {1, 1, 2, 2}),
                        test::floats({4}, {1, 1, 3, 0.5f}), "Resize");
}

TEST(CudaValueInputs, ResizeSizesInputRunsOnTheDevice) {
  expectPlannedPerValue(R"(
<ir_version: 8, opset_import: ["" : 19]>
g (float[1,1,2,3] x, int64[4] sizes) => (float y) {
  y = Resize<mode = "linear">(x, , , sizes)
}
)",
                        test::ramp({1, 1, 2, 3}, 0.5f), "sizes", int64s({4}, {1, 1, 4, 5}),
                        int64s({4}, {1, 1, 3, 2}), "Resize");
}

TEST(CudaValueInputs, SliceStartsInputRunsOnTheDevice) {
  // The starts reach Slice through host arithmetic (Add), folded in each plan.
  expectPlannedPerValue(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4,6] x, int64[2] s) => (float y) <int64[2] one = {1, 1}, int64[2] ends = {4, 6}> {
  starts = Add(s, one)
  y = Slice(x, starts, ends)
}
)",
                        test::ramp({4, 6}, 0.25f), "s", int64s({2}, {0, 1}), int64s({2}, {1, 3}),
                        "Slice");
}

TEST(CudaValueInputs, PadPadsInputRunsOnTheDevice) {
  expectPlannedPerValue(R"(
<ir_version: 8, opset_import: ["" : 19]>
g (float[2,3] x, int64[4] pads) => (float y) {
  y = Pad<mode = "reflect">(x, pads)
}
)",
                        test::ramp({2, 3}, 1.f), "pads", int64s({4}, {1, 0, 0, 2}),
                        int64s({4}, {0, 1, 1, 0}), "Pad");
}

TEST(CudaValueInputs, ReduceSumAxesInputRunsOnTheDevice) {
  // Axes that the output's dims do not tell apart: only their values place the node, and a plan
  // for one would sum the wrong axis for the other.
  expectPlannedPerValue(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[3,2,2] x, int64[1] axes) => (float[3,2] y) {
  y = ReduceSum<keepdims = 0>(x, axes)
}
)",
                        test::ramp({3, 2, 2}, 0.5f), "axes", int64s({1}, {1}), int64s({1}, {2}),
                        "ReduceSum");
}

// An input whose data no value operand reads (Gather's indices, the data itself) stays keyed by
// shape: new data reuses the plan.
TEST(CudaValueInputs, OtherInputsStayKeyedByShape) {
  auto model = test::parseInferred(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4,3] x, int64[2] i) => (float[2,3] y) {
  y = Gather(x, i)
}
)");
  ASSERT_TRUE(model);
  EXPECT_TRUE(valueInputNames(*model, kernels::cudaCapabilities()).empty());
  CheckedSession session(*model);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  test::expectMatchesReference(cuda, *model,
                               {{"x", test::ramp({4, 3}, 1.f)}, {"i", int64s({2}, {0, 3})}});
  test::expectMatchesReference(cuda, *model,
                               {{"x", test::ramp({4, 3}, 2.f)}, {"i", int64s({2}, {2, 1})}});
  EXPECT_EQ(cuda.planMisses(), 1);
  EXPECT_EQ(cuda.planHits(), 1);
}

// Kernels read small operands on the host (ReduceSum's axes), never a weight: a weight's host copy
// at each plan and binding made every new shape of a large model copy all of its weights. Here
// a 2 MiB MatMul weight is checked and prepared without its host data (and still runs right),
// while ReduceSum's constant axes come with theirs.
TEST(CudaValueInputs, WeightsAreNotCopiedToTheHostForTheKernels) {
  // w is given its 2 MiB below (the text holds a placeholder of one element).
  auto parsed = io::parseModelText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N,1024] x) => (float[N] y) <float[1] w = {0.0}, int64[1] a = {1}> {
  m = MatMul(x, w)
  y = ReduceSum <keepdims = 0> (m, a)
}
)");
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  std::unique_ptr<ir::Model> model = std::move(parsed).value();
  for (ir::Value* v : model->graph->initializers()) {
    if (v->name() != "w") continue;
    ir::Tensor w(DataType::kFloat, {1024, 512});
    std::string bytes(1024 * 512 * sizeof(float), '\0');
    for (size_t i = 0; i < 1024 * 512; ++i) {
      float f = static_cast<float>(i % 7) * 0.25F - 0.5F;
      std::memcpy(bytes.data() + i * sizeof(float), &f, sizeof(float));
    }
    w.setBytes(std::move(bytes));
    ir::Builder::setInitializer(v, std::move(w));
    ir::Builder::setType(v, ir::Type::tensor(DataType::kFloat, std::vector{ir::Dim::known(1024),
                                                                           ir::Dim::known(512)}));
  }
  ASSERT_TRUE(ir::inferShapes(*model).isOk());
  // A device that takes every node, so that the MatMul is checked and prepared.
  auto log = std::make_shared<test::FakeDeviceLog>();
  auto cuda =
      CudaExecutor::createOn(*model, CudaOptions{}, std::make_unique<test::FakeDevice>(log));
  ASSERT_TRUE(cuda.isOk()) << cuda.status().toString();
  test::expectMatchesReference(**cuda, *model, {{"x", test::ramp({3, 1024}, 0.5F)}});
  EXPECT_EQ((*cuda)->lastPlan()->countPlacement(Placement::kDevice), 2);
  EXPECT_GT(log->host_operands, 0);  // ReduceSum's axes
  EXPECT_LT(log->largest_host_operand, size_t{1024 * 512 * sizeof(float)});
  EXPECT_TRUE(log->errors.empty());
}

}  // namespace
}  // namespace onnxopt::runtime
