// The device entry points of the reduction-like CUDA families (reduce.cu, arg_reduce.cu, scan.cu,
// topk.cu, fill.cu): plain types and cudaError_t only, so that each family's host half (its .cc)
// does the checks and Status messages and the .cu files hold kernels alone (fmt does not build
// under nvcc).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"
#include "reduce_layout.h"

namespace onnxopt::kernels::cuda {

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

struct ReduceDeviceArgs {
  ReduceOp op;
  DataType dtype;  ///< of input and output
  ReduceLayout layout;
  const void* x;
  void* y;  ///< contiguous, layout.outputs elements
};

struct ArgReduceDeviceArgs {
  bool is_max;          ///< ArgMax (else ArgMin)
  bool select_last;     ///< ties pick the last index (else the first)
  DataType dtype;       ///< of the input
  ReduceLayout layout;  ///< one reduced dim
  const void* x;
  int64_t* y;  ///< contiguous, layout.outputs indices
};

/// What the device code instantiates: canImplement asks these.
bool reduceKernelExists(ReduceOp op, DataType dtype);
bool argReduceKernelExists(DataType dtype);

/// Launch on `stream`; the launch status (cudaGetLastError) is returned. Nothing is launched for
/// an empty output. Arguments are not checked here: the host half did.
cudaError_t launchReduce(const ReduceDeviceArgs& args, cudaStream_t stream);
cudaError_t launchArgReduce(const ArgReduceDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
