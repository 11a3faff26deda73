// Loading the CUDA provider (src/runtime/cuda/provider_loader.cc): a provider of another ABI or
// another onnxopt version, or a file that is not one, is one error naming why, never a crash. The
// missing-file and not-a-library cases through opt are in tests/python/test_cuda_provider.py.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "runtime/cuda/device_api.h"
#include "runtime/cuda/provider.h"

namespace onnxopt::runtime::cuda_detail {
namespace {

/// The provider `path` is refused with "could not be loaded: " and a reason containing `why` (in a
/// build without CUDA, there is no provider to load and the runner says so).
void expectRefused(const std::string& path, const std::string& why) {
  ::setenv(kCudaProviderEnv, path.c_str(), 1);
  auto api = createCudaDeviceApi(0, kernels::CudaContextOptions{});
  ::unsetenv(kCudaProviderEnv);
  ASSERT_FALSE(api.isOk());
  const std::string& message = api.status().message();
  if (!ONNXOPT_CUDA_PROVIDER_BUILT) {
    EXPECT_NE(message.find("onnxopt was built without CUDA"), std::string::npos) << message;
    return;
  }
  EXPECT_EQ(message.rfind("cuda runner: the CUDA runtime could not be loaded: " + path + ": ", 0),
            0u)
      << message;
  EXPECT_NE(message.find(why), std::string::npos) << message;
}

TEST(CudaProvider, AnotherAbiIsRefused) {
  expectRefused(
      FAKE_PROVIDER_ABI,
      fmt::format("built for onnxopt {} (provider ABI {}), this is onnxopt {} (ABI {})",
                  ONNXOPT_VERSION, kCudaProviderAbi + 1, ONNXOPT_VERSION, kCudaProviderAbi));
}

TEST(CudaProvider, AnotherVersionIsRefused) {
  expectRefused(FAKE_PROVIDER_VERSION, "built for onnxopt 0.0.0-other");
}

TEST(CudaProvider, AMissingFileIsRefusedWithTheLinkersReason) {
  expectRefused("/nonexistent/libonnxopt_cuda.so",
                "cannot open shared object file: No such file or directory");
}

}  // namespace
}  // namespace onnxopt::runtime::cuda_detail
