// The shape inference engine: walks graphs in order, dispatches to per-op functions, merges results
// with declared types, and carries small integer values (shapes) between nodes.
#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "helpers.h"
#include "onnxopt/ir/builder.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/shape_inference.h"

namespace onnxopt::ir {

namespace {

/// Largest integer tensor whose content is tracked (shape tensors are short).
constexpr int64_t kMaxTrackedElements = 64;

std::string describe(const Node& n) {
  std::string op = n.domain().empty() ? n.opType() : n.domain() + "." + n.opType();
  if (!n.name().empty()) return fmt::format("node '{}' ({})", n.name(), op);
  if (n.numOutputs() > 0 && n.output(0) != nullptr) {
    return fmt::format("node {} producing '{}'", op, n.output(0)->name());
  }
  return "node " + op;
}

std::string normDomain(const std::string& d) {
  return d == "ai.onnx" ? std::string() : d;
}

struct RegisteredInference {
  std::string domain;
  std::string op;
  int since;
  InferFn fn;
};
std::mutex& registeredMutex() {
  static std::mutex mu;
  return mu;
}
std::vector<RegisteredInference>& registered() {
  static std::vector<RegisteredInference> fns;
  return fns;
}

}  // namespace

Status registerOpInference(const std::string& domain, const std::string& op, int since,
                           InferFn fn) {
  if (normDomain(domain).empty()) {
    return invalidArgument("inference for {}: a plugin registers ops of its own domain", op);
  }
  if (op.empty() || fn == nullptr || since < 1) {
    return invalidArgument("inference for {}.{}: needs an op, a function and a version >= 1",
                           domain, op);
  }
  std::lock_guard<std::mutex> lock(registeredMutex());
  for (const auto& r : registered()) {
    if (r.domain == domain && r.op == op && r.since == since) {
      return invalidArgument("inference for {}.{} (version {}): registered twice", domain, op,
                             since);
    }
  }
  registered().push_back({domain, op, since, fn});
  return Status::ok();
}

/// The inference functions by "domain:op", newest version first.
using InferenceTable = std::unordered_map<std::string, std::vector<std::pair<int, InferFn>>>;

/// The table, built once and again after a registration (plugins register theirs when loaded;
/// none is ever removed, so the count of registrations tells whether it is current). Building it
/// per run was a fifth of optimizing an empty model at -O2 (docs/shape_inference.md).
std::shared_ptr<const InferenceTable> inferenceTable() {
  static std::shared_ptr<const InferenceTable> table;
  static size_t registrations = 0;
  std::lock_guard<std::mutex> lock(registeredMutex());
  if (table != nullptr && registrations == registered().size()) return table;
  auto fresh = std::make_shared<InferenceTable>();
  std::vector<detail::OpInference> builtin;
  detail::registerElementwiseOps(builtin);
  detail::registerShapeOps(builtin);
  detail::registerDataMovementOps(builtin);
  detail::registerNnOps(builtin);
  detail::registerMiscOps(builtin);
  detail::registerMicrosoftOps(builtin);
  for (const auto& e : builtin) {
    (*fresh)[std::string(e.domain) + ":" + e.op].push_back({e.since, e.fn});
  }
  for (const auto& r : registered()) (*fresh)[r.domain + ":" + r.op].push_back({r.since, r.fn});
  for (auto& [key, list] : *fresh) {
    std::sort(list.begin(), list.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
  }
  table = std::move(fresh);
  registrations = registered().size();
  return table;
}

class ShapeInferenceEngine {
 public:
  ShapeInferenceEngine(Model& model, const ShapeInferenceOptions& options)
      : model_(model), options_(options), fns_(inferenceTable()) {
    collectSymbols(*model.graph);
    for (const Value* v : model.graph->inputs()) {
      if (!v->type().shape) continue;
      for (const Dim& d : *v->type().shape) {
        if (d.kind == Dim::Kind::kParam) input_symbols_.insert(d.param);
      }
    }
  }

  void run() {
    inferGraph(*model_.graph);
    if (options_.write_value_info) markValueInfo(*model_.graph);
  }

  ShapeInferenceStats& stats() { return stats_; }
  std::unordered_map<const Value*, ShapeValue>& values() { return values_; }

  // --- used by InferenceContext ---
  const ShapeValue* valueOf(const Value* v) {
    auto it = values_.find(v);
    if (it != values_.end()) return &it->second;
    if (v == nullptr) return nullptr;
    // Like onnx, the default of an overridable input (IR < 4 style) counts for inference.
    std::optional<Tensor> t = v->isGraphInput() && v->initializer() != nullptr
                                  ? std::optional<Tensor>(*v->initializer())
                                  : constantTensor(v);
    if (!t || (t->dtype() != DataType::kInt64 && t->dtype() != DataType::kInt32) ||
        t->dims().size() > 1 ||
        t->numElements().value_or(kMaxTrackedElements + 1) > kMaxTrackedElements) {
      return nullptr;
    }
    ShapeValue value;
    for (int64_t x : tensorInts(*t)) value.push_back(SymExpr::constant(x));
    if (static_cast<int64_t>(value.size()) != t->numElements()) return nullptr;
    return &values_.emplace(v, std::move(value)).first->second;
  }

  void setValue(const Value* v, ShapeValue value) {
    if (v != nullptr && static_cast<int64_t>(value.size()) <= kMaxTrackedElements) {
      values_[v] = std::move(value);
    }
  }

  Dim freshDim() {
    std::string name;
    do {
      name = fmt::format("unk__{}", next_symbol_++);
    } while (symbols_.count(name));
    symbols_.insert(name);
    return Dim::symbol(name);
  }

  /// True when the symbolic dim is an expression of the main graph's input dims only (the free
  /// variables the model says vary). Symbols that inference made up for data-dependent sizes, or
  /// that came from a declared value_info, say nothing about the value: against a declared dim
  /// such an inferred dim has nothing to say.
  bool dependsOnInputsOnly(const Dim& d) const {
    if (d.kind != Dim::Kind::kParam && d.kind != Dim::Kind::kExpr) return false;
    if (d.kind == Dim::Kind::kParam) return input_symbols_.count(d.param) > 0;
    std::string word;
    for (size_t i = 0; i <= d.param.size(); ++i) {
      char c = i < d.param.size() ? d.param[i] : ' ';
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        word += c;
        continue;
      }
      bool number = !word.empty() && std::isdigit(static_cast<unsigned char>(word[0]));
      bool function = word == "floor" || word == "mod" || word == "min" || word == "max";
      if (!word.empty() && !number && !function && !input_symbols_.count(word)) return false;
      word.clear();
    }
    return true;
  }

  /// Reports `message` about `node`, prefixed with where the node is ("node 'n' (Op): ...").
  void warn(const Node& node, const std::string& message) {
    if (quiet_) return;
    std::string text = describe(node) + ": " + message;
    stats_.warnings.push_back(text);
    std::string label = node.name().empty() && node.numOutputs() > 0 && node.output(0) != nullptr
                            ? node.output(0)->name()
                            : node.name();
    report(options_.diagnostics, {Severity::kWarning, std::move(label), std::move(text)});
  }

  /// Sets a value's type, counting it in stats().refined when it differs from the one it had.
  void store(Value* v, Type type) {
    if (v->type() == type) return;
    ++stats_.refined;
    ir::Builder::setType(v, std::move(type));
  }

  /// Merges an inferred type into a value's declared one (see inferShapes). Our inference wins
  /// wherever it has something to say: a declared dim, rank or element type that differs from
  /// the inferred one is replaced, because later passes fold Shape from these types and a
  /// declared value_info may be wrong (onnx's own inference of AveragePool with ceil_mode,
  /// shapes recorded for one traced input size). Declared information survives only where
  /// inference left a dim or the element type unknown, or where the inferred dim is symbolic in
  /// names other than the graph inputs' dims (see dependsOnInputsOnly), and only while nothing
  /// contradicts it: once a known dim, the rank or the element type is shown wrong, the declared
  /// type is no evidence for its other dims either (a Loop-carried value declared [4,3,2] but
  /// inferred [2,?,?] is not [2,3,2]), so the inferred type is taken whole and the contradiction
  /// reported. So is a declared type where inference marks dims `disputed`.
  void merge(Value* v, const Type& inferred, const Node& node, bool disputed = false) {
    if (v == nullptr || !inferred.isKnown()) return;
    if (!typeSizeFits(inferred)) {
      // Constants can ask for a tensor that cannot exist (Reshape to [2^62, 3e4]); the model
      // fails when it runs, and such a type written out could not even be read back. Inference
      // keeps out of it: only the element type is taken.
      warn(node, fmt::format("output '{}' would be {}, more data than can exist; its shape is not "
                             "inferred",
                             v->name(), typeToString(inferred)));
      Type shapeless = inferred;
      shapeless.shape.reset();
      merge(v, shapeless, node);
      return;
    }
    const Type& declared = v->type();
    if (declared == inferred) return;  // (inferring again: nothing to merge or report)
    if (!declared.isKnown()) {
      store(v, inferred);
      return;
    }
    if (declared.kind != inferred.kind) {
      // Inference of sequences and optionals is coarse (a Loop-carried optional that the body
      // makes a sequence): there the declared kind stays, reported. Tensors are what Shape reads.
      warn(node, fmt::format("output '{}' is declared {} but inferred {}", v->name(),
                             typeToString(declared), typeToString(inferred)));
      return;
    }
    if (!declared.isTensor()) return;
    if (contradicts(declared, inferred) || (disputed && knowsMore(declared, inferred))) {
      warn(node, fmt::format("output '{}' is declared {} but inferred {}; using the inferred type",
                             v->name(), typeToString(declared), typeToString(inferred)));
      Type merged = inferred;
      if (merged.elem_type == DataType::kUndefined) merged.elem_type = declared.elem_type;
      store(v, std::move(merged));
      return;
    }
    Type merged = declared;
    if (inferred.elem_type != DataType::kUndefined) merged.elem_type = inferred.elem_type;
    if (inferred.shape && !declared.shape) merged.shape = inferred.shape;
    if (inferred.shape && declared.shape) {
      for (size_t i = 0; i < declared.shape->size(); ++i) {
        const Dim& d = (*declared.shape)[i];
        const Dim& n = (*inferred.shape)[i];
        // Inference has nothing to say: the declared dim stays.
        if (n.isUnknown() || (!d.isUnknown() && !n.isKnown() && !dependsOnInputsOnly(n))) {
          continue;
        }
        (*merged.shape)[i] = n;
      }
    }
    store(v, std::move(merged));
  }

  /// Whether `declared` has a known dim where `inferred`, of the same rank, does not.
  static bool knowsMore(const Type& declared, const Type& inferred) {
    if (!declared.shape || !inferred.shape || declared.shape->size() != inferred.shape->size())
      return false;
    for (size_t i = 0; i < declared.shape->size(); ++i) {
      if ((*declared.shape)[i].isKnown() && !(*inferred.shape)[i].isKnown()) return true;
    }
    return false;
  }

  /// Whether the two tensor types provably differ: both know the element type, the rank or a dim
  /// and they are not the same.
  static bool contradicts(const Type& declared, const Type& inferred) {
    if (declared.elem_type != DataType::kUndefined && inferred.elem_type != DataType::kUndefined &&
        declared.elem_type != inferred.elem_type) {
      return true;
    }
    if (!declared.shape || !inferred.shape) return false;
    if (declared.shape->size() != inferred.shape->size()) return true;
    for (size_t i = 0; i < declared.shape->size(); ++i) {
      const Dim& d = (*declared.shape)[i];
      const Dim& n = (*inferred.shape)[i];
      if (d.isKnown() && n.isKnown() && d.value != n.value) return true;
    }
    return false;
  }

  /// Infers a loop body (see InferenceContext::inferSubgraph's feedback). When a carried value
  /// comes out of the body with another known dim or rank than it went in, the declared body
  /// types describe the first iteration at best: the body is run abstractly a few iterations
  /// from the first one's input types, with no declared types, and then inferred for good with
  /// the carried inputs widened to what every iteration has in common and without the declared
  /// types some iteration contradicts.
  std::vector<Type> inferLoopBody(Graph& graph, const std::vector<Type>& input_types,
                                  const std::vector<std::pair<size_t, size_t>>& feedback,
                                  const Node& loop) {
    std::vector<std::pair<Value*, Type>> declared;
    collectTypes(graph, declared);
    std::vector<Type> out = inferSubgraph(graph, input_types);
    bool changes_shape = false;
    for (auto [in, o] : feedback) {
      if (in < graph.inputs().size() && o < out.size())
        changes_shape |= contradicts(graph.inputs()[in]->type(), out[o]);
    }
    if (!changes_shape) return out;
    auto [carried, seen] = iterateAbstractly(graph, declared, input_types, feedback);
    for (auto& [v, t] : declared) {
      bool wrong = std::any_of(seen[v].begin(), seen[v].end(),
                               [&](const Type& s) { return t.isTensor() && contradicts(t, s); });
      store(v, wrong ? Type() : t);
      values_.erase(v);
    }
    for (auto [in, o] : feedback) {
      if (in >= graph.inputs().size()) continue;
      Value* v = graph.inputs()[in];
      warn(loop, fmt::format("loop-carried '{}' changes type between iterations; its body input is "
                             "{}",
                             v->name(), typeToString(carried[in])));
      store(v, carried[in]);
    }
    return inferSubgraph(graph, input_types);
  }

  /// The carried input types every iteration shares and each body value's types over a few
  /// iterations, from a body cleared of declared types: the first iterations run from their own
  /// input types (what declared types are checked against), then the join of what they saw is
  /// widened until the body keeps it (an invariant; the rank alone, or nothing, if that takes
  /// too long). Reports and statistics are left as they were.
  std::pair<std::map<size_t, Type>, std::map<Value*, std::vector<Type>>> iterateAbstractly(
      Graph& graph, const std::vector<std::pair<Value*, Type>>& declared, std::vector<Type> inputs,
      const std::vector<std::pair<size_t, size_t>>& feedback) {
    ShapeInferenceStats saved = stats_;
    bool was_quiet = quiet_;
    quiet_ = true;
    std::map<size_t, Type> carried;
    std::map<Value*, std::vector<Type>> seen;
    auto iterate = [&](const std::vector<Type>& in) {
      for (auto& [v, t] : declared) {
        store(v, Type());
        values_.erase(v);
      }
      std::vector<Type> out = inferSubgraph(graph, in);
      std::vector<std::pair<Value*, Type>> now;
      collectTypes(graph, now);
      for (auto& [v, t] : now) seen[v].push_back(t);
      return out;
    };
    constexpr int kConcrete = 3, kWidenings = 4;
    for (int i = 0; i < kConcrete; ++i) {
      std::vector<Type> out = iterate(inputs);
      for (auto [in, o] : feedback) {
        if (in >= inputs.size() || o >= out.size()) continue;
        carried[in] = infer::mergeTypes(i == 0 ? inputs[in] : carried[in], out[o]);
        inputs[in] = out[o];
      }
    }
    bool invariant = false;
    for (int i = 0; i < kWidenings && !invariant; ++i) {
      for (auto& [in, t] : carried) inputs[in] = t;
      std::vector<Type> out = iterate(inputs);
      invariant = true;
      for (auto [in, o] : feedback) {
        if (in >= inputs.size() || o >= out.size() || within(out[o], carried[in])) continue;
        invariant = false;
        carried[in] = infer::mergeTypes(carried[in], out[o]);
      }
    }
    for (auto& [in, t] : carried) {
      if (!invariant && t.shape) t.shape = std::vector<Dim>(t.shape->size(), Dim::unknown());
    }
    stats_ = std::move(saved);
    quiet_ = was_quiet;
    return {carried, seen};
  }

  /// Whether every value of type `t` is also of type `j` (j's known element type and dims hold).
  static bool within(const Type& t, const Type& j) {
    if (!j.isKnown()) return true;
    if (t.kind != j.kind) return false;
    if (j.elem_type != DataType::kUndefined && t.elem_type != j.elem_type) return false;
    if (!j.shape) return true;
    if (!t.shape || t.shape->size() != j.shape->size()) return false;
    for (size_t i = 0; i < j.shape->size(); ++i) {
      if ((*j.shape)[i].isKnown() && !((*t.shape)[i] == (*j.shape)[i])) return false;
    }
    return true;
  }

  std::vector<Type> inferSubgraph(Graph& graph, const std::vector<Type>& input_types) {
    for (size_t i = 0; i < graph.inputs().size() && i < input_types.size(); ++i) {
      Value* in = graph.inputs()[i];
      // A declared body input type wins: loop-carried values may change shape per iteration.
      if (!in->type().isKnown()) store(in, input_types[i]);
    }
    inferGraph(graph);
    std::vector<Type> out;
    for (Value* v : graph.outputs()) out.push_back(v->type());
    return out;
  }

 private:
  void collectSymbols(const Graph& g) {
    auto add = [&](const Value* v) {
      if (v->type().shape) {
        for (const Dim& d : *v->type().shape) {
          if (d.kind == Dim::Kind::kParam) symbols_.insert(d.param);
        }
      }
    };
    for (const Value* v : g.inputs()) add(v);
    for (const Value* v : g.outputs()) add(v);
    for (const Node* n : g) {
      for (const Value* v : n->outputs()) {
        if (v != nullptr) add(v);
      }
      for (const Graph* sub : n->subgraphs()) collectSymbols(*sub);
    }
  }

  /// Every value of `g` and its nested subgraphs with its current type.
  static void collectTypes(Graph& g, std::vector<std::pair<Value*, Type>>& out) {
    for (Value* v : g.inputs()) out.emplace_back(v, v->type());
    for (Node* n : g) {
      for (Value* v : n->outputs()) {
        if (v != nullptr) out.emplace_back(v, v->type());
      }
      for (Graph* sub : n->subgraphs()) collectTypes(*sub, out);
    }
  }

  InferFn lookup(const Node& n, int64_t opset) const {
    auto it = fns_->find(normDomain(n.domain()) + ":" + n.opType());
    if (it == fns_->end()) return nullptr;
    for (const auto& [since, fn] : it->second) {
      if (since <= opset) return fn;
    }
    return nullptr;
  }

  void inferGraph(Graph& graph) {
    for (Node* n : graph) {
      std::string domain = normDomain(n->domain());
      int64_t opset = model_.opsetVersion(domain).value_or(0);
      InferFn fn = lookup(*n, opset);
      if (fn != nullptr) {
        InferenceContext ctx(*this, *n, opset);
        fn(ctx);
      } else if (domain.empty()) {
        stats_.unsupported_ops.insert(n->opType());
      }
      for (Value* v : n->outputs()) {
        if (v == nullptr) continue;
        ++stats_.values;
        const Type& t = v->type();
        if (!t.isTensor()) continue;
        if (t.elem_type != DataType::kUndefined) ++stats_.typed;
        if (!t.shape) continue;
        ++stats_.ranked;
        bool all_known =
            std::all_of(t.shape->begin(), t.shape->end(), [](const Dim& d) { return d.isKnown(); });
        bool any_symbolic = std::any_of(t.shape->begin(), t.shape->end(), [](const Dim& d) {
          return d.kind == Dim::Kind::kParam || d.kind == Dim::Kind::kExpr;
        });
        if (all_known) ++stats_.static_shape;
        if (any_symbolic) ++stats_.symbolic;
      }
    }
  }

  void markValueInfo(Graph& g) {
    for (Node* n : g) {
      for (Value* v : n->outputs()) {
        if (v == nullptr || !v->type().isKnown() || v->isGraphOutput() || v->hasValueInfo()) {
          continue;
        }
        ++stats_.refined;
        ir::Builder::setHasValueInfo(v, true);
      }
      for (Graph* sub : n->subgraphs()) markValueInfo(*sub);
    }
  }

  Model& model_;
  const ShapeInferenceOptions& options_;
  std::shared_ptr<const InferenceTable> fns_;
  std::unordered_map<const Value*, ShapeValue> values_;
  bool quiet_ = false;  ///< while iterating a loop body abstractly: no reports
  std::set<std::string> symbols_;
  std::set<std::string> input_symbols_;  ///< dim_params of the main graph's inputs
  int64_t next_symbol_ = 0;
  ShapeInferenceStats stats_;
};

// ---------------------------------------------------------------------------------------------
// InferenceContext

const Type* InferenceContext::inputType(size_t i) const {
  const Value* v = node_.input(i);
  if (v == nullptr || !v->type().isKnown()) return nullptr;
  return &v->type();
}

std::optional<DataType> InferenceContext::inputElemType(size_t i) const {
  const Type* t = inputType(i);
  if (t == nullptr || (t->kind != Type::Kind::kTensor && t->kind != Type::Kind::kSparseTensor) ||
      t->elem_type == DataType::kUndefined) {
    return std::nullopt;
  }
  return t->elem_type;
}

std::optional<std::vector<Dim>> InferenceContext::inputShape(size_t i) const {
  const Type* t = inputType(i);
  if (t == nullptr || !t->isTensor() || !t->shape) return std::nullopt;
  return *t->shape;
}

std::optional<int64_t> InferenceContext::inputRank(size_t i) const {
  auto s = inputShape(i);
  if (!s) return std::nullopt;
  return static_cast<int64_t>(s->size());
}

const ShapeValue* InferenceContext::inputValue(size_t i) const {
  return engine_.valueOf(node_.input(i));
}

std::optional<std::vector<int64_t>> InferenceContext::inputInts(size_t i) const {
  const ShapeValue* v = inputValue(i);
  if (v == nullptr) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& e : *v) {
    auto c = e ? e->constantValue() : std::nullopt;
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

const Tensor* InferenceContext::inputConstant(size_t i) const {
  const Value* v = node_.input(i);
  if (v == nullptr) return nullptr;
  if (v->kind() == Value::Kind::kInitializer || v->isGraphInput()) return v->initializer();
  if (v->producer() != nullptr && v->producer()->opType() == "Constant") {
    const Attribute* a = v->producer()->findAttribute("value");
    if (a != nullptr && a->tensors.size() == 1) return &a->tensors[0];
  }
  return nullptr;
}

int64_t InferenceContext::attrInt(const std::string& name, int64_t fallback) const {
  const Attribute* a = node_.findAttribute(name);
  return a != nullptr && a->kind == Attribute::Kind::kInt ? a->i : fallback;
}

std::optional<std::vector<int64_t>> InferenceContext::attrInts(const std::string& name) const {
  const Attribute* a = node_.findAttribute(name);
  if (a == nullptr || a->kind != Attribute::Kind::kInts) return std::nullopt;
  return a->ints;
}

float InferenceContext::attrFloat(const std::string& name, float fallback) const {
  const Attribute* a = node_.findAttribute(name);
  return a != nullptr && a->kind == Attribute::Kind::kFloat ? a->f : fallback;
}

std::string InferenceContext::attrString(const std::string& name,
                                         const std::string& fallback) const {
  const Attribute* a = node_.findAttribute(name);
  return a != nullptr && a->kind == Attribute::Kind::kString ? a->s : fallback;
}

void InferenceContext::setOutput(size_t i, DataType elem, std::optional<std::vector<Dim>> shape) {
  setOutputType(i, Type::tensor(elem, std::move(shape)));
}

void InferenceContext::setOutputType(size_t i, Type type) {
  if (i < node_.numOutputs()) engine_.merge(node_.output(i), type, node_);
}

void InferenceContext::setOutputDisputed(size_t i, DataType elem, std::vector<Dim> shape) {
  if (i < node_.numOutputs()) {
    engine_.merge(node_.output(i), Type::tensor(elem, std::move(shape)), node_, true);
  }
}

void InferenceContext::setOutputValue(size_t i, ShapeValue value) {
  if (i < node_.numOutputs()) engine_.setValue(node_.output(i), std::move(value));
}

Dim InferenceContext::freshDim() {
  return engine_.freshDim();
}

void InferenceContext::warn(const std::string& message) {
  engine_.warn(node_, message);
}

std::vector<Type> InferenceContext::inferSubgraph(
    Graph& graph, const std::vector<Type>& input_types,
    const std::vector<std::pair<size_t, size_t>>& feedback) {
  if (feedback.empty()) return engine_.inferSubgraph(graph, input_types);
  return engine_.inferLoopBody(graph, input_types, feedback, node_);
}

// ---------------------------------------------------------------------------------------------

std::optional<std::vector<Dim>> broadcastShapes(const std::vector<Dim>& a,
                                                const std::vector<Dim>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* x = i + a.size() >= rank ? &a[i + a.size() - rank] : nullptr;
    const Dim* y = i + b.size() >= rank ? &b[i + b.size() - rank] : nullptr;
    if (x == nullptr) {
      out[i] = *y;
    } else if (y == nullptr) {
      out[i] = *x;
    } else if (x->isKnown() && x->value == 1) {
      out[i] = *y;
    } else if (y->isKnown() && y->value == 1) {
      out[i] = *x;
    } else if (x->isKnown() && y->isKnown()) {
      if (x->value != y->value) return std::nullopt;
      out[i] = *x;
    } else if (*x == *y && !x->isUnknown()) {
      out[i] = *x;
    } else if (auto bx = x->toExpr(), by = y->toExpr();
               bx && by && (bx->minOperandBound(*by) || by->minOperandBound(*bx))) {
      // min(y, c) against y: unequal only if one is 1 (then both are) or the broadcast fails, so
      // in every valid run they are equal: keep the simpler one.
      out[i] = bx->minOperandBound(*by) ? *y : *x;
    } else if (x->isKnown()) {
      out[i] = *x;  // the other is 1 or equal at run time; 1 would broadcast to x
    } else if (y->isKnown()) {
      out[i] = *y;
    } else {
      out[i] = Dim::unknown();
    }
  }
  return out;
}

StatusOr<ShapeInferenceStats> inferShapes(Model& model, const ShapeInferenceOptions& options) {
  ShapeInferenceEngine engine(model, options);
  engine.run();
  if (options.values != nullptr) *options.values = std::move(engine.values());
  return std::move(engine.stats());
}

}  // namespace onnxopt::ir
