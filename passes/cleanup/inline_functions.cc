// inline-functions: a call of a model-local function becomes the function's body.
//
//   f(a) => (r) { t = Exp(a); r = Neg(t) }         (a FunctionProto of the model, domain local)
//   %y = local.f(%x)                         ==>   %n/t = Exp(%x); %y = Neg(%n/t)
//
// Calls nested in subgraphs are inlined too, and calls that an inlined body makes, to a fixed point
// (at most kMaxRounds deep: a function that calls itself is left as it is). A call is inlined when
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

#include <map>
#include <unordered_set>

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

class InlineFunctionsPass final : public pass::Pass {
 public:
  std::string id() const override { return "inline-functions"; }
  std::string summary() const override {
    return "Replace calls of model-local functions by the functions' bodies";
  }

  StatusOr<bool> run(ir::Model& model, pass::PassContext& /*ctx*/) override {
    ASSIGN_OR_RETURN(int64_t calls, inlineFunctionCalls(model));
    bump("calls-inlined", calls);
    return calls > 0;
  }
};

}  // namespace

StatusOr<int64_t> inlineFunctionCalls(ir::Model& model, const KeepCall& keep) {
  if (model.functions.empty()) return int64_t{0};
  std::map<FunctionKey, const ir::Function*> inlinable;
  for (const auto& f : model.functions) {
    if (bodyCopyable(*f) && opsetsAgree(*f, model)) {
      inlinable[{normalDomain(f->domain), f->name}] = f.get();
    }
  }
  if (inlinable.empty()) return int64_t{0};
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
        auto it = inlinable.find({normalDomain(n->domain()), n->opType()});
        if (it != inlinable.end() && callFits(*n, *it->second) && !(keep && keep(*n))) {
          calls.emplace_back(n, it->second);
        }
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
