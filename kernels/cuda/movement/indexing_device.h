// The device entry points of the indexing, padding and masking kernels (gather.cu, scatter.cu,
// pad.cu, trilu.cu):
// plain types and cudaError_t only, so that the host halves (gather.cc, scatter.cc, pad.cc) do the
// checks and Status messages and the .cu files hold kernels alone (fmt does not build under nvcc).
// Elements move as raw bits of element_bytes (1, 2, 4 or 8); the Scatter reductions compute in
// the element type (float for float16/bfloat16).
//
// Out-of-range indices read on the device (indices that are not constants known when planning;
// constant ones are checked by canImplement, and the node then runs on the CPU, whose reference
// kernel reports them): Gather, GatherElements and GatherND write zero bits (0, 0.0, false) for
// such an element, and ScatterND and ScatterElements skip such an update. Nothing reads or writes
// out of bounds.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/elementwise/broadcast_plan.h"
#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

/// Gather: the output is [outer, indices, inner] of the contiguous data [outer, axis_dim, inner]
/// (element_bytes and inner may count words of several elements: gather.cc widens them).
struct GatherDeviceArgs {
  int element_bytes = 0;
  bool int64_indices = false;  ///< else int32
  int64_t outer = 0, axis_dim = 0, inner = 0;
  int64_t indices = 0;  ///< elements of the (contiguous) indices tensor
  const void* data = nullptr;
  const void* index = nullptr;
  void* out = nullptr;
};

/// GatherElements: the output has the index tensor's dims; every view may have any strides.
struct GatherElementsDeviceArgs {
  int element_bytes = 0;
  bool int64_indices = false;
  int rank = 0;
  int axis = 0;
  int64_t axis_dim = 0;
  int64_t count = 0;
  int64_t dims[kMaxRank] = {};  ///< of the indices and the output
  int64_t data_strides[kMaxRank] = {};
  int64_t index_strides[kMaxRank] = {};
  const void* data = nullptr;
  const void* index = nullptr;
  void* out = nullptr;  ///< contiguous
};

/// The k-deep index tuples of GatherND and ScatterND: tuple t (k contiguous indices) addresses
/// data element base(t) = (t / per_batch) * batch_stride + sum_d index[t * k + d] * strides[d],
/// each index d wrapped (negative from the end) within dims[d].
struct IndexTuples {
  bool int64_indices = false;
  int depth = 0;  ///< k
  int64_t per_batch = 1;
  int64_t batch_stride = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

/// GatherND: output element i is data[base(i / slice) + i % slice] (contiguous data and output).
struct GatherNDDeviceArgs {
  int element_bytes = 0;  ///< of the word moved: the data's element or a multiple of it
  IndexTuples tuples;
  int64_t slice = 0;       ///< words
  int64_t count = 0;       ///< words
  int64_t word_ratio = 1;  ///< elements per word (the tuples' offsets count elements)
  const void* data = nullptr;
  const void* index = nullptr;
  void* out = nullptr;
};

/// OneHot: output [outer, depth, inner] element (o, d, i) is values[1] when index (o, i)
/// (negative from the end of depth) is d, else values[0] (a 2-element device tensor).
struct OneHotDeviceArgs {
  int element_bytes = 0;
  bool int64_indices = false;
  int64_t outer = 0, depth = 0, inner = 0;
  const void* index = nullptr;
  const void* values = nullptr;
  void* out = nullptr;
};

/// ReverseSequence on the contiguous [d0, d1, inner] input: along the time axis (0 or 1; the batch
/// axis is the other) the first lens[b] steps of batch b reversed, the rest copied. A length
/// outside [0, steps] (read on the device) copies its sequence unreversed.
struct ReverseSequenceDeviceArgs {
  int element_bytes = 0;
  bool batch_first = false;  ///< batch_axis 0, time_axis 1
  int64_t d0 = 0, d1 = 0, inner = 0;
  const int64_t* lens = nullptr;
  const void* in = nullptr;
  void* out = nullptr;
};

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

/// ScatterND after the data was copied to the output: update u goes to out[base(u / slice) +
/// u % slice] (contiguous output and updates).
struct ScatterNDDeviceArgs {
  DataType dtype = DataType::kUndefined;
  ScatterReduction reduction = ScatterReduction::kNone;
  IndexTuples tuples;
  int64_t slice = 0;
  int64_t count = 0;  ///< updates
  const void* index = nullptr;
  const void* updates = nullptr;
  void* out = nullptr;
};

/// ScatterElements after the data was copied to the output: update element c (coordinates over
/// the indices' dims) goes to the output element with c's coordinates, the axis one replaced by
/// the index.
struct ScatterElementsDeviceArgs {
  DataType dtype = DataType::kUndefined;
  ScatterReduction reduction = ScatterReduction::kNone;
  bool int64_indices = false;
  int rank = 0;
  int axis = 0;
  int64_t axis_dim = 0;
  int64_t count = 0;
  int64_t dims[kMaxRank] = {};  ///< of the indices and the updates
  int64_t index_strides[kMaxRank] = {};
  int64_t update_strides[kMaxRank] = {};
  int64_t out_strides[kMaxRank] = {};
  const void* index = nullptr;
  const void* updates = nullptr;
  void* out = nullptr;
};

enum class PadMode { kConstant, kEdge, kReflect, kWrap };

/// Pad: per output dim d, output coordinate o reads input coordinate lo[d] + (o - shift[d]) when
/// that lies in [0, kept[d]), else (constant mode) the value, or the mode's mapping into the kept
/// range. The input may have any strides; the output is contiguous.
struct PadDeviceArgs {
  int element_bytes = 0;
  PadMode mode = PadMode::kConstant;
  int rank = 0;
  int64_t count = 0;
  int64_t dims[kMaxRank] = {};  ///< output
  int64_t in_strides[kMaxRank] = {};
  int64_t lo[kMaxRank] = {};
  int64_t kept[kMaxRank] = {};
  int64_t shift[kMaxRank] = {};
  uint64_t value_bits = 0;      ///< the constant, when `value` is nullptr
  const void* value = nullptr;  ///< a device scalar of the element type (constant_value), or null
  const void* in = nullptr;
  void* out = nullptr;
};

/// Trilu: element (..., i, j) of the contiguous [mats, rows, cols] input is kept when j - i >= k
/// (upper) or j - i <= k (lower), else zero bits; EyeLike (diagonal): `one_bits` where j - i == k,
/// zero bits elsewhere (no input read). k: `k_value`, or the int64 device scalar `k`.
enum class TriangleMode { kUpper, kLower, kDiagonal };

struct TriluDeviceArgs {
  int element_bytes = 0;
  TriangleMode mode = TriangleMode::kUpper;
  uint64_t one_bits = 0;  ///< kDiagonal: the element 1 of the output type
  int64_t rows = 0, cols = 0;
  int64_t count = 0;
  int64_t k_value = 0;
  const int64_t* k = nullptr;
  const void* in = nullptr;
  void* out = nullptr;
};

/// Whether scatter.cu has the reduction for `dtype` (every reduction for the numeric types,
/// kNone only for bool).
bool scatterKernelExists(ScatterReduction reduction, DataType dtype);

/// Launch on `stream`; the launch status is returned. Nothing is launched for no elements.
cudaError_t launchGather(const GatherDeviceArgs& args, cudaStream_t stream);
cudaError_t launchGatherElements(const GatherElementsDeviceArgs& args, cudaStream_t stream);
cudaError_t launchGatherND(const GatherNDDeviceArgs& args, cudaStream_t stream);
cudaError_t launchOneHot(const OneHotDeviceArgs& args, cudaStream_t stream);
cudaError_t launchReverseSequence(const ReverseSequenceDeviceArgs& args, cudaStream_t stream);
cudaError_t launchScatterND(const ScatterNDDeviceArgs& args, cudaStream_t stream);
cudaError_t launchScatterElements(const ScatterElementsDeviceArgs& args, cudaStream_t stream);
cudaError_t launchPad(const PadDeviceArgs& args, cudaStream_t stream);
cudaError_t launchTrilu(const TriluDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
