// Element codecs for the types the C++ numbers of common.h do not cover: the float8 formats
// (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), float4 E2M1 and the packed 4- and 2-bit integers,
// plus a per-element "any numeric type" load/store that Cast, QuantizeLinear and DequantizeLinear
// use for them. Encoding rounds to nearest even; `saturate` clamps to the largest finite value
// (infinities included), as ONNX's Cast and QuantizeLinear define it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "common.h"

namespace onnxopt::kernels::ref {

/// A small float format: sign bit, `exp_bits` exponent bits with `bias`, `man_bits` mantissa bits.
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  bool has_inf;  ///< E5M2: exponent all ones, mantissa 0
  bool fnuz;     ///< NaN is 0x80, no negative zero
  bool has_nan;  ///< FLOAT4E2M1 has neither NaN nor infinity
  double max;    ///< largest finite value
};

/// The format of a float8/float4 type, or nullptr.
inline const MiniFloat* miniFloatFormat(DataType t) {
  static constexpr MiniFloat kE4M3FN{4, 3, 7, false, false, true, 448.0};
  static constexpr MiniFloat kE4M3FNUZ{4, 3, 8, false, true, true, 240.0};
  static constexpr MiniFloat kE5M2{5, 2, 15, true, false, true, 57344.0};
  static constexpr MiniFloat kE5M2FNUZ{5, 2, 16, false, true, true, 57344.0};
  static constexpr MiniFloat kE2M1{2, 1, 1, false, false, false, 6.0};
  switch (t) {
    case DataType::kFloat8E4M3FN:
      return &kE4M3FN;
    case DataType::kFloat8E4M3FNUZ:
      return &kE4M3FNUZ;
    case DataType::kFloat8E5M2:
      return &kE5M2;
    case DataType::kFloat8E5M2FNUZ:
      return &kE5M2FNUZ;
    case DataType::kFloat4E2M1:
      return &kE2M1;
    default:
      return nullptr;
  }
}

inline uint32_t miniNaN(const MiniFloat& f, uint32_t sign) {
  if (f.fnuz) return 0x80u;
  if (!f.has_nan) return (sign ^ 1u) << (f.exp_bits + f.man_bits);  // what ml_dtypes produces
  uint32_t all = (1u << (f.exp_bits + f.man_bits)) - 1u;
  if (f.has_inf) all &= ~1u;  // E5M2: S.11111.10 (S.11111.11 is a NaN too)
  return (sign << (f.exp_bits + f.man_bits)) | all;
}

/// v in the format, rounded to nearest even. Without saturation, values beyond the largest
/// finite one become infinity (E5M2) or NaN; FLOAT4E2M1, which has neither, always saturates.
inline uint32_t encodeMiniFloat(double v, const MiniFloat& f, bool saturate) {
  uint32_t sign = std::signbit(v) ? 1u : 0u;
  int width = f.exp_bits + f.man_bits;
  if (std::isnan(v)) return miniNaN(f, sign);
  bool clamp = saturate || !f.has_nan;
  double a = std::fabs(v);
  auto overflow = [&]() -> uint32_t {
    if (clamp) return (sign << width) | encodeMiniFloat(f.max, f, true);
    if (f.has_inf) return (sign << width) | (((1u << f.exp_bits) - 1u) << f.man_bits);
    return miniNaN(f, sign);
  };
  if (std::isinf(a)) return overflow();
  int emin = 1 - f.bias;
  int e = 0;
  if (a != 0) {
    std::frexp(a, &e);
    e -= 1;  // a = m * 2^e with m in [1, 2)
  }
  if (e < emin) e = emin;
  double step = std::ldexp(1.0, e - f.man_bits);
  double r = std::nearbyint(a / step) * step;  // the default rounding mode is to nearest even
  if (r > f.max) return overflow();
  if (r == 0) return f.fnuz ? 0u : sign << width;
  int re = 0;
  std::frexp(r, &re);
  re -= 1;
  uint32_t bits;
  if (re < emin) {
    bits = static_cast<uint32_t>(r / std::ldexp(1.0, emin - f.man_bits));  // subnormal
  } else {
    uint32_t man = static_cast<uint32_t>((r / std::ldexp(1.0, re) - 1.0) * (1 << f.man_bits));
    bits = (static_cast<uint32_t>(re + f.bias) << f.man_bits) | man;
  }
  return (sign << width) | bits;
}

inline float decodeMiniFloat(uint32_t code, const MiniFloat& f) {
  int width = f.exp_bits + f.man_bits;
  uint32_t sign = (code >> width) & 1u;
  uint32_t exp = (code >> f.man_bits) & ((1u << f.exp_bits) - 1u);
  uint32_t man = code & ((1u << f.man_bits) - 1u);
  if (f.fnuz && code == 0x80u) return std::numeric_limits<float>::quiet_NaN();
  if (f.has_nan && !f.fnuz && exp == (1u << f.exp_bits) - 1u) {
    if (f.has_inf && man == 0) {
      return sign ? -std::numeric_limits<float>::infinity()
                  : std::numeric_limits<float>::infinity();
    }
    if (f.has_inf || man == (1u << f.man_bits) - 1u) return std::numeric_limits<float>::quiet_NaN();
  }
  double v = exp == 0 ? std::ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits)
                      : std::ldexp(1.0 + man / static_cast<double>(1 << f.man_bits),
                                   static_cast<int>(exp) - f.bias);
  return static_cast<float>(sign ? -v : v);
}

/// FLOAT8E8M0 (a power of two 2^(e-127); 0xFF is NaN) from a float, by Cast's round_mode
/// ("up", "down", "nearest") on the float's exponent field.
inline uint8_t encodeE8M0(float v, bool saturate, int round_mode) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  uint32_t exp = (bits >> 23) & 0xffu;
  if (exp == 0xffu) return 0xff;
  uint32_t frac = bits & 0x7fffffu;
  bool up = false;
  if (round_mode == 0) {
    up = frac != 0;
  } else if (round_mode == 2) {
    bool g = (bits & 0x400000u) != 0, r = (bits & 0x200000u) != 0, s = (bits & 0x1fffffu) != 0;
    up = g && (r || s || exp > 0);
  }
  if (up && !(saturate && exp == 0xfeu)) ++exp;
  return static_cast<uint8_t>(exp);
}

inline float decodeE8M0(uint8_t code) {
  if (code == 0xff) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(code) - 127);
}

/// Bits per element of the packed integer types (4 or 2), 0 otherwise.
inline int packedIntBits(DataType t) {
  switch (t) {
    case DataType::kInt4:
    case DataType::kUint4:
      return 4;
    case DataType::kInt2:
    case DataType::kUint2:
      return 2;
    default:
      return 0;
  }
}
inline bool packedIntSigned(DataType t) {
  return t == DataType::kInt4 || t == DataType::kInt2;
}

/// The raw code of element i of a sub-byte tensor (elements packed from the low bits).
inline uint32_t loadCode(const HostTensor& t, int64_t i, int bits) {
  int per = 8 / bits;
  auto byte = static_cast<uint8_t>(t.bytes[static_cast<size_t>(i / per)]);
  return (byte >> ((i % per) * bits)) & ((1u << bits) - 1u);
}
inline void storeCode(HostTensor& t, int64_t i, int bits, uint32_t code) {
  int per = 8 / bits;
  int shift = static_cast<int>(i % per) * bits;
  auto& byte = reinterpret_cast<uint8_t&>(t.bytes[static_cast<size_t>(i / per)]);
  uint32_t mask = ((1u << bits) - 1u) << shift;
  byte = static_cast<uint8_t>((byte & ~mask) | ((code << shift) & mask));
}

/// The low-precision types this header encodes.
inline bool isLowPrecision(DataType t) {
  return miniFloatFormat(t) != nullptr || packedIntBits(t) != 0 || t == DataType::kFloat8E8M0;
}

/// An element of any numeric type: a double for float types, an int64 (with the unsigned flag)
/// for integer and bool types.
struct Num {
  bool is_float = false;
  bool is_unsigned = false;
  double f = 0;
  int64_t i = 0;

  double asDouble() const {
    if (is_float) return f;
    return is_unsigned ? static_cast<double>(static_cast<uint64_t>(i)) : static_cast<double>(i);
  }
  /// Truncates floats toward zero (NaN becomes 0, out of range saturates to int64).
  int64_t asInt() const { return is_float ? convertNumber<int64_t>(f) : i; }
};

/// How stores to float8/float4 round.
struct StoreOptions {
  bool saturate = true;
  int round_mode = 0;  ///< E8M0: 0 up, 1 down, 2 nearest
};

/// Whether loadNum/storeNum handle `t`: visitType's numeric types and bool, and the low-precision ones.
inline bool isNumType(DataType t) {
  return isLowPrecision(t) || (elementBytes(t) > 0 && t != DataType::kComplex64 &&
                               t != DataType::kComplex128 && t != DataType::kString);
}

/// Element i of t (isNumType(t.dtype)).
inline Num loadNum(const KernelContext& ctx, const HostTensor& t, int64_t i) {
  Num n;
  if (const MiniFloat* f = miniFloatFormat(t.dtype)) {
    n.is_float = true;
    n.f = decodeMiniFloat(f->exp_bits + f->man_bits == 7
                              ? static_cast<uint8_t>(t.bytes[static_cast<size_t>(i)])
                              : loadCode(t, i, 4),
                          *f);
    return n;
  }
  if (t.dtype == DataType::kFloat8E8M0) {
    n.is_float = true;
    n.f = decodeE8M0(static_cast<uint8_t>(t.bytes[static_cast<size_t>(i)]));
    return n;
  }
  if (int bits = packedIntBits(t.dtype)) {
    uint32_t c = loadCode(t, i, bits);
    if (packedIntSigned(t.dtype) && (c >> (bits - 1)) != 0) {
      n.i = static_cast<int64_t>(c) - (int64_t{1} << bits);
    } else {
      n.i = c;
    }
    return n;
  }
  (void)visitType(ctx, t.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    auto v = load<T>(t, i);
    if constexpr (kIsFloat<T>) {
      n.is_float = true;
      n.f = static_cast<double>(v);
    } else if constexpr (kIsBool<T>) {
      n.i = v ? 1 : 0;
    } else {
      n.is_unsigned = std::is_unsigned_v<T>;
      n.i = static_cast<int64_t>(v);
    }
    return Status::ok();
  });
  return n;
}

/// Stores v as element i of t (isNumType(t.dtype)): floats round to nearest even, floats to
/// integers truncate and integers wrap (as Cast defines them).
inline void storeNum(const KernelContext& ctx, HostTensor& t, int64_t i, const Num& v,
                     const StoreOptions& opt = {}) {
  if (const MiniFloat* f = miniFloatFormat(t.dtype)) {
    uint32_t code = encodeMiniFloat(v.asDouble(), *f, opt.saturate);
    if (f->exp_bits + f->man_bits == 7) {
      t.bytes[static_cast<size_t>(i)] = static_cast<char>(code);
    } else {
      storeCode(t, i, 4, code);
    }
    return;
  }
  if (t.dtype == DataType::kFloat8E8M0) {
    t.bytes[static_cast<size_t>(i)] = static_cast<char>(
        encodeE8M0(static_cast<float>(v.asDouble()), opt.saturate, opt.round_mode));
    return;
  }
  if (int bits = packedIntBits(t.dtype)) {
    storeCode(t, i, bits, static_cast<uint32_t>(static_cast<uint64_t>(v.asInt())));
    return;
  }
  (void)visitType(ctx, t.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if (v.is_float) {
      store<T>(t, i, convertNumber<C>(v.f));
    } else if (v.is_unsigned) {
      store<T>(t, i, convertNumber<C>(static_cast<uint64_t>(v.i)));
    } else {
      store<T>(t, i, convertNumber<C>(v.i));
    }
    return Status::ok();
  });
}

}  // namespace onnxopt::kernels::ref
