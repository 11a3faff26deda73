// Device code of TopK (topk.h): one block per row along the axis, in the reference's total order
// (larger, or smaller, values first, NaN the largest, ties by the lower index). Rows of at most
// kTopKMaxRow elements are sorted in shared memory by a bitonic network (padded to a power of two
// with pairs that sort last) and the first k written; longer rows select their k elements one
// at a time, each the first in that order after the previous one (a block reduction per pick).
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/reduce/reduce_device.cuh"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The reference's order on values: NaN above everything.
template <typename C>
__device__ __forceinline__ bool totalLess(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (isnan(a)) return false;
    if (isnan(b)) return true;
  }
  return a < b;
}

template <typename C>
struct RowOrder {
  bool largest;
  int64_t dim;  ///< indices >= dim pad the row

  /// Whether element (va, ia) comes before (vb, ib).
  __device__ bool before(C va, int64_t ia, C vb, int64_t ib) const {
    if (ib >= dim) return ia < dim || ia < ib;
    if (ia >= dim) return false;
    bool less = largest ? totalLess(vb, va) : totalLess(va, vb);
    bool more = largest ? totalLess(va, vb) : totalLess(vb, va);
    if (less || more) return less;
    return ia < ib;
  }
};

/// Where the indices start in shared memory: after the keys, 8-byte aligned.
__host__ __device__ inline size_t orderOffset(int padded, size_t key_bytes) {
  return (static_cast<size_t>(padded) * key_bytes + 7) / 8 * 8;
}

template <typename T>
__global__ void topKKernel(TopKDeviceArgs args, int padded) {
  using C = Compute<T>;
  extern __shared__ unsigned char shared[];
  C* keys = reinterpret_cast<C*>(shared);
  int32_t* order = reinterpret_cast<int32_t*>(shared + orderOffset(padded, sizeof(C)));
  const T* x = static_cast<const T*>(args.x);
  T* values = static_cast<T*>(args.values);
  const ReduceLayout& layout = args.layout;
  const int64_t dim = layout.group;
  const RowOrder<C> row_order{args.largest, dim};
  for (int64_t o = blockIdx.x; o < layout.outputs; o += gridDim.x) {
    const int64_t origin = keptOffset(layout, o);
    for (int i = threadIdx.x; i < padded; i += blockDim.x) {
      keys[i] = i < dim ? load(x, origin + reducedOffset(layout, i)) : C(0);
      order[i] = i;
    }
    __syncthreads();
    for (int size = 2; size <= padded; size *= 2) {
      for (int stride = size / 2; stride > 0; stride /= 2) {
        for (int i = threadIdx.x; i < padded; i += blockDim.x) {
          int j = i ^ stride;
          if (j <= i) continue;
          // Ascending ("before" first) where bit `size` of i is clear, descending elsewhere.
          bool up = (i & size) == 0;
          bool swap = up ? row_order.before(keys[j], order[j], keys[i], order[i])
                         : row_order.before(keys[i], order[i], keys[j], order[j]);
          if (swap) {
            C kv = keys[i];
            keys[i] = keys[j];
            keys[j] = kv;
            int32_t ov = order[i];
            order[i] = order[j];
            order[j] = ov;
          }
        }
        __syncthreads();
      }
    }
    const int64_t outer = o / args.inner, inner = o % args.inner;
    for (int64_t j = threadIdx.x; j < args.k; j += blockDim.x) {
      int64_t at = (outer * args.k + j) * args.inner + inner;
      store(values, at, keys[j]);
      args.indices[at] = order[j];
    }
    __syncthreads();
  }
}

template <typename C>
struct Pick {
  C value;
  int64_t index;  ///< -1: none
};

/// Of two picks, the one first in the row's order.
template <typename C>
struct FirstInOrder {
  RowOrder<C> order;
  __device__ Pick<C> operator()(const Pick<C>& a, const Pick<C>& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    return order.before(b.value, b.index, a.value, a.index) ? b : a;
  }
};

template <typename T>
__global__ void topKSelectKernel(TopKDeviceArgs args) {
  using C = Compute<T>;
  __shared__ Pick<C> smem[kThreads];
  const T* x = static_cast<const T*>(args.x);
  T* values = static_cast<T*>(args.values);
  const ReduceLayout& layout = args.layout;
  const int64_t dim = layout.group;
  const FirstInOrder<C> first{RowOrder<C>{args.largest, dim}};
  const LaneGroup g = laneGroup(kThreads, 1, false);
  for (int64_t o = blockIdx.x; o < layout.outputs; o += gridDim.x) {
    const int64_t origin = keptOffset(layout, o);
    const int64_t outer = o / args.inner, inner = o % args.inner;
    Pick<C> previous{C(0), -1};
    for (int64_t j = 0; j < args.k; ++j) {
      Pick<C> best{C(0), -1};
      for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
        C v = load(x, origin + reducedOffset(layout, i));
        if (previous.index >= 0 && !first.order.before(previous.value, previous.index, v, i)) {
          continue;
        }
        best = first(best, Pick<C>{v, i});
      }
      best = groupReduce(smem, g, best, first);
      if (threadIdx.x == 0) {
        int64_t at = (outer * args.k + j) * args.inner + inner;
        store(values, at, best.value);
        args.indices[at] = best.index;
      }
      previous = best;
    }
  }
}

}  // namespace

bool topKKernelExists(DataType dtype) {
  return isOrderedType(dtype);
}

cudaError_t launchTopK(const TopKDeviceArgs& args, cudaStream_t stream) {
  if (args.layout.outputs == 0 || args.k == 0) return cudaSuccess;
  if (!topKKernelExists(args.dtype)) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>(
      args.layout.outputs < (int64_t{1} << 20) ? args.layout.outputs : (int64_t{1} << 20));
  if (args.layout.group > kTopKMaxRow) {
    if (args.k > kTopKMaxSelect) return cudaErrorInvalidValue;
    visitCudaType(args.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        topKSelectKernel<T><<<blocks, kThreads, 0, stream>>>(args);
      }
    });
    return cudaGetLastError();
  }
  const int padded = powerOfTwoAtLeast(args.layout.group, static_cast<int>(kTopKMaxRow));
  const unsigned threads =
      static_cast<unsigned>(padded / 2 < kThreads ? (padded < 64 ? 32 : padded / 2) : kThreads);
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      size_t bytes = orderOffset(padded, sizeof(Compute<T>)) + padded * sizeof(int32_t);
      topKKernel<T><<<blocks, threads, bytes, stream>>>(args, padded);
    }
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
