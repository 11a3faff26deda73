#include "onnxopt/ir/verifier.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/tied_types.h"
#include "onnxopt/support/name_map.h"

namespace onnxopt::ir {
namespace {

std::string describe(const Node* n) {
  std::string op = n->domain().empty() ? n->opType() : n->domain() + "." + n->opType();
  if (!n->name().empty()) return fmt::format("node '{}' ({})", n->name(), op);
  if (n->numOutputs() > 0 && n->output(0) != nullptr) {
    return fmt::format("node {} producing '{}'", op, n->output(0)->name());
  }
  return "node " + op;
}

class Verifier {
 public:
  explicit Verifier(const VerifyOptions& options) : options_(options) {}
  Status verify(const Graph& graph) { return verifyGraph(graph); }

 private:
  VerifyOptions options_;
  /// Nodes already walked. A value is visible at a point of graph G when its own graph is G or
  /// encloses G, and it is a graph input or initializer there or its producer was walked already:
  /// nodes of an enclosing graph after the subgraph's owner are not walked yet, and values of a
  /// sibling subgraph fail the first test. Marks in the nodes keep this O(1) per operand.
  NodeMarks walked_;
  /// The graph being verified and those enclosing it, innermost last.
  std::vector<const Graph*> scopes_;

  bool visible(const Value* v) const {
    if (std::find(scopes_.begin(), scopes_.end(), v->owningGraph()) == scopes_.end()) return false;
    return v->producer() == nullptr || walked_.marked(v->producer());
  }

  Status checkUses(const Value* v) {
    for (const Use& use : v->uses()) {
      if (use.user == nullptr || use.user->isErased()) {
        return makeError(StatusCode::kInternal, "value '{}' has a use by an erased node",
                         v->name());
      }
      if (use.index >= use.user->numInputs() || use.user->input(use.index) != v) {
        return makeError(StatusCode::kInternal,
                         "value '{}' lists a use by {} operand {} that does "
                         "not refer to it",
                         v->name(), describe(use.user), use.index);
      }
    }
    // Each entry is also the one its operand points back at, so no operand is listed twice.
    if (!v->usesPointBack()) {
      return makeError(StatusCode::kInternal, "the use-list of value '{}' is out of sync",
                       v->name());
    }
    return Status::ok();
  }

  /// `where` names the operands' owner in messages: the node, or "graph outputs" for the return
  /// node. It is formatted only on failure (a message per node would dominate large graphs).
  Status checkOperands(const Node* n, bool is_return) {
    for (size_t i = 0; i < n->numInputs(); ++i) {
      const Value* v = n->input(i);
      if (v == nullptr) continue;
      if (n->inputIsRecorded(i) && visible(v)) continue;
      std::string where = is_return ? std::string("graph outputs") : describe(n);
      if (!n->inputIsRecorded(i)) {
        return makeError(StatusCode::kInternal, "{}: operand {} ('{}') is not in its use-list",
                         where, i, v->name());
      }
      if (!visible(v)) {
        return invalidArgument("{}: input '{}' is not defined before use in this scope", where,
                               v->name());
      }
    }
    return Status::ok();
  }

  Status checkTensorType(const Value* v) {
    const Tensor* t = v->initializer();
    if (t == nullptr || !v->type().isTensor()) return Status::ok();
    if (v->type().elem_type != t->dtype()) {
      return invalidArgument("initializer '{}' holds {} data but its type says {}", v->name(),
                             dataTypeName(t->dtype()), dataTypeName(v->type().elem_type));
    }
    // An input's default must also fit the input's declared shape: freezing it into a constant
    // (freeze-initializer-inputs) would otherwise yield a contradiction.
    const Shape& shape = v->type().shape;
    if (shape) {
      bool match = shape->size() == t->dims().size();
      for (size_t i = 0; match && i < shape->size(); ++i) {
        if ((*shape)[i].isKnown() && (*shape)[i].value != t->dims()[i]) match = false;
      }
      if (!match) {
        return invalidArgument("initializer '{}' has dims [{}] that do not match its type {}",
                               v->name(), fmt::join(t->dims(), ","), typeToString(v->type()));
      }
    }
    return Status::ok();
  }

  /// If, Loop and Scan of the default domain carry their bodies with matching arity.
  static Status checkControlFlow(const Node& n) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return Status::ok();
    auto body = [&](const char* name) -> const Graph* {
      const Attribute* a = n.findAttribute(name);
      return a != nullptr && a->kind == Attribute::Kind::kGraph && a->graphs.size() == 1
                 ? a->graphs[0].get()
                 : nullptr;
    };
    const std::string& op = n.opType();
    if (op == "If") {
      for (const char* branch : {"then_branch", "else_branch"}) {
        const Graph* g = body(branch);
        if (g == nullptr) return invalidArgument("{} has no {} graph", describe(&n), branch);
        if (g->numOutputs() != n.numOutputs()) {
          return invalidArgument("{}: {} has {} outputs for {} node outputs", describe(&n), branch,
                                 g->numOutputs(), n.numOutputs());
        }
      }
    } else if (op == "Loop" || op == "Scan") {
      const Graph* g = body("body");
      if (g == nullptr) return invalidArgument("{} has no body graph", describe(&n));
      // Loop: body (iteration, condition, N states) -> (condition, N states, K scan outputs),
      // node (max trips, condition, N states) -> (N states, K scan outputs).
      size_t extra = op == "Loop" ? 1 : 0;
      size_t states = n.numInputs() > 2 ? n.numInputs() - 2 : 0;
      bool inputs_ok =
          op == "Loop" ? g->inputs().size() == 2 + states : g->inputs().size() <= n.numInputs();
      if (!inputs_ok || g->numOutputs() != n.numOutputs() + extra) {
        return invalidArgument(
            "{}: its body takes {} inputs and gives {} outputs, which does not fit "
            "the node's {} inputs and {} outputs",
            describe(&n), g->inputs().size(), g->numOutputs(), n.numInputs(), n.numOutputs());
      }
    }
    return Status::ok();
  }

  /// Values the spec rules out where they are constant: a Reshape's target shape has at most one
  /// -1, no entry below -1, and with allowzero=1 not both 0 and -1 (onnx's shape inference).
  static Status checkConstantOperands(const Node& n) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return Status::ok();
    if (n.opType() != "Reshape" || n.numInputs() < 2 || n.input(1) == nullptr) {
      return Status::ok();
    }
    std::optional<Tensor> shape = constantTensor(n.input(1));
    if (!shape || shape->dtype() != DataType::kInt64) return Status::ok();
    const Attribute* allowzero = n.findAttribute("allowzero");
    bool keep_zero =
        allowzero != nullptr && allowzero->kind == Attribute::Kind::kInt && allowzero->i != 0;
    int minus_ones = 0;
    bool zero = false;
    for (int64_t d : tensorInts(*shape)) {
      if (d < -1) {
        return invalidArgument("{}: the target shape holds {}, below -1", describe(&n), d);
      }
      minus_ones += d == -1 ? 1 : 0;
      zero = zero || d == 0;
    }
    if (minus_ones > 1) {
      return invalidArgument("{}: the target shape holds -1 {} times (at most once)", describe(&n),
                             minus_ones);
    }
    if (keep_zero && zero && minus_ones > 0) {
      return invalidArgument("{}: with allowzero=1 the target shape cannot hold both 0 and -1",
                             describe(&n));
    }
    return Status::ok();
  }

  /// Inputs and outputs of a default-domain node that one type parameter of its schema binds
  /// have one element type where their types are known (LayerNormalization's X, Scale, B and
  /// Y: one T). A rewrite that casts one operand and not the others breaks this.
  Status checkTiedTypes(const Node& n) const {
    if (options_.opset <= 0 || (!n.domain().empty() && n.domain() != "ai.onnx")) {
      return Status::ok();
    }
    const TiedGroups* groups = tiedTypesOf(n.opType(), options_.opset);
    if (groups == nullptr) return Status::ok();
    for (const std::vector<TiedSlot>& group : *groups) {
      const Value* first = nullptr;
      std::string first_slot;
      for (const TiedSlot& s : group) {
        size_t count = s.output ? n.numOutputs() : n.numInputs();
        size_t end = s.variadic ? count : std::min(count, s.index + 1);
        for (size_t i = s.index; i < end; ++i) {
          const Value* v = s.output ? n.output(i) : n.input(i);
          if (v == nullptr || !v->type().isTensor() ||
              v->type().elem_type == DataType::kUndefined) {
            continue;
          }
          if (first == nullptr) {
            first = v;
            first_slot = fmt::format("{} {}", s.output ? "output" : "input", i);
          } else if (v->type().elem_type != first->type().elem_type) {
            return invalidArgument(
                "{}: {} {} '{}' is {} but {} '{}' is {}; {} binds them to one type", describe(&n),
                s.output ? "output" : "input", i, v->name(), dataTypeName(v->type().elem_type),
                first_slot, first->name(), dataTypeName(first->type().elem_type), n.opType());
          }
        }
      }
    }
    return Status::ok();
  }

  Status verifyGraph(const Graph& graph) {
    scopes_.push_back(&graph);
    // Names are unique per graph; the set views the values' own strings.
    NameSet names(options_.unique_names
                      ? graph.inputs().size() + graph.initializers().size() + graph.numNodes()
                      : 0);
    auto define = [&](const Value* v) -> Status {
      RETURN_IF_ERROR(checkUses(v));
      if (v->name().empty() || !options_.unique_names) return Status::ok();
      if (!names.insert(v->name())) {
        return invalidArgument("the name '{}' is defined twice in graph '{}'", v->name(),
                               graph.name());
      }
      return Status::ok();
    };
    for (const Value* v : graph.inputs()) {
      if (v->owningGraph() != &graph || v->kind() != Value::Kind::kGraphInput) {
        return makeError(StatusCode::kInternal, "graph input '{}' is not owned by its graph",
                         v->name());
      }
      RETURN_IF_ERROR(define(v));
      RETURN_IF_ERROR(checkTensorType(v));
    }
    for (const Value* v : graph.initializers()) {
      if (v->owningGraph() != &graph) {
        return makeError(StatusCode::kInternal, "initializer '{}' is not owned by its graph",
                         v->name());
      }
      if (v->kind() == Value::Kind::kGraphInput) continue;  // an input's default: defined above
      RETURN_IF_ERROR(define(v));
      RETURN_IF_ERROR(checkTensorType(v));
    }
    size_t count = 0;
    const Node* prev = nullptr;
    for (const Node* n : graph) {
      ++count;
      if (n->owningGraph() != &graph || n->isErased()) {
        return makeError(StatusCode::kInternal, "{} is listed in a graph that does not own it",
                         describe(n));
      }
      if (n->prev() != prev) {
        return makeError(StatusCode::kInternal, "node list links are broken at {}", describe(n));
      }
      prev = n;
      RETURN_IF_ERROR(checkOperands(n, /*is_return=*/false));
      RETURN_IF_ERROR(checkControlFlow(*n));
      RETURN_IF_ERROR(checkConstantOperands(*n));
      RETURN_IF_ERROR(checkTiedTypes(*n));
      for (const Graph* sub : n->subgraphs()) {
        if (sub->parentNode() != n) {
          return makeError(StatusCode::kInternal, "a subgraph of {} does not point back at it",
                           describe(n));
        }
        Status st = verifyGraph(*sub);
        if (!st.isOk())
          return st.withContext(fmt::format("in subgraph '{}' of {}", sub->name(), describe(n)));
      }
      walked_.mark(n);  // its outputs are visible from here on
      for (size_t i = 0; i < n->numOutputs(); ++i) {
        const Value* v = n->output(i);
        if (v == nullptr) continue;
        if (v->producer() != n || v->outputIndex() != i || v->owningGraph() != &graph ||
            v->kind() != Value::Kind::kNodeOutput) {
          return makeError(StatusCode::kInternal, "output {} of {} does not point back at it", i,
                           describe(n));
        }
        RETURN_IF_ERROR(define(v));
      }
    }
    if (count != graph.numNodes()) {
      return makeError(StatusCode::kInternal, "graph '{}' counts {} nodes but lists {}",
                       graph.name(), graph.numNodes(), count);
    }
    for (size_t i = 0; i < graph.numOutputs(); ++i) {
      if (graph.output(i) == nullptr) {
        return invalidArgument("graph '{}': output {} is missing", graph.name(), i);
      }
    }
    RETURN_IF_ERROR(checkOperands(graph.returnNode(), /*is_return=*/true));
    scopes_.pop_back();
    return Status::ok();
  }
};

}  // namespace

Status verifyGraph(const Graph& graph, const VerifyOptions& options) {
  Verifier verifier(options);
  return verifier.verify(graph);
}

Status verifyModel(const Model& model, const VerifyOptions& options) {
  if (model.graph == nullptr) return invalidArgument("the model has no graph");
  std::unordered_set<std::string> domains;
  for (const OpsetImport& op : model.opset_imports) {
    std::string d = op.domain == "ai.onnx" ? "" : op.domain;
    if (!domains.insert(d).second) {
      return invalidArgument("opset of domain '{}' is imported twice", op.domain);
    }
  }
  // The default domain's opset picks the schema version whose tied types are checked.
  auto withOpset = [&](const std::vector<OpsetImport>& imports) {
    VerifyOptions o = options;
    for (const OpsetImport& op : imports) {
      if (op.domain.empty() || op.domain == "ai.onnx") o.opset = op.version;
    }
    return o;
  };
  RETURN_IF_ERROR(verifyGraph(*model.graph, withOpset(model.opset_imports)));
  for (const auto& f : model.functions) {
    Status st = verifyGraph(*f->body, withOpset(f->opset_imports));
    if (!st.isOk()) return st.withContext(fmt::format("function '{}'", f->name));
  }
  return Status::ok();
}

}  // namespace onnxopt::ir
