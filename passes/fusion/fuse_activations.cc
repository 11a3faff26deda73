// fuse-activations: activation functions written out become their ONNX operators.
//
//   Log(Add(Exp(x), 1))                         ==>  Softplus(x)
//   Div(Clip(Add(x, 3), 0, 6), 6)               ==>  HardSigmoid<alpha=1/6, beta=0.5>(x) (PyTorch)
//   Mul(x, HardSigmoid<alpha=1/6, beta=0.5>(x)) ==>  HardSwish(x)                (opset 14)
//   Mul(x, Tanh(Softplus(x)))                   ==>  Mish(x)                     (opset 18)
//
// Add/Mul operands in either order; constants are scalars (within 1e-6 relative) and the result
// must keep x's rank (a [1,1,1] "scalar" broadcasts x up); intermediates must have no other user.
// The patterns compose: the first two run before the last two.
#include <algorithm>
#include <cmath>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/pass/pattern_match.h"
#include "onnxopt/passes/registry.h"

namespace onnxopt::passes {
namespace {

using namespace pass::match;  // NOLINT: the matcher vocabulary reads as the rule
using rewrite::PatternContext;

constexpr double kTolerance = 1e-6;

bool is(double v, double want) {
  return std::fabs(v - want) <= kTolerance * std::max(1.0, std::fabs(want));
}

/// A scalar within the tolerance of `value`, bound to `name` for keepsRank.
Matcher constant(const char* name, double value) {
  return bind(name, scalar(value, kTolerance));
}

/// True when the pattern's result keeps x's rank: a one-element constant of higher rank
/// ([1,1,1] + x) broadcasts x up, which the fused unary op would lose. Known when the result's
/// rank is x's, or when every constant's rank is at most x's (rank 0 always is).
bool keepsRank(const ir::Node& root, const Match& m, const std::vector<const char*>& constants,
               PatternContext& ctx) {
  auto rx = pass::rankOf(m["x"]);
  if (rx && pass::rankOf(root.output(0)) == rx) return true;
  bool all_fit = std::all_of(constants.begin(), constants.end(), [&](const char* c) {
    auto rc = pass::rankOf(m[c]);
    return rc && (*rc == 0 || (rx && *rc <= *rx));
  });
  return all_fit || ctx.fail("the constants may broadcast x to a higher rank");
}

/// Replaces `root`'s output with a new `op`(x) (with attributes) and erases the matched chain,
/// where the op allows x's type at the model's opset (float16 or bfloat16 after --precision:
/// Softplus, HardSwish and Mish allow bfloat16 only from opset 22).
bool replaceWith(ir::Node* root, const char* op_type, const Match& m,
                 const std::vector<std::pair<const char*, float>>& float_attrs,
                 PatternContext& ctx) {
  const ir::Type& t = root->output(0)->type();
  if (t.isTensor() && !passes::precisionAllows(op_type, ctx.opset(), t.elem_type)) {
    return ctx.fail("{} does not allow {} at this opset", op_type, dataTypeName(t.elem_type));
  }
  auto& rw = ctx.rewriter();
  rw.setInsertionPoint(root);
  ir::Node* n = rw.createNode(op_type, "", {m["x"]}, {root->output(0)->type()});
  for (const auto& [name, value] : float_attrs) rw.setAttribute(n, pass::floatAttr(name, value));
  rw.replaceAllUsesWith(root->output(0), n->output(0));
  rw.eraseDeadNodes(m.nodes());
  return true;
}

class SoftplusPattern final : public rewrite::Pattern {
 public:
  SoftplusPattern() : Pattern("fuse-softplus", "Log", "", 3) {}
  bool matchAndRewrite(ir::Node* log, PatternContext& ctx) const override {
    Match m = rule_.match(log);
    if (!m) return ctx.fail("{}", m.why());
    if (!keepsRank(*log, m, {"one"}, ctx)) return false;
    return replaceWith(log, "Softplus", m, {}, ctx);
  }

 private:
  const Matcher rule_ =
      op("Log", singleUse(commutative("Add", singleUse(op("Exp", bind("x"))), constant("one", 1))))
          .orFail("not Log(Exp(x) + 1)");
};

class HardSigmoidPattern final : public rewrite::Pattern {
 public:
  HardSigmoidPattern() : Pattern("fuse-hardsigmoid", "Div", "", 3, 11) {}
  // Clip's bounds are inputs from opset 11.
  bool matchAndRewrite(ir::Node* div, PatternContext& ctx) const override {
    Match m = rule_.match(div);
    if (!m) return ctx.fail("{}", m.why());
    if (!keepsRank(*div, m, {"six", "zero", "six_max", "three"}, ctx)) return false;
    return replaceWith(div, "HardSigmoid", m, {{"alpha", 1.0f / 6.0f}, {"beta", 0.5f}}, ctx);
  }

 private:
  const Matcher rule_ =
      op("Div",
         singleUse(
             op("Clip",
                singleUse(commutative("Add", bind("x"), constant("three", 3))).orFail("not x + 3"),
                constant("zero", 0), constant("six_max", 6)))
             .orFail("not Clip(.., 0, 6)"),
         constant("six", 6).orFail("not divided by 6"));
};

class HardSwishPattern final : public rewrite::Pattern {
 public:
  HardSwishPattern() : Pattern("fuse-hardswish", "Mul", "", 2, 14) {}
  bool matchAndRewrite(ir::Node* mul, PatternContext& ctx) const override {
    Match m = rule_.match(mul);
    if (!m) return ctx.fail("{}", m.why());
    const ir::Node& hs = *m.node("hs");
    if (!is(pass::attrFloat(hs, "alpha", 0.2f), 1.0 / 6.0) ||
        !is(pass::attrFloat(hs, "beta", 0.5f), 0.5)) {
      return ctx.fail("HardSigmoid parameters differ from HardSwish's");
    }
    return replaceWith(mul, "HardSwish", m, {}, ctx);
  }

 private:
  const Matcher rule_ =
      commutative("Mul", bind("hs", singleUse(op("HardSigmoid", bind("x")))), bind("x"))
          .orFail("not x * HardSigmoid(x)");
};

class MishPattern final : public rewrite::Pattern {
 public:
  MishPattern() : Pattern("fuse-mish", "Mul", "", 1, 18) {}
  bool matchAndRewrite(ir::Node* mul, PatternContext& ctx) const override {
    Match m = rule_.match(mul);
    if (!m) return ctx.fail("{}", m.why());
    return replaceWith(mul, "Mish", m, {}, ctx);
  }

 private:
  const Matcher rule_ =
      commutative("Mul", singleUse(op("Tanh", singleUse(op("Softplus", bind("x"))))), bind("x"))
          .orFail("not x * tanh(softplus(x))");
};

class FuseActivationsPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-activations"; }
  std::string summary() const override {
    return "Fuse written-out Softplus, HardSigmoid, HardSwish and Mish into their operators";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<SoftplusPattern>());
    list.push_back(std::make_unique<HardSigmoidPattern>());
    list.push_back(std::make_unique<HardSwishPattern>());
    list.push_back(std::make_unique<MishPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseActivationsPass() {
  return std::make_unique<FuseActivationsPass>();
}

}  // namespace onnxopt::passes
