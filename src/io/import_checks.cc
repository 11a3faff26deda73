// Model-level checks after import: what onnx.checker refuses and the IR alone cannot show
// (opset imports, operator schemas, recursive functions).
#include "io/importer_internal.h"

namespace onnxopt::io::detail {

namespace fs = std::filesystem;

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

}  // namespace onnxopt::io::detail
