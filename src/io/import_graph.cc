// GraphProto, NodeProto, AttributeProto and FunctionProto -> IR: builds use-lists directly from
// names, sorts each graph's nodes topologically (ONNX files need not be sorted) and resolves
// outer-scope references of subgraphs.
#include "io/importer_internal.h"

namespace onnxopt::io::detail {

namespace fs = std::filesystem;

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

}  // namespace onnxopt::io::detail
