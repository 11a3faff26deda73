// The CUDA side of CudaDeviceContext (include/onnxopt/kernels/cuda.h), for kernels/cuda alone: the
// library handles a context owns, made on first use on its device and stream, and a slot per
// family cache (the convolution algorithm choices), so that no kernel keeps device state in a
// static.
#pragma once

#include <cublasLt.h>
#include <cudnn.h>

#include <memory>
#include <string>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels {

/// A family's cache kept by a context (the conv family's: conv_algo.cc), destroyed with it.
struct CudaContextCache {
  virtual ~CudaContextCache() = default;
};

struct CudaDeviceContext::Libraries {
  Libraries() = default;
  Libraries(const Libraries&) = delete;
  Libraries& operator=(const Libraries&) = delete;
  ~Libraries();

  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  std::unique_ptr<CudaContextCache> conv;
};

namespace cuda {

/// The context's cuBLASLt handle, created on first use; a failure names `op`.
StatusOr<cublasLtHandle_t> ltHandle(CudaDeviceContext& ctx, const std::string& op);

/// The compute type of a cuBLASLt product of `t` operands on `ctx`: float32 accumulation, with
/// TF32 tensor cores for float32 operands where the context allows TF32 for matrix products.
inline cublasComputeType_t ltComputeType(const CudaDeviceContext& ctx, DataType t) {
  return t == DataType::kFloat && ctx.tf32Matmuls() ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                    : CUBLAS_COMPUTE_32F;
}

/// The context's cuDNN handle, created on first use, its stream set to the context's.
StatusOr<cudnnHandle_t> cudnnHandle(CudaDeviceContext& ctx, const std::string& op);

/// The context's cache of type `Cache` in `slot`, made on first use.
template <typename Cache>
Cache& contextCache(std::unique_ptr<CudaContextCache>& slot) {
  if (slot == nullptr) slot = std::make_unique<Cache>();
  return static_cast<Cache&>(*slot);
}

}  // namespace cuda
}  // namespace onnxopt::kernels
