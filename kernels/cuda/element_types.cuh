// Device-side helpers the elementwise kernels share: the C++ type of each element type the CUDA
// kernels handle, its compute type (float for the 16-bit floats), loads and stores through it,
// numeric conversion with the reference kernels' rules, broadcast offsets, and the launch shape.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/elementwise/broadcast_plan.h"
#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

template <typename T>
struct TypeTag {
  using type = T;
};

/// Calls f(TypeTag<T>{}) with the storage type of `dtype`; false for a type the CUDA kernels do
/// not handle (f is not called).
template <typename F>
__host__ bool visitCudaType(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat:
      f(TypeTag<float>{});
      return true;
    case DataType::kFloat16:
      f(TypeTag<__half>{});
      return true;
    case DataType::kBfloat16:
      f(TypeTag<__nv_bfloat16>{});
      return true;
    case DataType::kInt8:
      f(TypeTag<int8_t>{});
      return true;
    case DataType::kUint8:
      f(TypeTag<uint8_t>{});
      return true;
    case DataType::kInt32:
      f(TypeTag<int32_t>{});
      return true;
    case DataType::kInt64:
      f(TypeTag<int64_t>{});
      return true;
    case DataType::kBool:
      f(TypeTag<bool>{});
      return true;
    default:
      return false;
  }
}

template <typename T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <typename T>
inline constexpr bool kIsFloating = std::is_same_v<T, float> || kIsHalfLike<T>;

/// What arithmetic on T runs in: float for float16/bfloat16, T otherwise.
template <typename T>
using Compute = std::conditional_t<kIsHalfLike<T>, float, T>;

template <typename T>
__device__ __forceinline__ Compute<T> load(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(p[i]);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(p[i]);
  } else {
    return p[i];
  }
}

template <typename T>
__device__ __forceinline__ void store(T* p, int64_t i, Compute<T> v) {
  if constexpr (std::is_same_v<T, __half>) {
    p[i] = __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    p[i] = __float2bfloat16_rn(v);
  } else {
    p[i] = v;
  }
}

/// The reference kernels' conversion (kernels/reference/common.h convertNumber): to bool is
/// "not zero"; float to integer truncates toward zero, NaN becomes 0, out-of-range values saturate
/// to int64 and then wrap to narrower types.
template <typename To, typename From>
__device__ __forceinline__ To convertNumber(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(v ? 1 : 0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (isnan(v)) return 0;
    double d = trunc(static_cast<double>(v));
    int64_t i;
    if (d >= 9223372036854775808.0) {
      i = INT64_MAX;
    } else if (d < -9223372036854775808.0) {
      i = INT64_MIN;
    } else {
      i = static_cast<int64_t>(d);
    }
    return static_cast<To>(i);
  } else {
    return static_cast<To>(v);
  }
}

/// The element offsets of output element `i` in each of the plan's first N operands.
template <int N>
__device__ __forceinline__ void broadcastOffsets(const BroadcastPlan& plan, int64_t i,
                                                 int64_t (&off)[N]) {
  if (plan.linear) {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = i;
    return;
  }
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  if (plan.index32) {
    // Every index and offset fits in 31 bits (BroadcastPlan::index32): 32-bit division.
    uint32_t j = static_cast<uint32_t>(i);
    uint32_t o[N];
#pragma unroll
    for (int k = 0; k < N; ++k) o[k] = 0;
    for (int d = plan.rank - 1; d >= 0; --d) {
      uint32_t dim = static_cast<uint32_t>(plan.dims[d]);
      uint32_t c = j % dim;
      j /= dim;
#pragma unroll
      for (int k = 0; k < N; ++k) o[k] += c * static_cast<uint32_t>(plan.strides[k][d]);
    }
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = o[k];
    return;
  }
  for (int d = plan.rank - 1; d >= 0; --d) {
    int64_t dim = plan.dims[d];
    int64_t c = i % dim;
    i /= dim;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += c * plan.strides[k][d];
  }
}

inline constexpr int kThreads = 256;

/// 16 bytes of T: what one thread of a vectorized memory-bound kernel loads and stores at once
/// (one 128-bit transaction).
template <typename T>
inline constexpr int kVecElements = 16 / static_cast<int>(sizeof(T));
template <typename T>
struct alignas(16) Vec16 {
  T v[kVecElements<T>];
};

/// Whether `p` may be read as Vec16 (every arena buffer is; a view at an offset may not be).
inline bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

/// Blocks for a grid-stride loop over `items` that keeps every SM of the device full (8 blocks of
/// kThreads each, 2048 threads: the SM's limit) without launching more blocks than that: each
/// thread then loops over several items, which costs nothing for memory-bound work and saves the
/// block scheduling of a one-item-per-thread grid. `sm_count` is the device context's
/// (CudaDeviceContext::smCount); 0 (unknown) caps the grid as blocksFor does.
inline unsigned residentBlocksFor(int64_t items, int sm_count) {
  const int64_t resident = sm_count > 0 ? int64_t{sm_count} * 8 : int64_t{1} << 20;
  int64_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < resident ? (blocks > 0 ? blocks : 1) : resident);
}

/// Blocks for a grid-stride loop over `count` elements.
inline unsigned blocksFor(int64_t count) {
  int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < (int64_t{1} << 20) ? blocks : (int64_t{1} << 20));
}

#define ONNXOPT_GRID_STRIDE(i, count)                                                        \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

}  // namespace onnxopt::kernels::cuda
