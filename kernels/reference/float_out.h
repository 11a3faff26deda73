// A float output from double values: shared by the training-mode paths (BatchNormalization's
// statistics in nn.cc) and the optimizer kernels (training.cc), which compute in double.
#pragma once

#include <vector>

#include "ops.h"

namespace onnxopt::kernels::ref {

/// A tensor of float element type `type` and shape `dims` holding v (rounded once per element).
inline StatusOr<HostTensor> floatsToTensor(const KernelContext& ctx, DataType type, Dims dims,
                                           const std::vector<double>& v) {
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(type, std::move(dims)));
  if (static_cast<size_t>(out.numElements()) != v.size()) {
    return invalidArgument("{}: {} values for an output of {} elements", ctx.op, v.size(),
                           out.numElements());
  }
  RETURN_IF_ERROR(visitFloat(ctx, type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) {
      store<T>(out, static_cast<int64_t>(i), static_cast<Compute<T>>(v[i]));
    }
    return Status::ok();
  }));
  return out;
}

}  // namespace onnxopt::kernels::ref
