// The CUDA executor's host side, without a device (CI): feeds checked before anything runs, the
// clean error where there is no device, the runner's name in the registry, and the bundled test
// models planning for the CUDA kernels without what the executor does not run yet.
#include <gtest/gtest.h>

#include <algorithm>

#include "model_feeds.h"
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

// What the GPU suite runs must plan for the CUDA kernels without the nodes the executor refuses
// (run-time shapes, subgraph ops on the CPU): otherwise the GPU run would only report them.
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

}  // namespace
}  // namespace onnxopt::runtime
