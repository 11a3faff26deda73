// Device code of the Reduce* family (reduce.h): one kernel per (element type, reduction) that
// combines each output's group of input elements (ReduceLayout) in lane groups. Accumulation
// follows the reference kernels: float for the floating types, the element type's wrapping
// arithmetic for integer sums and products (done in uint64, whose low bits are the same), the
// element type itself for integer and bool Max/Min, double for integer L2/LogSum/LogSumExp.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/reduce/reduce_device.cuh"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

namespace {

template <typename T, ReduceOp K>
using Acc = std::conditional_t<
    kIsFloating<T>, float,
    std::conditional_t<
        K == ReduceOp::kL2 || K == ReduceOp::kLogSum || K == ReduceOp::kLogSumExp, double,
        std::conditional_t<K == ReduceOp::kMax || K == ReduceOp::kMin, T, uint64_t>>>;

template <typename A>
__device__ __forceinline__ A lowestOf() {
  if constexpr (std::is_same_v<A, bool>) {
    return false;
  } else if constexpr (std::is_floating_point_v<A>) {
    return static_cast<A>(-INFINITY);
  } else if constexpr (std::is_same_v<A, int8_t>) {
    return INT8_MIN;
  } else if constexpr (std::is_same_v<A, int32_t>) {
    return INT32_MIN;
  } else if constexpr (std::is_same_v<A, int64_t>) {
    return INT64_MIN;
  } else {
    return 0;
  }
}

template <typename A>
__device__ __forceinline__ A highestOf() {
  if constexpr (std::is_same_v<A, bool>) {
    return true;
  } else if constexpr (std::is_floating_point_v<A>) {
    return static_cast<A>(INFINITY);
  } else if constexpr (std::is_same_v<A, int8_t>) {
    return INT8_MAX;
  } else if constexpr (std::is_same_v<A, uint8_t>) {
    return UINT8_MAX;
  } else if constexpr (std::is_same_v<A, int32_t>) {
    return INT32_MAX;
  } else {
    return INT64_MAX;
  }
}

template <typename A, ReduceOp K>
__device__ __forceinline__ A identity() {
  if constexpr (K == ReduceOp::kMax) return lowestOf<A>();
  if constexpr (K == ReduceOp::kMin) return highestOf<A>();
  if constexpr (K == ReduceOp::kProd) return A(1);
  return A(0);
}

/// |v| for an accumulator holding a sign-extended integer or a float.
template <typename A>
__device__ __forceinline__ A absOf(A v) {
  if constexpr (std::is_same_v<A, uint64_t>) {
    return static_cast<int64_t>(v) < 0 ? uint64_t{0} - v : v;
  } else {
    return v < A(0) ? -v : v;
  }
}

/// Max/Min as the reference kernels do it: a NaN anywhere makes the result NaN.
template <bool kMax, typename A>
__device__ __forceinline__ A pick(A a, A v) {
  if constexpr (std::is_floating_point_v<A>) {
    if (isnan(v) || isnan(a)) return isnan(a) ? a : v;
  }
  if constexpr (kMax) {
    return v > a ? v : a;
  } else {
    return v < a ? v : a;
  }
}

/// Folds one input element into the accumulator.
template <ReduceOp K, typename A>
__device__ __forceinline__ A step(A acc, A v) {
  if constexpr (K == ReduceOp::kProd) return acc * v;
  if constexpr (K == ReduceOp::kL1) return acc + absOf(v);
  if constexpr (K == ReduceOp::kL2 || K == ReduceOp::kSumSquare) return acc + v * v;
  if constexpr (K == ReduceOp::kMax) return pick<true>(acc, v);
  if constexpr (K == ReduceOp::kMin) return pick<false>(acc, v);
  return acc + v;
}

/// Combines two lanes' partial results.
template <ReduceOp K>
struct Combine {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if constexpr (K == ReduceOp::kProd) return a * b;
    if constexpr (K == ReduceOp::kMax) return pick<true>(a, b);
    if constexpr (K == ReduceOp::kMin) return pick<false>(a, b);
    return a + b;
  }
};

struct MaxIgnoringNan {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return b > a ? b : a;
  }
};

/// The output value of an accumulated group of `group` elements.
template <typename T, ReduceOp K, typename A>
__device__ __forceinline__ Compute<T> finish(A acc, int64_t group) {
  if constexpr (kIsFloating<T>) {
    if constexpr (K == ReduceOp::kMean) return acc / static_cast<float>(group);
    if constexpr (K == ReduceOp::kL2) return sqrtf(acc);
    if constexpr (K == ReduceOp::kLogSum) return logf(acc);
    return acc;
  } else if constexpr (std::is_same_v<A, double>) {
    if constexpr (K == ReduceOp::kL2) return convertNumber<T>(sqrt(acc));
    return convertNumber<T>(log(acc));
  } else if constexpr (std::is_same_v<A, uint64_t>) {
    T t = static_cast<T>(acc);
    if constexpr (K == ReduceOp::kMean) return static_cast<T>(t / static_cast<T>(group));
    return t;
  } else {
    return acc;
  }
}

template <typename A>
__device__ __forceinline__ A expOf(A v) {
  if constexpr (std::is_same_v<A, float>) {
    return expf(v);
  } else {
    return exp(v);
  }
}

template <typename T, ReduceOp K>
__global__ void reduceKernel(ReduceDeviceArgs args, int lanes, int per_block) {
  using A = Acc<T, K>;
  __shared__ A smem[kThreads];
  const T* x = static_cast<const T*>(args.x);
  T* y = static_cast<T*>(args.y);
  const ReduceLayout& layout = args.layout;
  const LaneGroup g = laneGroup(lanes, per_block, layout.columns);
  forEachOutput(layout, g, [&](int64_t o, bool valid, int64_t origin, int64_t count) {
    const bool writes = valid && g.lane == 0;
    if constexpr (K == ReduceOp::kLogSumExp) {
      // The reference's two passes: the largest element (NaN ignored), then the sum of
      // exp(v - largest), the shift being 0 when the largest is infinite.
      A m = lowestOf<A>();
      for (int64_t r = g.lane; r < count; r += lanes) {
        A v = toAcc<A>(load(x, origin + reducedOffset(layout, r)));
        m = v > m ? v : m;
      }
      m = groupReduce(smem, g, m, MaxIgnoringNan{});
      const A shift = isinf(m) ? A(0) : m;
      A sum = 0;
      for (int64_t r = g.lane; r < count; r += lanes) {
        sum += expOf(toAcc<A>(load(x, origin + reducedOffset(layout, r))) - shift);
      }
      sum = groupReduce(smem, g, sum, Combine<ReduceOp::kSum>{});
      if (writes) {
        if constexpr (kIsFloating<T>) {
          store(y, o, logf(sum) + shift);
        } else {
          store(y, o, convertNumber<T>(log(sum) + shift));
        }
      }
    } else {
      A acc = identity<A, K>();
      for (int64_t r = g.lane; r < count; r += lanes) {
        acc = step<K>(acc, toAcc<A>(load(x, origin + reducedOffset(layout, r))));
      }
      acc = groupReduce(smem, g, acc, Combine<K>{});
      if (writes) store(y, o, finish<T, K>(acc, layout.group));
    }
  });
}

/// A split reduction's first pass: block b folds chunk b % splits of output b / splits's group
/// into one partial result in the workspace.
template <typename T, ReduceOp K>
__global__ void reduceChunksKernel(ReduceDeviceArgs args, int64_t splits) {
  using A = Acc<T, K>;
  __shared__ A smem[kThreads];
  const T* x = static_cast<const T*>(args.x);
  A* partial = static_cast<A*>(args.workspace);
  const ReduceLayout& layout = args.layout;
  const LaneGroup g = laneGroup(kThreads, 1, false);
  const int64_t chunk = (layout.group + splits - 1) / splits;
  for (int64_t b = blockIdx.x; b < layout.outputs * splits; b += gridDim.x) {
    const int64_t origin = keptOffset(layout, b / splits);
    const int64_t begin = (b % splits) * chunk;
    const int64_t end = begin + chunk < layout.group ? begin + chunk : layout.group;
    A acc = identity<A, K>();
    for (int64_t r = begin + threadIdx.x; r < end; r += kThreads) {
      acc = step<K>(acc, toAcc<A>(load(x, origin + reducedOffset(layout, r))));
    }
    acc = groupReduce(smem, g, acc, Combine<K>{});
    if (threadIdx.x == 0) partial[b] = acc;
  }
}

/// A split reduction's second pass: each output combines its chunks' partial results.
template <typename T, ReduceOp K>
__global__ void reduceFinishKernel(ReduceDeviceArgs args, int64_t splits) {
  using A = Acc<T, K>;
  const A* partial = static_cast<const A*>(args.workspace);
  T* y = static_cast<T*>(args.y);
  ONNXOPT_GRID_STRIDE(o, args.layout.outputs) {
    A acc = partial[o * splits];
    for (int64_t c = 1; c < splits; ++c) acc = Combine<K>{}(acc, partial[o * splits + c]);
    store(y, o, finish<T, K>(acc, args.layout.group));
  }
}

template <typename T>
inline constexpr bool kIsByte = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>;

template <typename T, ReduceOp K>
cudaError_t launchOne(const ReduceDeviceArgs& args, cudaStream_t stream) {
  constexpr bool kComparesOnly = kIsByte<T> || std::is_same_v<T, bool>;
  if constexpr (kComparesOnly && K != ReduceOp::kMax && K != ReduceOp::kMin) {
    return cudaErrorInvalidValue;  // not instantiated: reduceKernelExists says no
  } else {
    if constexpr (K != ReduceOp::kLogSumExp) {
      const int64_t splits = reduceSplits(args.op, args.layout);
      if (splits > 1 && args.workspace != nullptr &&
          args.workspace_bytes >= reduceWorkspaceBytes(args.op, args.layout)) {
        unsigned blocks = static_cast<unsigned>(args.layout.outputs * splits);  // at most 256
        reduceChunksKernel<T, K><<<blocks, kThreads, 0, stream>>>(args, splits);
        if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
        reduceFinishKernel<T, K>
            <<<blocksFor(args.layout.outputs), kThreads, 0, stream>>>(args, splits);
        return cudaGetLastError();
      }
    }
    LaneShape s = laneShape(args.layout);
    unsigned threads = static_cast<unsigned>(s.lanes * s.per_block);
    reduceKernel<T, K><<<s.blocks, threads, 0, stream>>>(args, s.lanes, s.per_block);
    return cudaGetLastError();
  }
}

template <typename T>
cudaError_t launchTyped(const ReduceDeviceArgs& args, cudaStream_t stream) {
  switch (args.op) {
    case ReduceOp::kSum:
      return launchOne<T, ReduceOp::kSum>(args, stream);
    case ReduceOp::kMean:
      return launchOne<T, ReduceOp::kMean>(args, stream);
    case ReduceOp::kMax:
      return launchOne<T, ReduceOp::kMax>(args, stream);
    case ReduceOp::kMin:
      return launchOne<T, ReduceOp::kMin>(args, stream);
    case ReduceOp::kProd:
      return launchOne<T, ReduceOp::kProd>(args, stream);
    case ReduceOp::kL1:
      return launchOne<T, ReduceOp::kL1>(args, stream);
    case ReduceOp::kL2:
      return launchOne<T, ReduceOp::kL2>(args, stream);
    case ReduceOp::kSumSquare:
      return launchOne<T, ReduceOp::kSumSquare>(args, stream);
    case ReduceOp::kLogSum:
      return launchOne<T, ReduceOp::kLogSum>(args, stream);
    case ReduceOp::kLogSumExp:
      return launchOne<T, ReduceOp::kLogSumExp>(args, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

bool reduceKernelExists(ReduceOp op, DataType dtype) {
  if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
    return isOrderedType(dtype) || dtype == DataType::kBool;  // bool: opset 20
  }
  return isAccumulatedType(dtype);
}

cudaError_t launchReduce(const ReduceDeviceArgs& args, cudaStream_t stream) {
  if (args.layout.outputs == 0) return cudaSuccess;
  if (!reduceKernelExists(args.op, args.dtype)) return cudaErrorInvalidValue;
  cudaError_t status = cudaErrorInvalidValue;
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    status = launchTyped<T>(args, stream);
  });
  return status;
}

}  // namespace onnxopt::kernels::cuda
