// TypeProto, TensorProto and SparseTensorProto -> IR: types, inline and external tensor data
// (mapped or read, bounded by the load limits), and sparse tensors.
#include "io/importer_internal.h"

namespace onnxopt::io::detail {

namespace fs = std::filesystem;

StatusOr<ir::Type> importType(const onnx::TypeProto& proto) {
  ir::Type type;
  ir::Type::Labels labels;
  labels.denotation = proto.denotation();
  auto importShape = [](const onnx::TensorShapeProto& shape) {
    std::vector<ir::Dim> dims;
    for (const auto& d : shape.dim()) {
      ir::Dim dim;
      if (d.has_dim_value()) {
        dim = ir::Dim::known(d.dim_value());
      } else if (d.has_dim_param()) {
        dim = ir::Dim::symbol(d.dim_param());
      }
      dim.denotation = d.denotation();
      dims.push_back(std::move(dim));
    }
    return dims;
  };
  switch (proto.value_case()) {
    case onnx::TypeProto::kTensorType:
      type.kind = ir::Type::Kind::kTensor;
      if (proto.tensor_type().elem_type() != 0 &&
          !ir::isKnownDataType(proto.tensor_type().elem_type())) {
        return invalidArgument("unknown element type {}", proto.tensor_type().elem_type());
      }
      type.elem_type = static_cast<DataType>(proto.tensor_type().elem_type());
      if (proto.tensor_type().has_shape()) {
        type.shape = importShape(proto.tensor_type().shape());
        // Passes and `opt run` size buffers from declared shapes: a size that cannot exist is
        // refused here rather than wrapping there.
        if (!ir::typeSizeFits(type)) {
          return invalidArgument("the size of type {} overflows", ir::typeToString(type));
        }
      }
      break;
    case onnx::TypeProto::kSparseTensorType:
      type.kind = ir::Type::Kind::kSparseTensor;
      type.elem_type = static_cast<DataType>(proto.sparse_tensor_type().elem_type());
      if (proto.sparse_tensor_type().has_shape()) {
        type.shape = importShape(proto.sparse_tensor_type().shape());
      }
      break;
    case onnx::TypeProto::kSequenceType: {
      type.kind = ir::Type::Kind::kSequence;
      if (proto.sequence_type().has_elem_type()) {
        ASSIGN_OR_RETURN(auto elem, importType(proto.sequence_type().elem_type()));
        type.element = std::make_shared<ir::Type>(std::move(elem));
      }
      break;
    }
    case onnx::TypeProto::kOptionalType: {
      type.kind = ir::Type::Kind::kOptional;
      if (proto.optional_type().has_elem_type()) {
        ASSIGN_OR_RETURN(auto elem, importType(proto.optional_type().elem_type()));
        type.element = std::make_shared<ir::Type>(std::move(elem));
      }
      break;
    }
    case onnx::TypeProto::kMapType: {
      type.kind = ir::Type::Kind::kMap;
      type.elem_type = static_cast<DataType>(proto.map_type().key_type());
      if (proto.map_type().has_value_type()) {
        ASSIGN_OR_RETURN(auto elem, importType(proto.map_type().value_type()));
        type.element = std::make_shared<ir::Type>(std::move(elem));
      }
      break;
    }
    case onnx::TypeProto::kOpaqueType:
      type.kind = ir::Type::Kind::kOpaque;
      labels.opaque_domain = proto.opaque_type().domain();
      labels.opaque_name = proto.opaque_type().name();
      break;
    case onnx::TypeProto::VALUE_NOT_SET:
      break;
  }
  type.setLabels(std::move(labels));
  return type;
}

// ---------------------------------------------------------------------------------------------
// Tensors

/// Appends `count` little-endian values of `width` bytes taken from the low bytes of each element.
template <typename T>
void appendLow(std::string& out, const T& values, size_t width) {
  size_t start = out.size();
  out.resize(start + static_cast<size_t>(values.size()) * width);
  char* p = out.data() + start;
  for (auto v : values) {
    std::memcpy(p, &v, width);  // x86-64 and the ONNX wire format are both little-endian
    p += width;
  }
}

/// An external data offset or length: a decimal non-negative integer that fits 64 bits.
StatusOr<uint64_t> externalNumber(const std::string& tensor, const std::string& key,
                                  const std::string& text) {
  if (text.empty() || text.size() > 20 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return invalidArgument("tensor '{}': external data {} '{}' is not a non-negative integer",
                           tensor, key, text);
  }
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) {
    return invalidArgument("tensor '{}': external data {} '{}' is out of range", tensor, key, text);
  }
  return static_cast<uint64_t>(v);
}

StatusOr<std::string> Importer::resolveExternal(const std::string& tensor,
                                                const std::string& location) const {
  if (location.empty()) {
    return invalidArgument("tensor '{}': external data has no location", tensor);
  }
  fs::path rel(location);
  if (rel.is_absolute()) {
    return invalidArgument(
        "tensor '{}': external data location '{}' is absolute; it must be "
        "relative to the model's folder",
        tensor, location);
  }
  fs::path normal = rel.lexically_normal();
  if (normal.empty() || *normal.begin() == ".." || normal == ".") {
    return invalidArgument("tensor '{}': external data location '{}' leaves the model's folder",
                           tensor, location);
  }
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(base_dir_), ec);
  fs::path full = fs::weakly_canonical(base / normal, ec);
  if (ec) {
    return makeError(StatusCode::kNotFound, "tensor '{}': external data file '{}' not found",
                     tensor, location);
  }
  // A symbolic link can still lead outside: compare the resolved paths.
  auto [base_end, full_it] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (base_end != base.end()) {
    return invalidArgument(
        "tensor '{}': external data location '{}' resolves outside the model's "
        "folder",
        tensor, location);
  }
  return full.string();
}

Status Importer::readExternal(onnx::TensorProto& proto, ir::Tensor& tensor) {
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      ASSIGN_OR_RETURN(offset, externalNumber(proto.name(), "offset", kv.value()));
    } else if (kv.key() == "length") {
      ASSIGN_OR_RETURN(length, externalNumber(proto.name(), "length", kv.value()));
    }
  }
  ASSIGN_OR_RETURN(std::string key, resolveExternal(proto.name(), location));
  auto it = mapped_.find(key);
  if (it == mapped_.end()) {
    auto file = ir::MappedFile::open(key);
    if (!file.isOk()) {
      return Status(
          file.status().code(),
          fmt::format("tensor '{}': external data file '{}': {}", proto.name(), location,
                      file.status().code() == StatusCode::kNotFound ? std::string("not found")
                                                                    : file.status().message()));
    }
    it = mapped_.emplace(key, std::move(file).value()).first;
  }
  const auto& file = it->second;
  uint64_t off = offset.value_or(0);
  // Every external tensor has a fixed-width type (checked by importTensor), so this is its size.
  std::optional<uint64_t> expected = tensor.expectedByteSize();
  if (!expected) {
    return invalidArgument("tensor '{}': {} data cannot be stored externally", proto.name(),
                           ir::dataTypeName(tensor.dtype()));
  }
  uint64_t len = length.value_or(*expected);
  if (*expected != len) {
    return invalidArgument(
        "tensor '{}': external data length {} does not match its type and dims "
        "({} bytes)",
        proto.name(), len, *expected);
  }
  if (off > file->size() || len > file->size() - off) {
    return invalidArgument(
        "tensor '{}': external data of {} bytes at offset {} is outside '{}' ({} bytes)",
        proto.name(), len, off, location, file->size());
  }
  tensor.setView(file, off, len);
  tensor.setExternalSource(ir::ExternalSource{key, off, len});
  return Status::ok();
}

/// The data of a fixed-width tensor as little-endian bytes, from raw_data (moved: no copy of the
/// weights) or the typed field that holds it; false when it holds none.
StatusOr<bool> typedData(onnx::TensorProto& proto, DataType dtype, uint64_t count,
                         std::string& bytes) {
  // Sub-byte types keep one packed byte per int32_data element.
  const int bits = ir::dataTypeBits(dtype);
  if (proto.has_raw_data()) {
    bytes = std::move(*proto.mutable_raw_data());
    // Empty raw_data on a non-empty tensor marks weight-stripped models (TensorRT "weightless"):
    // kept without data, as it came.
    return !bytes.empty() || count == 0;
  }
  if (proto.float_data_size() > 0) {
    appendLow(bytes, proto.float_data(), 4);
  } else if (proto.int32_data_size() > 0) {
    size_t width = bits >= 8 ? static_cast<size_t>(bits / 8) : 1;
    if (dtype == DataType::kInt32) width = 4;
    if (width > 4) {  // found by fuzz_import: an int64 tensor in int32_data read past each value
      return invalidArgument("tensor '{}': int32_data cannot hold {} values", proto.name(),
                             dataTypeName(dtype));
    }
    appendLow(bytes, proto.int32_data(), width);
  } else if (proto.int64_data_size() > 0) {
    appendLow(bytes, proto.int64_data(), 8);
  } else if (proto.double_data_size() > 0) {
    appendLow(bytes, proto.double_data(), 8);
  } else if (proto.uint64_data_size() > 0) {
    appendLow(bytes, proto.uint64_data(), dtype == DataType::kUint32 ? 4 : 8);
  } else {
    return false;
  }
  return true;
}

StatusOr<ir::Tensor> Importer::importTensor(onnx::TensorProto& proto, const ViewedBytes* cut) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims) {
    if (d < 0) return invalidArgument("tensor '{}': negative dimension {}", proto.name(), d);
  }
  ir::Tensor tensor(static_cast<DataType>(proto.data_type()), std::move(dims));
  tensor.setName(proto.name());
  tensor.setDocString(proto.doc_string());
  tensor.setUnknownFields(unknownFieldsOf(proto));
  if (proto.has_segment()) {
    return makeError(StatusCode::kUnimplemented, "tensor '{}': segmented tensors are not supported",
                     proto.name());
  }
  auto count = tensor.numElements();
  if (!count) {
    return invalidArgument("tensor '{}': the element count overflows", proto.name());
  }
  if (proto.data_type() == onnx::TensorProto::UNDEFINED) {
    return invalidArgument("tensor '{}': data type is undefined", proto.name());
  }
  if (!ir::isKnownDataType(proto.data_type())) {
    // IR versions past kMaxIrVersion are refused, so an unknown code is not a newer type: it is
    // bad.
    return invalidArgument("tensor '{}': unknown data type {}", proto.name(), proto.data_type());
  }
  const DataType dtype = tensor.dtype();
  const bool known = ir::isKnownDataType(proto.data_type());
  // Sizes are computed once, checked, here: a size that wrapped (float[2^62] is 2^64 bytes, i.e.
  // 0) would let an empty data file or raw_data pass for the whole tensor.
  if (ir::dataTypeBits(dtype) > 0 && !tensor.expectedByteSize()) {
    return invalidArgument("tensor '{}': the byte size of {}[{}] overflows", proto.name(),
                           ir::dataTypeName(dtype), fmt::join(tensor.dims(), ","));
  }

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    if (dtype == DataType::kString) {
      return invalidArgument("tensor '{}': string tensors cannot use external data", proto.name());
    }
    RETURN_IF_ERROR(readExternal(proto, tensor));
    return tensor;
  }
  if (dtype == DataType::kString) {
    if (!proto.raw_data().empty() || cut != nullptr) {
      return invalidArgument("tensor '{}': a string tensor cannot hold raw_data", proto.name());
    }
    auto& strings = tensor.mutableStrings();
    strings.reserve(proto.string_data_size());
    for (auto& s : *proto.mutable_string_data()) strings.push_back(std::move(s));
    if (static_cast<int64_t>(strings.size()) != *count && !strings.empty()) {
      return invalidArgument("tensor '{}': has {} strings but its dims imply {}", proto.name(),
                             strings.size(), *count);
    }
    return tensor;
  }

  std::string bytes;
  const int bits = ir::dataTypeBits(dtype);
  const uint64_t typed_count = bits > 0 && bits < 8 ? (*count * bits + 7) / 8 : *count;
  bool has_data = cut != nullptr;  // (a cut raw_data is never empty)
  if (!has_data) {
    ASSIGN_OR_RETURN(has_data, typedData(proto, dtype, *count, bytes));
  }
  if (!has_data) return tensor;  // no data at all: kept as it came
  const uint64_t size = cut != nullptr ? cut->size : bytes.size();
  if (known) {
    auto expected = tensor.expectedByteSize();
    if (!expected) {
      return invalidArgument("tensor '{}': {} tensors cannot hold data here", proto.name(),
                             ir::dataTypeName(dtype));
    }
    if (*expected != size) {
      return invalidArgument("tensor '{}': holds {} bytes of data but {}{} needs {} ({} elements)",
                             proto.name(), size, ir::dataTypeName(dtype),
                             fmt::format("[{}]", fmt::join(tensor.dims(), ",")), *expected,
                             typed_count);
    }
  }
  if (cut != nullptr) {
    tensor.setView(cut->owner, cut->offset, cut->size);
  } else {
    tensor.setBytes(std::move(bytes));
  }
  return tensor;
}

StatusOr<ir::SparseTensor> Importer::importSparse(onnx::SparseTensorProto& proto) {
  ir::SparseTensor sparse;
  ASSIGN_OR_RETURN(sparse.values, importTensor(*proto.mutable_values()));
  ASSIGN_OR_RETURN(sparse.indices, importTensor(*proto.mutable_indices()));
  sparse.dims.assign(proto.dims().begin(), proto.dims().end());
  // ONNX's rules: values [NNZ]; indices int64, [NNZ] (linear) or [NNZ, rank]; each index in range.
  const std::string& name = proto.values().name();
  int64_t total = 1;
  for (int64_t d : sparse.dims) {
    if (d < 0 || (d > 0 && total > INT64_MAX / d)) {
      return invalidArgument("sparse tensor '{}': bad dims", name);
    }
    total *= d;
  }
  if (ir::dataTypeBits(sparse.values.dtype()) > 0 &&
      !ir::dataTypeStorageBytes(sparse.values.dtype(), static_cast<uint64_t>(total))) {
    return invalidArgument("sparse tensor '{}': the dense byte size of {}[{}] overflows", name,
                           ir::dataTypeName(sparse.values.dtype()), fmt::join(sparse.dims, ","));
  }
  const auto& vdims = sparse.values.dims();
  const auto& idims = sparse.indices.dims();
  if (vdims.size() != 1) return invalidArgument("sparse tensor '{}': values must be 1-D", name);
  int64_t nnz = vdims[0];
  if (sparse.indices.dtype() != DataType::kInt64 || idims.empty() || idims[0] != nnz ||
      idims.size() > 2 ||
      (idims.size() == 2 && idims[1] != static_cast<int64_t>(sparse.dims.size()))) {
    return invalidArgument("sparse tensor '{}': indices must be int64 [NNZ] or [NNZ, rank]", name);
  }
  auto indices = ir::tensorInts(sparse.indices);
  size_t rank = idims.size() == 2 ? sparse.dims.size() : 1;
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t bound = idims.size() == 2 ? sparse.dims[i % rank] : total;
    if (indices[i] < 0 || indices[i] >= bound) {
      return invalidArgument("sparse tensor '{}': index {} is out of range", name, indices[i]);
    }
  }
  // As onnx.checker: the entries' linear positions strictly increase (sorted, no duplicates).
  // With every coordinate in range, a row-major position is below `total` and cannot overflow.
  int64_t previous = -1;
  for (size_t k = 0; rank > 0 && k < indices.size() / rank; ++k) {
    int64_t position = 0;
    for (size_t j = 0; j < rank; ++j) {
      position = idims.size() == 2 ? position * sparse.dims[j] + indices[k * rank + j] : indices[k];
    }
    if (position <= previous) {
      return invalidArgument(
          "sparse tensor '{}': entry {} {} (its indices must be sorted, without duplicates)", name,
          k, position == previous ? "repeats the previous entry's index" : "is out of order");
    }
    previous = position;
  }
  return sparse;
}

}  // namespace onnxopt::io::detail
