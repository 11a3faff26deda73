// Helpers shared by resize.cc and sampling.cc: storing an interpolated double into any numeric
// element type (integers round half to even and saturate, as ONNX's reference does), and the
// work cap of the interpolating kernels.
#pragma once

#include <cmath>
#include <initializer_list>
#include <limits>

#include "common.h"

namespace onnxopt::kernels::ref {

/// A reference kernel that would run for hours is refused (kResourceExhausted) rather than hang.
inline constexpr int64_t kMaxResampleWork = int64_t{1} << 40;

/// Fails unless the product of `factors` stays within kMaxResampleWork (0 factors: no work).
inline Status checkResampleWork(const KernelContext& ctx, std::initializer_list<int64_t> factors) {
  for (int64_t f : factors) {
    if (f == 0) return Status::ok();
  }
  int64_t work = 1;
  for (int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(work, f, &work) || work > kMaxResampleWork) {
      return makeError(StatusCode::kResourceExhausted, "{}: too much work for a reference kernel",
                       ctx.op);
    }
  }
  return Status::ok();
}

/// Stores v at element i of t (element type T): floats round once, integers round half to even
/// and saturate, bool is v != 0.
template <typename T>
void storeRounded(HostTensor& t, int64_t i, double v) {
  if constexpr (kIsFloat<T>) {
    store<T>(t, i, static_cast<Compute<T>>(v));
  } else if constexpr (kIsBool<T>) {
    store<T>(t, i, v != 0.0);
  } else {
    double r = std::nearbyint(v);
    if (std::isnan(r)) r = 0;
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    T out;
    if (r <= lo) {
      out = std::numeric_limits<T>::lowest();
    } else if (r >= hi) {
      out = std::numeric_limits<T>::max();
    } else {
      out = static_cast<T>(r);
    }
    store<T>(t, i, out);
  }
}

/// Element i of t (element type T) as a double.
template <typename T>
double loadDouble(const HostTensor& t, int64_t i) {
  if constexpr (kIsBool<T>) {
    return load<T>(t, i) ? 1.0 : 0.0;
  } else {
    return static_cast<double>(load<T>(t, i));
  }
}

}  // namespace onnxopt::kernels::ref
