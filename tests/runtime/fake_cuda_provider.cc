// Providers the loader must refuse (tests/runtime/cuda_provider_test.cc): the entry point with
// another ABI number (FAKE_PROVIDER_KIND 1) or another onnxopt version (2).
#include "runtime/cuda/provider.h"

extern "C" __attribute__((visibility("default")))
const onnxopt::runtime::cuda_detail::CudaProviderV1*
onnxopt_cuda_provider_v1() {
  using onnxopt::runtime::cuda_detail::CudaProviderV1;
  using onnxopt::runtime::cuda_detail::kCudaProviderAbi;
#if FAKE_PROVIDER_KIND == 1
  static const CudaProviderV1 table{kCudaProviderAbi + 1, ONNXOPT_VERSION, nullptr};
#else
  static const CudaProviderV1 table{kCudaProviderAbi, "0.0.0-other", nullptr};
#endif
  return &table;
}
