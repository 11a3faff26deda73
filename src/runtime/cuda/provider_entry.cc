// The entry point of libonnxopt_cuda.so (provider.h): the only symbol the library exports
// (cuda_provider.map hides the rest, so its static copies of the layers never meet the host's).
#include "provider.h"

#ifndef ONNXOPT_VERSION
#error "ONNXOPT_VERSION must be defined by the build"
#endif

extern "C" __attribute__((visibility("default")))
const onnxopt::runtime::cuda_detail::CudaProviderV1*
onnxopt_cuda_provider_v1() {
  using onnxopt::runtime::cuda_detail::CudaProviderV1;
  static const CudaProviderV1 table{onnxopt::runtime::cuda_detail::kCudaProviderAbi,
                                    ONNXOPT_VERSION,
                                    &onnxopt::runtime::cuda_detail::createNativeCudaDeviceApi};
  return &table;
}
