// Device half of ScatterND and ScatterElements (scatter.h, indexing_device.h): one thread per
// update element, after the data was copied to the output. Reductions are atomic read-modify-write
// loops (compare-and-swap on the element's own 2, 4 or 8 bytes; on the aligned 4-byte word for
// 1-byte elements, which the host allows only when that word lies inside the output), computed as
// the reference does: float for float16/bfloat16, wrapping integer arithmetic.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/movement/indexing_device.h"
#include "kernels/cuda/movement/movement_device.cuh"

namespace onnxopt::kernels::cuda {

namespace {

template <typename T>
__device__ __forceinline__ T combine(T a, T b, ScatterReduction r) {
  if constexpr (std::is_same_v<T, bool>) {
    return b;  // bool takes no reduction (the host refuses one)
  } else {
    using C = Compute<T>;
    C x = load(&a, 0), y = load(&b, 0), z = y;
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      if (r == ScatterReduction::kAdd) z = static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
      if (r == ScatterReduction::kMul) {
        z = static_cast<T>(static_cast<uint64_t>(static_cast<U>(x)) * static_cast<U>(y));
      }
    } else {
      if (r == ScatterReduction::kAdd) z = x + y;
      if (r == ScatterReduction::kMul) z = x * y;
    }
    if (r == ScatterReduction::kMax) z = x < y ? y : x;  // std::max(x, y)
    if (r == ScatterReduction::kMin) z = y < x ? y : x;  // std::min(x, y)
    T out;
    store(&out, 0, z);
    return out;
  }
}

template <typename To, typename From>
__device__ __forceinline__ To bitsOf(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  memcpy(&out, &v, sizeof out);
  return out;
}

/// *p = combine(*p, v, r), atomically.
template <typename T>
__device__ void atomicCombine(T* p, T v, ScatterReduction r) {
  if constexpr (sizeof(T) == 1) {
    auto address = reinterpret_cast<uintptr_t>(p);
    auto* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
    unsigned shift = static_cast<unsigned>(address & 3) * 8;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      T cur = bitsOf<T>(static_cast<uint8_t>(assumed >> shift));
      unsigned next = bitsOf<uint8_t>(combine(cur, v, r));
      old = atomicCAS(word, assumed, (assumed & ~(0xFFu << shift)) | (next << shift));
    } while (assumed != old);
  } else {
    using U = std::conditional_t<sizeof(T) == 2, unsigned short,
                                 std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>>;
    U* word = reinterpret_cast<U*>(p);
    U old = *word, assumed;
    do {
      assumed = old;
      old = atomicCAS(word, assumed, bitsOf<U>(combine(bitsOf<T>(assumed), v, r)));
    } while (assumed != old);
  }
}

template <typename T>
__device__ __forceinline__ void apply(T* out, T v, ScatterReduction r) {
  if (r == ScatterReduction::kNone) {
    *out = v;
  } else {
    atomicCombine(out, v, r);
  }
}

template <typename T>
__global__ void scatterNDKernel(ScatterNDDeviceArgs a) {
  const T* updates = static_cast<const T*>(a.updates);
  T* out = static_cast<T*>(a.out);
  ONNXOPT_GRID_STRIDE(u, a.count) {
    int64_t base = tupleOffset(a.tuples, a.index, u / a.slice);
    if (base >= 0) apply(out + base + u % a.slice, updates[u], a.reduction);
  }
}

template <typename T>
__global__ void scatterElementsKernel(ScatterElementsDeviceArgs a) {
  const T* updates = static_cast<const T*>(a.updates);
  T* out = static_cast<T*>(a.out);
  ONNXOPT_GRID_STRIDE(e, a.count) {
    int64_t rest = e, idx = 0, upd = 0, dst = 0;
    for (int d = a.rank - 1; d >= 0; --d) {
      int64_t c = rest % a.dims[d];
      rest /= a.dims[d];
      idx += c * a.index_strides[d];
      upd += c * a.update_strides[d];
      if (d != a.axis) dst += c * a.out_strides[d];
    }
    int64_t v = wrappedIndex(a.index, a.int64_indices, idx, a.axis_dim);
    if (v >= 0) apply(out + dst + v * a.out_strides[a.axis], updates[upd], a.reduction);
  }
}

}  // namespace

bool scatterKernelExists(ScatterReduction reduction, DataType dtype) {
  if (dtype == DataType::kBool) return reduction == ScatterReduction::kNone;
  return visitCudaType(dtype, [](auto) {});
}

cudaError_t launchScatterND(const ScatterNDDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  bool known = visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    scatterNDKernel<T><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t launchScatterElements(const ScatterElementsDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  bool known = visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    scatterElementsKernel<T><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  });
  return known ? cudaGetLastError() : cudaErrorInvalidValue;
}

}  // namespace onnxopt::kernels::cuda
