// Device codecs for the element types the CUDA element types (element_types.cuh) do not cover:
// float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), float4 E2M1 and the packed 4- and 2-bit
// integers (two or four to a byte, the first element in the low bits). They follow the reference
// kernels' codecs (kernels/reference/low_precision.h) operation for operation, in double, so that
// Cast and QuantizeLinear give the same bits: round to nearest even, `saturate` clamping to the
// largest finite value, NaN per format. Used by cast.cu and quantize.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/element_types.cuh"
#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

/// A small float format: sign, `exp_bits` exponent bits with `bias`, `man_bits` mantissa bits.
struct MiniFloat {
  int exp_bits = 0;
  int man_bits = 0;
  int bias = 0;
  bool has_inf = false;  ///< E5M2: exponent all ones, mantissa 0
  bool fnuz = false;     ///< NaN is 0x80, no negative zero
  bool has_nan = false;  ///< FLOAT4E2M1 has neither NaN nor infinity
  double max = 0;        ///< largest finite value
};

/// The format of a float8 (not E8M0) or float4 type; exp_bits 0 for any other type.
__host__ __device__ inline MiniFloat miniFloatOf(DataType t) {
  switch (t) {
    case DataType::kFloat8E4M3FN:
      return {4, 3, 7, false, false, true, 448.0};
    case DataType::kFloat8E4M3FNUZ:
      return {4, 3, 8, false, true, true, 240.0};
    case DataType::kFloat8E5M2:
      return {5, 2, 15, true, false, true, 57344.0};
    case DataType::kFloat8E5M2FNUZ:
      return {5, 2, 16, false, true, true, 57344.0};
    case DataType::kFloat4E2M1:
      return {2, 1, 1, false, false, false, 6.0};
    default:
      return {};
  }
}

/// Bits per element of the sub-byte types (4 or 2), 0 for the others.
__host__ __device__ inline int subByteBits(DataType t) {
  switch (t) {
    case DataType::kInt4:
    case DataType::kUint4:
    case DataType::kFloat4E2M1:
      return 4;
    case DataType::kInt2:
    case DataType::kUint2:
      return 2;
    default:
      return 0;
  }
}

/// The types this header encodes and decodes (not the CUDA element types).
__host__ __device__ inline bool isLowPrecisionType(DataType t) {
  return miniFloatOf(t).exp_bits != 0 || subByteBits(t) != 0 || t == DataType::kFloat8E8M0;
}

__device__ inline uint32_t miniNaN(const MiniFloat& f, uint32_t sign) {
  if (f.fnuz) return 0x80u;
  if (!f.has_nan) return (sign ^ 1u) << (f.exp_bits + f.man_bits);  // the reference's choice
  uint32_t all = (1u << (f.exp_bits + f.man_bits)) - 1u;
  if (f.has_inf) all &= ~1u;  // E5M2: S.11111.10
  return (sign << (f.exp_bits + f.man_bits)) | all;
}

/// The magnitude bits of r, a value of the format (r > 0, at most max).
__device__ inline uint32_t miniBits(double r, const MiniFloat& f) {
  int emin = 1 - f.bias;
  int re = 0;
  frexp(r, &re);
  re -= 1;
  if (re < emin) return static_cast<uint32_t>(r / ldexp(1.0, emin - f.man_bits));  // subnormal
  auto man = static_cast<uint32_t>((r / ldexp(1.0, re) - 1.0) * (1 << f.man_bits));
  return (static_cast<uint32_t>(re + f.bias) << f.man_bits) | man;
}

/// v in the format, rounded to nearest even; beyond the largest finite value: that value with
/// `saturate` (FLOAT4E2M1 always), else infinity (E5M2) or NaN.
__device__ inline uint32_t encodeMiniFloat(double v, const MiniFloat& f, bool saturate) {
  uint32_t sign = signbit(v) ? 1u : 0u;
  int width = f.exp_bits + f.man_bits;
  if (isnan(v)) return miniNaN(f, sign);
  double a = fabs(v);
  bool overflow = isinf(a);
  double r = 0;
  if (!overflow) {
    int emin = 1 - f.bias;
    int e = 0;
    if (a != 0) {
      frexp(a, &e);
      e -= 1;  // a = m * 2^e, m in [1, 2)
    }
    if (e < emin) e = emin;
    double step = ldexp(1.0, e - f.man_bits);
    r = rint(a / step) * step;
    overflow = r > f.max;
  }
  if (overflow) {
    if (saturate || !f.has_nan) return (sign << width) | miniBits(f.max, f);
    if (f.has_inf) return (sign << width) | (((1u << f.exp_bits) - 1u) << f.man_bits);
    return miniNaN(f, sign);
  }
  if (r == 0) return f.fnuz ? 0u : sign << width;
  return (sign << width) | miniBits(r, f);
}

__device__ inline float decodeMiniFloat(uint32_t code, const MiniFloat& f) {
  int width = f.exp_bits + f.man_bits;
  uint32_t sign = (code >> width) & 1u;
  uint32_t exp = (code >> f.man_bits) & ((1u << f.exp_bits) - 1u);
  uint32_t man = code & ((1u << f.man_bits) - 1u);
  if (f.fnuz && code == 0x80u) return __int_as_float(0x7fc00000);
  if (f.has_nan && !f.fnuz && exp == (1u << f.exp_bits) - 1u) {
    if (f.has_inf && man == 0)
      return __int_as_float(sign ? static_cast<int>(0xff800000u) : 0x7f800000);
    if (f.has_inf || man == (1u << f.man_bits) - 1u) return __int_as_float(0x7fc00000);
  }
  double v = exp == 0 ? ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits)
                      : ldexp(1.0 + man / static_cast<double>(1 << f.man_bits),
                              static_cast<int>(exp) - f.bias);
  return static_cast<float>(sign ? -v : v);
}

/// FLOAT8E8M0 from a float by Cast's round_mode (0 up, 1 down, 2 nearest) on its exponent field.
__device__ inline uint32_t encodeE8M0(float v, bool saturate, int round_mode) {
  auto bits = static_cast<uint32_t>(__float_as_int(v));
  uint32_t exp = (bits >> 23) & 0xffu;
  if (exp == 0xffu) return 0xffu;
  uint32_t frac = bits & 0x7fffffu;
  bool up = false;
  if (round_mode == 0) {
    up = frac != 0;
  } else if (round_mode == 2) {
    bool g = (bits & 0x400000u) != 0, r = (bits & 0x200000u) != 0, s = (bits & 0x1fffffu) != 0;
    up = g && (r || s || exp > 0);
  }
  if (up && !(saturate && exp == 0xfeu)) ++exp;
  return exp & 0xffu;
}

/// 2^(code - 127) built from its bits (2^-127 is a float subnormal), 0xFF NaN.
__device__ inline float decodeE8M0(uint32_t code) {
  if (code == 0xffu) return __int_as_float(0x7fc00000);
  if (code == 0) return __int_as_float(0x00400000);
  return __int_as_float(static_cast<int>(code << 23));
}

/// An element of any numeric type: a double for the float types, an int64 (with the unsigned
/// flag) for the integers and bool (the reference's Num).
struct DevNum {
  bool is_float = false;
  bool is_unsigned = false;
  double f = 0;
  int64_t i = 0;

  __device__ double asDouble() const {
    if (is_float) return f;
    return is_unsigned ? static_cast<double>(static_cast<uint64_t>(i)) : static_cast<double>(i);
  }
  /// Floats truncate toward zero (NaN 0, saturating to int64).
  __device__ int64_t asInt() const { return is_float ? convertNumber<int64_t>(f) : i; }
};

__device__ inline uint32_t loadCode(const void* p, int64_t i, int bits) {
  int per = 8 / bits;
  uint32_t byte = static_cast<const uint8_t*>(p)[i / per];
  return (byte >> ((i % per) * bits)) & ((1u << bits) - 1u);
}

__device__ inline DevNum floatNum(double v) {
  DevNum n;
  n.is_float = true;
  n.f = v;
  return n;
}

template <typename T>
__device__ inline DevNum intNum(const void* p, int64_t i) {
  DevNum n;
  n.is_unsigned = std::is_unsigned_v<T>;
  n.i = static_cast<int64_t>(static_cast<const T*>(p)[i]);
  return n;
}

/// Element i of a contiguous tensor of type t (a CUDA element type or a low-precision one).
__device__ inline DevNum loadNum(DataType t, const void* p, int64_t i) {
  switch (t) {
    case DataType::kFloat:
      return floatNum(static_cast<const float*>(p)[i]);
    case DataType::kFloat16:
      return floatNum(__half2float(static_cast<const __half*>(p)[i]));
    case DataType::kBfloat16:
      return floatNum(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
    case DataType::kInt8:
      return intNum<int8_t>(p, i);
    case DataType::kUint8:
      return intNum<uint8_t>(p, i);
    case DataType::kInt16:
      return intNum<int16_t>(p, i);
    case DataType::kUint16:
      return intNum<uint16_t>(p, i);
    case DataType::kInt32:
      return intNum<int32_t>(p, i);
    case DataType::kInt64:
      return intNum<int64_t>(p, i);
    case DataType::kBool: {
      DevNum n;
      n.i = static_cast<const bool*>(p)[i] ? 1 : 0;
      return n;
    }
    case DataType::kFloat8E8M0:
      return floatNum(decodeE8M0(static_cast<const uint8_t*>(p)[i]));
    default:
      break;
  }
  MiniFloat f = miniFloatOf(t);
  int bits = subByteBits(t);
  if (f.exp_bits != 0) {
    return floatNum(
        decodeMiniFloat(bits != 0 ? loadCode(p, i, bits) : static_cast<const uint8_t*>(p)[i], f));
  }
  DevNum n;
  if (bits == 0) return n;
  uint32_t c = loadCode(p, i, bits);
  bool is_signed = t == DataType::kInt4 || t == DataType::kInt2;
  n.i = is_signed && (c >> (bits - 1)) != 0 ? static_cast<int64_t>(c) - (int64_t{1} << bits) : c;
  return n;
}

/// How encodes of float8/float4 round (Cast's and QuantizeLinear's attributes).
struct EncodeOptions {
  bool saturate = true;
  int round_mode = 0;  ///< E8M0: 0 up, 1 down, 2 nearest
};

/// The code of v in a low-precision type t (isLowPrecisionType), in its low bits: floats round to
/// nearest even, floats to integers truncate and integers wrap (as Cast defines them).
__device__ inline uint32_t encodeLow(DataType t, const DevNum& v, const EncodeOptions& opt) {
  if (t == DataType::kFloat8E8M0) {
    return encodeE8M0(static_cast<float>(v.asDouble()), opt.saturate, opt.round_mode);
  }
  MiniFloat f = miniFloatOf(t);
  if (f.exp_bits != 0) return encodeMiniFloat(v.asDouble(), f, opt.saturate);
  int bits = subByteBits(t);
  return static_cast<uint32_t>(static_cast<uint64_t>(v.asInt())) & ((1u << bits) - 1u);
}

template <typename T>
__device__ inline void storeAs(void* p, int64_t i, const DevNum& v) {
  using C = Compute<T>;
  C c;
  if (v.is_float) {
    c = convertNumber<C>(v.f);
  } else if (v.is_unsigned) {
    c = convertNumber<C>(static_cast<uint64_t>(v.i));
  } else {
    c = convertNumber<C>(v.i);
  }
  store(static_cast<T*>(p), i, c);
}

/// Stores v as element i of a contiguous tensor of a CUDA element type t (the reference's
/// storeNum: through the type's compute type).
__device__ inline void storeNative(DataType t, void* p, int64_t i, const DevNum& v) {
  switch (t) {
    case DataType::kFloat:
      return storeAs<float>(p, i, v);
    case DataType::kFloat16:
      return storeAs<__half>(p, i, v);
    case DataType::kBfloat16:
      return storeAs<__nv_bfloat16>(p, i, v);
    case DataType::kInt8:
      return storeAs<int8_t>(p, i, v);
    case DataType::kUint8:
      return storeAs<uint8_t>(p, i, v);
    case DataType::kInt32:
      return storeAs<int32_t>(p, i, v);
    case DataType::kInt64:
      return storeAs<int64_t>(p, i, v);
    case DataType::kBool:
      return storeAs<bool>(p, i, v);
    default:
      return;
  }
}

/// Calls code(i) for the elements of output unit u and stores them into a low-precision y of
/// `count` elements: a unit is one byte (one element, or the 2 or 4 elements packed into it; a
/// partial last byte's unused bits are 0), so no two threads write one byte.
template <typename F>
__device__ inline void storeLowUnit(DataType t, void* y, int64_t u, int64_t count, F code) {
  int bits = subByteBits(t);
  auto* out = static_cast<uint8_t*>(y);
  if (bits == 0) {
    out[u] = static_cast<uint8_t>(code(u));
    return;
  }
  int per = 8 / bits;
  uint32_t byte = 0;
  for (int e = 0; e < per && u * per + e < count; ++e) {
    byte |= (code(u * per + e) & ((1u << bits) - 1u)) << (e * bits);
  }
  out[u] = static_cast<uint8_t>(byte);
}

/// The bytes (units of storeLowUnit) of `count` elements of a low-precision type.
__host__ __device__ inline int64_t lowUnits(DataType t, int64_t count) {
  int bits = subByteBits(t);
  if (bits == 0) return count;
  int per = 8 / bits;
  return (count + per - 1) / per;
}

}  // namespace onnxopt::kernels::cuda
