// The device entry points of the reduction-like CUDA families (reduce.cu, arg_reduce.cu, scan.cu,
// topk.cu, fill.cu, variadic.cu): plain types and cudaError_t only, so that each family's host half (its .cc)
// does the checks and Status messages and the .cu files hold kernels alone (fmt does not build
// under nvcc).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/reduce/reduce_layout.h"
#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

struct ReduceDeviceArgs {
  ReduceOp op;
  DataType dtype;  ///< of input and output
  ReduceLayout layout;
  const void* x;
  void* y;                    ///< contiguous, layout.outputs elements
  void* workspace = nullptr;  ///< reduceWorkspaceBytes for a split reduction (else one pass)
  size_t workspace_bytes = 0;
};

/// Into how many chunks each group is split across blocks (1: none). A few long groups (a whole
/// tensor into one output) would otherwise keep all but a few multiprocessors idle: the chunks'
/// partial results go to the workspace and a second kernel combines them. LogSumExp, whose two
/// passes need the group's maximum first, is not split.
inline int64_t reduceSplits(ReduceOp op, const ReduceLayout& layout) {
  if (op == ReduceOp::kLogSumExp || layout.group < 32768 || layout.outputs >= 128) return 1;
  int64_t by_size = layout.group / 8192;
  int64_t by_blocks = 256 / layout.outputs;
  int64_t splits = by_size < by_blocks ? by_size : by_blocks;
  return splits < 2 ? 1 : splits;
}

/// The workspace of a split reduction: one 8-byte partial result per chunk.
inline size_t reduceWorkspaceBytes(ReduceOp op, const ReduceLayout& layout) {
  int64_t splits = reduceSplits(op, layout);
  return splits == 1 ? 0 : static_cast<size_t>(layout.outputs * splits) * 8;
}

struct ArgReduceDeviceArgs {
  bool is_max;          ///< ArgMax (else ArgMin)
  bool select_last;     ///< ties pick the last index (else the first)
  DataType dtype;       ///< of the input
  ReduceLayout layout;  ///< one reduced dim
  const void* x;
  int64_t* y;  ///< contiguous, layout.outputs indices
};

struct CumSumDeviceArgs {
  DataType dtype;  ///< of input and output
  bool prod;       ///< CumProd: scan with * from 1 (else + from 0)
  bool exclusive;
  bool reverse;
  ReduceLayout layout;  ///< kept: the lines; reduced: the axis (layout.group elements)
  int64_t inner;        ///< product of the dims after the axis (the output is contiguous)
  const void* x;
  void* y;
};

struct TopKDeviceArgs {
  DataType dtype;  ///< of the input and the values
  bool largest;
  int64_t k;
  ReduceLayout layout;  ///< kept: the rows; reduced: the axis (layout.group elements)
  int64_t inner;        ///< product of the dims after the axis (the outputs are contiguous)
  const void* x;
  void* values;
  int64_t* indices;
};

/// The longest row TopK sorts (in shared memory).
inline constexpr int64_t kTopKMaxRow = 4096;
/// The largest k TopK selects from a longer row (one block reduction per element).
inline constexpr int64_t kTopKMaxSelect = 256;

struct RangeDeviceArgs {
  DataType dtype;
  int64_t count;
  /// start and delta: their bits (the element type's, zero-extended) when known when planning,
  /// else device scalars read by the kernel.
  bool by_value;
  uint64_t start_bits;
  uint64_t delta_bits;
  const void* start;
  const void* delta;
  void* y;
};

struct FillDeviceArgs {
  int element_bytes;  ///< 1, 2, 4 or 8
  uint64_t bits;      ///< the value's bits (zero-extended)
  int64_t count;
  void* y;
};

/// The most inputs one Sum/Mean kernel reads.
inline constexpr int kMaxVariadicInputs = 8;

/// The variadic ops: one value per op of ops.def's CUDA_VARIADIC rows (k<op>: Sum, Mean, Max,
/// Min).
enum class VariadicOp {
#define CUDA_VARIADIC(op, ...) k##op,
#include "kernels/cuda/ops.def"
};

struct VariadicDeviceArgs {
  VariadicOp op;
  DataType dtype;  ///< of every input and the output
  int inputs;      ///< 1 to kMaxVariadicInputs
  int rank;        ///< of the output, at most kMaxReduceRank
  int64_t count;   ///< output elements
  int64_t dims[kMaxReduceRank];
  int64_t strides[kMaxVariadicInputs]
                 [kMaxReduceRank];  ///< per input, in output order (0: broadcast)
  const void* x[kMaxVariadicInputs];
  void* y;  ///< contiguous
};

/// The element types the accumulating kernels (sums, products, scans) instantiate: float,
/// float16, bfloat16, int32, int64.
inline bool isAccumulatedType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16 ||
         t == DataType::kInt32 || t == DataType::kInt64;
}

/// The element types the comparing kernels (Max/Min, ArgMax/ArgMin, TopK) instantiate: the
/// accumulated ones, int8 and uint8.
inline bool isOrderedType(DataType t) {
  return isAccumulatedType(t) || t == DataType::kInt8 || t == DataType::kUint8;
}

/// What the device code instantiates: canImplement asks these.
bool reduceKernelExists(ReduceOp op, DataType dtype);
bool argReduceKernelExists(DataType dtype);
bool cumSumKernelExists(DataType dtype);
bool topKKernelExists(DataType dtype);
bool rangeKernelExists(DataType dtype);
bool variadicKernelExists(VariadicOp op, DataType dtype);

/// Launch on `stream`; the launch status (cudaGetLastError) is returned. Nothing is launched for
/// an empty output. Arguments are not checked here: the host half did.
cudaError_t launchReduce(const ReduceDeviceArgs& args, cudaStream_t stream);
cudaError_t launchArgReduce(const ArgReduceDeviceArgs& args, cudaStream_t stream);
cudaError_t launchCumSum(const CumSumDeviceArgs& args, cudaStream_t stream);
cudaError_t launchTopK(const TopKDeviceArgs& args, cudaStream_t stream);
cudaError_t launchRange(const RangeDeviceArgs& args, cudaStream_t stream);
cudaError_t launchFill(const FillDeviceArgs& args, cudaStream_t stream);
cudaError_t launchVariadic(const VariadicDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
