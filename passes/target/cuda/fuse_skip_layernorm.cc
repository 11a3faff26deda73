// fuse-skip-layernorm (CUDA target): a residual Add and the normalization of its result become
// one ai.onnxopt op, which the CUDA runtime runs as one kernel (the sum is read once per pass of the
// normalization instead of written by one kernel and read back by the next).
//
//   s = Add(X, Skip); Y = LayerNormalization<axis, epsilon>(s, Scale, B)
//        ==>  Y, s = ai.onnxopt.SkipLayerNormalization<axis, epsilon>(X, Skip, Scale, B)
//   s = Add(X, Skip); Y = RMSNormalization<axis, epsilon>(s, Scale)               (opset 23+)
//        ==>  Y, s = ai.onnxopt.SkipRMSNormalization<axis, epsilon>(X, Skip, Scale)
//
// where B is present (onnxruntime 1.32 crashes on a call that omits an optional function input),
// X and Skip are known to have s's shape (equal dims or equal symbols: no broadcast, the
// kernel reads both row by row), LayerNormalization's Mean and InvStdDev are unused, the
// stash_type is float, and the CUDA kernel table claims the op for the element type. The fused
// op's second output, Sum, takes the place of s's other users (pre-norm transformers such as
// Llama reuse it for the next residual); it is there when s has none too, since onnx types a
// function call by all of its function's outputs. Add's operands in either order (X is the first).
#include <unordered_set>

#include "target_pattern_pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// Whether every user of `v` other than `after` comes after it in the graph (or is the graph's
/// return): the fused op, created in `after`'s place, then defines the sum before them. Walks
/// forward from `after` only until it has seen them all.
bool usedOnlyAfter(const ir::Value& v, const ir::Node* after) {
  const ir::Node* ret = after->owningGraph()->returnNode();
  std::unordered_set<const ir::Node*> pending;
  for (const ir::Use& u : v.uses()) {
    if (u.user != after && u.user != ret) pending.insert(u.user);
  }
  for (const ir::Node* n = after->next(); n != nullptr && !pending.empty(); n = n->next()) {
    pending.erase(n);
  }
  return pending.empty();
}

/// Add + `norm` (LayerNormalization or RMSNormalization) -> `fused`, whose inputs are X, Skip and
/// the normalization's inputs after its X.
class SkipNormPattern final : public TargetPattern {
 public:
  SkipNormPattern(TargetClaims claims, const char* name, const char* norm, const char* fused,
                  int64_t min_opset)
      : TargetPattern(claims, name, norm, "", 1, min_opset), fused_(fused) {}
  bool matchAndRewrite(ir::Node* ln, PatternContext& ctx) const override {
    const bool rms = ln->opType() == "RMSNormalization";
    ir::Value* s = ln->input(0);
    ir::Node* add = s == nullptr ? nullptr : s->producer();
    if (add == nullptr || add->opType() != "Add" || !add->domain().empty()) {
      return ctx.fail("X is not an Add's result");
    }
    for (size_t i = 1; i < ln->numOutputs(); ++i) {
      if (ln->output(i) != nullptr && !ln->output(i)->uses().empty()) {
        return ctx.fail("Mean or InvStdDev is used");
      }
    }
    if (const ir::Attribute* stash = ln->findAttribute("stash_type");
        stash != nullptr && stash->i != 1) {
      return ctx.fail("stash_type is not float");
    }
    // onnxruntime 1.32 crashes on a function call that leaves an optional input out, so the
    // call always has B: a LayerNormalization without one is left alone.
    const size_t params = rms ? 1 : 2;
    if (ln->numInputs() < 1 + params || ln->input(params) == nullptr) {
      return rms ? ctx.fail("no Scale") : ctx.fail("no B");
    }
    ir::Value* x = add->input(0);
    ir::Value* skip = add->input(1);
    if (!pass::sameKnownShape(x, s) || !pass::sameKnownShape(skip, s)) {
      return ctx.fail("the Add's operands are not both known to have its shape");
    }
    std::vector<ir::Value*> inputs = {x, skip};
    for (size_t i = 1; i <= params; ++i) inputs.push_back(ln->input(i));
    auto tx = pass::elemTypeOf(x);
    if (!tx || tx != pass::elemTypeOf(skip))
      return ctx.fail("X and Skip do not share one known type");
    if (kernels::Support ok = claims_(fused_, {inputs.begin(), inputs.end()}); !ok) {
      return ctx.fail("no CUDA kernel: {}", ok.reason);
    }
    bool sum_used = s->uses().size() > 1;
    if (sum_used && !usedOnlyAfter(*s, ln)) {
      return ctx.fail("the sum has a user before the normalization");
    }
    auto& rw = ctx.rewriter();
    // Both outputs always: onnx and onnxruntime type a call by its function's outputs, and refuse
    // a call that lists fewer.
    std::vector<ir::Type> types = {ln->output(0)->type(), s->type()};
    ir::Node* fused = rw.createNode(fused_, kTargetDomain, inputs, types);
    rw.setName(fused, ln->name());
    rw.copyAttribute(*ln, fused, "axis");
    rw.copyAttribute(*ln, fused, "epsilon");
    // The fused outputs take the names of the values they replace.
    std::vector<ir::Value*> replacement(ln->numOutputs(), nullptr);
    replacement[0] = fused->output(0);
    rw.replaceNode(ln, replacement);
    rw.replaceNode(add, {fused->output(1)});
    return true;
  }

 private:
  std::string fused_;
};

class FuseSkipLayerNormPass final : public TargetPatternPass {
 public:
  std::string id() const override { return "fuse-skip-layernorm"; }
  std::string summary() const override {
    return "Residual Add + LayerNormalization (RMSNormalization) into "
           "ai.onnxopt.SkipLayerNormalization (SkipRMSNormalization) (CUDA target: one kernel)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<SkipNormPattern>(targetKernels(), "fuse-skip-layernorm",
                                                     "LayerNormalization", "SkipLayerNormalization",
                                                     17));
    list.push_back(std::make_unique<SkipNormPattern>(
        targetKernels(), "fuse-skip-rmsnorm", "RMSNormalization", "SkipRMSNormalization", 23));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseSkipLayerNormPass() {
  return std::make_unique<FuseSkipLayerNormPass>();
}

}  // namespace onnxopt::passes
