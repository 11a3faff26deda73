// inline-functions: a call of a model-local function becomes the function's body.
//
//   f(a) => (r) { t = Exp(a); r = Neg(t) }         (a FunctionProto of the model, domain local)
//   %y = local.f(%x)                         ==>   %n/t = Exp(%x); %y = Neg(%n/t)
//
// Calls nested in subgraphs are inlined too, and calls that an inlined body makes, to a fixed point
// (at most kMaxRounds deep: a function that calls itself is unrolled that far, then left as a
// call). Before anything is inlined, the nodes the result would have are counted (per function and
// depth, memoized, saturating): past the model node limit (option max-nodes, set by opt
// --max-nodes; ir::kDefaultMaxNodes) the model is refused, so that functions that call each other several times at each
// level (a few KB that would inline to billions of nodes) fail at once. A call is inlined when
//  - its function's body reads only its inputs and earlier body values and holds no graph
//    attribute (subgraphs are not copied) and no field the IR keeps opaque (attribute defaults,
//    FunctionProto.attribute_proto, live there: a call that leaves such an attribute out would
//    lose its default);
//  - every opset the function imports is the model's version of that domain, or a domain the model
//    does not import yet (then the model imports it): a body written for another version of the
//    default domain is not re-targeted;
//  - the call passes no more inputs and reads no more outputs than the function has, and reads no
//    output that is a body input the call left out.
// An attribute of a body node that refers to the caller's (ref_attr_name) takes the call's value,
// or is left out where the call has none. Functions no one calls any more are dce's to remove.
//
// Why: onnxruntime inlines model-local functions when it loads a model, so a model with them
// runs there; the patterns of the other passes, shape inference and the executors see only
// standard ops after this. The runners (opt run, check, bench) inline before they run.
#include "onnxopt/passes/inline_functions.h"

#include <limits>
#include <map>
#include <unordered_set>

#include <fmt/format.h>

#include "onnxopt/pass/pass.h"
#include "onnxopt/rewrite/pattern.h"
#include "onnxopt/rewrite/rewriter.h"

namespace onnxopt::passes {
namespace {

constexpr int kMaxRounds = 16;

using FunctionKey = std::pair<std::string, std::string>;  // domain, name

std::string normalDomain(const std::string& d) {
  return d == "ai.onnx" ? std::string() : d;
}

/// Whether the body of `fn` can be copied: it reads only its inputs and earlier body values and
/// holds no graph attribute, and the function keeps no opaque fields (attribute defaults).
bool bodyCopyable(const ir::Function& fn) {
  if (fn.body == nullptr || !fn.unknown_fields.empty()) return false;
  std::unordered_set<const ir::Value*> defined(fn.body->inputs().begin(), fn.body->inputs().end());
  for (const ir::Node* n : *fn.body) {
    for (const ir::Attribute& a : n->attributes()) {
      if (!a.graphs.empty()) return false;
    }
    for (const ir::Value* v : n->inputs()) {
      if (v != nullptr && defined.count(v) == 0) return false;
    }
    defined.insert(n->outputs().begin(), n->outputs().end());
  }
  for (size_t i = 0; i < fn.body->numOutputs(); ++i) {
    if (defined.count(fn.body->output(i)) == 0) return false;
  }
  return true;
}

/// Whether every opset `fn` imports is the model's version of that domain or one the model lacks.
bool opsetsAgree(const ir::Function& fn, const ir::Model& model) {
  for (const ir::OpsetImport& imp : fn.opset_imports) {
    std::optional<int64_t> have = model.opsetVersion(normalDomain(imp.domain));
    if (have && *have != imp.version) return false;
  }
  return true;
}

/// Whether `call` fits `fn`: no more inputs or outputs than it has, and no output read that is a
/// body input the call leaves out.
bool callFits(const ir::Node& call, const ir::Function& fn) {
  const ir::Graph& body = *fn.body;
  const std::vector<ir::Value*>& params = body.inputs();
  if (call.numInputs() > params.size() || call.numOutputs() > body.numOutputs()) return false;
  for (size_t i = 0; i < call.numOutputs(); ++i) {
    if (call.output(i) == nullptr) continue;
    for (size_t j = 0; j < params.size(); ++j) {
      if (body.output(i) == params[j] && (j >= call.numInputs() || call.input(j) == nullptr)) {
        return false;
      }
    }
  }
  return true;
}

using Inlinable = std::map<FunctionKey, const ir::Function*>;

/// The function `n` calls if inlineFunctionCalls would inline it (ignoring the depth), else null.
const ir::Function* inlinedCallee(const ir::Node& n, const Inlinable& inlinable,
                                  const KeepCall& keep) {
  auto it = inlinable.find({normalDomain(n.domain()), n.opType()});
  if (it == inlinable.end() || !callFits(n, *it->second) || (keep && keep(n))) return nullptr;
  return it->second;
}

/// How many nodes a node stands for once every call is inlined as inlineFunctionCalls does: calls
/// made at depth kMaxRounds or deeper stay calls. Counted per function and depth (memoized), so
/// the count takes time linear in the bodies however large it is; it saturates at uint64 max.
class ExpansionCount {
 public:
  ExpansionCount(const Inlinable& inlinable, const KeepCall& keep)
      : inlinable_(inlinable), keep_(keep) {}

  /// The nodes `n`, found at call depth `depth` (0: a graph of the model), becomes.
  uint64_t nodesOf(const ir::Node& n, int depth) {
    const ir::Function* fn = depth < kMaxRounds ? inlinedCallee(n, inlinable_, keep_) : nullptr;
    if (fn == nullptr) return 1;
    auto [it, inserted] = memo_.try_emplace({fn, depth}, 0);
    if (!inserted) return it->second;
    uint64_t total = 0;
    for (const ir::Node* m : *fn->body) total = saturatingAdd(total, nodesOf(*m, depth + 1));
    memo_[{fn, depth}] = total;  // (the recursion may have grown the map)
    return total;
  }

  static uint64_t saturatingAdd(uint64_t a, uint64_t b) {
    uint64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<uint64_t>::max() : sum;
  }

 private:
  const Inlinable& inlinable_;
  const KeepCall& keep_;
  std::map<std::pair<const ir::Function*, int>, uint64_t> memo_;
};

/// Refuses to inline when the graphs of `model` would hold more than `max_nodes` nodes after it,
/// naming the call that expands most.
Status checkExpansion(ir::Model& model, const Inlinable& inlinable, const KeepCall& keep,
                      int64_t max_nodes) {
  ExpansionCount count(inlinable, keep);
  uint64_t total = 0, largest = 0;
  const ir::Node* largest_call = nullptr;
  for (ir::Graph* g : rewrite::allGraphs(model, /*include_functions=*/false)) {
    for (const ir::Node* n : *g) {
      uint64_t nodes = count.nodesOf(*n, 0);
      total = ExpansionCount::saturatingAdd(total, nodes);
      if (nodes > largest) {
        largest = nodes;
        largest_call = n;
      }
    }
  }
  if (total <= static_cast<uint64_t>(max_nodes)) return Status::ok();
  auto amount = [](uint64_t v) {
    return v == std::numeric_limits<uint64_t>::max() ? std::string("more than 2^64")
                                                     : fmt::format("{}", v);
  };
  const ir::Node& call = *largest_call;
  std::string name = !call.name().empty() ? fmt::format(" '{}'", call.name())
                     : call.numOutputs() > 0 && call.output(0) != nullptr
                         ? fmt::format(" producing '{}'", call.output(0)->name())
                         : std::string();
  return makeError(StatusCode::kResourceExhausted,
                   "inlining the model-local functions would make {} nodes, more than {} (the "
                   "limit; opt --max-nodes): node{} ({}.{}) alone expands to {}",
                   amount(total), max_nodes, name, call.domain(), call.opType(), amount(largest));
}

class InlineFunctionsPass final : public pass::Pass {
 public:
  std::string id() const override { return "inline-functions"; }
  std::string summary() const override {
    return "Replace calls of model-local functions by the functions' bodies";
  }

  std::vector<pass::PassOption> options() const override {
    return {{"max-nodes", "int", std::to_string(ir::kDefaultMaxNodes),
             "refuse a model whose graphs would hold more nodes once inlined (opt --max-nodes)"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name != "max-nodes") return Pass::setOption(name, value);
    ASSIGN_OR_RETURN(max_nodes_, parseInt(name, value));
    if (max_nodes_ < 1) return invalidArgument("max-nodes must be positive");
    return Status::ok();
  }

  StatusOr<bool> run(ir::Model& model, pass::PassContext& /*ctx*/) override {
    ASSIGN_OR_RETURN(int64_t calls, inlineFunctionCalls(model, {}, max_nodes_));
    bump("calls-inlined", calls);
    return calls > 0;
  }

 private:
  int64_t max_nodes_ = ir::kDefaultMaxNodes;
};

}  // namespace

StatusOr<int64_t> inlineFunctionCalls(ir::Model& model, const KeepCall& keep, int64_t max_nodes) {
  if (model.functions.empty()) return int64_t{0};
  Inlinable inlinable;
  for (const auto& f : model.functions) {
    if (bodyCopyable(*f) && opsetsAgree(*f, model)) {
      inlinable[{normalDomain(f->domain), f->name}] = f.get();
    }
  }
  if (inlinable.empty()) return int64_t{0};
  RETURN_IF_ERROR(checkExpansion(model, inlinable, keep, max_nodes));
  // Each domain a function imports that the model does not yet: the inlined nodes need it.
  auto importDomainsOf = [&](const ir::Function& fn) {
    for (const ir::OpsetImport& imp : fn.opset_imports) {
      if (!model.opsetVersion(normalDomain(imp.domain))) {
        model.opset_imports.push_back({normalDomain(imp.domain), imp.version});
      }
    }
  };
  rewrite::Rewriter rw;
  int64_t inlined = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<std::pair<ir::Node*, const ir::Function*>> calls;
    for (ir::Graph* g : rewrite::allGraphs(model, /*include_functions=*/false)) {
      for (ir::Node* n : *g) {
        if (const ir::Function* fn = inlinedCallee(*n, inlinable, keep)) calls.emplace_back(n, fn);
      }
    }
    if (calls.empty()) break;
    int64_t before = inlined;
    for (auto [call, fn] : calls) {
      // An import added for an earlier function may have fixed a domain's version since.
      if (!opsetsAgree(*fn, model)) continue;
      importDomainsOf(*fn);
      std::vector<ir::Value*> results = rw.inlineFunctionCall(call, *fn);
      results.resize(call->numOutputs());
      rw.replaceNode(call, results);
      ++inlined;
    }
    if (inlined == before) break;
  }
  if (inlined > 0) model.graph->collectGarbage();
  return inlined;
}

std::unique_ptr<pass::Pass> createInlineFunctionsPass() {
  return std::make_unique<InlineFunctionsPass>();
}

}  // namespace onnxopt::passes
