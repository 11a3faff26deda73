// The device entry points of the Einsum lowering (einsum.cu): plain types and cudaError_t only
// (einsum.cc plans and checks; .cu files include no Status or fmt). A strided copy that lays an
// operand out as [batch, M, K] / [batch, K, N] (or the product out in the output's order), a row
// sum for one-operand reductions, and the direct kernel for what the GEMM lowering does not take.
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

inline constexpr int kEinsumDirectMaxLabels = 16;
inline constexpr int kEinsumDirectMaxOperands = 8;

/// The direct evaluation, one thread per output element: Y[out] = sum over the summed labels of
/// prod_k X_k, every label a dim (the output's `out_rank` first, then `sum_rank` summed ones) and
/// each operand's element strides per label (summed where a label repeats: a diagonal; 0 where
/// it lacks or broadcasts the label). Floats accumulate in float (double for double), integers
/// wrap.
struct EinsumDirectArgs {
  DataType dtype = DataType::kFloat;
  int operands = 0;
  int out_rank = 0, sum_rank = 0;
  int64_t dims[kEinsumDirectMaxLabels] = {};
  int64_t strides[kEinsumDirectMaxOperands][kEinsumDirectMaxLabels] = {};
  const void* inputs[kEinsumDirectMaxOperands] = {};
  void* out = nullptr;
  int64_t out_count = 0, sum_count = 0;
};

/// Whether einsum.cu instantiates the direct kernel for `dtype`.
bool einsumDirectTypeExists(DataType dtype);

cudaError_t launchEinsumDirect(const EinsumDirectArgs& args, cudaStream_t stream);
cudaError_t launchStridedCopy(const StridedCopyArgs& args, cudaStream_t stream);
cudaError_t launchRowSum(const RowSumArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
