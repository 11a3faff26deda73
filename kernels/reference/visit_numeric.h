// visitNumeric: the type dispatch of kernels that take the numeric element types only (indexing.cc,
// math_extra.cc), next to ops.h's visitFloat.
#pragma once

#include "common.h"

namespace onnxopt::kernels::ref {

/// Like visitType, for the numeric element types only (bool and the rest are kUnimplemented).
template <typename F>
Status visitNumeric(const KernelContext& ctx, DataType type, F&& f) {
  return visitType(ctx, type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, type);
    } else {
      return f(tag);
    }
  });
}

}  // namespace onnxopt::kernels::ref
