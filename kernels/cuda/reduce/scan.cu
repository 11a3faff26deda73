// Device code of CumSum and CumProd (scan.h). Lines along the axis are scanned in the reference's order
// (reverse: from the end). A line whose axis is the innermost dim and long is scanned by one block
// in chunks of kThreads elements (a shared-memory scan per chunk, carried over); other lines by
// one thread each, neighbouring threads taking neighbouring lines (coalesced across the inner
// dims). Floating types accumulate in float; integers wrap as the element type does (in uint64,
// whose low bits are the same).
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/reduce/reduce_device.cuh"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

namespace {

template <typename T>
using ScanAcc = std::conditional_t<kIsFloating<T>, float, uint64_t>;

template <typename T, typename A>
__device__ __forceinline__ void storeAcc(T* y, int64_t i, A v) {
  if constexpr (std::is_same_v<A, uint64_t>) {
    y[i] = static_cast<T>(v);
  } else {
    store(y, i, v);
  }
}

/// Where element `k` of line `o` is written (the output is contiguous).
__device__ __forceinline__ int64_t outputOffset(const CumSumDeviceArgs& args, int64_t o,
                                                int64_t k) {
  return (o / args.inner) * args.layout.group * args.inner + k * args.inner + o % args.inner;
}

template <typename T>
__global__ void scanLinesKernel(CumSumDeviceArgs args) {
  using A = ScanAcc<T>;
  const T* x = static_cast<const T*>(args.x);
  T* y = static_cast<T*>(args.y);
  const ReduceLayout& layout = args.layout;
  const int64_t dim = layout.group;
  ONNXOPT_GRID_STRIDE(o, layout.outputs) {
    const int64_t origin = keptOffset(layout, o);
    A acc = args.prod ? A(1) : A(0);
    for (int64_t s = 0; s < dim; ++s) {
      const int64_t k = args.reverse ? dim - 1 - s : s;
      const A v = toAcc<A>(load(x, origin + reducedOffset(layout, k)));
      if (args.exclusive) storeAcc(y, outputOffset(args, o, k), acc);
      acc = args.prod ? acc * v : acc + v;
      if (!args.exclusive) storeAcc(y, outputOffset(args, o, k), acc);
    }
  }
}

template <typename T>
__global__ void scanRowsKernel(CumSumDeviceArgs args) {
  using A = ScanAcc<T>;
  __shared__ A sums[kThreads];
  const T* x = static_cast<const T*>(args.x);
  T* y = static_cast<T*>(args.y);
  const ReduceLayout& layout = args.layout;
  const int64_t dim = layout.group;
  const int t = static_cast<int>(threadIdx.x);
  for (int64_t o = blockIdx.x; o < layout.outputs; o += gridDim.x) {
    const int64_t origin = keptOffset(layout, o);
    const A unit = args.prod ? A(1) : A(0);
    A carry = unit;
    for (int64_t chunk = 0; chunk < dim; chunk += kThreads) {
      const int64_t s = chunk + t;
      const int64_t k = args.reverse ? dim - 1 - s : s;
      const A v = s < dim ? toAcc<A>(load(x, origin + reducedOffset(layout, k))) : unit;
      // Inclusive scan of the chunk (Hillis-Steele).
      sums[t] = v;
      __syncthreads();
      for (int step = 1; step < kThreads; step *= 2) {
        A other = t >= step ? sums[t - step] : unit;
        __syncthreads();
        sums[t] = args.prod ? sums[t] * other : sums[t] + other;
        __syncthreads();
      }
      if (s < dim) {
        A before = t > 0 ? sums[t - 1] : unit;
        A scanned = args.exclusive ? before : sums[t];
        storeAcc(y, outputOffset(args, o, k), args.prod ? carry * scanned : carry + scanned);
      }
      carry = args.prod ? carry * sums[kThreads - 1] : carry + sums[kThreads - 1];
      __syncthreads();
    }
  }
}

}  // namespace

bool cumSumKernelExists(DataType dtype) {
  return isAccumulatedType(dtype);
}

cudaError_t launchCumSum(const CumSumDeviceArgs& args, cudaStream_t stream) {
  if (args.layout.outputs == 0 || args.layout.group == 0) return cudaSuccess;
  if (!cumSumKernelExists(args.dtype)) return cudaErrorInvalidValue;
  // Rows: the axis is innermost and long enough to share among a block.
  const bool rows = args.inner == 1 && args.layout.group >= 64;
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || kIsHalfLike<T> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, int64_t>) {
      if (rows) {
        unsigned blocks = static_cast<unsigned>(
            args.layout.outputs < (int64_t{1} << 20) ? args.layout.outputs : (int64_t{1} << 20));
        scanRowsKernel<T><<<blocks, kThreads, 0, stream>>>(args);
      } else {
        scanLinesKernel<T><<<blocksFor(args.layout.outputs), kThreads, 0, stream>>>(args);
      }
    }
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
