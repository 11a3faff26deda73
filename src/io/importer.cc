// ModelProto -> IR. Builds use-lists directly from names, sorts each graph's nodes topologically
// (ONNX files need not be sorted), resolves outer-scope references of subgraphs, and rejects what
// cannot be represented faithfully with an error naming the node or value.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <queue>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "io/proto_util.h"
#include "io/raw_data_split.h"
#include "onnxopt/io/model_io.h"

#include "onnxopt/ir/builder.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/verifier.h"
#include "onnxopt/support/name_map.h"
#include "support/big_blocks.h"

namespace onnxopt::io {
namespace {

namespace fs = std::filesystem;
using ir::DataType;

/// Names visible in one graph, chained to the enclosing graph's scope.
struct Scope {
  /// Graph inputs and initializers. Keys view the values' own names (a Value never moves and
  /// keeps its imported name for as long as the scope lives), so a name costs no copy.
  NameMap<ir::Value*> names;
  /// Node outputs: the proto node index and output position of each name (keys view the proto).
  /// A name resolves to its value through `imported`, so node outputs need no second table.
  struct OutputSlot {
    int node = 0;
    int output = 0;
  };
  NameMap<OutputSlot> producers;
  std::vector<ir::Node*> imported;  ///< by proto node index; nullptr until imported
  const Scope* parent = nullptr;
  int depth = 0;  ///< 0 for a main graph or function body, +1 per enclosing subgraph attribute

  void define(ir::Value* v) { names.set(v->name(), v); }
  /// The value `name` names in this graph alone, or nullptr.
  ir::Value* local(std::string_view name) const {
    if (ir::Value* const* v = names.find(name)) return *v;
    const OutputSlot* slot = producers.find(name);
    if (slot == nullptr || imported[slot->node] == nullptr) return nullptr;
    return imported[slot->node]->output(static_cast<size_t>(slot->output));
  }
  ir::Value* lookup(std::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      if (ir::Value* v = s->local(name)) return v;
    }
    return nullptr;
  }
};

std::string nodeLabel(const onnx::NodeProto& node) {
  std::string op = node.domain().empty() ? node.op_type() : node.domain() + "." + node.op_type();
  if (!node.name().empty()) return fmt::format("node '{}' ({})", node.name(), op);
  if (node.output_size() > 0) return fmt::format("node {} producing '{}'", op, node.output(0));
  return fmt::format("node {}", op);
}

/// Names a graph uses but does not define (its free variables), recursively through subgraphs.
void collectFreeNames(const onnx::GraphProto& graph, std::unordered_set<std::string>& free,
                      int depth = 0) {
  // Deeper nesting is refused by importGraph; stopping here keeps the recursion bounded.
  if (depth > 64) return;
  std::unordered_set<std::string> bound;
  for (const auto& vi : graph.input()) bound.insert(vi.name());
  for (const auto& t : graph.initializer()) bound.insert(t.name());
  for (const auto& t : graph.sparse_initializer()) bound.insert(t.values().name());
  for (const auto& n : graph.node()) {
    for (const auto& o : n.output()) bound.insert(o);
  }
  auto use = [&](const std::string& name) {
    if (!name.empty() && !bound.count(name)) free.insert(name);
  };
  for (const auto& n : graph.node()) {
    for (const auto& i : n.input()) use(i);
    for (const auto& a : n.attribute()) {
      std::unordered_set<std::string> inner;
      if (a.has_g()) collectFreeNames(a.g(), inner, depth + 1);
      for (const auto& g : a.graphs()) collectFreeNames(g, inner, depth + 1);
      for (const auto& name : inner) use(name);
    }
  }
  for (const auto& o : graph.output()) use(o.name());
}

Status importOpsets(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& protos,
                    std::vector<ir::OpsetImport>& out, const std::string& where,
                    DiagnosticSink* diagnostics);

/// Adds where an error happened, unless the message is long already: errors deep in nested
/// subgraphs keep their innermost context instead of growing a line per level.
Status boundedContext(const Status& st, const std::string& context) {
  return st.message().size() > 240 ? st : st.withContext(context);
}

class Importer {
 public:
  explicit Importer(std::string base_dir, LoadLimits limits = {})
      : base_dir_(std::move(base_dir)), limits_(limits) {}

  StatusOr<std::unique_ptr<ir::Model>> importModel(onnx::ModelProto& proto);
  /// The main graph's initializers take their raw_data from `split`'s cut spans, viewed in
  /// `owner` (whose bytes from `offset` on are the ones split).
  void viewRawData(const RawDataSplit& split, std::shared_ptr<const ir::Buffer> owner,
                   size_t offset) {
    split_ = &split;
    owner_ = std::move(owner);
    owner_offset_ = offset;
  }
  /// The main graph's initializers take their raw_data from `weights` where not null (one per
  /// initializer, in order), viewed there.
  void viewGivenWeights(std::vector<std::shared_ptr<const ir::Buffer>> weights) {
    given_ = std::move(weights);
  }
  StatusOr<ir::Tensor> importStandaloneTensor(onnx::TensorProto& proto) {
    return importTensor(proto);
  }
  /// An attribute outside any graph (a schema's default, a stashed extra attribute): no
  /// subgraphs.
  Status importPlainAttribute(onnx::AttributeProto proto, ir::Attribute& out) {
    Scope none;
    return importAttribute(proto, none, out);
  }

 private:
  Status importGraph(onnx::GraphProto& proto, ir::Graph& graph, const Scope* parent);
  Status checkGraphLimits(const onnx::GraphProto& proto, int depth);
  Status importGraphInputs(onnx::GraphProto& proto, ir::Graph& graph, Scope& scope);
  Status importNode(onnx::NodeProto& proto, ir::Graph& graph, Scope& scope);
  Status importAttribute(onnx::AttributeProto& proto, const Scope& scope, ir::Attribute& out);
  Status importSubgraphs(onnx::AttributeProto& proto, const Scope& scope, ir::Attribute& out);
  Status importFunction(onnx::FunctionProto& proto, ir::Function& fn);
  /// A tensor's raw_data that lies outside the parsed message (cut out by splitRawData, or given
  /// apart), viewed where it lies.
  struct ViewedBytes {
    std::shared_ptr<const ir::Buffer> owner;
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  /// `cut`: the tensor's raw_data, if it lies outside `proto`.
  StatusOr<ir::Tensor> importTensor(onnx::TensorProto& proto, const ViewedBytes* cut = nullptr);
  /// The k-th initializer's raw_data if it lies outside `proto` (split_ or given_), for the main
  /// graph; nullopt where it is in `proto`.
  StatusOr<std::optional<ViewedBytes>> viewedInitializer(const ir::Graph& graph,
                                                         const onnx::GraphProto& proto, int k);
  StatusOr<ir::SparseTensor> importSparse(onnx::SparseTensorProto& proto);
  Status readExternal(onnx::TensorProto& proto, ir::Tensor& tensor);
  StatusOr<std::string> resolveExternal(const std::string& tensor,
                                        const std::string& location) const;

  std::string base_dir_;
  LoadLimits limits_;
  int64_t nodes_ = 0;         ///< imported so far, against limits_.max_nodes
  int64_t initializers_ = 0;  ///< likewise
  int64_t ir_version_ = 0;
  std::map<std::string, std::shared_ptr<ir::MappedFile>> mapped_;
  /// The weights splitRawData cut out of the main graph's initializers (viewRawData).
  const RawDataSplit* split_ = nullptr;
  std::shared_ptr<const ir::Buffer> owner_;  ///< holds the bytes split_'s spans point into
  size_t owner_offset_ = 0;                  ///< where those bytes start in owner_
  /// The main graph's initializers' raw_data given apart (viewGivenWeights); empty if none.
  std::vector<std::shared_ptr<const ir::Buffer>> given_;
  const ir::Graph* main_graph_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Types

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

// ---------------------------------------------------------------------------------------------
// Attributes, nodes, graphs

/// The type of an attribute: as given, or in a file of IR version 1, which may omit it, that of the
/// field that is set. UNDEFINED only for a reference attribute (of a function body).
StatusOr<int> attributeType(const onnx::AttributeProto& proto, int64_t ir_version) {
  if (proto.type() != onnx::AttributeProto::UNDEFINED || !proto.ref_attr_name().empty()) {
    return static_cast<int>(proto.type());
  }
  // The type is required since IR version 2.
  if (ir_version >= 2) return invalidArgument("attribute '{}' has an undefined type", proto.name());
  if (proto.has_f()) return onnx::AttributeProto::FLOAT;
  if (proto.has_i()) return onnx::AttributeProto::INT;
  if (proto.has_s()) return onnx::AttributeProto::STRING;
  if (proto.has_t()) return onnx::AttributeProto::TENSOR;
  if (proto.has_g()) return onnx::AttributeProto::GRAPH;
  if (proto.has_sparse_tensor()) return onnx::AttributeProto::SPARSE_TENSOR;
  if (proto.has_tp()) return onnx::AttributeProto::TYPE_PROTO;
  if (proto.floats_size()) return onnx::AttributeProto::FLOATS;
  if (proto.ints_size()) return onnx::AttributeProto::INTS;
  if (proto.strings_size()) return onnx::AttributeProto::STRINGS;
  if (proto.tensors_size()) return onnx::AttributeProto::TENSORS;
  if (proto.graphs_size()) return onnx::AttributeProto::GRAPHS;
  return invalidArgument("attribute '{}' has no type and no value", proto.name());
}

Status Importer::importSubgraphs(onnx::AttributeProto& proto, const Scope& scope,
                                 ir::Attribute& out) {
  std::vector<onnx::GraphProto*> protos;
  if (out.kind == ir::Attribute::Kind::kGraph) {
    protos.push_back(proto.mutable_g());
  } else {
    for (auto& g : *proto.mutable_graphs()) protos.push_back(&g);
  }
  for (onnx::GraphProto* gp : protos) {
    auto graph = std::make_unique<ir::Graph>();
    Status st = importGraph(*gp, *graph, &scope);
    if (!st.isOk()) {
      return boundedContext(
          st, fmt::format("in subgraph '{}' of attribute '{}'", gp->name(), proto.name()));
    }
    out.graphs.push_back(std::move(graph));
  }
  return Status::ok();
}

Status Importer::importAttribute(onnx::AttributeProto& proto, const Scope& scope,
                                 ir::Attribute& out) {
  using Kind = ir::Attribute::Kind;
  out.name = proto.name();
  out.ref_attr_name = proto.ref_attr_name();
  out.doc_string = proto.doc_string();
  out.unknown_fields = unknownFieldsOf(proto);
  ASSIGN_OR_RETURN(int type, attributeType(proto, ir_version_));
  out.kind = static_cast<Kind>(type);
  switch (out.kind) {
    case Kind::kUndefined:
      break;  // a reference attribute in a function body
    case Kind::kFloat:
      out.f = proto.f();
      break;
    case Kind::kInt:
      out.i = proto.i();
      break;
    case Kind::kString:
      out.s = std::move(*proto.mutable_s());
      break;
    case Kind::kFloats:
      out.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case Kind::kInts:
      out.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case Kind::kStrings:
      for (auto& s : *proto.mutable_strings()) out.strings.push_back(std::move(s));
      break;
    case Kind::kTensor: {
      ASSIGN_OR_RETURN(auto t, importTensor(*proto.mutable_t()));
      out.tensors.push_back(std::move(t));
      break;
    }
    case Kind::kTensors:
      for (auto& tp : *proto.mutable_tensors()) {
        ASSIGN_OR_RETURN(auto t, importTensor(tp));
        out.tensors.push_back(std::move(t));
      }
      break;
    case Kind::kSparseTensor: {
      ASSIGN_OR_RETURN(auto t, importSparse(*proto.mutable_sparse_tensor()));
      out.sparse_tensors.push_back(std::move(t));
      break;
    }
    case Kind::kSparseTensors:
      for (auto& sp : *proto.mutable_sparse_tensors()) {
        ASSIGN_OR_RETURN(auto t, importSparse(sp));
        out.sparse_tensors.push_back(std::move(t));
      }
      break;
    case Kind::kTypeProto: {
      ASSIGN_OR_RETURN(auto t, importType(proto.tp()));
      out.types.push_back(std::move(t));
      break;
    }
    case Kind::kTypeProtos:
      for (const auto& tp : proto.type_protos()) {
        ASSIGN_OR_RETURN(auto t, importType(tp));
        out.types.push_back(std::move(t));
      }
      break;
    case Kind::kGraph:
    case Kind::kGraphs:
      return importSubgraphs(proto, scope, out);
    default:
      return invalidArgument("attribute '{}' has unknown type {}", proto.name(), type);
  }
  return Status::ok();
}

Status Importer::importNode(onnx::NodeProto& proto, ir::Graph& graph, Scope& scope) {
  std::vector<ir::Value*> inputs;
  inputs.reserve(proto.input_size());
  for (const std::string& name : proto.input()) {
    if (name.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    ir::Value* v = scope.lookup(name);
    if (v == nullptr) {
      return invalidArgument("{}: input '{}' is not defined", nodeLabel(proto), name);
    }
    inputs.push_back(v);
  }
  ir::Node* node = ir::Builder::createNode(graph, proto.op_type(), proto.domain(), inputs, 0);
  ir::Builder::setName(node, proto.name());
  ir::Builder::setDocString(node, proto.doc_string());
  ir::Builder::setUnknownFields(node, unknownFieldsOf(proto));
  if (proto.op_type().empty()) return invalidArgument("{}: empty op_type", nodeLabel(proto));
  // Duplicate names: a linear look-back for the usual few attributes, a set for many.
  std::unordered_set<std::string_view> attribute_names;
  const int num_attributes = proto.attribute_size();
  for (int a = 0; a < num_attributes; ++a) {
    auto& attr_proto = *proto.mutable_attribute(a);
    bool duplicate = false;
    if (num_attributes <= 16) {
      for (int b = 0; b < a && !duplicate; ++b)
        duplicate = proto.attribute(b).name() == attr_proto.name();
    } else {
      duplicate = !attribute_names.insert(attr_proto.name()).second;
    }
    if (duplicate) {
      return invalidArgument("{}: attribute '{}' appears twice", nodeLabel(proto),
                             attr_proto.name());
    }
    ir::Attribute attr;
    Status st = importAttribute(attr_proto, scope, attr);
    if (!st.isOk()) return boundedContext(st, nodeLabel(proto));
    ir::Builder::appendAttribute(node, std::move(attr));
  }
  for (const std::string& name : proto.output()) {
    if (name.empty()) {
      ir::Builder::addAbsentOutput(node);
      continue;
    }
    ir::Value* v = ir::Builder::addOutput(node);
    ir::Builder::setName(v, name);  // found through scope.producers
  }
  return Status::ok();
}

Status Importer::checkGraphLimits(const onnx::GraphProto& proto, int depth) {
  if (depth > limits_.max_subgraph_depth) {
    return invalidArgument("subgraphs nest deeper than {} levels (the limit)",
                           limits_.max_subgraph_depth);
  }
  nodes_ += proto.node_size();
  if (nodes_ > limits_.max_nodes) {
    return invalidArgument("the model has more than {} nodes (the limit; opt --max-nodes)",
                           limits_.max_nodes);
  }
  initializers_ += proto.initializer_size() + proto.sparse_initializer_size();
  if (initializers_ > limits_.max_initializers) {
    return invalidArgument(
        "the model has more than {} initializers (the limit; opt --max-initializers)",
        limits_.max_initializers);
  }
  return Status::ok();
}

/// A graph input or initializer may take `name`: it is not empty and not defined yet.
Status checkDefinable(const Scope& scope, const std::string& name, const char* what) {
  if (name.empty()) return invalidArgument("a graph {} has an empty name", what);
  if (scope.names.contains(name)) {
    return invalidArgument("'{}' is defined twice (duplicate {})", name, what);
  }
  return Status::ok();
}

Status Importer::importGraphInputs(onnx::GraphProto& proto, ir::Graph& graph, Scope& scope) {
  for (const auto& vi : proto.input()) {
    RETURN_IF_ERROR(checkDefinable(scope, vi.name(), "input"));
    ir::Type type;
    if (vi.has_type()) {
      auto t = importType(vi.type());
      if (!t.isOk()) return t.status().withContext(fmt::format("input '{}'", vi.name()));
      type = std::move(t).value();
    }
    ir::Value* v = ir::Builder::addInput(graph, vi.name(), std::move(type));
    ir::Builder::setDocString(v, vi.doc_string());
    ir::Builder::setUnknownFields(v, unknownFieldsOf(vi));
    scope.define(v);
  }
  if (&graph == main_graph_ && split_ != nullptr &&
      split_->raw.size() != static_cast<size_t>(proto.initializer_size())) {
    return makeError(StatusCode::kInternal, "the split model lost initializers");
  }
  if (&graph == main_graph_ && !given_.empty() &&
      given_.size() != static_cast<size_t>(proto.initializer_size())) {
    return invalidArgument("{} weights given apart for the main graph's {} initializers",
                           given_.size(), proto.initializer_size());
  }
  for (int k = 0; k < proto.initializer_size(); ++k) {
    onnx::TensorProto& tp = *proto.mutable_initializer(k);
    auto viewed = viewedInitializer(graph, proto, k);
    if (!viewed.isOk())
      return viewed.status().withContext(fmt::format("initializer '{}'", tp.name()));
    auto tensor = importTensor(tp, viewed->has_value() ? &**viewed : nullptr);
    if (!tensor.isOk())
      return tensor.status().withContext(fmt::format("initializer '{}'", tp.name()));
    if (ir::Value* const* found = scope.names.find(tp.name())) {
      ir::Value* v = *found;
      if (v->kind() != ir::Value::Kind::kGraphInput || v->initializer() != nullptr) {
        return invalidArgument("initializer '{}' is defined twice", tp.name());
      }
      ir::Builder::setInputDefault(graph, v, std::move(tensor).value());
      continue;
    }
    RETURN_IF_ERROR(checkDefinable(scope, tp.name(), "initializer"));
    scope.define(ir::Builder::addInitializer(graph, tp.name(), std::move(tensor).value()));
  }
  for (auto& sp : *proto.mutable_sparse_initializer()) {
    std::string name = sp.values().name();
    auto tensor = importSparse(sp);
    if (!tensor.isOk()) {
      return tensor.status().withContext(fmt::format("sparse initializer '{}'", name));
    }
    RETURN_IF_ERROR(checkDefinable(scope, name, "sparse initializer"));
    scope.define(ir::Builder::addSparseInitializer(graph, name, std::move(tensor).value()));
  }
  return Status::ok();
}

/// Records which node defines each output name (viewed in the proto, which outlives the scope: no
/// name is copied), refusing names defined twice or shadowing an enclosing graph's.
Status indexNodeOutputs(const onnx::GraphProto& proto, Scope& scope) {
  const int n = proto.node_size();
  NameMap<Scope::OutputSlot>& producer = scope.producers;
  producer.reserve(static_cast<size_t>(n));
  scope.imported.assign(static_cast<size_t>(n), nullptr);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < proto.node(i).output_size(); ++k) {
      const std::string& out = proto.node(i).output(k);
      if (out.empty()) continue;
      if (scope.names.contains(out)) {
        return invalidArgument("{}: output '{}' redefines a graph input or initializer",
                               nodeLabel(proto.node(i)), out);
      }
      // Static single assignment holds across scopes (onnx.checker): a subgraph's node may not
      // define a name already visible from an enclosing graph. Inputs of a subgraph may shadow.
      if (scope.parent != nullptr && scope.parent->lookup(out) != nullptr) {
        return invalidArgument("{}: output '{}' redefines a name of an enclosing graph",
                               nodeLabel(proto.node(i)), out);
      }
      auto [first, inserted] = producer.insert(out, {i, k});
      if (!inserted) {
        return invalidArgument("'{}' is defined twice: by {} and by {}", out,
                               nodeLabel(proto.node(first->node)), nodeLabel(proto.node(i)));
      }
    }
  }
  return Status::ok();
}

/// The dependencies between a graph's nodes (proto indices): a node depends on the producers of
/// its inputs and of its subgraphs' free names.
struct NodeEdges {
  std::vector<std::pair<int, int>> edges;  ///< (producer, user), each counted once
  std::vector<int> pending;                ///< per node, the edges into it
  bool sorted = true;                      ///< every producer comes before its users
};

Status collectEdges(const onnx::GraphProto& proto, const Scope& scope, NodeEdges& out) {
  const int n = proto.node_size();
  const NameMap<Scope::OutputSlot>& producer = scope.producers;
  out.edges.reserve(static_cast<size_t>(n));
  out.pending.assign(static_cast<size_t>(n), 0);
  std::vector<int> last_user(n, -1);  // last_user[p] == i: the edge p -> i is recorded
  std::unordered_set<std::string> free_names;
  for (int i = 0; i < n; ++i) {
    const onnx::NodeProto& node = proto.node(i);
    auto depend = [&](std::string_view name) -> Status {
      const Scope::OutputSlot* found = producer.find(name);
      if (found == nullptr) return Status::ok();
      const int p = found->node;
      if (p == i) {
        return invalidArgument("{} uses its own output '{}' (a cycle)", nodeLabel(node), name);
      }
      if (last_user[p] == i) return Status::ok();  // named twice: one edge
      last_user[p] = i;
      out.edges.emplace_back(p, i);
      ++out.pending[i];
      out.sorted = out.sorted && p < i;
      return Status::ok();
    };
    for (const auto& name : node.input()) RETURN_IF_ERROR(depend(name));
    free_names.clear();
    for (const auto& a : node.attribute()) {
      if (a.has_g()) collectFreeNames(a.g(), free_names);
      for (const auto& g : a.graphs()) collectFreeNames(g, free_names);
    }
    for (const auto& name : free_names) RETURN_IF_ERROR(depend(name));
  }
  return Status::ok();
}

/// Kahn's algorithm, always taking the ready node that came first in the file: sorted input stays
/// as is. The users of node i are edge_users[edge_begin[i] .. edge_begin[i+1]) (built in two
/// passes, so a million nodes cost two flat arrays instead of a million small vectors).
Status kahnOrder(const onnx::GraphProto& proto, NodeEdges& dag, std::vector<int>& order) {
  const int n = proto.node_size();
  std::vector<int> edge_begin(static_cast<size_t>(n) + 1, 0);
  for (const auto& [from, to] : dag.edges) ++edge_begin[from + 1];
  for (int i = 0; i < n; ++i) edge_begin[i + 1] += edge_begin[i];
  std::vector<int> edge_users(dag.edges.size());
  std::vector<int> fill(edge_begin.begin(), edge_begin.end() - 1);
  for (const auto& [from, to] : dag.edges) edge_users[fill[from]++] = to;
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i) {
    if (dag.pending[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int e = edge_begin[i]; e < edge_begin[i + 1]; ++e) {
      if (--dag.pending[edge_users[e]] == 0) ready.push(edge_users[e]);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i) {
      if (dag.pending[i] > 0) {
        return invalidArgument("the graph has a cycle through {}", nodeLabel(proto.node(i)));
      }
    }
  }
  return Status::ok();
}

/// The order to import the nodes in (ONNX files need not be sorted). The sort's tables are freed
/// on return, before the nodes are built (at a million nodes they would add to the import's peak).
Status sortNodes(const onnx::GraphProto& proto, const Scope& scope, std::vector<int>& order) {
  const int n = proto.node_size();
  NodeEdges dag;
  RETURN_IF_ERROR(collectEdges(proto, scope, dag));
  order.reserve(n);
  if (!dag.sorted) return kahnOrder(proto, dag, order);
  // Every producer comes before its users: the file's order is the order (the usual case).
  for (int i = 0; i < n; ++i) order.push_back(i);
  return Status::ok();
}

Status importGraphOutputs(const onnx::GraphProto& proto, ir::Graph& graph, const Scope& scope) {
  for (const auto& vi : proto.output()) {
    ir::Value* v = scope.lookup(vi.name());
    if (v == nullptr) return invalidArgument("graph output '{}' is not defined", vi.name());
    if (vi.has_type()) {
      auto t = importType(vi.type());
      if (!t.isOk()) return t.status().withContext(fmt::format("output '{}'", vi.name()));
      if (!v->type().isKnown() || v->kind() == ir::Value::Kind::kNodeOutput)
        ir::Builder::setType(v, *t);
    }
    if (!vi.doc_string().empty()) ir::Builder::setDocString(v, vi.doc_string());
    if (!unknownFieldsOf(vi).empty()) ir::Builder::setUnknownFields(v, unknownFieldsOf(vi));
    ir::Builder::addOutput(graph, v);
  }
  return Status::ok();
}

Status importValueInfos(const onnx::GraphProto& proto, ir::Graph& graph, const Scope& scope) {
  for (const auto& vi : proto.value_info()) {
    ir::Value* v = scope.local(vi.name());
    if (v == nullptr) {
      ir::Builder::mutableOrphanValueInfos(graph).push_back(vi.SerializeAsString());
      continue;
    }
    if (v->hasValueInfo()) {
      ir::Builder::mutableOrphanValueInfos(graph).push_back(
          vi.SerializeAsString());  // a duplicate entry, kept as is
      continue;
    }
    ir::Builder::setHasValueInfo(v, true);
    if (vi.has_type()) {
      auto t = importType(vi.type());
      if (!t.isOk()) return t.status().withContext(fmt::format("value_info '{}'", vi.name()));
      if (!v->isGraphOutput() && v->kind() == ir::Value::Kind::kNodeOutput)
        ir::Builder::setType(v, *t);
      else if (!v->type().isKnown())
        ir::Builder::setType(v, *t);
    }
    if (v->kind() == ir::Value::Kind::kNodeOutput && !v->isGraphOutput()) {
      ir::Builder::setDocString(v, vi.doc_string());
      ir::Builder::setUnknownFields(v, unknownFieldsOf(vi));
    }
  }
  return Status::ok();
}

StatusOr<std::optional<Importer::ViewedBytes>> Importer::viewedInitializer(
    const ir::Graph& graph, const onnx::GraphProto& proto, int k) {
  const auto at = static_cast<size_t>(k);
  if (&graph != main_graph_) return std::optional<ViewedBytes>();
  if (split_ != nullptr && split_->raw[at].cut) {
    return std::optional<ViewedBytes>(
        ViewedBytes{owner_, owner_offset_ + split_->raw[at].offset, split_->raw[at].size});
  }
  if (given_.empty() || given_[at] == nullptr) return std::optional<ViewedBytes>();
  const onnx::TensorProto& tp = proto.initializer(k);
  const bool holds = tp.has_raw_data() || tp.data_location() == onnx::TensorProto::EXTERNAL ||
                     tp.float_data_size() > 0 || tp.int32_data_size() > 0 ||
                     tp.int64_data_size() > 0 || tp.double_data_size() > 0 ||
                     tp.uint64_data_size() > 0 || tp.string_data_size() > 0;
  if (holds) return invalidArgument("raw_data given apart, but the tensor holds data too");
  return std::optional<ViewedBytes>(ViewedBytes{given_[at], 0, given_[at]->size()});
}

Status Importer::importGraph(onnx::GraphProto& proto, ir::Graph& graph, const Scope* parent) {
  ir::Builder::setName(graph, proto.name());
  ir::Builder::setDocString(graph, proto.doc_string());
  ir::Builder::setUnknownFields(graph, unknownFieldsOf(proto));
  for (const auto& qa : proto.quantization_annotation()) {
    ir::Builder::mutableQuantizationAnnotations(graph).push_back(qa.SerializeAsString());
  }
  Scope scope;
  scope.parent = parent;
  scope.depth = parent != nullptr ? parent->depth + 1 : 0;
  RETURN_IF_ERROR(checkGraphLimits(proto, scope.depth));
  RETURN_IF_ERROR(importGraphInputs(proto, graph, scope));
  RETURN_IF_ERROR(indexNodeOutputs(proto, scope));
  std::vector<int> order;
  RETURN_IF_ERROR(sortNodes(proto, scope, order));
  // The main graph's nodes' unknown fields, if splitRawData cut them out of the bytes.
  const bool cut_unknown =
      split_ != nullptr && &graph == main_graph_ && !split_->node_unknown.empty();
  if (cut_unknown && split_->node_unknown.size() != static_cast<size_t>(proto.node_size())) {
    return makeError(StatusCode::kInternal, "the cut node fields do not match the nodes");
  }
  for (int i : order) {
    RETURN_IF_ERROR(importNode(*proto.mutable_node(i), graph, scope));
    scope.imported[i] = graph.lastNode();  // importNode appends
    if (cut_unknown) {
      ir::Builder::setUnknownFields(graph.lastNode(), split_->node_unknown[static_cast<size_t>(i)]);
    }
  }
  RETURN_IF_ERROR(importGraphOutputs(proto, graph, scope));
  return importValueInfos(proto, graph, scope);
}

Status Importer::importFunction(onnx::FunctionProto& proto, ir::Function& fn) {
  fn.name = proto.name();
  fn.domain = proto.domain();
  fn.doc_string = proto.doc_string();
  fn.unknown_fields = unknownFieldsOf(proto);
  fn.attribute_names.assign(proto.attribute().begin(), proto.attribute().end());
  RETURN_IF_ERROR(importOpsets(proto.opset_import(), fn.opset_imports,
                               fmt::format("function '{}'", proto.name()), limits_.diagnostics));
  // The body is imported as a graph whose inputs and outputs are the formal parameters.
  onnx::GraphProto body;
  body.set_name(proto.name());
  for (const auto& in : proto.input()) body.add_input()->set_name(in);
  for (const auto& out : proto.output()) body.add_output()->set_name(out);
  body.mutable_node()->Swap(proto.mutable_node());
  fn.body = std::make_unique<ir::Graph>();
  return importGraph(body, *fn.body, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Model-level checks: what onnx.checker refuses and the IR alone cannot show.

/// "" and "ai.onnx" name the same domain.
std::string canonicalDomain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

using OpsetMap = std::map<std::string, int64_t>;  ///< canonical domain -> version

/// Reads opset_import entries into `out`. A domain listed twice (a model on PyPI lists "" twice)
/// is accepted, as onnx.checker and onnxruntime do: the last entry wins, as in both (a warning
/// says so when the versions differ).
Status importOpsets(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& protos,
                    std::vector<ir::OpsetImport>& out, const std::string& where,
                    DiagnosticSink* diagnostics) {
  std::unordered_map<std::string, size_t> index;  // canonical domain -> entry in `out`
  for (size_t i = 0; i < out.size(); ++i) index.emplace(canonicalDomain(out[i].domain), i);
  for (const auto& op : protos) {
    if (op.version() <= 0) {
      return invalidArgument("opset_import of domain '{}' has version {}", op.domain(),
                             op.version());
    }
    auto [it, inserted] = index.emplace(canonicalDomain(op.domain()), out.size());
    if (inserted) {
      out.push_back({op.domain(), op.version()});
      continue;
    }
    ir::OpsetImport* same = &out[it->second];
    if (same->version != op.version()) {
      report(diagnostics,
             {Severity::kWarning, where,
              fmt::format("{}{}opset_import lists domain '{}' twice, with versions {} and {}; the "
                          "last, {}, is used (as onnxruntime does)",
                          where, where.empty() ? "" : ": ", escapeControlChars(op.domain()),
                          same->version, op.version(), op.version())});
    }
    same->version = op.version();
  }
  return Status::ok();
}

OpsetMap opsetMap(const std::vector<ir::OpsetImport>& imports) {
  OpsetMap map;
  for (const auto& op : imports) map[canonicalDomain(op.domain)] = op.version;
  return map;
}

std::string describeNode(const ir::Node& n) {
  std::string op = n.domain().empty() ? n.opType() : n.domain() + "." + n.opType();
  if (!n.name().empty()) return fmt::format("node '{}' ({})", n.name(), op);
  if (n.numOutputs() > 0 && n.output(0) != nullptr) {
    return fmt::format("node {} producing '{}'", op, n.output(0)->name());
  }
  return "node " + op;
}

/// The element type of `v` when it is known at import: declared, an initializer's, or a Constant's.
std::optional<DataType> knownElemType(const ir::Value* v) {
  if (v->type().isTensor() && v->type().elem_type != DataType::kUndefined) {
    return v->type().elem_type;
  }
  if (v->producer() != nullptr && v->producer()->opType() == "Constant" &&
      canonicalDomain(v->producer()->domain()).empty()) {
    if (auto t = ir::constantNodeTensor(*v->producer())) return t->dtype();
  }
  return std::nullopt;
}

std::string onnxTypeString(DataType dtype) {
  return fmt::format("tensor({})", ir::dataTypeName(dtype));
}

/// Checks a node of the default domain against its ONNX schema at `version`, as onnx.checker's
/// OpSchema::Verify does: attribute names, types and presence, the arity, and inputs whose type
/// the operator fixes (If's cond is bool, Reshape's shape int64...). Past the newest opset that
/// libonnx knows, the schema found is older than the node's: only checks that stay true across
/// versions (types of known attributes, fixed input types) are made.
using SchemaCache = NameMap<const onnx::OpSchema*>;  ///< op type -> schema at one version

Status checkSchema(const ir::Node& n, int64_t version, SchemaCache& schemas) {
  constexpr int64_t kFixedTypesCheckedThrough = 28;
  static const int kNewestKnown = [] {
    const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = map.find(onnx::ONNX_DOMAIN);
    return it == map.end() ? 0 : it->second.second;
  }();
  if (version > INT_MAX) return Status::ok();
  // One registry lookup per op type, not per node. The keys view the nodes' op types, which
  // outlive the check.
  const onnx::OpSchema* const* cached = schemas.find(n.opType());
  const onnx::OpSchema* schema =
      cached != nullptr
          ? *cached
          : *schemas
                 .insert(n.opType(), onnx::OpSchemaRegistry::Schema(
                                         n.opType(), static_cast<int>(version), onnx::ONNX_DOMAIN))
                 .first;
  if (schema == nullptr || schema->Deprecated()) return Status::ok();  // not ours to judge
  const bool exact = version <= kNewestKnown;
  // Formatted only for a message: a string per node would cost more than the checks.
  auto op = [schema] { return fmt::format("{}-{}", schema->Name(), schema->SinceVersion()); };
  for (const ir::Attribute& a : n.attributes()) {
    auto it = schema->attributes().find(a.name);
    if (it == schema->attributes().end()) {
      if (exact) {
        return invalidArgument("{}: attribute '{}' is not an attribute of {}", describeNode(n),
                               a.name, op());
      }
      continue;
    }
    if (!a.ref_attr_name.empty()) continue;  // a function's parameter: typed by the caller
    if (static_cast<int>(a.kind) != static_cast<int>(it->second.type)) {
      return invalidArgument("{}: attribute '{}' is {} but {} takes {}", describeNode(n), a.name,
                             ir::Attribute::kindName(a.kind), op(),
                             ir::Attribute::kindName(static_cast<ir::Attribute::Kind>(
                                 static_cast<int>(it->second.type))));
    }
  }
  if (!exact) {
    // Fall through to the fixed-type checks only.
  } else {
    for (const auto& [name, attr] : schema->attributes()) {
      if (attr.required && n.findAttribute(name) == nullptr) {
        return invalidArgument("{}: {} requires attribute '{}'", describeNode(n), op(), name);
      }
    }
    auto in = static_cast<int64_t>(n.numInputs());
    auto out = static_cast<int64_t>(n.numOutputs());
    if (in < schema->min_input() || in > schema->max_input()) {
      return invalidArgument("{}: {} inputs, but {} takes {} to {}", describeNode(n), in, op(),
                             schema->min_input(), schema->max_input());
    }
    if (out < schema->min_output() || out > schema->max_output()) {
      return invalidArgument("{}: {} outputs, but {} gives {} to {}", describeNode(n), out, op(),
                             schema->min_output(), schema->max_output());
    }
  }
  const auto& formals = schema->inputs();
  for (size_t i = 0; i < n.numInputs() && !formals.empty(); ++i) {
    const auto& formal = formals[std::min(i, formals.size() - 1)];
    if (i >= formals.size() && formal.GetOption() != onnx::OpSchema::Variadic) break;
    const ir::Value* v = n.input(i);
    if (v == nullptr) {
      if (exact && formal.GetOption() == onnx::OpSchema::Single) {
        return invalidArgument("{}: input '{}' of {} is required but empty", describeNode(n),
                               formal.GetName(), op());
      }
      continue;
    }
    const auto& types = formal.GetTypes();
    if (types.size() != 1) continue;
    auto dtype = knownElemType(v);
    if (!dtype) continue;
    const std::string& allowed = **types.begin();
    if (allowed.rfind("tensor(", 0) != 0) continue;
    // Past libonnx's opsets, only fixed types that later opsets kept are checked: compared with
    // onnx 1.23's schemas (through opset 28), the float-only inputs widened (quantization
    // scales, Celu's X) while bool and integer ones (conditions, shapes, trip counts) did not.
    if (!exact && (version > kFixedTypesCheckedThrough || allowed == "tensor(float)")) continue;
    if (onnxTypeString(*dtype) != allowed) {
      return invalidArgument("{}: input '{}' ('{}') is {} but {} takes {}", describeNode(n),
                             formal.GetName(), v->name(), onnxTypeString(*dtype), op(), allowed);
    }
  }
  return Status::ok();
}

/// Checks every node of `graph` and its subgraphs: its domain is imported, and default-domain
/// nodes fit their schema.
Status checkNodes(const ir::Graph& graph, const OpsetMap& opsets, SchemaCache& schemas) {
  for (const ir::Node* n : graph) {
    auto it = opsets.find(canonicalDomain(n->domain()));
    if (it == opsets.end()) {
      return invalidArgument("{}: domain '{}' has no opset_import", describeNode(*n), n->domain());
    }
    if (it->first.empty()) RETURN_IF_ERROR(checkSchema(*n, it->second, schemas));
    for (const ir::Graph* sub : n->subgraphs()) {
      RETURN_IF_ERROR(checkNodes(*sub, opsets, schemas));
    }
  }
  return Status::ok();
}

/// The model-local functions that `graph` (and its subgraphs) calls, as indices into `functions`.
void collectCalls(const ir::Graph& graph,
                  const std::map<std::pair<std::string, std::string>, size_t>& functions,
                  std::vector<size_t>& calls) {
  for (const ir::Node* n : graph) {
    auto it = functions.find({canonicalDomain(n->domain()), n->opType()});
    if (it != functions.end()) calls.push_back(it->second);
    for (const ir::Graph* sub : n->subgraphs()) collectCalls(*sub, functions, calls);
  }
}

/// Model-local functions must not call themselves, directly or through others (onnx.checker).
Status checkFunctionRecursion(const ir::Model& model) {
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < model.functions.size(); ++i) {
    index[{canonicalDomain(model.functions[i]->domain), model.functions[i]->name}] = i;
  }
  std::vector<std::vector<size_t>> calls(model.functions.size());
  for (size_t i = 0; i < model.functions.size(); ++i) {
    collectCalls(*model.functions[i]->body, index, calls[i]);
  }
  // Depth-first search with an explicit stack (call chains may be long); state 1 = on the path.
  std::vector<int> state(model.functions.size(), 0);
  for (size_t root = 0; root < model.functions.size(); ++root) {
    if (state[root] != 0) continue;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};  // function, next call to follow
    state[root] = 1;
    while (!stack.empty()) {
      auto& [f, next] = stack.back();
      if (next == calls[f].size()) {
        state[f] = 2;
        stack.pop_back();
        continue;
      }
      size_t callee = calls[f][next++];
      if (state[callee] == 1) {
        std::vector<std::string> path;
        auto from = std::find_if(stack.begin(), stack.end(),
                                 [&](const auto& frame) { return frame.first == callee; });
        for (auto it = from; it != stack.end(); ++it) {
          const ir::Function& fn = *model.functions[it->first];
          path.push_back(fn.domain.empty() ? fn.name : fn.domain + "." + fn.name);
        }
        path.push_back(path.front());
        return invalidArgument("model-local functions call themselves: {}",
                               fmt::join(path, " -> "));
      }
      if (state[callee] == 0) {
        state[callee] = 1;
        stack.emplace_back(callee, 0);
      }
    }
  }
  return Status::ok();
}

Status checkModel(const ir::Model& model) {
  if (model.opset_imports.empty() && model.ir_version >= 3) {
    return invalidArgument("the model has no opset_import (required since IR version 3)");
  }
  RETURN_IF_ERROR(checkFunctionRecursion(model));
  for (const auto& fn : model.functions) {
    SchemaCache schemas;
    Status st = checkNodes(*fn->body, opsetMap(fn->opset_imports), schemas);
    if (!st.isOk()) return st.withContext(fmt::format("function '{}'", fn->name));
  }
  SchemaCache schemas;
  return checkNodes(*model.graph, opsetMap(model.opset_imports), schemas);
}

StatusOr<std::unique_ptr<ir::Model>> Importer::importModel(onnx::ModelProto& proto) {
  if (!proto.has_ir_version() && !proto.has_graph()) {
    return invalidArgument("not an ONNX model (no ir_version and no graph)");
  }
  if (proto.ir_version() <= 0) return invalidArgument("missing or invalid ir_version");
  if (proto.ir_version() > kMaxIrVersion) {
    return invalidArgument("unknown IR version {} (onnxopt reads up to {})", proto.ir_version(),
                           kMaxIrVersion);
  }
  if (!proto.has_graph()) return invalidArgument("the model has no graph");
  auto model = std::make_unique<ir::Model>();
  model->ir_version = proto.ir_version();
  ir_version_ = proto.ir_version();
  RETURN_IF_ERROR(
      importOpsets(proto.opset_import(), model->opset_imports, "", limits_.diagnostics));
  model->producer_name = proto.producer_name();
  model->producer_version = proto.producer_version();
  model->domain = proto.domain();
  model->model_version = proto.model_version();
  model->doc_string = proto.doc_string();
  for (const auto& kv : proto.metadata_props())
    model->metadata_props.emplace_back(kv.key(), kv.value());
  for (const auto& ti : proto.training_info())
    model->training_info.push_back(ti.SerializeAsString());
  model->unknown_fields = unknownFieldsOf(proto);
  for (auto& fp : *proto.mutable_functions()) {
    auto fn = std::make_unique<ir::Function>();
    Status st = importFunction(fp, *fn);
    if (!st.isOk()) return st.withContext(fmt::format("function '{}'", fp.name()));
    model->functions.push_back(std::move(fn));
  }
  model->graph = std::make_unique<ir::Graph>();
  main_graph_ = model->graph.get();
  RETURN_IF_ERROR(importGraph(*proto.mutable_graph(), *model->graph, nullptr));
  return model;
}

/// The checks on an imported model, which need the IR only: callers run them after freeing the
/// parsed proto, so that a large model is not held twice while they run.
StatusOr<std::unique_ptr<ir::Model>> checkImported(StatusOr<std::unique_ptr<ir::Model>> model) {
  if (!model.isOk()) return model;
  // Names were found unique while resolving them (Scope::define, the producer table).
  RETURN_IF_ERROR(ir::verifyModel(**model, ir::VerifyOptions{.unique_names = false}));
  RETURN_IF_ERROR(checkModel(**model));
  return model;
}

bool looksLikeText(const std::string& path, std::string_view head) {
  auto ext = fs::path(path).extension().string();
  if (ext == ".onnxtxt" || ext == ".txt") return true;
  size_t i = 0;
  while (i < head.size() &&
         (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
    ++i;
  return i < head.size() && head[i] == '<';
}

std::string folderOf(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

/// Arena blocks for parsed models: large enough that a big model takes few blocks.
google::protobuf::ArenaOptions parseArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 8 << 20;
  options.block_alloc = support::allocateArenaBlock;
  options.block_dealloc = support::freeArenaBlock;
  return options;
}

}  // namespace

StatusOr<std::unique_ptr<ir::Model>> parseModelText(std::string_view text,
                                                    const std::string& base_dir,
                                                    const LoadLimits& limits) {
  onnx::ModelProto proto;
  std::string owned(text);
  onnx::OnnxParser parser(owned.c_str());
  onnx::Common::Status status;
  try {
    status = parser.Parse(proto);
  } catch (const std::exception& e) {
    // onnx's parser converts numbers with std::stof/stoll, which throw on bad or huge literals.
    return invalidArgument("textual syntax error: bad literal ({})", e.what());
  }
  if (!status.IsOK()) {
    std::string msg = status.ErrorMessage();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return invalidArgument("textual syntax error: {}", msg);
  }
  Importer importer(base_dir, limits);
  return checkImported(importer.importModel(proto));
}

namespace {

/// A reference attribute's copy (it holds a name and a reference, no data).
ir::Attribute referenceCopy(const ir::Attribute& a) {
  ir::Attribute c;
  c.name = a.name;
  c.kind = a.kind;
  c.ref_attr_name = a.ref_attr_name;
  c.doc_string = a.doc_string;
  return c;
}

/// The line of a "(line: L column: C)" position the parser reports.
std::pair<int, int> parsePosition(const std::string& pos) {
  int line = 0, col = 0;
  if (std::sscanf(pos.c_str(), "(line: %d column: %d)", &line, &col) != 2) return {0, 0};
  return {line, col};
}

/// The parser's message, "[ParseError at position (line: L column: C)]\nError context: X\nwhy",
/// as "path:L:C: why (at: X)".
std::string parseErrorMessage(const std::string& path, std::string msg) {
  int line = 0, col = 0;
  std::string context, why = msg;
  auto at = msg.find("(line: ");
  if (at != std::string::npos) std::tie(line, col) = parsePosition(msg.substr(at));
  auto ctx = msg.find("Error context: ");
  if (ctx != std::string::npos) {
    auto end = msg.find('\n', ctx);
    context = msg.substr(ctx + 15, end == std::string::npos ? std::string::npos : end - ctx - 15);
    why = end == std::string::npos ? std::string() : msg.substr(end + 1);
  }
  std::replace(why.begin(), why.end(), '\n', ' ');
  auto trim = [](std::string t) {
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    size_t b = 0;
    while (b < t.size() && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
    return t.substr(b);
  };
  return fmt::format("{}:{}:{}: textual syntax error: {}{}", path, line, col, trim(why),
                     context.empty() ? "" : " (at: " + trim(context) + ")");
}

/// The line in [first, last] of `lines` where `name` is defined (written left of a '=').
int definitionLine(const std::vector<std::string_view>& lines, int first, int last,
                   const std::string& name) {
  for (int l = std::max(first, 1); l <= last && l <= static_cast<int>(lines.size()); ++l) {
    std::string_view text = lines[l - 1];
    auto eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view left = text.substr(0, eq);
    // Attribute assignments (`<alpha = 1>`) come after an op name and '(' or '<'; a definition's
    // left side is a plain list of names.
    if (left.find_first_of("<(@\"") != std::string_view::npos) continue;
    size_t i = 0;
    while (i < left.size()) {
      while (i < left.size() &&
             (left[i] == ',' || std::isspace(static_cast<unsigned char>(left[i]))))
        ++i;
      size_t j = i;
      while (j < left.size() && left[j] != ',' &&
             !std::isspace(static_cast<unsigned char>(left[j])))
        ++j;
      if (j > i && left.substr(i, j - i) == name) return l;
      i = j;
    }
  }
  return first;
}

}  // namespace

StatusOr<ir::FunctionFile> parseFunctionFile(std::string_view text, const std::string& path,
                                             const std::vector<std::string>& extra_attributes) {
  std::string owned(text);
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= owned.size();) {
    size_t end = owned.find('\n', start);
    if (end == std::string::npos) end = owned.size();
    lines.emplace_back(owned.data() + start, end - start);
    start = end + 1;
  }
  onnx::OnnxParser parser(owned.c_str());
  onnx::ModelProto proto;
  proto.set_ir_version(10);
  proto.mutable_graph()->set_name("functions");
  struct Span {
    int first = 0, last = 0;
  };
  std::vector<Span> spans;
  // Extra attributes taken off the nodes before the schema check: (function, first output) ->
  // attributes, put back on the imported nodes.
  std::map<std::pair<size_t, std::string>, std::vector<onnx::AttributeProto>> stashed;
  std::map<std::string, std::pair<int64_t, int>> imports;  // domain -> version, line
  try {
    while (!parser.EndOfInput()) {
      int first = parsePosition(parser.GetCurrentPos()).first;
      onnx::FunctionProto* fp = proto.add_functions();
      onnx::Common::Status status = parser.Parse(*fp);
      if (!status.IsOK()) {
        return invalidArgument("{}", parseErrorMessage(path, status.ErrorMessage()));
      }
      int last = parsePosition(parser.GetCurrentPos()).first;
      spans.push_back({first, last});
      for (const auto& op : fp->opset_import()) {
        std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
        auto [it, inserted] = imports.emplace(domain, std::make_pair(op.version(), first));
        if (!inserted && it->second.first != op.version()) {
          return invalidArgument(
              "{}:{}: function '{}' imports domain '{}' at version {}, but line {} imports it at "
              "version {}: one file holds one version of each domain",
              path, first, fp->name(), domain, op.version(), it->second.second, it->second.first);
        }
      }
      for (auto& node : *fp->mutable_node()) {
        auto* attrs = node.mutable_attribute();
        for (int a = attrs->size() - 1; a >= 0; --a) {
          std::string key = node.op_type() + "." + attrs->Get(a).name();
          if (std::find(extra_attributes.begin(), extra_attributes.end(), key) ==
              extra_attributes.end()) {
            continue;
          }
          if (node.output_size() == 0) continue;
          stashed[{spans.size() - 1, node.output(0)}].push_back(attrs->Get(a));
          attrs->DeleteSubrange(a, 1);
        }
      }
    }
  } catch (const std::exception& e) {
    return invalidArgument("{}: textual syntax error: bad literal ({})", path, e.what());
  }
  if (spans.empty()) return invalidArgument("{}: the file holds no function", path);
  for (const auto& [domain, version] : imports) {
    auto* op = proto.add_opset_import();
    op->set_domain(domain);
    op->set_version(version.first);
  }
  Importer importer(folderOf(path));
  auto imported = checkImported(importer.importModel(proto));
  if (!imported.isOk()) {
    // The importer names the function; say which line it starts on.
    std::string msg = imported.status().message();
    for (size_t f = 0; f < spans.size(); ++f) {
      const std::string& name = proto.functions(static_cast<int>(f)).name();
      if (msg.find("function '" + name + "'") != std::string::npos) {
        return invalidArgument("{}:{}: {}", path, spans[f].first, msg);
      }
    }
    return invalidArgument("{}: {}", path, msg);
  }
  ir::FunctionFile file;
  file.path = path;
  file.model = std::move(imported).value();
  for (size_t f = 0; f < file.model->functions.size(); ++f) {
    ir::Function& fn = *file.model->functions[f];
    file.function_lines[&fn] = spans[f].first;
    int64_t opset = 0;
    for (const auto& imp : fn.opset_imports) {
      if (imp.domain.empty() || imp.domain == "ai.onnx") opset = imp.version;
    }
    for (ir::Node* n : *fn.body) {
      ir::FunctionFile::NodeInfo info;
      std::string first_output =
          n->numOutputs() > 0 && n->output(0) != nullptr ? n->output(0)->name() : std::string();
      info.line = definitionLine(lines, spans[f].first, spans[f].last, first_output);
      auto extra = stashed.find({f, first_output});
      if (extra != stashed.end()) {
        for (onnx::AttributeProto& ap : extra->second) {
          ir::Attribute a;
          RETURN_IF_ERROR(importer.importPlainAttribute(ap, a));
          ir::Builder::setAttribute(n, std::move(a));
        }
      }
      bool standard = n->domain().empty() || n->domain() == "ai.onnx";
      const onnx::OpSchema* schema =
          standard && opset > 0 && opset <= INT_MAX
              ? onnx::OpSchemaRegistry::Schema(n->opType(), static_cast<int>(opset),
                                               onnx::ONNX_DOMAIN)
              : nullptr;
      if (schema != nullptr) {
        // The parser leaves a reference (`alpha = @alpha`) untyped; onnx.checker wants the type
        // the schema gives the attribute.
        std::vector<ir::Attribute> typed;
        for (const ir::Attribute& a : n->attributes()) {
          auto it = schema->attributes().find(a.name);
          if (a.ref_attr_name.empty() || a.kind != ir::Attribute::Kind::kUndefined ||
              it == schema->attributes().end()) {
            continue;
          }
          ir::Attribute t = referenceCopy(a);
          t.kind = static_cast<ir::Attribute::Kind>(static_cast<int>(it->second.type));
          typed.push_back(std::move(t));
        }
        for (ir::Attribute& t : typed) ir::Builder::setAttribute(n, std::move(t));
        for (const auto& [name, attr] : schema->attributes()) {
          if (attr.default_value.type() == onnx::AttributeProto::UNDEFINED) continue;
          ir::Attribute a;
          RETURN_IF_ERROR(importer.importPlainAttribute(attr.default_value, a));
          a.name = name;
          info.defaults.push_back(std::move(a));
        }
      }
      file.nodes[n] = std::move(info);
    }
  }
  return file;
}

StatusOr<ir::FunctionFile> loadFunctionFile(const std::string& path,
                                            const std::vector<std::string>& extra_attributes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(StatusCode::kNotFound, "{}: cannot read the file ({})", path,
                     std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parseFunctionFile(buffer.str(), path, extra_attributes);
}

StatusOr<std::unique_ptr<ir::Model>> parseModelBinary(
    std::string_view bytes, const std::string& base_dir, const LoadLimits& limits,
    std::shared_ptr<const ir::Buffer> owner,
    std::vector<std::shared_ptr<const ir::Buffer>> weights) {
  // With an owner, the weights are viewed in it: protobuf parses the rest only.
  std::optional<RawDataSplit> split;
  size_t offset = 0;
  if (owner != nullptr) {
    auto base = reinterpret_cast<uintptr_t>(owner->data());
    auto at = reinterpret_cast<uintptr_t>(bytes.data());
    if (at >= base && bytes.size() <= owner->size() && at - base <= owner->size() - bytes.size()) {
      offset = at - base;
      split = splitRawData(bytes, kMinViewedBytes);
    }
  }
  std::string_view parsed = split ? std::string_view(split->rest) : bytes;
  auto imported = [&]() -> StatusOr<std::unique_ptr<ir::Model>> {
    google::protobuf::Arena arena(parseArenaOptions());
    auto& proto = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
    google::protobuf::io::ArrayInputStream stream(parsed.data(), static_cast<int>(parsed.size()));
    google::protobuf::io::CodedInputStream coded(&stream);
    coded.SetTotalBytesLimit(INT_MAX);
    if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
      return invalidArgument("not a valid ONNX protobuf (truncated or not a model file)");
    }
    Importer importer(base_dir, limits);
    if (split) importer.viewRawData(*split, owner, offset);
    importer.viewGivenWeights(std::move(weights));
    return importer.importModel(proto);
  }();
  return checkImported(std::move(imported));
}

StatusOr<ir::Tensor> loadTensorFile(const std::string& path) {
  auto opened = ir::openRegularFile(path);
  if (!opened.isOk()) return opened.status().withContext(path);
  onnx::TensorProto proto;
  bool parsed;
  {
    google::protobuf::io::FileInputStream stream(*opened);
    stream.SetCloseOnDelete(true);
    parsed = proto.ParseFromZeroCopyStream(&stream);
  }
  if (!parsed) return invalidArgument("{}: not a TensorProto file", path);
  Importer importer(folderOf(path));
  auto t = importer.importStandaloneTensor(proto);
  if (!t.isOk()) return t.status().withContext(path);
  return t;
}

StatusOr<std::unique_ptr<ir::Model>> loadModel(const std::string& path, const LoadLimits& limits) {
  auto fail = [&](const Status& st) { return st.withContext(path); };
  // The file is mapped once, for both formats. A binary model views its weights there instead of
  // copying them out (the mapping lives as long as a tensor views it; writing the output over the
  // input replaces the file, leaving the mapped one as it was).
  auto mapped = ir::MappedFile::open(path);
  if (!mapped.isOk()) return fail(mapped.status());
  std::string_view bytes(reinterpret_cast<const char*>((*mapped)->data()), (*mapped)->size());
  if (bytes.empty()) return fail(invalidArgument("the file is empty"));
  if (bytes.size() >= (uint64_t{2} << 30)) {
    return fail(
        invalidArgument("a protobuf file of 2 GB or more cannot be read; keep the weights "
                        "in external data"));
  }
  std::string dir = folderOf(path);
  auto model =
      looksLikeText(path, bytes.substr(0, 64))
          ? parseModelText(bytes, dir, limits)
          : parseModelBinary(bytes, dir, limits,
                             limits.view_weights ? *mapped : std::shared_ptr<ir::MappedFile>());
  if (!model.isOk()) return fail(model.status());
  return model;
}

}  // namespace onnxopt::io
