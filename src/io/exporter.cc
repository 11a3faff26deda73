// IR -> ModelProto, and atomic writing of the model and its external data.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>

#include "io/atomic_file.h"
#include "io/proto_util.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/verifier.h"
#include "support/big_blocks.h"

namespace onnxopt::io {
namespace {

namespace fs = std::filesystem;

/// Main graphs of up to this many nodes are exported as messages (Exporter::prepare).
constexpr size_t kNodesAsMessages = 100000;

/// Calls `fn` on every tensor of a graph (initializers, tensor attributes), recursively.
template <typename Fn>
void forEachTensor(const ir::Graph& graph, Fn&& fn) {
  for (const ir::Value* v : graph.initializers()) {
    if (v->initializer() != nullptr) fn(*v->initializer());
    if (v->sparseInitializer() != nullptr) {
      fn(v->sparseInitializer()->values);
      fn(v->sparseInitializer()->indices);
    }
  }
  for (const ir::Node* n : graph) {
    for (const ir::Attribute& a : n->attributes()) {
      for (const ir::Tensor& t : a.tensors) fn(t);
      for (const auto& g : a.graphs) forEachTensor(*g, fn);
    }
  }
}

template <typename Fn>
void forEachTensor(const ir::Model& model, Fn&& fn) {
  forEachTensor(*model.graph, fn);
  for (const auto& f : model.functions) forEachTensor(*f->body, fn);
}

/// Writes tensor bytes into the external-data file, streaming data that came from another external
/// file with pread so that mapped pages are never touched (peak memory stays small).
class DataSink {
 public:
  DataSink(int fd, std::string location, uint64_t min_bytes)
      : fd_(fd), location_(std::move(location)), min_bytes_(min_bytes) {}

  bool wants(const ir::Tensor& t) const {
    return t.dtype() != ir::DataType::kString && t.byteSize() >= min_bytes_ &&
           (t.byteSize() > 0 || t.externalSource());
  }

  /// Appends the tensor's bytes; fills `proto`'s external_data entries.
  Status write(const ir::Tensor& t, onnx::TensorProto& proto) {
    const uint64_t align = t.byteSize() >= (1u << 20) ? 4096 : 64;
    uint64_t start = (offset_ + align - 1) / align * align;
    if (start > offset_) {
      static const char zeros[4096] = {};
      RETURN_IF_ERROR(writeAll(zeros, start - offset_));
    }
    if (t.externalSource()) {
      RETURN_IF_ERROR(copyFromFile(*t.externalSource()));
    } else {
      RETURN_IF_ERROR(writeAll(reinterpret_cast<const char*>(t.data()), t.byteSize()));
    }
    wrote_any_ = true;
    proto.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, std::string value) {
      auto* kv = proto.add_external_data();
      kv->set_key(key);
      kv->set_value(std::move(value));
    };
    add("location", location_);
    add("offset", std::to_string(start));
    add("length", std::to_string(t.byteSize()));
    return Status::ok();
  }

 private:
  Status writeAll(const char* p, uint64_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n > (1u << 30) ? (1u << 30) : n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return makeError(StatusCode::kIoError, "writing external data: {}", std::strerror(errno));
      }
      p += w;
      n -= static_cast<uint64_t>(w);
      offset_ += static_cast<uint64_t>(w);
    }
    return Status::ok();
  }

  Status copyFromFile(const ir::ExternalSource& src) {
    int in = ::open(src.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
      return makeError(StatusCode::kIoError, "re-reading '{}': {}", src.path, std::strerror(errno));
    }
    std::string buffer(std::min<uint64_t>(src.length, 4u << 20), '\0');
    uint64_t done = 0;
    Status st;
    while (done < src.length) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), src.length - done));
      ssize_t r = ::pread(in, buffer.data(), want, static_cast<off_t>(src.offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        st = makeError(StatusCode::kIoError, "re-reading '{}': unexpected end of file", src.path);
        break;
      }
      st = writeAll(buffer.data(), static_cast<uint64_t>(r));
      if (!st.isOk()) break;
      done += static_cast<uint64_t>(r);
    }
    // The copied range is no longer needed in the page cache by this process.
    ::posix_fadvise(in, static_cast<off_t>(src.offset), static_cast<off_t>(src.length),
                    POSIX_FADV_DONTNEED);
    ::close(in);
    return st;
  }

  int fd_;
  std::string location_;
  uint64_t min_bytes_;
  uint64_t offset_ = 0;
  bool wrote_any_ = false;

 public:
  /// False when every tensor stayed embedded: then no data file is written at all.
  bool wroteAny() const { return wrote_any_; }
};

bool hasInitializerNotInput(const ir::Graph& g) {
  for (const ir::Value* v : g.initializers()) {
    if (v->kind() == ir::Value::Kind::kInitializer) return true;
  }
  for (const ir::Node* n : g) {
    for (const ir::Graph* sub : n->subgraphs()) {
      if (hasInitializerNotInput(*sub)) return true;
    }
  }
  return false;
}

class Exporter {
 public:
  Exporter(const ir::Model& model, DataSink* sink) : model_(model), sink_(sink) {}

  Status exportModel(onnx::ModelProto& proto);

  /// Builds the model for writeTo as messages (in an arena), except the nodes of a main graph of
  /// more than kNodesAsMessages nodes, which become serialized bytes: a million nodes are ~30 MB
  /// of bytes but ~300 MB of messages. Below that, messages cost less: bytes are written once,
  /// straight into the output, instead of into a growing buffer first; unless nodes carry unknown
  /// fields, which bytes take as they are. Fails when the model would pass protobuf's 2 GB limit.
  /// `leave_out`, if given, picks main-graph initializers (by index) whose raw_data writeTo leaves
  /// out (the caller hands it over apart).
  Status prepare(const LeaveOut* leave_out = nullptr);
  /// Writes the prepared model: the same bytes as serializing exportModel's proto (fields in
  /// number order: model fields 1-6; the graph: its nodes, its name, its initializers with their
  /// bytes straight from the IR, its other fields; the other model fields).
  bool writeTo(google::protobuf::io::ZeroCopyOutputStream& out);
  /// After prepare: the serialized size, exactly.
  uint64_t byteSize() const { return byte_size_; }

 private:
  void assignNames(const ir::Graph& graph);
  /// A value's own name, or the fresh one assignNames gave it.
  const std::string& nameOf(const ir::Value* v) const {
    return v->name().empty() ? fresh_names_.at(v) : v->name();
  }
  void exportType(const ir::Type& type, onnx::TypeProto& proto);
  void exportValueInfo(const ir::Value* v, onnx::ValueInfoProto& proto, bool with_type);
  Status exportTensor(const ir::Tensor& t, onnx::TensorProto& proto);
  Status exportSparse(const ir::SparseTensor& t, onnx::SparseTensorProto& proto);
  Status exportAttribute(const ir::Attribute& a, onnx::AttributeProto& proto);
  /// Without `with_unknown`, the node's unknown fields are left for the caller to append (as
  /// bytes: protobuf writes them after the known fields, so the result is the same).
  Status exportNode(const ir::Node& n, onnx::NodeProto& proto, bool with_unknown = true);
  Status exportGraph(const ir::Graph& g, onnx::GraphProto& proto);

  const ir::Model& model_;
  DataSink* sink_;
  const ir::Graph* skip_nodes_of_ = nullptr;  ///< exportGraph leaves this graph's nodes out
  std::unique_ptr<google::protobuf::Arena> arena_;
  onnx::ModelProto* rest_ = nullptr;   ///< model fields from 8 on, and unknown fields
  onnx::ModelProto head_;              ///< model fields 1-6
  onnx::GraphProto* graph_ = nullptr;  ///< the main graph without its nodes
  std::string node_bytes_;             ///< the main graph's nodes, as GraphProto field 1 entries
  /// A main-graph initializer (GraphProto field 5) as writeTo writes it: `head` (TensorProto
  /// fields 1-8), the raw_data field (9) from `raw`'s bytes if set, `tail` (the later fields).
  struct InitializerOut {
    onnx::TensorProto* head;
    onnx::TensorProto* tail;
    const ir::Tensor* raw;
    uint64_t size;  ///< the entry's length (after its tag and length)
  };
  std::vector<InitializerOut> initializers_;
  onnx::GraphProto* graph_tail_ = nullptr;  ///< main graph fields after initializer (5)
  uint64_t graph_bytes_ = 0;
  uint64_t byte_size_ = 0;
  /// Names for values that have none. Named values keep theirs, so only the (usually few) unnamed
  /// ones are recorded; `used_` views every name taken, built only when a fresh one is needed.
  std::unordered_map<const ir::Value*, std::string> fresh_names_;
  std::unordered_set<std::string_view> used_;
  bool collected_used_ = false;
  void collectUsed();
  size_t next_id_ = 0;
};

void Exporter::collectUsed() {
  collected_used_ = true;
  auto collect = [&](const ir::Graph& g, auto& self) -> void {
    for (const ir::Value* v : g.inputs()) used_.insert(v->name());
    for (const ir::Value* v : g.initializers()) used_.insert(v->name());
    for (const ir::Node* n : g) {
      for (size_t i = 0; i < n->numOutputs(); ++i) {
        if (const ir::Value* v = n->output(i)) used_.insert(v->name());
      }
      for (const ir::Graph* sub : n->subgraphs()) self(*sub, self);
    }
  };
  collect(*model_.graph, collect);
  for (const auto& f : model_.functions) collect(*f->body, collect);
}

void Exporter::assignNames(const ir::Graph& graph) {
  auto visit = [&](const ir::Value* v) {
    if (v == nullptr || !v->name().empty() || fresh_names_.count(v)) return;
    // Fresh names avoid every name taken anywhere in the model.
    if (!collected_used_) collectUsed();
    std::string fresh;
    do {
      fresh = "onnxopt_" + std::to_string(next_id_++);
    } while (used_.count(fresh));
    std::string& stored = fresh_names_[v] = std::move(fresh);
    used_.insert(stored);  // the map's node never moves, so the view stays valid
  };
  for (const ir::Value* v : graph.inputs()) visit(v);
  for (const ir::Value* v : graph.initializers()) visit(v);
  for (const ir::Node* n : graph) {
    for (size_t i = 0; i < n->numOutputs(); ++i) visit(n->output(i));
    for (const ir::Graph* g : n->subgraphs()) assignNames(*g);
  }
}

void Exporter::exportType(const ir::Type& type, onnx::TypeProto& proto) {
  if (!type.denotation().empty()) proto.set_denotation(type.denotation());
  auto exportShape = [](const ir::Shape& shape, onnx::TensorShapeProto& out) {
    for (const ir::Dim& d : *shape) {
      auto* dim = out.add_dim();
      if (d.kind == ir::Dim::Kind::kValue) dim->set_dim_value(d.value);
      if (d.kind == ir::Dim::Kind::kParam || d.kind == ir::Dim::Kind::kExpr) {
        dim->set_dim_param(d.param);
      }
      if (!d.denotation.empty()) dim->set_denotation(d.denotation);
    }
  };
  switch (type.kind) {
    case ir::Type::Kind::kUnknown:
      break;
    case ir::Type::Kind::kTensor: {
      auto* t = proto.mutable_tensor_type();
      t->set_elem_type(static_cast<int32_t>(type.elem_type));
      if (type.shape) exportShape(type.shape, *t->mutable_shape());
      break;
    }
    case ir::Type::Kind::kSparseTensor: {
      auto* t = proto.mutable_sparse_tensor_type();
      t->set_elem_type(static_cast<int32_t>(type.elem_type));
      if (type.shape) exportShape(type.shape, *t->mutable_shape());
      break;
    }
    case ir::Type::Kind::kSequence: {
      auto* s = proto.mutable_sequence_type();
      if (type.element) exportType(*type.element, *s->mutable_elem_type());
      break;
    }
    case ir::Type::Kind::kOptional: {
      auto* s = proto.mutable_optional_type();
      if (type.element) exportType(*type.element, *s->mutable_elem_type());
      break;
    }
    case ir::Type::Kind::kMap: {
      auto* m = proto.mutable_map_type();
      m->set_key_type(static_cast<int32_t>(type.elem_type));
      if (type.element) exportType(*type.element, *m->mutable_value_type());
      break;
    }
    case ir::Type::Kind::kOpaque: {
      auto* o = proto.mutable_opaque_type();
      o->set_domain(type.opaqueDomain());
      o->set_name(type.opaqueName());
      break;
    }
  }
}

void Exporter::exportValueInfo(const ir::Value* v, onnx::ValueInfoProto& proto, bool with_type) {
  proto.set_name(nameOf(v));
  if (with_type && v->type().isKnown()) exportType(v->type(), *proto.mutable_type());
  if (!v->docString().empty()) proto.set_doc_string(v->docString());
  restoreUnknownFields(proto, v->unknownFields());
}

/// The tensor's proto with its data embedded (string_data for strings, raw_data otherwise) unless
/// `sink` takes the data. Given `tail`, dense bytes are not copied into the proto: the caller
/// writes them (the result says whether there are any) as raw_data (field 9), between `proto`,
/// which then holds the fields numbered below 9, and `tail`, which gets the others.
StatusOr<bool> fillTensorProto(const ir::Tensor& t, onnx::TensorProto& proto, DataSink* sink,
                               onnx::TensorProto* tail = nullptr) {
  const bool to_sink = t.dtype() != ir::DataType::kString && sink != nullptr && sink->wants(t);
  const bool deferred =
      tail != nullptr && t.dtype() != ir::DataType::kString && !to_sink && t.byteSize() > 0;
  onnx::TensorProto& after_data = deferred ? *tail : proto;
  for (int64_t d : t.dims()) proto.add_dims(d);
  proto.set_data_type(static_cast<int32_t>(t.dtype()));
  if (!t.name().empty()) proto.set_name(t.name());
  if (!t.docString().empty()) after_data.set_doc_string(t.docString());
  restoreUnknownFields(after_data, t.unknownFields());
  if (t.dtype() == ir::DataType::kString) {
    for (const std::string& s : t.strings()) proto.add_string_data(s);
    return false;
  }
  if (to_sink) {
    RETURN_IF_ERROR(sink->write(t, proto));
    return false;
  }
  if (deferred) return true;
  if (t.byteSize() > 0) {
    proto.set_raw_data(t.data(), t.byteSize());
  } else {
    proto.set_raw_data(std::string());
  }
  return false;
}

Status Exporter::exportTensor(const ir::Tensor& t, onnx::TensorProto& proto) {
  return fillTensorProto(t, proto, sink_).status();
}

Status Exporter::exportSparse(const ir::SparseTensor& t, onnx::SparseTensorProto& proto) {
  RETURN_IF_ERROR(exportTensor(t.values, *proto.mutable_values()));
  RETURN_IF_ERROR(exportTensor(t.indices, *proto.mutable_indices()));
  for (int64_t d : t.dims) proto.add_dims(d);
  return Status::ok();
}

Status Exporter::exportAttribute(const ir::Attribute& a, onnx::AttributeProto& proto) {
  using Kind = ir::Attribute::Kind;
  proto.set_name(a.name);
  if (!a.ref_attr_name.empty()) proto.set_ref_attr_name(a.ref_attr_name);
  if (!a.doc_string.empty()) proto.set_doc_string(a.doc_string);
  proto.set_type(static_cast<onnx::AttributeProto::AttributeType>(a.kind));
  restoreUnknownFields(proto, a.unknown_fields);
  switch (a.kind) {
    case Kind::kUndefined:
      break;
    case Kind::kFloat:
      proto.set_f(a.f);
      break;
    case Kind::kInt:
      proto.set_i(a.i);
      break;
    case Kind::kString:
      proto.set_s(a.s);
      break;
    case Kind::kFloats:
      for (float f : a.floats) proto.add_floats(f);
      break;
    case Kind::kInts:
      for (int64_t i : a.ints) proto.add_ints(i);
      break;
    case Kind::kStrings:
      for (const auto& s : a.strings) proto.add_strings(s);
      break;
    case Kind::kTensor:
      if (!a.tensors.empty()) RETURN_IF_ERROR(exportTensor(a.tensors[0], *proto.mutable_t()));
      break;
    case Kind::kTensors:
      for (const auto& t : a.tensors) RETURN_IF_ERROR(exportTensor(t, *proto.add_tensors()));
      break;
    case Kind::kSparseTensor:
      if (!a.sparse_tensors.empty()) {
        RETURN_IF_ERROR(exportSparse(a.sparse_tensors[0], *proto.mutable_sparse_tensor()));
      }
      break;
    case Kind::kSparseTensors:
      for (const auto& t : a.sparse_tensors) {
        RETURN_IF_ERROR(exportSparse(t, *proto.add_sparse_tensors()));
      }
      break;
    case Kind::kTypeProto:
      if (!a.types.empty()) exportType(a.types[0], *proto.mutable_tp());
      break;
    case Kind::kTypeProtos:
      for (const auto& t : a.types) exportType(t, *proto.add_type_protos());
      break;
    case Kind::kGraph:
      if (!a.graphs.empty()) RETURN_IF_ERROR(exportGraph(*a.graphs[0], *proto.mutable_g()));
      break;
    case Kind::kGraphs:
      for (const auto& g : a.graphs) RETURN_IF_ERROR(exportGraph(*g, *proto.add_graphs()));
      break;
  }
  return Status::ok();
}

Status Exporter::exportNode(const ir::Node& n, onnx::NodeProto& proto, bool with_unknown) {
  proto.set_op_type(n.opType());
  if (!n.domain().empty()) proto.set_domain(n.domain());
  if (!n.name().empty()) proto.set_name(n.name());
  if (!n.docString().empty()) proto.set_doc_string(n.docString());
  if (with_unknown) restoreUnknownFields(proto, n.unknownFields());
  for (const ir::Value* v : n.inputs()) proto.add_input(v != nullptr ? nameOf(v) : std::string());
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    const ir::Value* v = n.output(i);
    proto.add_output(v != nullptr ? nameOf(v) : std::string());
  }
  for (const ir::Attribute& a : n.attributes()) {
    RETURN_IF_ERROR(exportAttribute(a, *proto.add_attribute()));
  }
  return Status::ok();
}

Status Exporter::exportGraph(const ir::Graph& g, onnx::GraphProto& proto) {
  if (!g.name().empty()) proto.set_name(g.name());
  if (!g.docString().empty()) proto.set_doc_string(g.docString());
  restoreUnknownFields(proto, g.unknownFields());
  for (const ir::Value* v : g.inputs()) exportValueInfo(v, *proto.add_input(), true);
  for (const ir::Value* v : g.initializers()) {
    const ir::Tensor* t = v->initializer();
    if (t != nullptr && &g == model_.graph.get()) {
      // The main graph's initializers hold nearly all of a model's bytes: writeTo writes them
      // from the IR, instead of copying them into messages first (in prepare's arena).
      auto* arena = arena_.get();
      InitializerOut out{google::protobuf::Arena::CreateMessage<onnx::TensorProto>(arena),
                         google::protobuf::Arena::CreateMessage<onnx::TensorProto>(arena), nullptr,
                         0};
      ASSIGN_OR_RETURN(bool deferred, fillTensorProto(*t, *out.head, sink_, out.tail));
      out.head->set_name(nameOf(v));
      if (deferred) out.raw = t;
      initializers_.push_back(out);
    } else if (t != nullptr) {
      auto* tp = proto.add_initializer();
      RETURN_IF_ERROR(exportTensor(*t, *tp));
      tp->set_name(nameOf(v));
    } else if (const ir::SparseTensor* s = v->sparseInitializer()) {
      auto* sp = proto.add_sparse_initializer();
      RETURN_IF_ERROR(exportSparse(*s, *sp));
      sp->mutable_values()->set_name(nameOf(v));
    }
  }
  if (&g != skip_nodes_of_) {
    for (const ir::Node* n : g) RETURN_IF_ERROR(exportNode(*n, *proto.add_node()));
  }
  for (const ir::Value* v : g.outputs()) exportValueInfo(v, *proto.add_output(), true);
  for (const ir::Value* v : g.initializers()) {
    if (v->hasValueInfo() && v->kind() == ir::Value::Kind::kInitializer) {
      exportValueInfo(v, *proto.add_value_info(), true);
    }
  }
  for (const ir::Node* n : g) {
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      const ir::Value* v = n->output(i);
      if (v != nullptr && v->hasValueInfo() && !v->isGraphOutput()) {
        exportValueInfo(v, *proto.add_value_info(), true);
      }
    }
  }
  for (const std::string& raw : g.orphanValueInfos()) {
    if (!proto.add_value_info()->ParseFromString(raw)) {
      return makeError(StatusCode::kInternal, "corrupt saved value_info in graph '{}'", g.name());
    }
  }
  for (const std::string& raw : g.quantizationAnnotations()) {
    if (!proto.add_quantization_annotation()->ParseFromString(raw)) {
      return makeError(StatusCode::kInternal, "corrupt saved quantization_annotation");
    }
  }
  return Status::ok();
}

Status Exporter::exportModel(onnx::ModelProto& proto) {
  assignNames(*model_.graph);
  for (const auto& f : model_.functions) assignNames(*f->body);

  proto.set_ir_version(model_.ir_version);
  if (model_.ir_version < 4 && hasInitializerNotInput(*model_.graph)) {
    // IR 3 wants every initializer listed as a graph input; IR 4 dropped that rule and changed
    // nothing else, so a model that gained initializers (from passes) is written as IR 4.
    proto.set_ir_version(4);
  }
  for (const auto& op : model_.opset_imports) {
    auto* o = proto.add_opset_import();
    o->set_domain(op.domain);
    o->set_version(op.version);
  }
  if (!model_.producer_name.empty()) proto.set_producer_name(model_.producer_name);
  if (!model_.producer_version.empty()) proto.set_producer_version(model_.producer_version);
  if (!model_.domain.empty()) proto.set_domain(model_.domain);
  if (model_.model_version != 0) proto.set_model_version(model_.model_version);
  if (!model_.doc_string.empty()) proto.set_doc_string(model_.doc_string);
  for (const auto& [k, v] : model_.metadata_props) {
    auto* kv = proto.add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  RETURN_IF_ERROR(exportGraph(*model_.graph, *proto.mutable_graph()));
  for (const std::string& raw : model_.training_info) {
    if (!proto.add_training_info()->ParseFromString(raw)) {
      return makeError(StatusCode::kInternal, "corrupt saved training_info");
    }
  }
  for (const auto& f : model_.functions) {
    auto* fp = proto.add_functions();
    fp->set_name(f->name);
    if (!f->domain.empty()) fp->set_domain(f->domain);
    if (!f->doc_string.empty()) fp->set_doc_string(f->doc_string);
    for (const auto& a : f->attribute_names) fp->add_attribute(a);
    for (const auto& op : f->opset_imports) {
      auto* o = fp->add_opset_import();
      o->set_domain(op.domain);
      o->set_version(op.version);
    }
    for (const ir::Value* v : f->body->inputs()) fp->add_input(nameOf(v));
    for (const ir::Value* v : f->body->outputs()) fp->add_output(nameOf(v));
    for (const ir::Node* n : *f->body) RETURN_IF_ERROR(exportNode(*n, *fp->add_node()));
    restoreUnknownFields(*fp, f->unknown_fields);
  }
  restoreUnknownFields(proto, model_.unknown_fields);
  return Status::ok();
}

Status Exporter::prepare(const LeaveOut* leave_out) {
  google::protobuf::ArenaOptions arena_options;
  arena_options.start_block_size = 64 << 10;
  arena_options.max_block_size = 8 << 20;
  arena_options.block_alloc = support::allocateArenaBlock;
  arena_options.block_dealloc = support::freeArenaBlock;
  arena_ = std::make_unique<google::protobuf::Arena>(arena_options);
  rest_ = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(arena_.get());
  // Nodes with unknown fields (a newer IR's metadata_props: torch's dynamo exporter writes a
  // stack trace per node) go as bytes too: their saved fields are appended as they are, instead
  // of parsed into each message's unknown-field set and serialized again.
  uint64_t unknown_bytes = 0;
  for (const ir::Node* n : *model_.graph) unknown_bytes += n->unknownFields().size();
  if (model_.graph->numNodes() > kNodesAsMessages || unknown_bytes > 0) {
    skip_nodes_of_ = model_.graph.get();
    node_bytes_.reserve(unknown_bytes + 64 * model_.graph->numNodes());
  }
  RETURN_IF_ERROR(exportModel(*rest_));

  // The main graph's nodes (of a large graph), one reused message at a time.
  using google::protobuf::internal::WireFormatLite;
  const uint32_t node_tag = WireFormatLite::MakeTag(onnx::GraphProto::kNodeFieldNumber,
                                                    WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  if (skip_nodes_of_ != nullptr) {
    google::protobuf::io::StringOutputStream bytes(&node_bytes_);
    google::protobuf::io::CodedOutputStream out(&bytes);
    onnx::NodeProto node;
    for (const ir::Node* n : *model_.graph) {
      node.Clear();
      RETURN_IF_ERROR(exportNode(*n, node, /*with_unknown=*/false));
      const std::string& unknown = n->unknownFields();
      size_t size = node.ByteSizeLong() + unknown.size();
      if (size > static_cast<size_t>(INT_MAX) ||
          node_bytes_.size() > static_cast<size_t>(INT_MAX)) {
        return invalidArgument("the model exceeds protobuf's 2 GB limit; use --external-data");
      }
      out.WriteTag(node_tag);
      out.WriteVarint32(static_cast<uint32_t>(size));
      node.SerializeWithCachedSizes(&out);
      out.WriteRaw(unknown.data(), static_cast<int>(unknown.size()));
    }
  }

  // Model fields numbered below the graph's (7) go before it, the others after.
  if (rest_->has_ir_version()) head_.set_ir_version(rest_->ir_version());
  if (rest_->has_producer_name()) head_.set_producer_name(rest_->producer_name());
  if (rest_->has_producer_version()) head_.set_producer_version(rest_->producer_version());
  if (rest_->has_domain()) head_.set_domain(rest_->domain());
  if (rest_->has_model_version()) head_.set_model_version(rest_->model_version());
  if (rest_->has_doc_string()) head_.set_doc_string(rest_->doc_string());
  rest_->clear_ir_version();
  rest_->clear_producer_name();
  rest_->clear_producer_version();
  rest_->clear_domain();
  rest_->clear_model_version();
  rest_->clear_doc_string();
  graph_ = rest_->unsafe_arena_release_graph();

  // The graph's fields after the initializers (5) move to graph_tail_; graph_ keeps node and name.
  graph_tail_ = google::protobuf::Arena::CreateMessage<onnx::GraphProto>(arena_.get());
  {
    const google::protobuf::Descriptor* d = graph_->GetDescriptor();
    std::vector<const google::protobuf::FieldDescriptor*> later;
    for (int i = 0; i < d->field_count(); ++i) {
      if (d->field(i)->number() > onnx::GraphProto::kInitializerFieldNumber) {
        later.push_back(d->field(i));
      }
    }
    const google::protobuf::Reflection* r = graph_->GetReflection();
    r->SwapFields(graph_, graph_tail_, later);
    r->MutableUnknownFields(graph_)->Swap(r->MutableUnknownFields(graph_tail_));
  }
  uint64_t graph_bytes = node_bytes_.size() + graph_->ByteSizeLong() + graph_tail_->ByteSizeLong();
  for (size_t k = 0; k < initializers_.size(); ++k) {
    InitializerOut& init = initializers_[k];
    if (init.raw != nullptr && leave_out != nullptr && (*leave_out)(k, *init.raw)) {
      init.raw = nullptr;
    }
    init.size = init.head->ByteSizeLong() + init.tail->ByteSizeLong();
    if (init.raw != nullptr) {
      const uint64_t n = init.raw->byteSize();
      init.size += 1 + google::protobuf::io::CodedOutputStream::VarintSize64(n) + n;
    }
    graph_bytes += 1 + google::protobuf::io::CodedOutputStream::VarintSize64(init.size) + init.size;
    if (graph_bytes > static_cast<uint64_t>(INT_MAX)) break;
  }
  if (graph_bytes > static_cast<uint64_t>(INT_MAX)) {
    return invalidArgument("the model exceeds protobuf's 2 GB limit; use --external-data");
  }
  graph_bytes_ = graph_bytes;
  // The graph field: its tag (field 7: one byte), its length, its bytes.
  uint64_t total =
      head_.ByteSizeLong() + 1 +
      google::protobuf::io::CodedOutputStream::VarintSize32(static_cast<uint32_t>(graph_bytes)) +
      graph_bytes + rest_->ByteSizeLong();
  if (total > static_cast<uint64_t>(INT_MAX)) {
    return invalidArgument("the model exceeds protobuf's 2 GB limit; use --external-data");
  }
  byte_size_ = total;
  return Status::ok();
}

bool Exporter::writeTo(google::protobuf::io::ZeroCopyOutputStream& stream) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedOutputStream out(&stream);
  // ByteSizeLong (called in prepare) cached the sizes SerializeWithCachedSizes relies on.
  head_.SerializeWithCachedSizes(&out);
  out.WriteTag(WireFormatLite::MakeTag(onnx::ModelProto::kGraphFieldNumber,
                                       WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  out.WriteVarint32(static_cast<uint32_t>(graph_bytes_));
  out.WriteRaw(node_bytes_.data(), static_cast<int>(node_bytes_.size()));
  graph_->SerializeWithCachedSizes(&out);
  const uint32_t initializer_tag = WireFormatLite::MakeTag(
      onnx::GraphProto::kInitializerFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  const uint32_t raw_tag = WireFormatLite::MakeTag(onnx::TensorProto::kRawDataFieldNumber,
                                                   WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  for (const InitializerOut& init : initializers_) {
    out.WriteTag(initializer_tag);
    out.WriteVarint32(static_cast<uint32_t>(init.size));
    init.head->SerializeWithCachedSizes(&out);
    if (init.raw != nullptr) {
      out.WriteTag(raw_tag);
      out.WriteVarint32(static_cast<uint32_t>(init.raw->byteSize()));
      out.WriteRaw(init.raw->data(), static_cast<int>(init.raw->byteSize()));
    }
    init.tail->SerializeWithCachedSizes(&out);
  }
  graph_tail_->SerializeWithCachedSizes(&out);
  rest_->SerializeWithCachedSizes(&out);
  return !out.HadError();
}

}  // namespace

StatusOr<size_t> serializeModelInto(const ir::Model& model,
                                    const std::function<char*(size_t)>& allocate,
                                    const LeaveOut& leave_out) {
  Exporter exporter(model, nullptr);
  RETURN_IF_ERROR(exporter.prepare(leave_out ? &leave_out : nullptr));
  const auto size = static_cast<size_t>(exporter.byteSize());
  char* buffer = allocate(size);
  if (buffer == nullptr) return makeError(StatusCode::kInternal, "no memory for the model");
  google::protobuf::io::ArrayOutputStream out(buffer, static_cast<int>(size));
  if (!exporter.writeTo(out) || static_cast<size_t>(out.ByteCount()) != size) {
    return makeError(StatusCode::kInternal, "serializing the model");
  }
  return size;
}

StatusOr<std::string> serializeModel(const ir::Model& model) {
  std::string bytes;
  RETURN_IF_ERROR(serializeModelInto(model, [&](size_t size) {
                    bytes.resize(size);
                    return bytes.data();
                  }).status());
  return bytes;
}

Status saveTensorFile(const ir::Tensor& tensor, const std::string& path) {
  onnx::TensorProto proto;
  RETURN_IF_ERROR(fillTensorProto(tensor, proto, nullptr).status());
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return makeError(StatusCode::kInternal, "{}: serializing the tensor", path);
  }
  return writeFileAtomically(path, bytes);
}

std::string externalDataPath(const std::string& path, const SaveOptions& options) {
  std::string location = options.external_file.empty()
                             ? fs::path(path).filename().string() + ".data"
                             : options.external_file;
  return (fs::path(path).parent_path() / location).string();
}

bool samePath(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return ca == cb;
}

namespace {

void collectDataFiles(const ir::Graph& graph, std::set<std::string>& files) {
  auto add = [&](const ir::Tensor& t) {
    if (t.externalSource()) files.insert(t.externalSource()->path);
  };
  for (const ir::Value* v : graph.initializers()) {
    if (v->initializer() != nullptr) add(*v->initializer());
    if (v->sparseInitializer() != nullptr) {
      add(v->sparseInitializer()->values);
      add(v->sparseInitializer()->indices);
    }
  }
  for (const ir::Node* n : graph) {
    for (const ir::Attribute& a : n->attributes()) {
      for (const ir::Tensor& t : a.tensors) add(t);
    }
    for (const ir::Graph* g : n->subgraphs()) collectDataFiles(*g, files);
  }
}

}  // namespace

std::set<std::string> externalDataFiles(const ir::Model& model) {
  std::set<std::string> files;
  collectDataFiles(*model.graph, files);
  for (const auto& f : model.functions) collectDataFiles(*f->body, files);
  return files;
}

namespace {

Status checkOnePath(const std::string& path, const char* what) {
  fs::path p(path);
  std::error_code ec;
  if (p.filename().empty() || p.filename() == "." || p.filename() == ".." ||
      fs::is_directory(p, ec)) {
    return invalidArgument("{}: the {} names a folder; give a file name", path, what);
  }
  fs::path parent = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(parent, ec)) {
    return makeError(StatusCode::kNotFound, "{}: the {}'s folder '{}' does not exist", path, what,
                     parent.string());
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    return makeError(StatusCode::kIoError, "{}: the {}'s folder '{}' is not writable: {}", path,
                     what, parent.string(), std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace

Status checkOutputPath(const std::string& path, const std::string& data_path) {
  RETURN_IF_ERROR(checkOnePath(path, "output"));
  if (data_path.empty()) return Status::ok();
  RETURN_IF_ERROR(checkOnePath(data_path, "external data file"));
  if (samePath(path, data_path)) {
    return invalidArgument(
        "{}: the external data file is the output model itself; give the data file another "
        "name",
        path);
  }
  return Status::ok();
}

struct OutputTransaction::Impl {
  struct Entry {
    std::string staged;
    std::string final_path;
    std::string dir;  ///< the staging folder holding `staged`
  };
  std::vector<std::unique_ptr<StagingDir>> dirs;
  std::vector<Entry> entries;
};

OutputTransaction::OutputTransaction() : impl_(std::make_unique<Impl>()) {}
OutputTransaction::~OutputTransaction() = default;

Status OutputTransaction::addFile(const std::string& path, std::string_view content) {
  RETURN_IF_ERROR(checkOutputPath(path));
  ASSIGN_OR_RETURN(auto dir, StagingDir::create(path));
  std::string staged = dir->path() + "/" + fs::path(path).filename().string();
  ASSIGN_OR_RETURN(auto file, OutFile::create(staged, path));
  RETURN_IF_ERROR(file->writeAll(content.data(), content.size()));
  RETURN_IF_ERROR(file->close());
  impl_->entries.push_back({staged, path, dir->path()});
  impl_->dirs.push_back(std::move(dir));
  return Status::ok();
}

StatusOr<std::string> OutputTransaction::addModel(const ir::Model& model, const std::string& path,
                                                  const SaveOptions& options) {
  RETURN_IF_ERROR(ir::verifyModel(model).withContext("refusing to write an invalid model"));
  bool external = options.external_data == SaveOptions::ExternalData::kAlways;
  if (options.external_data == SaveOptions::ExternalData::kAuto) {
    uint64_t total = 0;
    bool had_external = false;
    forEachTensor(model, [&](const ir::Tensor& t) {
      total += t.byteSize();
      had_external |= t.externalSource().has_value();
    });
    external = had_external || total > options.embed_limit_bytes;
  }

  fs::path rel;
  std::string data_path;
  if (external) {
    std::string location = options.external_file.empty()
                               ? fs::path(path).filename().string() + ".data"
                               : options.external_file;
    rel = fs::path(location).lexically_normal();
    if (rel.is_absolute() || rel.begin() == rel.end() || *rel.begin() == ".." ||
        rel.filename().empty()) {
      return invalidArgument(
          "external data file '{}' must be a relative path inside the output's "
          "folder",
          location);
    }
    data_path = externalDataPath(path, options);
  }
  RETURN_IF_ERROR(checkOutputPath(path, data_path));

  ASSIGN_OR_RETURN(auto dir, StagingDir::create(path));
  std::string staged_model = dir->path() + "/" + fs::path(path).filename().string();
  std::string staged_data;
  std::unique_ptr<OutFile> data_file;
  std::unique_ptr<DataSink> sink;
  if (external) {
    staged_data = (fs::path(dir->path()) / rel).string();
    std::error_code ec;
    fs::create_directories(fs::path(staged_data).parent_path(), ec);
    if (ec) {
      return makeError(StatusCode::kIoError, "cannot create a file for '{}': {}", data_path,
                       ec.message());
    }
    ASSIGN_OR_RETURN(data_file, OutFile::create(staged_data, data_path));
    sink = std::make_unique<DataSink>(data_file->fd(), rel.string(), options.external_min_bytes);
  }

  Exporter exporter(model, sink.get());
  RETURN_IF_ERROR(exporter.prepare());
  ASSIGN_OR_RETURN(auto model_file, OutFile::create(staged_model, path));
  {
    google::protobuf::io::FileOutputStream out(model_file->fd());
    if (!exporter.writeTo(out) || !out.Flush()) {
      return makeError(StatusCode::kIoError, "writing '{}': {}", path,
                       std::strerror(out.GetErrno()));
    }
  }
  RETURN_IF_ERROR(model_file->close());
  if (data_file) RETURN_IF_ERROR(data_file->close());
  // The data file is committed first, so that the model never refers to a missing one; a data file
  // nothing refers to is not written at all (the staging folder goes with it).
  if (data_file && sink->wroteAny())
    impl_->entries.push_back({staged_data, data_path, dir->path()});
  impl_->entries.push_back({staged_model, path, dir->path()});
  impl_->dirs.push_back(std::move(dir));
  return staged_model;
}

Status OutputTransaction::commit() {
  struct Done {
    std::string final_path;
    std::string backup;  ///< a second link to the file replaced, or empty
    bool existed = false;
  };
  std::vector<Done> done;
  auto rollback = [&] {
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      if (!it->backup.empty()) {
        ::rename(it->backup.c_str(), it->final_path.c_str());
      } else if (!it->existed) {
        ::unlink(it->final_path.c_str());
      }
    }
  };
  for (size_t i = 0; i < impl_->entries.size(); ++i) {
    const Impl::Entry& e = impl_->entries[i];
    Done d{e.final_path, "", false};
    struct stat st {};
    if (::lstat(e.final_path.c_str(), &st) == 0) {
      d.existed = true;
      std::string backup = e.dir + "/.old-" + std::to_string(i);
      if (::link(e.final_path.c_str(), backup.c_str()) == 0) d.backup = backup;
    }
    if (::rename(e.staged.c_str(), e.final_path.c_str()) != 0) {
      Status err = makeError(StatusCode::kIoError, "cannot rename into '{}': {}", e.final_path,
                             std::strerror(errno));
      rollback();
      return err;
    }
    done.push_back(std::move(d));
  }
  impl_->entries.clear();
  impl_->dirs.clear();
  return Status::ok();
}

Status saveModel(const ir::Model& model, const std::string& path, const SaveOptions& options) {
  OutputTransaction transaction;
  RETURN_IF_ERROR(transaction.addModel(model, path, options).status());
  return transaction.commit();
}

}  // namespace onnxopt::io

namespace onnxopt::io {

Status writeFileAtomically(const std::string& path, std::string_view content) {
  OutputTransaction transaction;
  RETURN_IF_ERROR(transaction.addFile(path, content));
  return transaction.commit();
}

}  // namespace onnxopt::io
