// Host helpers the row-wise families (softmax.cc, norm.cc) and Resize share when they parse a
// node: an axis attribute in range, products of dims, and the check that an op's output is its
// input's type and shape, both contiguous in device memory.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/norm/norm_device.h"

namespace onnxopt::kernels::cuda {

/// `axis` in [-rank, rank) as a non-negative axis, or kInvalidArgument naming the op.
inline StatusOr<int64_t> normalizedAxis(const std::string& op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return invalidArgument("{}: axis {} is out of range for rank {}", op, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

/// The product of dims[begin:end].
inline int64_t dimsProduct(const std::vector<int64_t>& dims, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t d = begin; d < end; ++d) p *= dims[static_cast<size_t>(d)];
  return p;
}

/// No unless `y` has `x`'s type and dims and both are contiguous device tensors.
inline Support sameShapeSupport(const std::string& op, const ConstTensorView& x,
                                const ConstTensorView& y) {
  if (y.dtype != x.dtype) {
    return Support::no(fmt::format("{}: the output is {}, the input {}", op, dataTypeName(y.dtype),
                                   dataTypeName(x.dtype)));
  }
  if (y.dims != x.dims) {
    return Support::no(fmt::format("{}: the output is [{}], the input [{}]", op,
                                   fmt::join(y.dims, ", "), fmt::join(x.dims, ", ")));
  }
  if (!x.isContiguous() || !y.isContiguous()) {
    return Support::no(fmt::format("{}: the CUDA kernel reads and writes contiguous tensors", op));
  }
  if (Support s = requireDevice(op, x, "input 0"); !s) return s;
  return requireDevice(op, y, "output 0");
}

/// sameShapeSupport for a float type the row kernels instantiate (rowKernelExists).
inline Support floatRowSupport(const std::string& op, const ConstTensorView& x,
                               const ConstTensorView& y) {
  if (!rowKernelExists(x.dtype)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", op, dataTypeName(x.dtype)));
  }
  return sameShapeSupport(op, x, y);
}

}  // namespace onnxopt::kernels::cuda
