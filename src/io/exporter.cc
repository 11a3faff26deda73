// IR -> ModelProto: names, types, tensors, attributes, nodes, graphs and the model.
#include "io/exporter_internal.h"

namespace onnxopt::io::detail {

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
                               onnx::TensorProto* tail) {
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

}  // namespace onnxopt::io::detail
