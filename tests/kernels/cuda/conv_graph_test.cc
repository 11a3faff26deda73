// The conv family inside a plan (label gpu, in the binary cuda_executor_tests): Conv with pads
// cuDNN cannot express (X staged), Relu, MaxPool asked for Indices (written, not compared: a near
// tie of two convolution outputs may pick the other element), ConvTranspose whose Y is a block of
// the adjoint's output (staged), AveragePool with ceil_mode and count_include_pad,
// GlobalAveragePool: every node on the device, sharing one workspace, against the reference
// executor, twice with the same plan (the cached algorithms reused).
#include <gtest/gtest.h>

#include "../../runtime/model_feeds.h"
#include "device_harness.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/plan.h"

namespace onnxopt::runtime {
namespace {

constexpr const char* kConvPool = R"(
<ir_version: 8, opset_import: ["" : 19]>
g (float[2,3,9,11] x, float[4,3,3,3] w1, float[4] b1, float[4,2,3,3] w2, float[2] b2)
    => (float[2,2,11,11] t, float[2,2,1,1] y) {
  c = Conv<pads = [0, 1, 2, 0]>(x, w1, b1)
  r = Relu(c)
  m, idx = MaxPool<kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], storage_order = 1>(r)
  t = ConvTranspose<strides = [2, 2], output_padding = [1, 1], pads = [1, 0, 0, 1]>(m, w2, b2)
  a = AveragePool<kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1, count_include_pad = 1, pads = [0, 0, 1, 1]>(t)
  y = GlobalAveragePool(a)
}
)";

class ConvGraphTest : public kernels::test::CudaTest {};

TEST_F(ConvGraphTest, EveryNodeOnTheDeviceMatchesTheReference) {
  auto model = test::parseInferred(kConvPool);
  ASSERT_TRUE(model);
  CudaOptions options;
  options.poison_byte = 0xA5;
  auto executor = CudaExecutor::create(*model, options);
  ASSERT_TRUE(executor.isOk()) << executor.status().toString();
  CudaExecutor& cuda = **executor;
  test::expectMatchesReference(cuda, *model, test::randomFeeds(*model, 1));
  ASSERT_TRUE(cuda.lastPlan());
  EXPECT_EQ(cuda.lastPlan()->countPlacement(Placement::kCpuFallback), 0) << cuda.lastSummary();
  test::expectMatchesReference(cuda, *model, test::randomFeeds(*model, 2));
  EXPECT_EQ(cuda.planHits(), 1);
}

}  // namespace
}  // namespace onnxopt::runtime
