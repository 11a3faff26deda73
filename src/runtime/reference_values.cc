// Host-tensor helpers of the reference interpreter: slicing and stacking along an axis, scalars,
// attributes, and sparse tensors made dense.
#include "reference_interpreter.h"

namespace onnxopt::runtime::detail {

/// Byte width of one element, for the element-wise copies of slicing and stacking; 0 when the
/// type is not byte-addressable (strings are copied by value, sub-byte types are not supported).
size_t byteWidth(DataType type) {
  int bits = dataTypeBits(type);
  return bits > 0 && bits % 8 == 0 ? static_cast<size_t>(bits / 8) : 0;
}

int64_t product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= dims[d];
  return p;
}

Status checkCopyable(DataType type) {
  if (type == DataType::kString || byteWidth(type) > 0) return Status::ok();
  return makeError(StatusCode::kUnimplemented, "{} elements cannot be sliced or stacked",
                   dataTypeName(type));
}

/// Copies `count` elements from src[si...] to dst[di...].
void copyRun(kernels::HostTensor& dst, int64_t di, const kernels::HostTensor& src, int64_t si,
             int64_t count) {
  if (count <= 0) return;
  if (src.dtype == DataType::kString) {
    for (int64_t k = 0; k < count; ++k) {
      dst.strings[static_cast<size_t>(di + k)] = src.strings[static_cast<size_t>(si + k)];
    }
    return;
  }
  size_t w = byteWidth(src.dtype);
  std::memcpy(dst.bytes.data() + static_cast<size_t>(di) * w,
              src.bytes.data() + static_cast<size_t>(si) * w, static_cast<size_t>(count) * w);
}

/// t[..., begin:begin+len, ...] along `axis`; with `drop_axis` (len 1) the axis is removed.
StatusOr<kernels::HostTensor> sliceAxis(const kernels::HostTensor& t, size_t axis, int64_t begin,
                                        int64_t len, bool drop_axis) {
  RETURN_IF_ERROR(checkCopyable(t.dtype));
  std::vector<int64_t> dims = t.dims;
  int64_t outer = product(dims, 0, axis), extent = dims[axis];
  int64_t inner = product(dims, axis + 1, dims.size());
  if (drop_axis) {
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  } else {
    dims[axis] = len;
  }
  kernels::HostTensor out = kernels::HostTensor::zeros(t.dtype, dims);
  for (int64_t o = 0; o < outer; ++o) {
    copyRun(out, o * len * inner, t, (o * extent + begin) * inner, len * inner);
  }
  return out;
}

/// Stacks equal-shaped tensors along a new axis `axis` (0..rank); `elem` is the element type and
/// `elem_dims` the shape of each part when there are none.
StatusOr<kernels::HostTensor> stackAxis(const std::vector<kernels::HostTensor>& parts, size_t axis,
                                        DataType elem, const std::vector<int64_t>& elem_dims) {
  const std::vector<int64_t>& dims = parts.empty() ? elem_dims : parts[0].dims;
  DataType type = parts.empty() ? elem : parts[0].dtype;
  RETURN_IF_ERROR(checkCopyable(type));
  if (axis > dims.size())
    return invalidArgument("stacking axis {} is beyond rank {}", axis, dims.size());
  for (size_t k = 1; k < parts.size(); ++k) {
    if (parts[k].dtype != type || parts[k].dims != dims) {
      return invalidArgument("part {} is {}[{}], but part 0 is {}[{}]", k,
                             dataTypeName(parts[k].dtype), fmt::join(parts[k].dims, ","),
                             dataTypeName(type), fmt::join(dims, ","));
    }
  }
  std::vector<int64_t> out_dims = dims;
  out_dims.insert(out_dims.begin() + static_cast<std::ptrdiff_t>(axis),
                  static_cast<int64_t>(parts.size()));
  uint64_t n = 1;
  for (int64_t d : out_dims) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) n = UINT64_MAX;
  }
  uint64_t w = type == DataType::kString ? sizeof(std::string) : byteWidth(type);
  if (n > kMaxStackedBytes / std::max<uint64_t>(w, 1)) {
    return makeError(StatusCode::kResourceExhausted, "stacked output [{}] exceeds {} bytes",
                     fmt::join(out_dims, ","), kMaxStackedBytes);
  }
  kernels::HostTensor out = kernels::HostTensor::zeros(type, out_dims);
  int64_t outer = product(dims, 0, axis), inner = product(dims, axis, dims.size());
  int64_t count = static_cast<int64_t>(parts.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      copyRun(out, (o * count + k) * inner, parts[static_cast<size_t>(k)], o * inner, inner);
    }
  }
  return out;
}

/// The static element type and dims of a body output, for stacking zero iterations.
std::pair<DataType, std::vector<int64_t>> staticTensorType(const ir::Value* v) {
  std::vector<int64_t> dims;
  const ir::Type& type = v->type();
  if (!type.isTensor()) return {DataType::kFloat, dims};
  if (type.shape) {
    for (const ir::Dim& d : *type.shape) dims.push_back(d.isKnown() ? d.value : 0);
  }
  return {type.elem_type == DataType::kUndefined ? DataType::kFloat : type.elem_type, dims};
}

kernels::HostTensor scalarTensor(DataType type, int64_t v) {
  kernels::HostTensor t = kernels::HostTensor::zeros(type, {});
  if (type == DataType::kBool) {
    t.bytes[0] = v != 0 ? 1 : 0;
  } else {
    t.set<int64_t>(0, v);
  }
  return t;
}

StatusOr<int64_t> readIndexScalar(const kernels::HostTensor& t, const char* what) {
  if (t.numElements() != 1 || (t.dtype != DataType::kInt64 && t.dtype != DataType::kInt32)) {
    return invalidArgument("{} must be one int32 or int64 value, got {}[{}]", what,
                           dataTypeName(t.dtype), fmt::join(t.dims, ","));
  }
  return t.dtype == DataType::kInt64 ? t.get<int64_t>(0) : int64_t{t.get<int32_t>(0)};
}

StatusOr<bool> readBoolScalar(const kernels::HostTensor& t, const char* what) {
  if (t.numElements() != 1 || t.dtype != DataType::kBool) {
    return invalidArgument("{} must be one bool value, got {}[{}]", what, dataTypeName(t.dtype),
                           fmt::join(t.dims, ","));
  }
  return t.bytes[0] != 0;
}

const ir::Graph* bodyOf(const ir::Node& n, const char* name) {
  const ir::Attribute* a = n.findAttribute(name);
  return a == nullptr || a->graphs.size() != 1 ? nullptr : a->graphs[0].get();
}

std::vector<int64_t> intsAttr(const ir::Node& n, const char* name) {
  const ir::Attribute* a = n.findAttribute(name);
  return a == nullptr ? std::vector<int64_t>{} : a->ints;
}

int64_t intAttr(const ir::Node& n, const char* name, int64_t fallback) {
  const ir::Attribute* a = n.findAttribute(name);
  return a == nullptr ? fallback : a->i;
}

/// Normalizes `axis` into [0, rank).
StatusOr<size_t> axisIn(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    return invalidArgument("{} {} is out of range for rank {}", what, axis, rank);
  }
  return static_cast<size_t>(axis < 0 ? axis + rank : axis);
}

/// The dense tensor of a sparse initializer: zeros, and the values at their indices (linear
/// [NNZ] or coordinates [NNZ, rank]; the importer checked those shapes, the values are checked
/// here).
StatusOr<kernels::HostTensor> densify(const ir::SparseTensor& sparse, const std::string& name) {
  kernels::HostTensor values = toHost(sparse.values);
  kernels::HostTensor indices = toHost(sparse.indices);
  kernels::HostTensor dense;
  dense.dtype = values.dtype;
  dense.dims = sparse.dims;
  int bits = dataTypeBits(values.dtype);
  if (bits <= 0 || bits % 8 != 0) {
    return invalidArgument("sparse initializer '{}': values of {} are not supported", name,
                           dataTypeName(values.dtype));
  }
  auto elem = static_cast<size_t>(bits / 8);
  ASSIGN_OR_RETURN(uint64_t bytes, checkedByteSize(dense.dims, dense.dtype,
                                                   fmt::format("sparse initializer '{}'", name)));
  dense.bytes.assign(static_cast<size_t>(bytes), '\0');
  int64_t total = static_cast<int64_t>(bytes / elem);
  int64_t nnz = values.numElements();
  size_t rank = dense.dims.size();
  bool coords = indices.dims.size() == 2;
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t at = 0;
    if (coords) {
      for (size_t a = 0; a < rank; ++a) {
        int64_t c = indices.get<int64_t>(k * static_cast<int64_t>(rank) + static_cast<int64_t>(a));
        if (c < 0 || c >= dense.dims[a]) {
          return invalidArgument("sparse initializer '{}': index {} out of range on axis {}", name,
                                 c, a);
        }
        at = at * dense.dims[a] + c;
      }
    } else {
      at = indices.get<int64_t>(k);
      if (at < 0 || at >= total) {
        return invalidArgument("sparse initializer '{}': index {} out of range for {} elements",
                               name, at, total);
      }
    }
    std::memcpy(dense.bytes.data() + static_cast<size_t>(at) * elem,
                values.bytes.data() + static_cast<size_t>(k) * elem, elem);
  }
  return dense;
}

}  // namespace onnxopt::runtime::detail
