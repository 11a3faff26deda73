// The CUDA executor on a device (label gpu; "skipped: no CUDA device" without one): small graphs
// and the bundled models run on the GPU and compared with the reference executor at `opt check`'s
// tolerances (runtime::defaultTolerance), the arena poisoned before every run so that an unwritten
// output cannot pass; the plan cache missed and hit at two batch sizes; bad inputs refused.
#include <gtest/gtest.h>

#include "../kernels/cuda/device_harness.h"
#include "model_feeds.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/reference_executor.h"
#include "test_models.h"

namespace onnxopt::runtime {
namespace {

using kernels::test::CudaTest;
using test::expectMatchesReference;
using test::floats;
using test::kChain;
using test::kMixed;
using test::parse;
using test::parseInferred;
using test::ramp;

CudaOptions poisoned() {
  CudaOptions options;
  options.poison_byte = 0xA5;  // float 0xA5A5A5A5 is -2.9e-16: far from every expected value
  return options;
}

/// The executor for `model`, or nullptr (and a failure).
std::unique_ptr<CudaExecutor> executorFor(const ir::Model& model,
                                          const CudaOptions& options = poisoned()) {
  auto executor = CudaExecutor::create(model, options);
  EXPECT_TRUE(executor.isOk()) << executor.status().toString();
  return executor.isOk() ? std::move(executor).value() : nullptr;
}

TEST_F(CudaTest, MixedGraphMatchesReferenceAndReusesItsPlan) {
  auto model = parseInferred(kMixed);
  ASSERT_TRUE(model);
  auto executor = executorFor(*model);
  ASSERT_TRUE(executor);
  CudaExecutor& cuda = *executor;
  EXPECT_EQ(cuda.name(), "cuda");

  expectMatchesReference(cuda, *model, {{"x", ramp({2, 4}, 0.5f)}});
  EXPECT_EQ(cuda.planMisses(), 1);
  EXPECT_EQ(cuda.planHits(), 0);
  int64_t weights = cuda.uploadedWeightBytes();
  EXPECT_EQ(weights, test::kMixedWeightBytes) << cuda.lastSummary();
  ASSERT_TRUE(cuda.lastPlan());
  EXPECT_EQ(cuda.lastPlan()->countPlacement(Placement::kCpuFallback), 1) << cuda.lastSummary();
  EXPECT_NE(cuda.lastSummary().find("fallback: "), std::string::npos) << cuda.lastSummary();

  // The same shape again, other values: the same plan (a hit) and a right answer again.
  expectMatchesReference(cuda, *model, {{"x", ramp({2, 4}, -0.25f)}});
  EXPECT_EQ(cuda.planMisses(), 1);
  EXPECT_EQ(cuda.planHits(), 1);

  // Another batch: planned again; the weights are not uploaded twice.
  expectMatchesReference(cuda, *model, {{"x", ramp({5, 4}, 0.125f)}});
  EXPECT_EQ(cuda.planMisses(), 2);
  EXPECT_EQ(cuda.planHits(), 1);
  EXPECT_EQ(cuda.uploadedWeightBytes(), weights);

  // Back to the first: a hit, with the first plan's arena.
  expectMatchesReference(cuda, *model, {{"x", ramp({2, 4}, 1.f)}});
  EXPECT_EQ(cuda.planMisses(), 2);
  EXPECT_EQ(cuda.planHits(), 2);
}

TEST_F(CudaTest, InPlaceChainMatchesReference) {
  auto model = parseInferred(kChain);
  ASSERT_TRUE(model);
  auto executor = executorFor(*model);
  ASSERT_TRUE(executor);
  expectMatchesReference(*executor, *model, {{"x", ramp({3, 8}, 0.3f)}});
  EXPECT_EQ(executor->lastPlan()->countPlacement(Placement::kDevice), 4) << executor->lastSummary();
}

// All device steps: eager once, captured at the second run, replayed from then on; right with
// new values each time, and with the graph off too.
TEST_F(CudaTest, StaticPlanIsCapturedAndReplayed) {
  auto model = parseInferred(kChain);
  ASSERT_TRUE(model);
  auto executor = executorFor(*model);
  ASSERT_TRUE(executor);
  expectMatchesReference(*executor, *model, {{"x", ramp({3, 8}, 0.3f)}});
  expectMatchesReference(*executor, *model, {{"x", ramp({3, 8}, -0.6f)}});
  expectMatchesReference(*executor, *model, {{"x", ramp({3, 8}, 1.1f)}});
  EXPECT_EQ(executor->cudaGraphState(), "captured, replayed 2") << executor->lastSummary();
  CudaOptions eager = poisoned();
  eager.cuda_graphs = false;
  auto off = executorFor(*model, eager);
  ASSERT_TRUE(off);
  expectMatchesReference(*off, *model, {{"x", ramp({3, 8}, 0.3f)}});
  expectMatchesReference(*off, *model, {{"x", ramp({3, 8}, -0.6f)}});
  EXPECT_EQ(off->cudaGraphState(), "off");
}

// Run-time shapes: NonZero between device ops, and a Reshape to a target read from an input; the
// dynamic nodes run on the CPU, the rest on the GPU, one plan for every value.
TEST_F(CudaTest, DynamicShapesRun) {
  auto nonzero = parseInferred(test::kNonZero);
  ASSERT_TRUE(nonzero);
  auto a = executorFor(*nonzero);
  ASSERT_TRUE(a);
  expectMatchesReference(*a, *nonzero, {{"x", floats({6}, {1, -2, 3, 0, 5, -1})}});
  expectMatchesReference(*a, *nonzero, {{"x", floats({6}, {1, 2, 3, 4, 5, 6})}});
  expectMatchesReference(*a, *nonzero, {{"x", floats({6}, {-1, -2, -3, 0, 0, 0})}});
  EXPECT_EQ(a->planMisses(), 1);

  auto reshape = parseInferred(test::kRuntimeReshape);
  ASSERT_TRUE(reshape);
  auto b = executorFor(*reshape);
  ASSERT_TRUE(b);
  for (auto [d0, d1] : {std::pair<int64_t, int64_t>{2, 6}, {12, 1}, {-1, 3}}) {
    kernels::HostTensor k = kernels::HostTensor::zeros(DataType::kInt64, {2});
    k.set<int64_t>(0, d0);
    k.set<int64_t>(1, d1);
    expectMatchesReference(*b, *reshape, {{"x", ramp({3, 4}, 0.1f)}, {"k", k}});
  }
  EXPECT_EQ(b->planMisses(), 1);
}

// Subgraphs and non-tensor values on the CPU side of a GPU run: an If reading outer device
// values, a Loop with a run-time trip count, sequences and optionals between device ops.
TEST_F(CudaTest, ControlFlowAndSequencesRun) {
  auto if_model = parseInferred(test::kIf);
  ASSERT_TRUE(if_model);
  auto a = executorFor(*if_model);
  ASSERT_TRUE(a);
  expectMatchesReference(*a, *if_model,
                         {{"x", ramp({3, 4}, -0.5f)}, {"c", test::boolScalar(true)}});
  expectMatchesReference(*a, *if_model,
                         {{"x", ramp({3, 4}, -0.5f)}, {"c", test::boolScalar(false)}});

  auto loop = parseInferred(test::kLoop);
  ASSERT_TRUE(loop);
  auto b = executorFor(*loop);
  ASSERT_TRUE(b);
  for (int64_t n : {3, 0}) {
    expectMatchesReference(*b, *loop, {{"x", ramp({2, 4}, -0.3f)}, {"n", test::int64Scalar(n)}});
  }

  auto seq = parseInferred(test::kSequenceOptional);
  ASSERT_TRUE(seq);
  auto c = executorFor(*seq);
  ASSERT_TRUE(c);
  expectMatchesReference(*c, *seq, {{"x", ramp({2, 3}, -0.5f)}});
}

TEST_F(CudaTest, BadInputsAreRefusedBeforeAnythingRuns) {
  auto model = parseInferred(kMixed);
  ASSERT_TRUE(model);
  auto executor = executorFor(*model);
  ASSERT_TRUE(executor);
  CudaExecutor& cuda = *executor;
  auto expectRefused = [&](const Feeds& feeds, const std::string& text) {
    auto result = cuda.run(feeds);
    ASSERT_FALSE(result.isOk());
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find(text), std::string::npos)
        << result.status().toString();
  };
  expectRefused({}, "input 'x' is missing");
  expectRefused({{"x", ramp({2, 4}, 1.f)}, {"q", ramp({2}, 1.f)}}, "'q' is not an input");
  expectRefused({{"x", kernels::HostTensor::zeros(DataType::kInt64, {2, 4})}},
                "input 'x' is float");
  expectRefused({{"x", ramp({8}, 1.f)}}, "input 'x' has rank 2");
  expectRefused({{"x", ramp({2, 5}, 1.f)}}, "dim 1 is 4, but 5");
  EXPECT_EQ(cuda.planMisses(), 0);  // nothing was planned for them
  // The session still runs.
  expectMatchesReference(cuda, *model, {{"x", ramp({2, 4}, 1.f)}});
}

TEST_F(CudaTest, RecordedIntermediatesMatchReference) {
  auto model = parseInferred(kMixed);
  ASSERT_TRUE(model);
  auto executor = createExecutor("cuda", *model);  // the runner: default options
  ASSERT_TRUE(executor.isOk()) << executor.status().toString();
  test::expectIntermediatesMatchReference(**executor, *model, {{"x", ramp({2, 4}, 1.f)}});
}

TEST_F(CudaTest, OutOfMemoryNamesTheArena) {
  auto model = parseInferred(test::kHugeIntermediate);
  ASSERT_TRUE(model);
  auto executor = executorFor(*model, CudaOptions{});
  ASSERT_TRUE(executor);
  auto result = executor->run({{"x", floats({1}, {1.f})}});
  ASSERT_FALSE(result.isOk());
  EXPECT_EQ(result.status().code(), StatusCode::kResourceExhausted) << result.status().toString();
  EXPECT_NE(result.status().toString().find("allocating the device arena of"), std::string::npos)
      << result.status().toString();
}

class CudaModelTest : public CudaTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(CudaModelTest, MatchesReference) {
  auto model = test::loadInferred(GetParam());
  ASSERT_TRUE(model);
  auto executor = executorFor(*model);
  ASSERT_TRUE(executor);
  // Three runs at one shape: eager, captured into a CUDA graph (where the plan is all device
  // steps), replayed; each with other values.
  expectMatchesReference(*executor, *model, test::randomFeeds(*model, 7));
  expectMatchesReference(*executor, *model, test::randomFeeds(*model, 9));
  expectMatchesReference(*executor, *model, test::randomFeeds(*model, 10));
  SCOPED_TRACE(executor->lastSummary());
  EXPECT_EQ(executor->cudaGraphState().find("eager (capture failed"), std::string::npos)
      << executor->cudaGraphState();
  test::expectIntermediatesMatchReference(*executor, *model, test::randomFeeds(*model, 8));
  ASSERT_TRUE(executor->lastPlan());
  EXPECT_GT(executor->lastPlan()->countPlacement(Placement::kDevice), 0);
}

std::string modelName(const ::testing::TestParamInfo<std::string>& info) {
  std::string path = info.param;  // models/<name>/model.onnx or models/transformers/<name>/...
  path = path.substr(0, path.rfind('/'));
  std::string name = path.substr(path.rfind('/') + 1);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Bundled, CudaModelTest, ::testing::ValuesIn(test::cudaTestModels()),
                         modelName);

// Dynamic batch and sequence dims on a bundled transformer: two shapes in one session (miss,
// miss, hit), each against the reference executor.
TEST_F(CudaTest, TransformerAtTwoShapesInOneSession) {
  for (const std::string& path : test::dynamicSequenceModels()) {
    SCOPED_TRACE(path);
    auto model = test::loadInferred(path);
    ASSERT_TRUE(model);
    auto executor = executorFor(*model);
    ASSERT_TRUE(executor);
    test::expectSizesShareASession(*executor, *model, {{"batch", 1}, {"seq", 5}},
                                   {{"batch", 2}, {"seq", 7}});
  }
}

TEST_F(CudaTest, DynamicBatchAtTwoShapesInOneSession) {
  auto model = test::loadInferred("models/tiny_cnn/model.onnx");
  ASSERT_TRUE(model);
  auto executor = executorFor(*model);
  ASSERT_TRUE(executor);
  test::expectBatchSizesShareASession(*executor, *model);
}

}  // namespace
}  // namespace onnxopt::runtime
