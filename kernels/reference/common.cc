// Shared helpers of the reference kernels: errors, output allocation with the size guard,
// broadcasting, axes and int list inputs.
#include "common.h"

#include <algorithm>

#include "onnxopt/support/axis.h"

namespace onnxopt::kernels::ref {

Status unimplemented(const KernelContext& ctx, const std::string& what) {
  return makeError(StatusCode::kUnimplemented, "{} (opset {}): {}", ctx.op, ctx.opset, what);
}

Status unsupportedType(const KernelContext& ctx, DataType type) {
  return makeError(StatusCode::kUnimplemented, "{} (opset {}): element type {} is not supported",
                   ctx.op, ctx.opset, dataTypeName(type));
}

StatusOr<int64_t> checkedNumElements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return invalidArgument("negative dimension {}", d);
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return makeError(StatusCode::kResourceExhausted, "tensor element count overflows int64");
    }
    n *= d;
  }
  return n;
}

StatusOr<HostTensor> makeOutput(DataType type, Dims dims) {
  ASSIGN_OR_RETURN(int64_t n, checkedNumElements(dims));
  uint64_t count = static_cast<uint64_t>(n);
  // An overflowing size exceeds the limit below.
  uint64_t bytes = type == DataType::kString
                       ? count * sizeof(std::string)
                       : dataTypeStorageBytes(type, count).value_or(UINT64_MAX);
  if (count > kMaxOutputBytes || bytes > kMaxOutputBytes) {
    return makeError(StatusCode::kResourceExhausted,
                     "output of {} elements of {} exceeds the {}-byte limit", n, dataTypeName(type),
                     kMaxOutputBytes);
  }
  HostTensor t;
  t.dtype = type;
  t.dims = std::move(dims);
  if (type == DataType::kString) {
    t.strings.assign(static_cast<size_t>(count), std::string());
  } else {
    t.bytes.assign(static_cast<size_t>(bytes), '\0');
  }
  return t;
}

size_t elementBytes(DataType type) {
  int bits = dataTypeBits(type);
  return bits > 0 && bits % 8 == 0 ? static_cast<size_t>(bits / 8) : 0;
}

bool isMovable(DataType type) {
  return type == DataType::kString || elementBytes(type) > 0;
}

Status checkMovable(const KernelContext& ctx, DataType type) {
  return isMovable(type) ? Status::ok() : unsupportedType(ctx, type);
}

StatusOr<Dims> broadcastShapes(const std::vector<const Dims*>& shapes) {
  size_t rank = 0;
  for (const Dims* s : shapes) rank = std::max(rank, s->size());
  Dims out(rank, 1);
  for (const Dims* s : shapes) {
    size_t offset = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t d = (*s)[i];
      int64_t& o = out[offset + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      return invalidArgument("shapes cannot be broadcast: dimension {} vs {}", o, d);
    }
  }
  return out;
}

Dims broadcastStrides(const Dims& in, const Dims& out) {
  Dims in_strides = contiguousStrides(in);
  Dims strides(out.size(), 0);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    strides[offset + i] = in[i] == 1 && out[offset + i] != 1 ? 0 : in_strides[i];
  }
  return strides;
}

StatusOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, const char* what) {
  auto normalized = ::onnxopt::normalizeAxis(axis, rank);
  if (!normalized) return invalidArgument("{} {} is out of range for rank {}", what, axis, rank);
  return *normalized;
}

StatusOr<Dims> normalizeAxes(const Dims& axes, int64_t rank) {
  Dims out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t n, normalizeAxis(a, rank));
    if (seen[static_cast<size_t>(n)]) return invalidArgument("axis {} appears twice", a);
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

StatusOr<Dims> readInts(const HostTensor& t, const char* what) {
  Dims out;
  int64_t n = t.numElements();
  out.reserve(static_cast<size_t>(n));
  if (t.dtype == DataType::kInt64) {
    for (int64_t i = 0; i < n; ++i) out.push_back(t.get<int64_t>(i));
  } else if (t.dtype == DataType::kInt32) {
    for (int64_t i = 0; i < n; ++i) out.push_back(t.get<int32_t>(i));
  } else {
    return invalidArgument("{} must be int32 or int64, not {}", what, dataTypeName(t.dtype));
  }
  return out;
}

StatusOr<int64_t> readIntScalar(const HostTensor& t, const char* what) {
  if (t.numElements() != 1) return invalidArgument("{} must have one element", what);
  ASSIGN_OR_RETURN(Dims v, readInts(t, what));
  return v[0];
}

StatusOr<const HostTensor*> requireInput(const KernelContext& ctx, size_t i) {
  const HostTensor* t = ctx.input(i);
  if (t == nullptr) return invalidArgument("{}: required input {} is missing", ctx.op, i);
  return t;
}

Status checkSameType(const KernelContext& ctx, const std::vector<const HostTensor*>& ts) {
  for (const HostTensor* t : ts) {
    if (t->dtype != ts[0]->dtype) {
      return invalidArgument("{}: inputs have different element types ({} vs {})", ctx.op,
                             dataTypeName(ts[0]->dtype), dataTypeName(t->dtype));
    }
  }
  return Status::ok();
}

}  // namespace onnxopt::kernels::ref
