// The device entry points of the Einsum lowering (einsum.cu): plain types and cudaError_t only
// (einsum.cc plans and checks; .cu files include no Status or fmt). A strided copy that lays an
// operand out as [batch, M, K] / [batch, K, N] (or the product out in the output's order), and a
// row sum for one-operand reductions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

/// The most dims (distinct labels) a strided copy walks.
inline constexpr int kEinsumMaxRank = 12;

/// out[i] = in[offset(i)] for the contiguous output of `dims`, the offset through `in_strides`
/// (0 where the input broadcasts); elements of `element_bytes` (2 or 4) moved as raw bits.
struct StridedCopyArgs {
  int element_bytes = 4;
  int rank = 0;
  int64_t dims[kEinsumMaxRank] = {};
  int64_t in_strides[kEinsumMaxRank] = {};
  int64_t count = 0;
  const void* in = nullptr;
  void* out = nullptr;
};

/// out[r] = sum over c of in[r * cols + c], accumulated in float, for a float type.
struct RowSumArgs {
  DataType dtype = DataType::kFloat;
  int64_t rows = 0, cols = 0;
  const void* in = nullptr;
  void* out = nullptr;
};

cudaError_t launchStridedCopy(const StridedCopyArgs& args, cudaStream_t stream);
cudaError_t launchRowSum(const RowSumArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
