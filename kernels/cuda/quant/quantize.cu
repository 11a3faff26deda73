// Device code of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (quantize_device.h),
// with the reference kernels' arithmetic: quantize x / scale in float, round half to even, add
// the zero point, NaN to 0, saturate to the integer range; dequantize (x - zero point) as float
// times scale; DynamicQuantizeLinear's range reduced in two passes, then its scale and zero point.
// float8, float4 and packed 2-/4-bit sides go through low_precision.cuh's codecs, with the
// reference's arithmetic for them (the quotient rounded in double, float8 zero points added in
// double before the encode), one output byte per thread where elements are packed.
#include <algorithm>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/quant/low_precision.cuh"
#include "kernels/cuda/quant/quantize_device.h"

namespace onnxopt::kernels::cuda {

namespace {

template <typename T>
__device__ __forceinline__ float loadFloat(const void* p, int64_t i) {
  return static_cast<float>(load(static_cast<const T*>(p), i));
}

__device__ __forceinline__ float scaleAt(const QuantizeDeviceArgs& a, int64_t s) {
  switch (a.scale_type) {
    case DataType::kFloat16:
      return loadFloat<__half>(a.scale, s);
    case DataType::kBfloat16:
      return loadFloat<__nv_bfloat16>(a.scale, s);
    default:
      return loadFloat<float>(a.scale, s);
  }
}

/// The scale (and zero point) index of element i.
__device__ __forceinline__ int64_t scaleIndex(const QuantizeDeviceArgs& a, int64_t i) {
  int64_t c = (i / a.inner) % a.axis_dim;
  if (a.block == 0) return c;
  int64_t j = i % a.inner, o = i / (a.inner * a.axis_dim);
  int64_t blocks = (a.axis_dim + a.block - 1) / a.block;
  return (o * blocks + c / a.block) * a.inner + j;
}

__device__ __forceinline__ int64_t zeroAt(const QuantizeDeviceArgs& a, int64_t s) {
  switch (a.zero_type) {
    case DataType::kInt8:
      return static_cast<const int8_t*>(a.zero)[s];
    case DataType::kUint8:
      return static_cast<const uint8_t*>(a.zero)[s];
    case DataType::kInt16:
      return static_cast<const int16_t*>(a.zero)[s];
    case DataType::kUint16:
      return static_cast<const uint16_t*>(a.zero)[s];
    case DataType::kInt32:
      return static_cast<const int32_t*>(a.zero)[s];
    default:
      return 0;
  }
}

template <typename X, typename Y>
__global__ void quantizeKernel(QuantizeDeviceArgs a) {
  const X* x = static_cast<const X*>(a.x);
  Y* y = static_cast<Y*>(a.y);
  constexpr int64_t bits = sizeof(Y) * 8;
  constexpr int64_t lo_int = std::is_signed_v<Y> ? -(int64_t{1} << (bits - 1)) : 0;
  constexpr int64_t hi_int =
      std::is_signed_v<Y> ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  constexpr auto lo = static_cast<float>(lo_int);
  constexpr auto hi = static_cast<float>(hi_int);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t s = scaleIndex(a, i);
    float k = rintf(static_cast<float>(load(x, i)) / scaleAt(a, s));
    k += static_cast<float>(zeroAt(a, s));
    if (isnan(k)) k = 0.0f;
    y[i] = static_cast<Y>(fminf(fmaxf(k, lo), hi));
  }
}

template <typename X, typename Y>
__global__ void dequantizeKernel(QuantizeDeviceArgs a) {
  const X* x = static_cast<const X*>(a.x);
  Y* y = static_cast<Y*>(a.y);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t s = scaleIndex(a, i);
    auto centered = static_cast<float>(static_cast<int64_t>(x[i]) - zeroAt(a, s));
    store(y, i, centered * scaleAt(a, s));
  }
}

/// The integer range of int4, uint4, int2 and uint2.
__device__ inline void packedRange(DataType t, double& lo, double& hi) {
  int bits = subByteBits(t);
  bool is_signed = t == DataType::kInt4 || t == DataType::kInt2;
  lo = is_signed ? -static_cast<double>(1 << (bits - 1)) : 0.0;
  hi =
      is_signed ? static_cast<double>((1 << (bits - 1)) - 1) : static_cast<double>((1 << bits) - 1);
}

/// The code of x[i] quantized into a low-precision y (the reference's QuantizeLinear).
template <typename X>
__device__ uint32_t quantizeLowCode(const QuantizeDeviceArgs& a, int64_t i) {
  int64_t s = scaleIndex(a, i);
  double v = static_cast<float>(load(static_cast<const X*>(a.x), i)) / scaleAt(a, s);
  bool has_zero = a.zero_type != DataType::kUndefined;
  MiniFloat f = miniFloatOf(a.y_type);
  if (f.exp_bits != 0) {
    if (has_zero) v += loadNum(a.zero_type, a.zero, s).f;
    return encodeMiniFloat(v, f, a.saturate);
  }
  double k = rint(v);
  if (has_zero) k += static_cast<double>(loadNum(a.zero_type, a.zero, s).i);
  if (isnan(k)) k = 0;
  double lo, hi;
  packedRange(a.y_type, lo, hi);
  k = k < lo ? lo : (k > hi ? hi : k);
  return static_cast<uint32_t>(static_cast<int64_t>(k)) & ((1u << subByteBits(a.y_type)) - 1u);
}

template <typename X>
__global__ void quantizeLowKernel(QuantizeDeviceArgs a) {
  ONNXOPT_GRID_STRIDE(u, lowUnits(a.y_type, a.count)) {
    storeLowUnit(a.y_type, a.y, u, a.count, [&](int64_t i) { return quantizeLowCode<X>(a, i); });
  }
}

/// A low-precision x dequantized into Y: (x - zero point) in double for the float types, in
/// int64 for the integers, as float, times the scale in float.
template <typename Y>
__global__ void dequantizeLowKernel(QuantizeDeviceArgs a) {
  bool has_zero = a.zero_type != DataType::kUndefined;
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t s = scaleIndex(a, i);
    DevNum x = loadNum(a.x_type, a.x, i);
    float centered;
    if (x.is_float) {
      double d = x.f;
      if (has_zero) d -= loadNum(a.zero_type, a.zero, s).f;
      centered = static_cast<float>(d);
    } else {
      int64_t d = x.i;
      if (has_zero) d -= loadNum(a.zero_type, a.zero, s).i;
      centered = static_cast<float>(d);
    }
    store(static_cast<Y*>(a.y), i, __fmul_rn(centered, scaleAt(a, s)));
  }
}

/// float8 (not E8M0), float4 E2M1 and the packed integers.
bool isLowQuant(DataType t) {
  return isLowPrecisionType(t) && t != DataType::kFloat8E8M0;
}

bool isQuantInt(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUint8 || t == DataType::kInt16 ||
         t == DataType::kUint16;
}

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

/// Block b's minimum and maximum of its grid-stride share of x (0 included), into partials.
__global__ void rangeKernel(DynamicQuantizeDeviceArgs a) {
  __shared__ float lo[kThreads], hi[kThreads];
  float l = 0.0f, h = 0.0f;
  ONNXOPT_GRID_STRIDE(i, a.count) {
    l = fminf(l, a.x[i]);
    h = fmaxf(h, a.x[i]);
  }
  lo[threadIdx.x] = l;
  hi[threadIdx.x] = h;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      lo[threadIdx.x] = fminf(lo[threadIdx.x], lo[threadIdx.x + half]);
      hi[threadIdx.x] = fmaxf(hi[threadIdx.x], hi[threadIdx.x + half]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    a.partials[2 * blockIdx.x] = lo[0];
    a.partials[2 * blockIdx.x + 1] = hi[0];
  }
}

/// One thread: the range of the partials, then y_scale and y_zero_point (the reference's float
/// arithmetic).
__global__ void scaleKernel(DynamicQuantizeDeviceArgs a, int blocks) {
  float lo = 0.0f, hi = 0.0f;
  for (int b = 0; b < blocks; ++b) {
    lo = fminf(lo, a.partials[2 * b]);
    hi = fmaxf(hi, a.partials[2 * b + 1]);
  }
  float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  float zero = rintf(fminf(fmaxf(0.0f - lo / scale, 0.0f), 255.0f));
  *a.y_scale = scale;
  *a.y_zero = static_cast<uint8_t>(zero);
}

__global__ void dynamicQuantizeKernel(DynamicQuantizeDeviceArgs a) {
  float scale = *a.y_scale, zero = static_cast<float>(*a.y_zero);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    float q = rintf(a.x[i] / scale) + zero;
    a.y[i] = static_cast<uint8_t>(fminf(fmaxf(q, 0.0f), 255.0f));
  }
}

}  // namespace

cudaError_t launchDynamicQuantize(const DynamicQuantizeDeviceArgs& args, cudaStream_t stream) {
  int blocks = static_cast<int>(
      std::min<int64_t>(kDynamicQuantizeBlocks, (args.count + kThreads - 1) / kThreads));
  if (blocks < 1) blocks = 1;
  rangeKernel<<<blocks, kThreads, 0, stream>>>(args);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  scaleKernel<<<1, 1, 0, stream>>>(args, blocks);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (args.count == 0) return cudaSuccess;
  dynamicQuantizeKernel<<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

bool quantizeKernelExists(bool dequantize, DataType x, DataType scale, DataType y) {
  if (!isFloatType(scale)) return false;
  if (dequantize) return (isQuantInt(x) || x == DataType::kInt32 || isLowQuant(x)) && y == scale;
  return isFloatType(x) && (isQuantInt(y) || isLowQuant(y));
}

cudaError_t launchQuantize(const QuantizeDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  unsigned blocks = blocksFor(args.count);
  bool launched = false;
  if (isLowQuant(args.dequantize ? args.x_type : args.y_type)) {
    visitCudaType(args.dequantize ? args.y_type : args.x_type, [&](auto ftag) {
      using F = typename decltype(ftag)::type;
      if constexpr (kIsFloating<F>) {
        launched = true;
        if (args.dequantize) {
          dequantizeLowKernel<F><<<blocks, kThreads, 0, stream>>>(args);
        } else {
          quantizeLowKernel<F>
              <<<blocksFor(lowUnits(args.y_type, args.count)), kThreads, 0, stream>>>(args);
        }
      }
    });
    return launched ? cudaGetLastError() : cudaErrorInvalidValue;
  }
  auto quantInt = [&](DataType t, auto f) {
    if (t == DataType::kInt8) f(TypeTag<int8_t>{});
    if (t == DataType::kUint8) f(TypeTag<uint8_t>{});
    if (t == DataType::kInt16) f(TypeTag<int16_t>{});
    if (t == DataType::kUint16) f(TypeTag<uint16_t>{});
    if (t == DataType::kInt32) f(TypeTag<int32_t>{});
  };
  visitCudaType(args.dequantize ? args.y_type : args.x_type, [&](auto ftag) {
    using F = typename decltype(ftag)::type;
    if constexpr (kIsFloating<F>) {
      quantInt(args.dequantize ? args.x_type : args.y_type, [&](auto itag) {
        using I = typename decltype(itag)::type;
        launched = true;
        if (args.dequantize) {
          dequantizeKernel<I, F><<<blocks, kThreads, 0, stream>>>(args);
        } else if constexpr (!std::is_same_v<I, int32_t>) {
          quantizeKernel<F, I><<<blocks, kThreads, 0, stream>>>(args);
        }
      });
    }
  });
  if (!launched) return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
