// Device helpers of the row-wise kernels (softmax.cu, norm.cu): float sums and maxima and index
// minima over a warp or a whole block, every thread receiving the result, and the launch shape
// that gives a row to a warp (short rows) or to a block (long ones).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace onnxopt::kernels::cuda {

struct SumOp {
  using Value = float;
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  static constexpr float kIdentity = 0.0f;
};

/// fmaxf: a NaN element is skipped, as std::max(running, x) in the reference kernels skips it.
struct MaxOp {
  using Value = float;
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  static constexpr float kIdentity = -__builtin_huge_valf();
};

/// The smallest index (Hardmax's first maximum).
struct MinIndexOp {
  using Value = long long;
  __device__ __forceinline__ long long operator()(long long a, long long b) const {
    return a < b ? a : b;
  }
  static constexpr long long kIdentity = 0x7fffffffffffffffLL;
};

template <typename Op>
__device__ __forceinline__ typename Op::Value warpReduce(typename Op::Value v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

/// The reduction over the whole block (blockDim.x a multiple of 32, at most 1024); every thread
/// of the block must call it. `scratch` is 32 values of shared memory, reusable right after.
template <typename Op>
__device__ __forceinline__ typename Op::Value blockReduce(typename Op::Value v, Op op,
                                                          typename Op::Value* scratch) {
  v = warpReduce(v, op);
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int warps = static_cast<int>(blockDim.x) >> 5;
  __syncthreads();  // an earlier call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : Op::kIdentity;
  return warpReduce(v, op);
}

/// A row's reduction: over its warp (kWarpRow) or over the block.
template <bool kWarpRow, typename Op>
__device__ __forceinline__ typename Op::Value rowReduce(typename Op::Value v, Op op,
                                                        typename Op::Value* scratch) {
  if constexpr (kWarpRow) {
    return warpReduce(v, op);
  } else {
    return blockReduce(v, op, scratch);
  }
}

inline constexpr int kRowThreads = 256;
/// Rows up to this length go to one warp each (kRowThreads / 32 rows per block).
inline constexpr int64_t kWarpRowMax = 1024;

/// The threads of one row and the first row of this thread: a warp per row or a block per row.
template <bool kWarpRow>
struct RowSlot {
  int lane;        ///< this thread's index within its row's threads
  int lanes;       ///< threads per row
  int64_t row;     ///< the first row of this thread
  int64_t stride;  ///< rows between this thread's successive rows
  __device__ __forceinline__ RowSlot() {
    const int64_t rows_per_block = kWarpRow ? blockDim.x / 32 : 1;
    lane = kWarpRow ? static_cast<int>(threadIdx.x) & 31 : static_cast<int>(threadIdx.x);
    lanes = kWarpRow ? 32 : static_cast<int>(blockDim.x);
    row = static_cast<int64_t>(blockIdx.x) * rows_per_block + (kWarpRow ? threadIdx.x / 32 : 0);
    stride = static_cast<int64_t>(gridDim.x) * rows_per_block;
  }
};

/// The most 16-byte vectors a lane keeps of a register-cached row (norm.cu's and softmax.cu's
/// vector kernels): they take rows of up to 32 * kMaxRowChunks vectors.
inline constexpr int kMaxRowChunks = 8;

/// `launch(std::integral_constant<int, C>{})` with C the fewest of 1, 2, 4 or kMaxRowChunks
/// vectors a lane that covers a row of `vectors` 16-byte vectors on one warp.
template <typename F>
void withRowChunks(int64_t vectors, F&& launch) {
  const int64_t per_lane = (vectors + 31) / 32;
  if (per_lane <= 1) {
    launch(std::integral_constant<int, 1>{});
  } else if (per_lane <= 2) {
    launch(std::integral_constant<int, 2>{});
  } else if (per_lane <= 4) {
    launch(std::integral_constant<int, 4>{});
  } else {
    launch(std::integral_constant<int, kMaxRowChunks>{});
  }
}

/// Blocks for `rows` rows (grid-stride beyond 2^20 blocks).
inline unsigned rowBlocks(int64_t rows, bool warp_row) {
  const int64_t per_block = warp_row ? kRowThreads / 32 : 1;
  int64_t blocks = (rows + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < (int64_t{1} << 20) ? blocks : (int64_t{1} << 20));
}

}  // namespace onnxopt::kernels::cuda
