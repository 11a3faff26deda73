// The CUDA executor without a device (CI): feeds checked before anything runs, the clean error
// where there is no device, the runner's name in the registry, the bundled test models planning
// for the CUDA kernels without what the executor does not run yet, and the executor's traversal
// of plans (arena offsets, views, in-place reuse, copies, fallbacks, the plan cache) on a
// host-memory device that runs the reference kernels (fake_device.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "fake_device.h"
#include "model_feeds.h"
#include "onnxopt/ir/builder.h"
#include "onnxopt/passes/inline_functions.h"
#include "onnxopt/runtime/check.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/plan.h"
#include "test_models.h"

namespace onnxopt::runtime {
namespace {

using test::floats;
using test::parse;

constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x, int64[2] k) => (float[N,4] y) <float[4] b = {1, 2, 3, 4}> {
  y = Add(x, b)
}
)";

TEST(CheckCudaFeeds, GoodFeedsGiveTheShapes) {
  auto model = parse(kModel);
  ASSERT_TRUE(model);
  Feeds feeds{{"x", floats({3, 4}, std::vector<float>(12, 1.f))},
              {"k", kernels::HostTensor::zeros(DataType::kInt64, {2})}};
  auto shapes = checkCudaFeeds(*model, feeds);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_EQ(shapes->at("x"), (InputShape{DataType::kFloat, {3, 4}}));
  EXPECT_EQ(shapes->at("k"), (InputShape{DataType::kInt64, {2}}));
}

/// The message of checkCudaFeeds on `feeds`, which must fail with kInvalidArgument.
std::string refusal(const ir::Model& model, const Feeds& feeds) {
  auto shapes = checkCudaFeeds(model, feeds);
  EXPECT_FALSE(shapes.isOk());
  if (shapes.isOk()) return "";
  EXPECT_EQ(shapes.status().code(), StatusCode::kInvalidArgument);
  return shapes.status().message();
}

TEST(CheckCudaFeeds, BadFeedsAreRefusedNamingTheInput) {
  auto model = parse(kModel);
  ASSERT_TRUE(model);
  kernels::HostTensor x = floats({3, 4}, std::vector<float>(12, 1.f));
  kernels::HostTensor k = kernels::HostTensor::zeros(DataType::kInt64, {2});

  EXPECT_NE(refusal(*model, {{"x", x}, {"k", k}, {"z", x}}).find("'z' is not an input"),
            std::string::npos);
  EXPECT_NE(refusal(*model, {{"x", x}}).find("input 'k' is missing"), std::string::npos);
  EXPECT_NE(refusal(*model, {{"x", kernels::HostTensor::zeros(DataType::kInt32, {3, 4})}, {"k", k}})
                .find("input 'x' is float, but a int32 tensor was given"),
            std::string::npos);
  EXPECT_NE(refusal(*model, {{"x", floats({12}, std::vector<float>(12, 1.f))}, {"k", k}})
                .find("input 'x' has rank 2"),
            std::string::npos);
  EXPECT_NE(refusal(*model, {{"x", floats({3, 5}, std::vector<float>(15, 1.f))}, {"k", k}})
                .find("input 'x': dim 1 is 4, but 5 was given"),
            std::string::npos);
  kernels::HostTensor short_data = x;
  short_data.bytes.resize(8);
  EXPECT_NE(refusal(*model, {{"x", short_data}, {"k", k}}).find("8 bytes of data"),
            std::string::npos);
}

TEST(CheckCudaFeeds, InputsWithADefaultMayBeLeftOut) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, float[2] d) => (float[2] y) <float[2] d = {1, 2}> {
  y = Add(x, d)
}
)");
  ASSERT_TRUE(model);
  auto shapes = checkCudaFeeds(*model, {{"x", floats({2}, {1, 2})}});
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  EXPECT_EQ(shapes->size(), 1u);
  EXPECT_EQ(shapes->count("d"), 0u);
}

TEST(CudaRunner, IsBuiltIn) {
  auto names = runnerNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end());
  EXPECT_TRUE(hasRunner("cuda"));
}

// Where there is no device (or no CUDA build), creating the executor is an error, never an
// abort; the CLI turns it into exit 1.
TEST(CudaRunner, NoDeviceIsAClearError) {
  if (kernels::probeCudaDevice(0).isOk()) GTEST_SKIP() << "a CUDA device is present";
  auto model = parse(kModel);
  ASSERT_TRUE(model);
  auto direct = CudaExecutor::create(*model);
  ASSERT_FALSE(direct.isOk());
  EXPECT_NE(direct.status().message().find("cuda runner: no usable CUDA device 0"),
            std::string::npos)
      << direct.status().toString();
  auto by_name = createExecutor("cuda", *model);
  ASSERT_FALSE(by_name.isOk());
  EXPECT_EQ(by_name.status().code(), direct.status().code());
}

// The bundled models the GPU suite runs plan statically, with no subgraph op on the CPU, so that
// their GPU runs cover the device path (and CUDA graphs); run-time shapes and subgraphs have
// tests of their own below.
TEST(CudaRunner, TestModelsPlanWithoutUnsupportedNodes) {
  for (const std::string& path : test::cudaTestModels()) {
    SCOPED_TRACE(path);
    auto model = test::loadInferred(path);
    ASSERT_TRUE(model);
    Feeds feeds = test::randomFeeds(*model, 0);
    auto shapes = checkCudaFeeds(*model, feeds);
    ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
    auto plan = buildPlan(*model, *shapes, kernels::cudaCapabilities());
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    EXPECT_FALSE(plan->has_dynamic) << plan->summary();
    for (const PlannedNode& pn : plan->nodes) {
      EXPECT_FALSE(pn.node != nullptr && !pn.node->subgraphs().empty() &&
                   pn.placement != Placement::kDevice)
          << pn.name;
    }
    EXPECT_GT(plan->countPlacement(Placement::kDevice), 0) << plan->summary();
  }
}

// The GPU suite's out-of-memory case relies on this: the huge value is in the device arena, so
// the arena allocation (at preparation) fails before the host Expand would allocate it too.
TEST(CudaRunner, HugeIntermediateIsInTheArena) {
  auto model = test::parseInferred(test::kHugeIntermediate);
  ASSERT_TRUE(model);
  auto plan = buildPlan(*model, {{"x", {DataType::kFloat, {1}}}}, kernels::cudaCapabilities());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_GE(plan->arena_bytes, int64_t{4} << 36) << plan->summary();
}

// --- the executor on the fake device -------------------------------------------------------------

CudaOptions poisonedOptions() {
  CudaOptions options;
  options.poison_byte = 0xA5;
  return options;
}

/// An executor on a fake device whose log outlives it; poisons the arena before each run.
struct FakeSession {
  std::shared_ptr<test::FakeDeviceLog> log = std::make_shared<test::FakeDeviceLog>();
  std::unique_ptr<CudaExecutor> executor;

  explicit FakeSession(const ir::Model& model, std::set<std::string> refuse = {},
                       test::FakeCapture capture = {}, CudaOptions options = poisonedOptions()) {
    auto created = CudaExecutor::createOn(
        model, options, std::make_unique<test::FakeDevice>(log, refuse, std::move(capture)));
    EXPECT_TRUE(created.isOk()) << created.status().toString();
    if (created.isOk()) executor = std::move(created).value();
  }
  /// Destroys the executor: every allocation must have been released, and no call was bad.
  void expectClean() {
    executor.reset();
    EXPECT_EQ(log->live, 0) << "allocations left";
    EXPECT_TRUE(log->errors.empty()) << log->errors.front();
  }
};

TEST(CudaExecutorOnFakeDevice, MixedGraphMatchesReferenceAndReusesItsPlan) {
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({2, 4}, 0.5f)}});
  EXPECT_EQ(cuda.planMisses(), 1);
  EXPECT_EQ(cuda.uploadedWeightBytes(), test::kMixedWeightBytes) << cuda.lastSummary();
  EXPECT_EQ(cuda.lastPlan()->countPlacement(Placement::kCpuFallback), 1) << cuda.lastSummary();
  EXPECT_EQ(session.log->launches, 4);  // MatMul, Add, Relu, Add
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({2, 4}, -0.25f)}});
  EXPECT_EQ(cuda.planHits(), 1);
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({5, 4}, 0.125f)}});
  EXPECT_EQ(cuda.planMisses(), 2);
  EXPECT_EQ(cuda.uploadedWeightBytes(), test::kMixedWeightBytes);  // once per session
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({2, 4}, 1.f)}});
  EXPECT_EQ(cuda.planHits(), 2);
  test::expectIntermediatesMatchReference(cuda, *model, {{"x", test::ramp({5, 4}, 2.f)}});
  session.expectClean();
}

TEST(CudaExecutorOnFakeDevice, InPlaceChainMatchesReference) {
  auto model = test::parseInferred(test::kChain);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({3, 8}, 0.3f)}});
  auto plan = session.executor->lastPlan();
  ASSERT_TRUE(plan);
  int in_place = 0;
  for (const PlannedNode& pn : plan->nodes) in_place += pn.in_place_input >= 0;
  EXPECT_GT(in_place, 0) << plan->summary();
  EXPECT_EQ(session.log->launches, 4);
  session.expectClean();
}

// A node the kernel refuses at its concrete shapes runs on the CPU with copies, and says so.
TEST(CudaExecutorOnFakeDevice, RefusedKernelRunsOnTheCpu) {
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  FakeSession session(*model, {"Add"});
  ASSERT_TRUE(session.executor);
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({2, 4}, 0.5f)}});
  EXPECT_NE(session.executor->lastSummary().find("fake device refuses Add"), std::string::npos)
      << session.executor->lastSummary();
  EXPECT_EQ(session.log->launches, 2);  // MatMul, Relu (both Adds refused)
  // The refusal is a placement of the plan: its summary is what ran, nothing demoted later.
  auto plan = session.executor->lastPlan();
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->countPlacement(Placement::kCpuFallback), 3) << plan->summary();
  EXPECT_NE(plan->summary().find("fake device refuses Add"), std::string::npos) << plan->summary();
  EXPECT_EQ(session.executor->lastSummary().find("refused at these shapes"), std::string::npos)
      << session.executor->lastSummary();
  session.expectClean();
}

TEST(CudaExecutorOnFakeDevice, BadInputsAreRefusedBeforeAnythingRuns) {
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  auto result = session.executor->run({{"x", test::ramp({2, 5}, 1.f)}});
  ASSERT_FALSE(result.isOk());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(session.executor->planMisses(), 0);
  EXPECT_EQ(session.log->launches, 0);
  session.expectClean();
}

TEST(CudaExecutorOnFakeDevice, BundledModelsMatchReference) {
  for (const std::string& path : test::cudaTestModels()) {
    SCOPED_TRACE(path);
    auto model = test::loadInferred(path);
    ASSERT_TRUE(model);
    FakeSession session(*model);
    ASSERT_TRUE(session.executor);
    test::expectMatchesReference(*session.executor, *model, test::randomFeeds(*model, 7));
    EXPECT_GT(session.log->launches, 0) << session.executor->lastSummary();
    test::expectIntermediatesMatchReference(*session.executor, *model,
                                            test::randomFeeds(*model, 8));
    session.expectClean();
  }
}

TEST(CudaExecutorOnFakeDevice, DynamicBatchAtTwoShapesInOneSession) {
  auto model = test::loadInferred("models/tiny_cnn/model.onnx");
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  test::expectBatchSizesShareASession(*session.executor, *model);
  session.expectClean();
}

// Dynamic batch and sequence dims: a transformer at batch 1 / seq 5, batch 2 / seq 7, then the
// first again, in one session (miss, miss, hit), each matching the reference executor.
TEST(CudaExecutorOnFakeDevice, TransformerAtTwoShapesInOneSession) {
  for (const std::string& path : test::dynamicSequenceModels()) {
    SCOPED_TRACE(path);
    auto model = test::loadInferred(path);
    ASSERT_TRUE(model);
    FakeSession session(*model);
    ASSERT_TRUE(session.executor);
    test::expectSizesShareASession(*session.executor, *model, {{"batch", 1}, {"seq", 5}},
                                   {{"batch", 2}, {"seq", 7}});
    session.expectClean();
  }
}

/// A CUDA executor on `device`, as a runner's factory returns it.
StatusOr<std::unique_ptr<Executor>> executorOn(const ir::Model& model, const CudaOptions& options,
                                               std::unique_ptr<cuda_detail::DeviceApi> device) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                   CudaExecutor::createOn(model, options, std::move(device)));
  return std::unique_ptr<Executor>(std::move(executor));
}

/// A fake device whose Add kernel writes nothing: a broken device the comparison must catch.
class AddWritesNothing : public test::FakeDevice {
 public:
  using FakeDevice::FakeDevice;
  Status launch(const kernels::PreparedCudaKernel& kernel) override {
    const kernels::CudaKernelCall* call = callOf(kernel);
    if (call != nullptr && call->op == "Add") return Status::ok();
    return FakeDevice::launch(kernel);
  }
};

// `opt check MODEL --runner X --against reference`: one model, two runners. The CUDA executor on
// the fake device agrees with the reference runner; a runner with wrong answers does not.
TEST(CudaExecutorOnFakeDevice, CheckAgainstTheReferenceRunner) {
  ASSERT_TRUE(registerRunner("test-fake-cuda", [](const ExecutorSource& source) {
                auto log = std::make_shared<test::FakeDeviceLog>();
                return executorOn(*source.model, {}, std::make_unique<test::FakeDevice>(log));
              }).isOk());
  ASSERT_TRUE(registerRunner("test-fake-cuda-no-add", [](const ExecutorSource& source) {
                CudaOptions options;
                options.poison_byte = 0x7F;  // the unwritten Add output reads as NaN
                auto log = std::make_shared<test::FakeDeviceLog>();
                return executorOn(*source.model, options, std::make_unique<AddWritesNothing>(log));
              }).isOk());
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  CheckOptions options;
  options.runner = "test-fake-cuda";
  options.against = "reference";
  auto good = checkModels(*model, *model, options);
  ASSERT_TRUE(good.isOk()) << good.status().toString();
  EXPECT_TRUE(good->passed);
  EXPECT_EQ(good->runner, "test-fake-cuda against reference");

  options.runner = "test-fake-cuda-no-add";
  auto bad = checkModels(*model, *model, options);
  ASSERT_TRUE(bad.isOk()) << bad.status().toString();
  EXPECT_FALSE(bad->passed);
  // The same broken runner on both sides agrees with itself: --against is what compares runners.
  options.against.clear();
  auto same = checkModels(*model, *model, options);
  ASSERT_TRUE(same.isOk()) << same.status().toString();
  EXPECT_EQ(same->runner, "test-fake-cuda-no-add");
}

// --- stream order and CUDA graphs on the fake device ----------------------------------------------
// The fake device runs queued work only at synchronize(), so a host read that the executor did
// not synchronize before sees stale bytes (and the comparison with the reference fails).

// All device steps, graphs off: the only synchronization of a run is the one at its end.
TEST(CudaExecutorOnFakeDevice, AllDeviceRunSynchronizesOnce) {
  auto model = test::parseInferred(test::kChain);
  ASSERT_TRUE(model);
  CudaOptions options = poisonedOptions();
  options.cuda_graphs = false;
  FakeSession session(*model, {}, {}, options);
  ASSERT_TRUE(session.executor);
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({3, 8}, 0.3f)}});
  int64_t before = session.log->synchronizations;
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({3, 8}, -0.7f)}});
  EXPECT_EQ(session.log->synchronizations - before, 1);
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({3, 8}, 1.1f)}});
  EXPECT_EQ(session.log->captures, 0);  // graphs off: never captured
  EXPECT_EQ(session.executor->cudaGraphState(), "off");
  EXPECT_NE(session.executor->lastSummary().find("cuda graph: off"), std::string::npos);
  session.expectClean();
}

// Eager runs (graphs off) launch the kernels prepared with the plan: each device node is prepared
// once per plan, never again at a run, whatever the number of runs; a new plan prepares its own.
TEST(CudaExecutorOnFakeDevice, EagerRunsLaunchKernelsPreparedOncePerPlan) {
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  CudaOptions options = poisonedOptions();
  options.cuda_graphs = false;
  FakeSession session(*model, {}, {}, options);
  ASSERT_TRUE(session.executor);
  for (float start : {0.5f, -0.25f, 1.5f}) {
    test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({2, 4}, start)}});
  }
  EXPECT_EQ(session.log->prepares, 4);  // MatMul, Add, Relu, Add: one plan
  EXPECT_EQ(session.log->launches, 4 * 3);
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({5, 4}, 2.f)}});
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({5, 4}, 3.f)}});
  EXPECT_EQ(session.log->prepares, 4 * 2);  // a second signature: a second plan
  EXPECT_EQ(session.log->launches, 4 * 5);
  session.expectClean();
}

// A CPU fallback (Det) between device steps: one synchronization where the host reads its
// copied input, one at the end; its result goes up without one.
TEST(CudaExecutorOnFakeDevice, FallbackSynchronizesOnlyWhereTheHostReads) {
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({2, 4}, 0.5f)}});
  int64_t before = session.log->synchronizations;
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({2, 4}, -1.5f)}});
  EXPECT_EQ(session.log->synchronizations - before, 2) << session.executor->lastSummary();
  EXPECT_NE(session.executor->cudaGraphState().find("eager ("), std::string::npos)
      << session.executor->cudaGraphState();
  session.expectClean();
}

// A plan of device launches only: eager once, captured at the second run, replayed after; every
// run right with new input values (the graph reads the plan's input buffers, refilled each run).
TEST(CudaExecutorOnFakeDevice, StaticDevicePlanIsCapturedThenReplayed) {
  auto model = test::parseInferred(test::kChain);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({3, 8}, 0.3f)}});
  EXPECT_EQ(session.log->captures, 0);
  EXPECT_EQ(cuda.cudaGraphState(), "to be captured at the next run");
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({3, 8}, -0.6f)}});
  EXPECT_EQ(session.log->captures, 1);
  EXPECT_EQ(session.log->replays, 1);
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({3, 8}, 1.1f)}});
  EXPECT_EQ(session.log->captures, 1);
  EXPECT_EQ(session.log->replays, 2);
  EXPECT_EQ(cuda.cudaGraphState(), "captured, replayed 2");
  EXPECT_NE(cuda.lastSummary().find("cuda graph: captured, replayed 2"), std::string::npos)
      << cuda.lastSummary();
  EXPECT_EQ(session.log->launches, 4 * 3);
  // Another shape is another plan, with a graph of its own; the first one's still replays.
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({5, 8}, 0.2f)}});
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({5, 8}, 0.9f)}});
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({3, 8}, 2.f)}});
  EXPECT_EQ(session.log->captures, 2);
  EXPECT_EQ(cuda.cudaGraphState(), "captured, replayed 3");
  // Recording intermediates runs eagerly and leaves the graph alone.
  test::expectIntermediatesMatchReference(cuda, *model, {{"x", test::ramp({3, 8}, 0.4f)}});
  EXPECT_EQ(session.log->replays, 4);
  session.expectClean();
}

// A kernel that cannot be captured (as one that calls cudaMalloc): the capture is discarded and
// the plan runs eagerly from then on, with right results and no failed run.
TEST(CudaExecutorOnFakeDevice, FailedCaptureRunsEagerly) {
  auto model = test::parseInferred(test::kChain);
  ASSERT_TRUE(model);
  test::FakeCapture capture;
  capture.uncapturable_ops = {"Neg"};
  FakeSession session(*model, {}, capture);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  for (float start : {0.3f, -0.6f, 1.1f}) {
    test::expectMatchesReference(cuda, *model, {{"x", test::ramp({3, 8}, start)}});
  }
  EXPECT_EQ(session.log->captures, 0);
  EXPECT_EQ(session.log->replays, 0);
  EXPECT_EQ(session.log->launches, 4 * 3);
  EXPECT_NE(cuda.cudaGraphState().find("fake device: Neg cannot be captured"), std::string::npos)
      << cuda.cudaGraphState();
  session.expectClean();
}

TEST(CudaExecutorOnFakeDevice, DeviceThatCannotCaptureRunsEagerly) {
  auto model = test::parseInferred(test::kChain);
  ASSERT_TRUE(model);
  test::FakeCapture capture;
  capture.capturable = false;
  FakeSession session(*model, {}, capture);
  ASSERT_TRUE(session.executor);
  for (float start : {0.3f, -0.6f, 1.1f}) {
    test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({3, 8}, start)}});
  }
  EXPECT_EQ(session.executor->cudaGraphState(),
            "eager (capture failed: fake device cannot capture)");
  EXPECT_EQ(session.log->replays, 0);
  session.expectClean();
}

// A profiled run: eager, right, one time per step that does work (views and folded nodes none),
// copies named as such; it neither captures nor replays a graph.
TEST(CudaExecutorOnFakeDevice, ProfiledRunTimesEachStep) {
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  Feeds feeds{{"x", test::ramp({2, 4}, 0.5f)}};
  std::vector<CudaExecutor::StepTime> times;
  auto result = cuda.runProfiled(feeds, &times);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  auto expected = runModel(*model, feeds);
  ASSERT_TRUE(expected.isOk());
  EXPECT_EQ(result->outputs[0].bytes, expected->outputs[0].bytes);
  std::multiset<std::string> ops;
  for (const CudaExecutor::StepTime& t : times) {
    ops.insert(t.op);
    EXPECT_GE(t.ms, 0.0) << t.name;
    EXPECT_FALSE(t.name.empty());
    // Each step's roofline cost (step_cost.h): bytes for all, flops for the product only.
    EXPECT_GT(t.cost.bytes, 0) << t.name;
    EXPECT_EQ(t.cost.flops > 0, t.op == "MatMul") << t.name;
  }
  // MatMul, Add, Relu, Add on the device; Det on the CPU with its input copied down (its output
  // is a graph output, read on the host).
  EXPECT_EQ(ops, (std::multiset<std::string>{"MatMul", "Add", "Relu", "Add", "Det", "CopyToHost"}))
      << cuda.lastSummary();
  ASSERT_TRUE(cuda.runProfiled(feeds, &times).isOk());
  EXPECT_EQ(times.size(), ops.size());  // cleared, not appended
  EXPECT_EQ(session.log->captures, 0);
  session.expectClean();
}

// CudaOptions::time_compute: each run (eager, captured or replayed) has a compute time; a
// profiled run, one that records intermediates and an executor without the option have none.
TEST(CudaExecutorOnFakeDevice, TimeComputeMeasuresTheNodeSteps) {
  auto model = test::parseInferred(test::kChain);
  ASSERT_TRUE(model);
  CudaOptions options = poisonedOptions();
  options.time_compute = true;
  FakeSession session(*model, {}, {}, options);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  EXPECT_FALSE(cuda.lastComputeMs());
  Feeds feeds{{"x", test::ramp({3, 8}, 0.3f)}};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cuda.run(feeds).isOk());
    ASSERT_TRUE(cuda.lastComputeMs()) << "run " << i;
    EXPECT_GE(*cuda.lastComputeMs(), 0.0);
  }
  EXPECT_EQ(cuda.cudaGraphState(), "captured, replayed 2");
  std::vector<CudaExecutor::StepTime> times;
  ASSERT_TRUE(cuda.runProfiled(feeds, &times).isOk());
  EXPECT_FALSE(cuda.lastComputeMs());
  ExecutionOptions record;
  record.record_intermediates = true;
  ASSERT_TRUE(cuda.run(feeds, record).isOk());
  EXPECT_FALSE(cuda.lastComputeMs());
  session.expectClean();

  FakeSession untimed(*model);
  ASSERT_TRUE(untimed.executor);
  ASSERT_TRUE(untimed.executor->run(feeds).isOk());
  EXPECT_FALSE(untimed.executor->lastComputeMs());
  untimed.expectClean();
}

// --- run-time shapes and subgraphs on the fake device --------------------------------------------

// kNonZero: NonZero between device ops; inputs with different numbers of non-zeros, one plan.
TEST(CudaExecutorOnFakeDevice, NonZeroFeedingADeviceOpRuns) {
  auto model = test::parseInferred(test::kNonZero);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  test::expectMatchesReference(cuda, *model, {{"x", test::floats({6}, {1, -2, 3, 0, 5, -1})}});
  ASSERT_TRUE(cuda.lastPlan());
  EXPECT_TRUE(cuda.lastPlan()->has_dynamic) << cuda.lastSummary();
  EXPECT_EQ(session.log->launches, 2) << cuda.lastSummary();  // Relu, Add
  test::expectMatchesReference(cuda, *model, {{"x", test::floats({6}, {1, 2, 3, 4, 5, 6})}});
  test::expectMatchesReference(cuda, *model, {{"x", test::floats({6}, {-1, -2, -3, 0, 0, 0})}});
  EXPECT_EQ(cuda.planMisses(), 1);
  EXPECT_EQ(cuda.cudaGraphState().rfind("eager (", 0), 0u) << cuda.cudaGraphState();
  test::expectIntermediatesMatchReference(cuda, *model,
                                          {{"x", test::floats({6}, {0, 1, 0, 1, 0, 1})}});
  session.expectClean();
}

// kRuntimeReshape: a Reshape to a target computed from an input at run time.
TEST(CudaExecutorOnFakeDevice, ReshapeToARuntimeShapeRuns) {
  auto model = test::parseInferred(test::kRuntimeReshape);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  auto shape = [](int64_t a, int64_t b) {
    kernels::HostTensor t = kernels::HostTensor::zeros(DataType::kInt64, {2});
    t.set<int64_t>(0, a);
    t.set<int64_t>(1, b);
    return t;
  };
  test::expectMatchesReference(cuda, *model, {{"x", test::ramp({3, 4}, 0.1f)}, {"k", shape(2, 6)}});
  EXPECT_TRUE(cuda.lastPlan()->has_dynamic) << cuda.lastSummary();
  // The same input signature, another target shape: the same plan, other output dims.
  test::expectMatchesReference(cuda, *model,
                               {{"x", test::ramp({3, 4}, 0.1f)}, {"k", shape(12, 1)}});
  test::expectMatchesReference(cuda, *model,
                               {{"x", test::ramp({3, 4}, 0.1f)}, {"k", shape(-1, 3)}});
  EXPECT_EQ(cuda.planMisses(), 1);
  session.expectClean();
}

// kIf: both branches, each reading an outer device value and a weight; one plan.
TEST(CudaExecutorOnFakeDevice, IfRunsOnTheCpuWithItsOuterValues) {
  auto model = test::parseInferred(test::kIf);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  test::expectMatchesReference(cuda, *model,
                               {{"x", test::ramp({3, 4}, -0.5f)}, {"c", test::boolScalar(true)}});
  test::expectMatchesReference(cuda, *model,
                               {{"x", test::ramp({3, 4}, -0.5f)}, {"c", test::boolScalar(false)}});
  EXPECT_EQ(cuda.planMisses(), 1);
  EXPECT_EQ(session.log->launches, 4) << cuda.lastSummary();  // Relu, Sigmoid, twice
  test::expectIntermediatesMatchReference(
      cuda, *model, {{"x", test::ramp({3, 4}, 0.5f)}, {"c", test::boolScalar(true)}});
  session.expectClean();
}

// kLoop: trip counts 0, 1 and 3 at one input signature (the scan output's length follows).
TEST(CudaExecutorOnFakeDevice, LoopRunsOnTheCpu) {
  auto model = test::parseInferred(test::kLoop);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  CudaExecutor& cuda = *session.executor;
  for (int64_t n : {3, 1, 0}) {
    SCOPED_TRACE(n);
    test::expectMatchesReference(cuda, *model,
                                 {{"x", test::ramp({2, 4}, -0.3f)}, {"n", test::int64Scalar(n)}});
  }
  EXPECT_EQ(cuda.planMisses(), 1);
  session.expectClean();
}

// The host-run Loop keeps the run's limits (ExecutionOptions::limits), as the reference executor
// does: its trip count, known when it starts, and the scan output its first iteration sizes.
TEST(CudaExecutorOnFakeDevice, LoopOnTheHostKeepsTheRunLimits) {
  auto model = test::parseInferred(test::kLoop);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  Feeds feeds = {{"x", test::ramp({2, 4}, -0.3f)}, {"n", test::int64Scalar(3)}};
  ExecutionOptions options;
  options.limits.max_iterations = 2;
  auto run = session.executor->run(feeds, options);
  ASSERT_FALSE(run.isOk());
  EXPECT_EQ(run.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(run.status().message().find("would run 3 loop iterations"), std::string::npos)
      << run.status().message();
  options.limits.max_iterations = 3;
  options.limits.max_memory = 64;  // each slice of s is 32 bytes; the body's values count too
  run = session.executor->run(feeds, options);
  ASSERT_FALSE(run.isOk());
  EXPECT_NE(run.status().message().find("(the limit; --max-memory)"), std::string::npos)
      << run.status().message();
  test::expectMatchesReference(*session.executor, *model, feeds);
  session.expectClean();
}

// A weight without its data (a stripped model) is refused when the executor is created, before
// any plan, naming it.
TEST(CudaExecutorOnFakeDevice, WeightsWithoutDataAreRefusedWhenCreated) {
  auto model = test::parseInferred(kModel);
  ASSERT_TRUE(model);
  for (ir::Value* v : model->graph->initializers()) {
    if (v->name() == "b") ir::Builder::setInitializer(v, ir::Tensor(DataType::kFloat, {4}));
  }
  auto log = std::make_shared<test::FakeDeviceLog>();
  auto created = CudaExecutor::createOn(
      *model, poisonedOptions(),
      std::make_unique<test::FakeDevice>(log, std::set<std::string>{}, test::FakeCapture{}));
  ASSERT_FALSE(created.isOk());
  EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(created.status().message().find("initializer 'b' (float[4]) has no data"),
            std::string::npos)
      << created.status().message();
  EXPECT_EQ(log->live, 0);
}

// kSequenceOptional: sequence and optional values stay on the host; tensors read from them go
// on to device ops.
TEST(CudaExecutorOnFakeDevice, SequencesAndOptionalsRunOnTheHost) {
  auto model = test::parseInferred(test::kSequenceOptional);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({2, 3}, -0.5f)}});
  test::expectIntermediatesMatchReference(*session.executor, *model,
                                          {{"x", test::ramp({2, 3}, 0.25f)}});
  session.expectClean();
}

// A sequence graph output: returned with non_tensor_outputs (as the reference executor does),
// refused without.
TEST(CudaExecutorOnFakeDevice, SequenceOutputsNeedNonTensorOutputs) {
  auto model = test::parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (q) {
  a = Relu(x)
  q = SequenceConstruct(a, x)
}
)");
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  Feeds feeds{{"x", test::floats({2}, {-1, 2})}};
  ExecutionOptions with;
  with.non_tensor_outputs = true;
  auto result = session.executor->run(feeds, with);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  ASSERT_EQ(result->kinds.size(), 1u);
  EXPECT_EQ(result->kinds[0], OutputKind::kSequence);
  ASSERT_EQ(result->sequences[0].size(), 2u);
  EXPECT_EQ(result->sequences[0][0].get<float>(0), 0.f);
  EXPECT_EQ(result->sequences[0][1].get<float>(0), -1.f);
  auto without = session.executor->run(feeds);
  ASSERT_FALSE(without.isOk());
  EXPECT_NE(without.status().message().find("output 'q' is a sequence"), std::string::npos)
      << without.status().toString();
  session.expectClean();
}

// A declared output shape the data contradicts (as in polygraphy's empty_tensor_expand): the node
// run on the host makes other dims than the plan's, and the session plans again with that value
// shaped at run time, which the summary says; the run stays on the device, and a later run at the
// same signature reuses the new plan. Never a failure where the reference executor runs the model.
TEST(CudaExecutorOnFakeDevice, DeclaredShapeTheDataContradictsIsShapedAtRunTime) {
  auto model = test::parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x, int64[2] s) => (float[3,2] y) {
  h = Relu(x)
  e = Expand(h, s)
  y = Neg(e)
}
)");
  ASSERT_TRUE(model);
  // s is Expand's shape, a value input; with more elements than a value input's data may have, it
  // stays keyed by shape and the contradiction shows only when Expand runs. (Planned with s's data,
  // the contradiction is Neg's input against its declared output, which a GPU kernel's check
  // refuses and this fake's does not.)
  CudaOptions options = poisonedOptions();
  options.plan.max_host_elements = 1;
  FakeSession session(*model, {"Expand"}, {}, options);
  ASSERT_TRUE(session.executor);
  kernels::HostTensor s = kernels::HostTensor::zeros(DataType::kInt64, {2});
  s.set<int64_t>(0, 1);
  s.set<int64_t>(1, 1);
  for (float start : {-0.5f, 0.5f}) {  // the second run reuses the second plan
    test::expectMatchesReference(*session.executor, *model,
                                 {{"x", test::ramp({2, 3}, start)}, {"s", s}});
    const std::string& summary = session.executor->lastSummary();
    EXPECT_EQ(summary.find("the whole run went to the reference executor"), std::string::npos)
        << summary;
    EXPECT_NE(summary.find("shaped at run time: 'y'"), std::string::npos) << summary;
  }
  EXPECT_EQ(session.executor->planMisses(), 2);  // the first plan, and the one after the mismatch
  EXPECT_EQ(session.executor->planHits(), 1);
  session.expectClean();
}

/// Inputs given in (fake) device memory, as the Python package hands over DLPack tensors: an
/// executor whose FakeDevice the test can allocate on.
struct DeviceInputSession {
  std::shared_ptr<test::FakeDeviceLog> log = std::make_shared<test::FakeDeviceLog>();
  test::FakeDevice* device = nullptr;
  std::unique_ptr<CudaExecutor> executor;
  std::vector<void*> blocks;

  explicit DeviceInputSession(const ir::Model& model) {
    auto fake = std::make_unique<test::FakeDevice>(log);
    device = fake.get();
    auto created = CudaExecutor::createOn(model, poisonedOptions(), std::move(fake));
    EXPECT_TRUE(created.isOk()) << created.status().toString();
    if (created.isOk()) executor = std::move(created).value();
  }
  /// `t` copied into a new block of device memory (as a torch tensor on the GPU would be).
  DeviceInput onDevice(const kernels::HostTensor& t) {
    auto block = device->allocate(t.bytes.size());
    EXPECT_TRUE(block.isOk());
    std::memcpy(*block, t.bytes.data(), t.bytes.size());
    blocks.push_back(*block);
    return {t.dtype, t.dims, *block};
  }
  /// The device run's outputs must equal the host run's with the same values.
  void expectSameAsHost(const Feeds& host, const DeviceFeeds& device_feeds, const Feeds& rest) {
    auto on_host = executor->run(host);
    ASSERT_TRUE(on_host.isOk()) << on_host.status().toString();
    auto on_device = executor->run(rest, device_feeds);
    ASSERT_TRUE(on_device.isOk()) << on_device.status().toString();
    ASSERT_EQ(on_device->names, on_host->names);
    for (size_t i = 0; i < on_host->outputs.size(); ++i) {
      EXPECT_EQ(on_device->outputs[i].dims, on_host->outputs[i].dims) << on_host->names[i];
      EXPECT_EQ(on_device->outputs[i].bytes, on_host->outputs[i].bytes) << on_host->names[i];
    }
  }
  void expectClean() {
    for (void* b : blocks) device->release(b);
    executor.reset();
    EXPECT_EQ(log->live, 0) << "allocations left";
    EXPECT_TRUE(log->errors.empty()) << log->errors.front();
  }
};

// Device inputs are copied on the device into the plan's input buffer (no host copy), for device
// kernels, a CPU fallback (Det reads a device value), and a graph output that is a view of the
// input (read back from the device input); the plan is shared with host runs of that signature.
TEST(CudaExecutorOnFakeDevice, DeviceInputsRunAsHostInputsDo) {
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  DeviceInputSession session(*model);
  ASSERT_TRUE(session.executor);
  kernels::HostTensor x = test::ramp({2, 4}, 0.5f);
  session.expectSameAsHost({{"x", x}}, {{"x", session.onDevice(x)}}, {});
  EXPECT_GE(session.log->device_copies, 1);
  EXPECT_EQ(session.executor->planMisses(), 1);
  EXPECT_EQ(session.executor->planHits(), 1);
  // Through the reference executor's comparison too.
  auto expected = runModel(*model, {{"x", x}});
  ASSERT_TRUE(expected.isOk());
  auto actual = session.executor->run({}, {{"x", session.onDevice(x)}});
  ASSERT_TRUE(actual.isOk()) << actual.status().toString();
  for (size_t i = 0; i < expected->outputs.size(); ++i) {
    EXPECT_TRUE(compareTensors(expected->names[i], expected->outputs[i], actual->outputs[i],
                               defaultTolerance(DataType::kFloat))
                    .passed)
        << expected->names[i];
  }
  session.expectClean();
}

// An input the host reads (the Reshape target of kRuntimeReshape, shaped at run time) is copied
// down from the device for it; the other input stays on the host.
TEST(CudaExecutorOnFakeDevice, DeviceInputsTheHostReadsAreCopiedDown) {
  auto model = test::parseInferred(test::kRuntimeReshape);
  ASSERT_TRUE(model);
  DeviceInputSession session(*model);
  ASSERT_TRUE(session.executor);
  kernels::HostTensor k = kernels::HostTensor::zeros(DataType::kInt64, {2});
  k.set<int64_t>(0, 2);
  k.set<int64_t>(1, 6);
  kernels::HostTensor x = test::ramp({3, 4}, 0.1f);
  session.expectSameAsHost({{"x", x}, {"k", k}}, {{"k", session.onDevice(k)}}, {{"x", x}});
  session.expectSameAsHost({{"x", x}, {"k", k}},
                           {{"k", session.onDevice(k)}, {"x", session.onDevice(x)}}, {});
  session.expectClean();
}

TEST(CudaExecutorOnFakeDevice, BadDeviceInputsAreRefusedNamingTheInput) {
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  DeviceInputSession session(*model);
  ASSERT_TRUE(session.executor);
  kernels::HostTensor x = test::ramp({2, 4}, 0.5f);
  DeviceInput dx = session.onDevice(x);
  auto refused = [&](const Feeds& host, const DeviceFeeds& device) {
    auto r = session.executor->run(host, device);
    EXPECT_FALSE(r.isOk());
    return r.isOk() ? std::string() : r.status().message();
  };
  EXPECT_NE(refused({{"x", x}}, {{"x", dx}}).find("input 'x' is given twice"), std::string::npos);
  EXPECT_NE(refused({}, {{"x", {DataType::kFloat, {2, 4}, nullptr}}}).find("no device memory"),
            std::string::npos);
  EXPECT_NE(refused({}, {{"x", {DataType::kInt32, {2, 4}, dx.data}}})
                .find("input 'x' is float, but a int32 tensor was given"),
            std::string::npos);
  EXPECT_NE(refused({}, {{"x", {DataType::kFloat, {2, 5}, dx.data}}}).find("dim 1 is 4"),
            std::string::npos);
  EXPECT_NE(refused({}, {{"z", dx}}).find("'z' is not an input"), std::string::npos);
  EXPECT_EQ(session.log->launches, 0);
  session.expectClean();
}

// A call of our own op (-O3 --target cuda) that the CUDA kernel table claims stays a call when the
// runners inline functions for the CUDA runner, and is planned as one device node; a call of a type
// the table does not claim (double) is inlined, its body's ops planned instead. Both match the
// reference executor, which runs the call through its reference kernel.
TEST(CudaExecutorOnFakeDevice, TargetCallsTheTableClaimsStayCalls) {
  const char* text = R"(
<ir_version: 9, opset_import: ["" : 20, "ai.onnxopt" : 1]>
g (float[2,3] x, double[2,3] d) => (float[2,4] y, double[2,4] z)
  <float[3,4] w = {1,-2,3,-4,5,-6,7,-8,9,-1,2,-3}, float[4] b = {0.5,-0.5,1,-1},
   double[3,4] wd = {1,-2,3,-4,5,-6,7,-8,9,-1,2,-3}, double[4] bd = {0.5,-0.5,1,-1}> {
  y = ai.onnxopt.MatMulBiasRelu(x, w, b)
  z = ai.onnxopt.MatMulBiasRelu(d, wd, bd)
}
<domain: "ai.onnxopt", opset_import: ["" : 20]>
MatMulBiasRelu (A, B, bias) => (Y) {
  product = MatMul(A, B)
  biased = Add(product, bias)
  Y = Relu(biased)
}
)";
  auto model = test::parseInferred(text);
  ASSERT_TRUE(model);
  const ir::Model* m = model.get();
  auto inlined = passes::inlineFunctionCalls(
      *model, [m](const ir::Node& call) { return cudaRunsTargetCall(*m, call); });
  ASSERT_TRUE(inlined.isOk()) << inlined.status().toString();
  EXPECT_EQ(*inlined, 1);  // the double call
  std::vector<std::string> ops;
  for (const ir::Node* n : *model->graph) ops.push_back(n->domain() + ":" + n->opType());
  EXPECT_EQ(ops,
            (std::vector<std::string>{"ai.onnxopt:MatMulBiasRelu", ":MatMul", ":Add", ":Relu"}));
  ASSERT_TRUE(ir::inferShapes(*model).isOk());
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  kernels::HostTensor d = kernels::HostTensor::zeros(DataType::kDouble, {2, 3});
  for (int64_t i = 0; i < 6; ++i) d.set<double>(i, 0.25 * static_cast<double>(i) - 0.5);
  test::expectMatchesReference(*session.executor, *model,
                               {{"x", test::ramp({2, 3}, -0.5f)}, {"d", d}});
  EXPECT_NE(session.executor->lastSummary().find("plan: 4 nodes: 1 device"), std::string::npos)
      << session.executor->lastSummary();
  session.expectClean();
}

// The workspace is one region shared by the device nodes, reported in the summary.
TEST(CudaExecutorOnFakeDevice, WorkspaceIsReported) {
  auto model = test::parseInferred(test::kMixed);
  ASSERT_TRUE(model);
  FakeSession session(*model);
  ASSERT_TRUE(session.executor);
  test::expectMatchesReference(*session.executor, *model, {{"x", test::ramp({2, 4}, 0.5f)}});
  EXPECT_EQ(session.executor->workspaceBytes(), 1024);  // the fake's MatMul asks for 1024
  EXPECT_NE(session.executor->lastSummary().find("workspace: 1024 bytes"), std::string::npos)
      << session.executor->lastSummary();
  session.expectClean();
}

}  // namespace
}  // namespace onnxopt::runtime
