// Helpers of the reference kernels that compute in double and round once (deform_conv.cc,
// stateful.cc): the work cap (like nn.cc's Conv, more than 2^40 multiply-adds is refused with
// kResourceExhausted rather than run for hours) and the rounding store.
#pragma once

#include <initializer_list>

#include "ops.h"

namespace onnxopt::kernels::ref {

inline constexpr double kMaxReferenceWork = 1099511627776.0;  // 2^40

/// Fails when the product of `factors` (each non-negative) passes kMaxReferenceWork; a zero
/// factor means no work at all.
inline Status checkWorkLimit(const KernelContext& ctx, std::initializer_list<int64_t> factors) {
  long double work = 1;
  for (int64_t f : factors) work *= static_cast<long double>(f);
  if (work <= kMaxReferenceWork) return Status::ok();
  return makeError(StatusCode::kResourceExhausted, "{}: too much work for a reference kernel",
                   ctx.op);
}

/// Stores `values` into the float tensor `t`, rounding each to its element type once.
inline Status storeDoubles(const KernelContext& ctx, HostTensor& t,
                           const std::vector<double>& values) {
  return visitFloat(ctx, t.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) {
      store<T>(t, static_cast<int64_t>(i), static_cast<Compute<T>>(values[i]));
    }
    return Status::ok();
  });
}

}  // namespace onnxopt::kernels::ref
