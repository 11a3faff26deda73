// The cuBLASLt basics the matrix-product kernels share (matmul.cc, rnn.cc): owning wrappers of
// cuBLASLt's descriptors, matrix layouts, and an element type's cudaDataType_t (the handle is the
// device context's: device_context.h). Host code only (cuBLASLt is a host API).
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <string>

#include "onnxopt/support/data_type.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels::cuda {

/// CUDA_R_16F for float16, CUDA_R_16BF for bfloat16, CUDA_R_32F otherwise.
cudaDataType_t cudaTypeOf(DataType t);

struct LtDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { (void)cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { (void)cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const {
    (void)cublasLtMatmulPreferenceDestroy(p);
  }
};
using LtDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDeleter>;
using LtLayout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDeleter>;
using LtPreference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDeleter>;

/// A column-major rows x cols layout with leading dim `ld`, `batch` matrices `stride` elements
/// apart.
StatusOr<LtLayout> makeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                              int32_t batch, int64_t stride, const std::string& op);

}  // namespace onnxopt::kernels::cuda
