// The CUDA side of the device layer, for kernels/cuda alone (the one folder that includes CUDA
// headers): CUDA, cuBLAS and cuDNN status codes as Status naming the call and the op, the
// ONNXOPT_CUDA_CHECK macro that every CUDA call goes through, and the stream handle's cast. The
// CUDA-free half (probe, DeviceStream, DeviceBuffer, copies) is declared in
// include/onnxopt/kernels/cuda.h and implemented in device.cc.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime.h>

#include <string>

#include "onnxopt/kernels/cuda.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels::cuda {

/// OK for cudaSuccess; otherwise kInternal (kResourceExhausted for out of memory, kUnimplemented
/// for no device or driver) "OP: CALL failed: cudaErrorX (description)". Reading the error also
/// clears CUDA's sticky last error for non-sticky codes.
Status toStatus(cudaError_t error, const char* call, const std::string& op);

/// OK for CUBLAS_STATUS_SUCCESS; otherwise "OP: CALL failed: CUBLAS_STATUS_X (description)",
/// kResourceExhausted for an allocation failure, kUnimplemented for an unsupported request.
Status toStatus(cublasStatus_t status, const char* call, const std::string& op);

/// The stream a CudaStream handle stands for.
inline cudaStream_t streamOf(CudaStream stream) {
  return static_cast<cudaStream_t>(stream);
}

}  // namespace onnxopt::kernels::cuda

/// Returns from the enclosing function with a Status naming `call` and `op` when a CUDA call
/// fails: ONNXOPT_CUDA_CHECK(cudaMemcpyAsync(...), args.op). It takes cudaError_t and
/// cublasStatus_t (cuBLASLt); an overload for cudnnStatus_t joins with the cuDNN wrappers.
#define ONNXOPT_CUDA_CHECK(call, op)                               \
  do {                                                             \
    ::onnxopt::Status _onnxopt_cuda_status =                       \
        ::onnxopt::kernels::cuda::toStatus((call), #call, (op));   \
    if (!_onnxopt_cuda_status.isOk()) return _onnxopt_cuda_status; \
  } while (0)
