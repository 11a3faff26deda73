// Value inputs in the plan (plan.h: valueInputNames, addInputValues, InputShape::value): which
// graph inputs a plan is made for the data of, that the lowering reads that data as it reads a
// constant's (folding the shape arithmetic on it, the kernel check seeing it), and that the
// plan's signature tells values apart.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "model_feeds.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/runtime/plan.h"
#include "onnxopt/runtime/plan_cache.h"

namespace onnxopt::runtime {
namespace {

std::string int64Bytes(const std::vector<int64_t>& values) {
  std::string bytes(values.size() * sizeof(int64_t), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    std::memcpy(bytes.data() + i * sizeof(int64_t), &values[i], sizeof(int64_t));
  }
  return bytes;
}

// Slice's starts computed from input s; Resize's scales an input; i only indexes (Gather), w is
// data, n is read only for its dims (Shape) and m only as Reduce data.
constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 19]>
g (float[4,6] x, int64[2] s, float[4] scales, int64[2] i, float[2,2] w, int64[3] n, int64[2] m)
    => (float y, float z, float[2,6] gathered, float[2,2] ww, int64[1] dims, int64 total)
    <int64[2] one = {1, 1}, int64[2] ends = {4, 6}> {
  starts = Add(s, one)
  y = Slice(x, starts, ends)
  x4 = Unsqueeze(x, one)
  z = Resize<mode = "nearest">(x4, , scales)
  gathered = Gather(x, i)
  ww = Relu(w)
  dims = Shape(n)
  total = ReduceSum<keepdims = 0>(m)
}
)";

TEST(ValueInputs, AreTheInputsValueOperandsRead) {
  auto model = test::parseInferred(kModel);
  ASSERT_TRUE(model);
  EXPECT_EQ(valueInputNames(*model, kernels::cudaCapabilities()),
            (std::set<std::string>{"s", "scales"}));
  // A library without value operands reads none.
  EXPECT_TRUE(valueInputNames(*model, kernels::referenceCapabilities()).empty());
}

TEST(ValueInputs, SmallFeedsGiveTheirData) {
  InputShapes shapes = {{"s", {DataType::kInt64, {2}}},
                        {"big", {DataType::kInt64, {65}}},
                        {"x", {DataType::kFloat, {2}}}};
  Feeds feeds = {{"s", kernels::HostTensor::zeros(DataType::kInt64, {2})},
                 {"big", kernels::HostTensor::zeros(DataType::kInt64, {65})},
                 {"x", kernels::HostTensor::zeros(DataType::kFloat, {2})}};
  feeds["s"].set<int64_t>(1, 7);
  addInputValues(shapes, feeds, {"s", "big"}, 64);
  EXPECT_EQ(shapes["s"].value, int64Bytes({0, 7}));
  EXPECT_FALSE(shapes["big"].value) << "more than 64 elements: keyed by shape";
  EXPECT_FALSE(shapes["x"].value) << "not a value input";
}

TEST(ValueInputs, SignatureTellsValuesApart) {
  InputShapes a = {{"k", {DataType::kInt64, {1}, int64Bytes({2})}}};
  InputShapes b = {{"k", {DataType::kInt64, {1}, int64Bytes({3})}}};
  InputShapes shape_only = {{"k", {DataType::kInt64, {1}}}};
  EXPECT_EQ(inputSignature(a), "k:int64[1]=0200000000000000;");
  EXPECT_NE(inputSignature(a), inputSignature(b));
  EXPECT_NE(inputSignature(a), inputSignature(shape_only));
  EXPECT_EQ(inputSignature(shape_only), "k:int64[1];");
}

/// The plan of kModel's Slice part on the CUDA capabilities, `s` given `value` (or none); the
/// kernel check records whether Slice's starts were known to it.
StatusOr<Plan> slicePlan(const ir::Model& model, std::optional<std::string> value,
                         bool* starts_known) {
  InputShapes shapes = {
      {"x", {DataType::kFloat, {4, 6}}},   {"s", {DataType::kInt64, {2}, std::move(value)}},
      {"scales", {DataType::kFloat, {4}}}, {"i", {DataType::kInt64, {2}}},
      {"w", {DataType::kFloat, {2, 2}}},   {"n", {DataType::kInt64, {3}}},
      {"m", {DataType::kInt64, {2}}}};
  PlanOptions options;
  options.check_node = [starts_known](const Plan& plan, const PlannedNode& pn) {
    if (pn.op == "Slice") {
      const PlannedValue& starts = plan.values[static_cast<size_t>(pn.inputs[1])];
      *starts_known = starts.knownWhenPlanning() && starts.host_value.has_value();
    }
    return kernels::Support::yes();
  };
  return buildPlan(model, shapes, kernels::cudaCapabilities(), options);
}

const PlannedNode& nodeOf(const Plan& plan, const std::string& op) {
  for (const PlannedNode& pn : plan.nodes) {
    if (pn.op == op) return pn;
  }
  ADD_FAILURE() << "no " << op;
  return plan.nodes.front();
}

TEST(ValueInputs, PlanReadsTheirDataAsConstants) {
  auto model = test::parseInferred(kModel);
  ASSERT_TRUE(model);
  bool starts_known = false;
  auto plan = slicePlan(*model, int64Bytes({1, 2}), &starts_known);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_TRUE(nodeOf(*plan, "Add").folded) << plan->summary();
  const PlannedNode& slice = nodeOf(*plan, "Slice");
  EXPECT_EQ(slice.placement, Placement::kDevice);
  EXPECT_FALSE(slice.dynamic);
  EXPECT_EQ(plan->values[static_cast<size_t>(slice.outputs[0])].dims, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(starts_known);
  EXPECT_NE(plan->summary().find("value input: 's' (planned for its data)\n"), std::string::npos)
      << plan->summary();

  // Keyed by shape alone, the starts are a run-time value: the Slice's dims are not known.
  starts_known = false;
  auto by_shape = slicePlan(*model, std::nullopt, &starts_known);
  ASSERT_TRUE(by_shape.isOk()) << by_shape.status().toString();
  EXPECT_FALSE(nodeOf(*by_shape, "Add").folded);
  EXPECT_TRUE(nodeOf(*by_shape, "Slice").dynamic);
  EXPECT_EQ(by_shape->summary().find("value input:"), std::string::npos) << by_shape->summary();
}

TEST(ValueInputs, DataOfAnotherSizeIsRefused) {
  auto model = test::parseInferred(kModel);
  ASSERT_TRUE(model);
  bool starts_known = false;
  auto plan = slicePlan(*model, int64Bytes({1}), &starts_known);
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("input 's': 8 bytes of data given for int64[2]"),
            std::string::npos)
      << plan.status().toString();
}

}  // namespace
}  // namespace onnxopt::runtime
