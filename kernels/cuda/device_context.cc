// CudaDeviceContext (include/onnxopt/kernels/cuda.h, device_context.h): the device and its SM
// count probed at creation, the cuBLASLt and cuDNN handles created on first use and destroyed
// with the context.
#include "kernels/cuda/device_context.h"

#include <cuda_runtime.h>

#include "kernels/cuda/conv/cudnn.h"
#include "onnxopt/kernels/tuning_cache.h"

namespace onnxopt::kernels {

CudaDeviceContext::Libraries::~Libraries() {
  // The caches hold descriptors and plans made with the handles: gone first.
  conv.reset();
  if (cudnn != nullptr) (void)cudnnDestroy(cudnn);
  if (lt != nullptr) (void)cublasLtDestroy(lt);
}

CudaDeviceContext::CudaDeviceContext(CudaStream stream, int device, int sm_count, Tf32 tf32,
                                     std::unique_ptr<TuningCache> tuning)
    : stream_(stream),
      device_(device),
      sm_count_(sm_count),
      tf32_(tf32),
      tuning_(std::move(tuning)),
      libraries_(std::make_unique<Libraries>()) {}

CudaDeviceContext::~CudaDeviceContext() = default;

StatusOr<std::unique_ptr<CudaDeviceContext>> CudaDeviceContext::create(
    CudaStream stream, const CudaContextOptions& options) {
  std::unique_ptr<TuningCache> tuning;
  if (!options.tuning_cache.empty()) {
    ASSIGN_OR_RETURN(tuning, TuningCache::open(options.tuning_cache));
  }
  int device = 0, sms = 0;
  ONNXOPT_CUDA_CHECK(cudaGetDevice(&device), "cuda");
  ONNXOPT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cuda");
  return std::unique_ptr<CudaDeviceContext>(
      new CudaDeviceContext(stream, device, sms, options.tf32, std::move(tuning)));
}

namespace cuda {

StatusOr<cublasLtHandle_t> ltHandle(CudaDeviceContext& ctx, const std::string& op) {
  CudaDeviceContext::Libraries& libs = ctx.libraries();
  if (libs.lt == nullptr) ONNXOPT_CUDA_CHECK(cublasLtCreate(&libs.lt), op);
  return libs.lt;
}

StatusOr<cudnnHandle_t> cudnnHandle(CudaDeviceContext& ctx, const std::string& op) {
  CudaDeviceContext::Libraries& libs = ctx.libraries();
  if (libs.cudnn == nullptr) {
    ONNXOPT_CUDA_CHECK(cudnnCreate(&libs.cudnn), op);
    ONNXOPT_CUDA_CHECK(cudnnSetStream(libs.cudnn, streamOf(ctx.stream())), op);
  }
  return libs.cudnn;
}

}  // namespace cuda
}  // namespace onnxopt::kernels
