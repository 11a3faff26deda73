// The device entry point of MatMulInteger and QLinearMatMul (kernels/cuda/gemm/quant_matmul.cu),
// in plain types for both the host half (quant_matmul.cc) and nvcc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

/// The most broadcast batch dims of one integer product.
inline constexpr int kQuantMatMulMaxBatch = 6;

/// Y[batch, M, N] = sum_k (A[batch, M, k] - za) (B[batch, k, N] - zb) over contiguous int8/uint8
/// A and B (1-D operands promoted: M or N is 1), the batch broadcast through element strides (0 on
/// a broadcast dim). Zero points and scales hold one element or one per row of A (M) / column of
/// B (N).
struct QuantMatMulDeviceArgs {
  bool requantize = false;  ///< QLinearMatMul (int8/uint8 Y); else MatMulInteger (int32 Y)
  bool a_signed = false, b_signed = false, y_signed = false;  ///< int8 (true) or uint8
  int64_t m = 1, n = 1, k = 1;
  int batch_rank = 0;
  int64_t batch_dims[kQuantMatMulMaxBatch] = {};
  int64_t a_batch_strides[kQuantMatMulMaxBatch] = {};
  int64_t b_batch_strides[kQuantMatMulMaxBatch] = {};
  const void* a = nullptr;
  const void* b = nullptr;
  const void* a_zero = nullptr;  ///< nullptr: 0
  int64_t a_zero_count = 1;
  const void* b_zero = nullptr;
  int64_t b_zero_count = 1;
  DataType scale_type = DataType::kFloat;  ///< QLinearMatMul: float, float16 or bfloat16
  const void* a_scale = nullptr;
  int64_t a_scale_count = 1;
  const void* b_scale = nullptr;
  int64_t b_scale_count = 1;
  const void* y_scale = nullptr;
  const void* y_zero = nullptr;
  void* y = nullptr;
  int64_t count = 0;  ///< elements of Y
};

cudaError_t launchQuantMatMul(const QuantMatMulDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
