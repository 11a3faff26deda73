// Device code of ArgMax/ArgMin (arg_reduce.h): each output's elements along the axis are folded
// into (value, index) candidates in lane groups (reduce_device.cuh). The reference scans in order
// and replaces its candidate only by a strictly better value (or an equal one with
// select_last_index), so a NaN never replaces one and a NaN first element is never replaced:
// here NaNs are skipped and a NaN first element decides the result (index 0).
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/reduce/reduce_device.cuh"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

namespace {

template <typename C>
struct Candidate {
  C value;
  int64_t index;  ///< -1: none yet
};

template <typename C>
struct Better {
  bool is_max;
  bool select_last;

  /// Whether `b` beats `a` (both real candidates).
  __device__ bool beats(const Candidate<C>& b, const Candidate<C>& a) const {
    if (b.value == a.value) return select_last ? b.index > a.index : b.index < a.index;
    return is_max ? b.value > a.value : b.value < a.value;
  }

  __device__ Candidate<C> operator()(const Candidate<C>& a, const Candidate<C>& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    return beats(b, a) ? b : a;
  }
};

template <typename T>
__global__ void argReduceKernel(ArgReduceDeviceArgs args, int lanes, int per_block) {
  using C = Compute<T>;
  __shared__ Candidate<C> smem[kThreads];
  const T* x = static_cast<const T*>(args.x);
  const ReduceLayout& layout = args.layout;
  const Better<C> better{args.is_max, args.select_last};
  const LaneGroup g = laneGroup(lanes, per_block, layout.columns);
  forEachOutput(layout, g, [&](int64_t o, bool valid, int64_t origin, int64_t count) {
    Candidate<C> best{C(0), -1};
    for (int64_t r = g.lane; r < count; r += lanes) {
      C v = load(x, origin + reducedOffset(layout, r));
      if constexpr (kIsFloating<T>) {
        if (isnan(v)) continue;
      }
      best = better(best, Candidate<C>{v, r});
    }
    best = groupReduce(smem, g, best, better);
    if (valid && g.lane == 0) {
      int64_t index = best.index < 0 ? 0 : best.index;
      if constexpr (kIsFloating<T>) {
        if (isnan(load(x, origin))) index = 0;
      }
      args.y[o] = index;
    }
  });
}

}  // namespace

bool argReduceKernelExists(DataType dtype) {
  return isOrderedType(dtype);
}

cudaError_t launchArgReduce(const ArgReduceDeviceArgs& args, cudaStream_t stream) {
  if (args.layout.outputs == 0) return cudaSuccess;
  if (!argReduceKernelExists(args.dtype)) return cudaErrorInvalidValue;
  LaneShape s = laneShape(args.layout);
  unsigned threads = static_cast<unsigned>(s.lanes * s.per_block);
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      argReduceKernel<T><<<s.blocks, threads, 0, stream>>>(args, s.lanes, s.per_block);
    }
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
