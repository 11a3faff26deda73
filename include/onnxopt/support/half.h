// IEEE half and bfloat16 conversions (bit-exact, round to nearest even).
#pragma once

#include <cstdint>
#include <cstring>

#include "onnxopt/support/data_type.h"

namespace onnxopt {

inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// float -> IEEE half, round to nearest even; NaN stays NaN (quiet), overflow becomes infinity.
inline uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    if (abs == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    uint32_t exp = abs >> 23;
    uint32_t shift = 126 - exp;  // >= 14
    if (exp == 0 || shift >= 25) return sign;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t k = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (k & 1u))) ++k;
    return static_cast<uint16_t>(sign | k);
  }
  uint32_t h = (abs - 0x38000000u) >> 13;
  uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

/// float -> bfloat16, round to nearest even; NaN stays NaN (quiet).
inline uint16_t floatToBfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

/// The largest finite value of float16, or else bfloat16.
inline float largestFinite(DataType t) {
  return t == DataType::kFloat16 ? 65504.0f : 3.3895314e38f;
}

/// `f` as float16 (or else bfloat16) bits, round to nearest even; `saturate` clamps a finite value
/// past the range to the largest finite one first (else it becomes infinite).
inline uint16_t toLowPrecision(float f, DataType t, bool saturate) {
  if (saturate && f == f && f - f == 0.0f) {  // finite
    const float limit = largestFinite(t);
    f = f > limit ? limit : (f < -limit ? -limit : f);
  }
  return t == DataType::kFloat16 ? floatToHalf(f) : floatToBfloat16(f);
}

/// float16 (or else bfloat16) bits as a float.
inline float fromLowPrecision(uint16_t bits, DataType t) {
  return t == DataType::kFloat16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
}

}  // namespace onnxopt
