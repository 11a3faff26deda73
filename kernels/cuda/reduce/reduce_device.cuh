// Device helpers the reduction kernels share (reduce.cu, arg_reduce.cu, scan.cu, topk.cu): the
// input offsets of an output and of a reduced element (ReduceLayout), elements as accumulators
// read them, and lane groups: a block of up to kThreads threads split into `per_block` groups of
// `lanes` threads, each group combining one output's elements and then its lanes' partial
// results through shared memory.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/reduce/reduce_layout.h"

namespace onnxopt::kernels::cuda {

/// The offset of row-major index `i` over `rank` dims with `strides`.
__device__ __forceinline__ int64_t stridedOffset(const int64_t* dims, const int64_t* strides,
                                                 int rank, int64_t i) {
  if (rank == 1) return i * strides[0];
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return off;
}

/// The input offset of output `o`'s first element (o walks the kept dims in row-major order).
__device__ __forceinline__ int64_t keptOffset(const ReduceLayout& layout, int64_t o) {
  return stridedOffset(layout.kept_dims, layout.kept_strides, layout.kept_rank, o);
}

/// The offset of the group's element `r` from the output's first element.
__device__ __forceinline__ int64_t reducedOffset(const ReduceLayout& layout, int64_t r) {
  return stridedOffset(layout.reduced_dims, layout.reduced_strides, layout.reduced_rank, r);
}

/// This thread's place in its block: group `sub` of `per_block`, lane `lane` of `lanes`. Lanes
/// are neighbouring threads for rows (neighbouring reduced elements are neighbours in memory)
/// and `per_block` threads apart for columns (neighbouring outputs are).
struct LaneGroup {
  int lanes;
  int per_block;
  int sub;
  int lane;
  int lane_stride;  ///< threads between two lanes of one group
  int first;        ///< the thread of lane 0
};

__device__ __forceinline__ LaneGroup laneGroup(int lanes, int per_block, bool columns) {
  int t = static_cast<int>(threadIdx.x);
  if (columns) return {lanes, per_block, t % per_block, t / per_block, per_block, t % per_block};
  return {lanes, per_block, t / lanes, t % lanes, 1, (t / lanes) * lanes};
}

/// Combines the `lanes` values of each group with `combine` (a tree in shared memory `smem` of
/// blockDim.x elements) and returns the result to every lane. Every thread of the block calls it.
template <typename A, typename Combine>
__device__ __forceinline__ A groupReduce(A* smem, const LaneGroup& g, A v, Combine combine) {
  smem[threadIdx.x] = v;
  __syncthreads();
  for (int s = g.lanes / 2; s > 0; s >>= 1) {
    if (g.lane < s) {
      smem[threadIdx.x] = combine(smem[threadIdx.x], smem[threadIdx.x + s * g.lane_stride]);
    }
    __syncthreads();
  }
  A out = smem[g.first];
  __syncthreads();
  return out;
}

/// Calls f(o, valid, origin, count) for each output of this thread's group: `o` the output
/// index, `valid` whether it exists (every thread of the block makes the same calls, so that f
/// may call groupReduce), `origin` the input offset of its first element and `count` the
/// elements to read (0 when not valid).
template <typename F>
__device__ __forceinline__ void forEachOutput(const ReduceLayout& layout, const LaneGroup& g, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * g.per_block;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * g.per_block; base < layout.outputs;
       base += step) {
    const int64_t o = base + g.sub;
    const bool valid = o < layout.outputs;
    f(o, valid, valid ? keptOffset(layout, o) : int64_t{0}, valid ? layout.group : int64_t{0});
  }
}

/// An input element as the accumulator reads it (integers sign-extended into uint64).
template <typename A, typename C>
__device__ __forceinline__ A toAcc(C v) {
  if constexpr (std::is_same_v<A, uint64_t>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  } else {
    return static_cast<A>(v);
  }
}

/// The smallest power of two >= n (1 for n <= 1), at most `cap`.
inline int powerOfTwoAtLeast(int64_t n, int cap) {
  int p = 1;
  while (p < cap && p < n) p *= 2;
  return p;
}

/// Lanes and groups per block for `layout`: rows give a group up to 32 lanes (kThreads for one
/// output or long rows), columns up to 32 outputs per block and the rest of the block as lanes.
struct LaneShape {
  int lanes;
  int per_block;
  unsigned blocks;
};

inline LaneShape laneShape(const ReduceLayout& layout) {
  LaneShape s{};
  if (layout.columns) {
    s.per_block = powerOfTwoAtLeast(layout.outputs, 32);
    s.lanes = powerOfTwoAtLeast(layout.group, kThreads / s.per_block);
  } else {
    bool wide = layout.outputs == 1 || layout.group >= 4096;
    s.lanes = powerOfTwoAtLeast(layout.group, wide ? kThreads : 32);
    s.per_block = powerOfTwoAtLeast(layout.outputs, kThreads / s.lanes);
  }
  int64_t blocks = (layout.outputs + s.per_block - 1) / s.per_block;
  s.blocks = static_cast<unsigned>(blocks < (int64_t{1} << 20) ? blocks : (int64_t{1} << 20));
  return s;
}

}  // namespace onnxopt::kernels::cuda
