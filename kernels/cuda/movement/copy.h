// The strided copy every data-movement family (Transpose, Concat, Split, Slice, Expand, Tile,
// DepthToSpace, the data copy of the Scatter ops) lowers to: element (i0, i1, ...) of a source view
// goes to element (i0, i1, ...) of a destination view, each with its own element strides (negative
// for a reversed Slice, 0 for a broadcast dim), up to rank kMaxCopyRank after merging dims. Elements
// of 1, 2, 4 or 8 bytes are moved as raw bits, so one kernel serves every such element type (bool
// too); strings and sub-byte types are not movable. Host planning (copy.cc) merges the dims that
// both views walk contiguously and turns a plain contiguous copy into one cudaMemcpyAsync; the
// kernels (copy.cu): a grid-stride loop with 32-bit index math where the sizes allow it, moving
// up to 16 bytes per element where the innermost dim is contiguous on both sides, and a 32 x 32
// shared-memory tile for a true transpose (the destination's innermost dim strided in the
// source, another dim contiguous there).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "onnxopt/support/data_type.h"

#ifndef __CUDACC__
#include <string>

#include "kernels/cuda/args.h"
#include "onnxopt/support/status.h"
#endif

namespace onnxopt::kernels::cuda {

/// The highest rank of a copy after merging dims (Tile's copy doubles its rank).
inline constexpr int kMaxCopyRank = 16;

/// The widest word the copy kernel moves at once (copy.cu's uint4).
inline constexpr int kMaxWordBytes = 16;

/// One strided copy as the device runs it: `count` words, row-major over `dims`.
struct StridedCopy {
  int element_bytes = 0;  ///< of the words moved: 1, 2, 4, 8 or 16 (kMaxWordBytes)
  int rank = 0;
  int64_t count = 0;
  bool wide_index = false;  ///< offsets or the count need 64-bit arithmetic
  int64_t dims[kMaxCopyRank] = {};
  int64_t src_strides[kMaxCopyRank] = {};  ///< in elements
  int64_t dst_strides[kMaxCopyRank] = {};
  const void* src = nullptr;  ///< element (0, 0, ...) of the source
  void* dst = nullptr;        ///< element (0, 0, ...) of the destination
};

/// Bytes per element of a type the movement kernels move as raw bits (1, 2, 4 or 8), or 0 (strings,
/// sub-byte and undefined types).
int movableElementBytes(DataType type);

/// The copy of `dims` elements from `src` (element strides `src_strides`) to `dst` (`dst_strides`):
/// size-1 dims dropped, dims both sides walk contiguously merged, and a contiguous innermost dim
/// moved as words of up to kMaxWordBytes where its extent, the other strides and both pointers'
/// alignment allow (element_bytes, dims, strides and count are then of those words). nullopt when the merged rank
/// exceeds kMaxCopyRank. A copy of no elements has count 0.
std::optional<StridedCopy> planStridedCopy(int element_bytes, const std::vector<int64_t>& dims,
                                           const std::vector<int64_t>& src_strides, const void* src,
                                           const std::vector<int64_t>& dst_strides, void* dst);

/// Runs the copy on `stream`: nothing for count 0, cudaMemcpyAsync when both sides are one
/// contiguous run, the kernel otherwise. Returns the launch status.
cudaError_t launchStridedCopy(const StridedCopy& copy, cudaStream_t stream);

#ifndef __CUDACC__

/// `base` advanced by `elements` elements of `element_bytes` bytes (elements may be negative).
const void* advance(const void* base, int64_t elements, int element_bytes);
void* advance(void* base, int64_t elements, int element_bytes);

/// Copies the elements of `src` into `dst` (same dims, any strides on both sides, one element type
/// of movableElementBytes) on `stream`. kUnimplemented naming `op` when the copy needs more than
/// kMaxCopyRank dims, kInvalidArgument for dims or types that differ; a CUDA error names `op`.
Status copyView(const std::string& op, const ConstTensorView& src, const TensorView& dst,
                CudaStream stream);

/// One copy of a movement op: `src` into `dst` (same dims). The copy families (Transpose, Slice,
/// Expand, Concat, Split, Tile, DepthToSpace/SpaceToDepth) describe their work as a list of these
/// (their copyJobs), which launch runs and canImplement checks; host tests run them on host views.
struct CopyJob {
  ConstTensorView src;
  TensorView dst;
};

/// The checks of canImplement for a family's jobs: the jobs' error as a refusal, else each job's
/// copyViewSupport.
Support copyJobsSupport(const std::string& op, const StatusOr<std::vector<CopyJob>>& jobs);

/// Runs the jobs in order on `stream` (copyView each).
Status runCopyJobs(const std::string& op, const std::vector<CopyJob>& jobs, CudaStream stream);

/// Whether copyView can run the copy (the same checks, host-only, for canImplement).
Support copyViewSupport(const std::string& op, const ConstTensorView& src, const TensorView& dst);

/// The common checks of a movement op's data: one movable element type on input and output (the
/// reason names the op), both in device memory, at most `max_rank` dims.
Support movableSupport(const std::string& op, const ConstTensorView& x, const ConstTensorView& y,
                       int64_t max_rank = 8);

/// `view` narrowed to `size` entries of dim `axis` from `begin` (the same strides, the pointer
/// advanced): a Concat input's place in the output, a Split output's place in the input.
template <typename View>
View narrowed(const View& view, int64_t axis, int64_t begin, int64_t size) {
  View out = view;
  auto a = static_cast<size_t>(axis);
  out.dims[a] = size;
  if (size > 0) {
    out.data = advance(view.data, begin * view.strides[a], movableElementBytes(view.dtype));
  }
  return out;
}

/// `axis` in [-rank, rank) as a dim index, or kInvalidArgument naming `op`.
StatusOr<int64_t> normalizedAxis(const std::string& op, int64_t axis, int64_t rank);

/// "[2, 3, 4]" for messages.
std::string dimsText(const std::vector<int64_t>& dims);

#endif  // __CUDACC__

}  // namespace onnxopt::kernels::cuda
