// The host half shared by the reduction-like CUDA families (reduce_plan.h).
#include "kernels/cuda/reduce/reduce_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/args.h"

namespace onnxopt::kernels::cuda {

StatusOr<int64_t> normalizeAxis(const std::string& op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return invalidArgument("{}: axis {} is out of range for rank {}", op, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

StatusOr<std::vector<bool>> axesMask(const std::string& op, const std::vector<int64_t>& axes,
                                     int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(op, a, rank));
    if (mask[static_cast<size_t>(axis)]) {
      return invalidArgument("{}: axis {} is repeated in [{}]", op, a, fmt::join(axes, ", "));
    }
    mask[static_cast<size_t>(axis)] = true;
  }
  return mask;
}

std::vector<int64_t> reducedShape(const std::vector<int64_t>& dims,
                                  const std::vector<bool>& reduced, bool keepdims) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d]) {
      out.push_back(dims[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

std::optional<std::vector<bool>> axesFromShapes(const std::vector<int64_t>& in,
                                                const std::vector<int64_t>& out, bool keepdims) {
  const size_t rank = in.size();
  if (rank > static_cast<size_t>(kMaxReduceRank)) return std::nullopt;
  if (keepdims) {
    if (out.size() != rank) return std::nullopt;
    std::vector<bool> mask(rank, false);
    for (size_t d = 0; d < rank; ++d) {
      if (out[d] == in[d]) continue;  // kept (or of size 1: reducing it changes nothing)
      if (out[d] != 1) return std::nullopt;
      mask[d] = true;
    }
    return mask;
  }
  if (out.size() > rank) return std::nullopt;
  // Every set of rank - out.size() dims whose removal leaves `out`; they must agree on the dims
  // other than 1 (which of several size-1 dims is dropped changes nothing).
  std::optional<std::vector<bool>> found;
  for (uint32_t bits = 0; bits < (1u << rank); ++bits) {
    if (static_cast<size_t>(__builtin_popcount(bits)) != rank - out.size()) continue;
    std::vector<bool> mask(rank);
    std::vector<int64_t> left;
    for (size_t d = 0; d < rank; ++d) {
      mask[d] = (bits >> d) & 1u;
      if (!mask[d]) left.push_back(in[d]);
    }
    if (left != out) continue;
    if (!found) {
      found = mask;
      continue;
    }
    for (size_t d = 0; d < rank; ++d) {
      if (in[d] != 1 && mask[d] != (*found)[d]) return std::nullopt;
    }
  }
  return found;
}

ReduceLayout planReduction(const ConstTensorView& x, const std::vector<bool>& reduced) {
  ReduceLayout layout;
  if (x.rank() > kMaxReduceRank || reduced.size() != x.dims.size() ||
      x.strides.size() != x.dims.size()) {
    return layout;  // canImplement refuses such a node
  }
  // The dims that are not 1, in order, each merged into its predecessor when both are kept (or
  // both reduced) and the predecessor's stride steps over exactly this dim.
  bool last_reduced = false;
  bool any = false;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    int64_t dim = x.dims[d], stride = x.strides[d];
    if (dim == 1) continue;
    bool r = reduced[d];
    int& rank = r ? layout.reduced_rank : layout.kept_rank;
    int64_t* dims = r ? layout.reduced_dims : layout.kept_dims;
    int64_t* strides = r ? layout.reduced_strides : layout.kept_strides;
    if (any && last_reduced == r && strides[rank - 1] == stride * dim) {
      dims[rank - 1] *= dim;
      strides[rank - 1] = stride;
    } else {
      dims[rank] = dim;
      strides[rank] = stride;
      ++rank;
    }
    (r ? layout.group : layout.outputs) *= dim;
    any = true;
    last_reduced = r;
  }
  if (layout.reduced_rank > 0 && layout.kept_rank > 0) {
    int64_t kept_min = INT64_MAX, reduced_min = INT64_MAX;
    for (int i = 0; i < layout.kept_rank; ++i) {
      kept_min = std::min(kept_min, layout.kept_strides[i]);
    }
    for (int i = 0; i < layout.reduced_rank; ++i) {
      reduced_min = std::min(reduced_min, layout.reduced_strides[i]);
    }
    layout.columns = kept_min < reduced_min;
  }
  return layout;
}

ReduceLayout planAxis(const ConstTensorView& x, int64_t axis) {
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  reduced[static_cast<size_t>(axis)] = true;
  return planReduction(x, reduced);
}

int64_t innerSize(const std::vector<int64_t>& dims, int64_t axis) {
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  return inner;
}

std::string shapeText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

Support reduceInputSupport(const std::string& op, const ConstTensorView& x, const char* what) {
  if (x.rank() > kMaxReduceRank) {
    return Support::no(fmt::format("{}: {} has rank {}; the CUDA kernel takes at most {}", op, what,
                                   x.rank(), kMaxReduceRank));
  }
  if (x.strides.size() != x.dims.size()) {
    return Support::no(fmt::format("{}: {} has {} strides for {} dims", op, what, x.strides.size(),
                                   x.dims.size()));
  }
  return requireDevice(op, x, what);
}

Support reduceOutputSupport(const std::string& op, const TensorView& y, DataType dtype,
                            const std::vector<int64_t>& dims, const char* what) {
  if (y.dtype != dtype) {
    return Support::no(fmt::format("{}: {} is {}; the op produces {}", op, what,
                                   dataTypeName(y.dtype), dataTypeName(dtype)));
  }
  if (y.dims != dims) {
    return Support::no(fmt::format("{}: {} is {}; the op produces {}", op, what, shapeText(y.dims),
                                   shapeText(dims)));
  }
  if (!y.isContiguous()) {
    return Support::no(
        fmt::format("{}: {} is not contiguous; the CUDA kernel writes row-major "
                    "outputs",
                    op, what));
  }
  return requireDevice(op, y, what);
}

}  // namespace onnxopt::kernels::cuda
