// The shared cuBLASLt basics (cublas_lt.h).
#include "kernels/cuda/gemm/cublas_lt.h"

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

cudaDataType_t cudaTypeOf(DataType t) {
  switch (t) {
    case DataType::kFloat16:
      return CUDA_R_16F;
    case DataType::kBfloat16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

StatusOr<LtLayout> makeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                              int32_t batch, int64_t stride, const std::string& op) {
  cublasLtMatrixLayout_t raw = nullptr;
  ONNXOPT_CUDA_CHECK(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows),
                                                static_cast<uint64_t>(cols), ld),
                     op);
  LtLayout layout(raw);
  if (batch > 1) {
    ONNXOPT_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                        &batch, sizeof batch),
                       op);
    ONNXOPT_CUDA_CHECK(
        cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                         sizeof stride),
        op);
  }
  return layout;
}

}  // namespace onnxopt::kernels::cuda
