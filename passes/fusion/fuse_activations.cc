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

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

bool is(const std::optional<double>& v, double want) {
  return v && std::fabs(*v - want) <= 1e-6 * std::max(1.0, std::fabs(want));
}

/// For a binary node, the operand that is the scalar `c`'s partner; nullptr when neither is `c`.
ir::Value* partnerOf(const ir::Node& n, double c) {
  if (is(pass::scalarConstant(n.input(1)), c)) return n.input(0);
  if (is(pass::scalarConstant(n.input(0)), c)) return n.input(1);
  return nullptr;
}

/// True when the pattern's result keeps x's rank: a one-element constant of higher rank
/// ([1,1,1] + x) broadcasts x up, which the fused unary op would lose. Known when the result's
/// rank is x's, or when every constant's rank is at most x's (rank 0 always is).
bool keepsRank(const ir::Node& root, const ir::Value* x,
               const std::vector<const ir::Value*>& constants, PatternContext& ctx) {
  auto rx = pass::rankOf(x);
  if (rx && pass::rankOf(root.output(0)) == rx) return true;
  bool all_fit = std::all_of(constants.begin(), constants.end(), [&](const ir::Value* c) {
    auto rc = pass::rankOf(c);
    return rc && (*rc == 0 || (rx && *rc <= *rx));
  });
  return all_fit || ctx.fail("the constants may broadcast x to a higher rank");
}

/// The operand of binary `n` other than `v`.
const ir::Value* otherOperand(const ir::Node& n, const ir::Value* v) {
  return n.input(0) == v ? n.input(1) : n.input(0);
}

/// Replaces `root`'s output with a new `op`(x) (with attributes) and erases `chain` (users first).
void replaceWith(ir::Node* root, const char* op, ir::Value* x,
                 const std::vector<std::pair<const char*, float>>& float_attrs,
                 const std::vector<ir::Node*>& chain, PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  rw.setInsertionPoint(root);
  ir::Node* n = rw.createNode(op, "", {x}, 1);
  for (const auto& [name, value] : float_attrs) {
    ir::Attribute a;
    a.name = name;
    a.kind = ir::Attribute::Kind::kFloat;
    a.f = value;
    rw.setAttribute(n, std::move(a));
  }
  rw.setType(n->output(0), root->output(0)->type());
  rw.replaceAllUsesWith(root->output(0), n->output(0));
  for (ir::Node* c : chain) {
    if (!c->output(0)->hasUses()) rw.eraseNode(c);
  }
}

class SoftplusPattern final : public rewrite::Pattern {
 public:
  SoftplusPattern() : Pattern("fuse-softplus", "Log", "", 3) {}
  bool matchAndRewrite(ir::Node* log, PatternContext& ctx) const override {
    ir::Node* add = pass::singleUseProducer(log->input(0), "Add");
    ir::Value* e = add ? partnerOf(*add, 1.0) : nullptr;
    ir::Node* exp = pass::singleUseProducer(e, "Exp");
    if (exp == nullptr) return ctx.fail("not Log(Exp(x) + 1)");
    if (!keepsRank(*log, exp->input(0), {otherOperand(*add, e)}, ctx)) return false;
    replaceWith(log, "Softplus", exp->input(0), {}, {log, add, exp}, ctx);
    return true;
  }
};

class HardSigmoidPattern final : public rewrite::Pattern {
 public:
  HardSigmoidPattern() : Pattern("fuse-hardsigmoid", "Div", "", 3, 11) {}
  // Clip's bounds are inputs from opset 11.
  bool matchAndRewrite(ir::Node* div, PatternContext& ctx) const override {
    if (!is(pass::scalarConstant(div->input(1)), 6.0)) return ctx.fail("not divided by 6");
    ir::Node* clip = pass::singleUseProducer(div->input(0), "Clip");
    if (clip == nullptr || clip->numInputs() != 3 ||
        !is(pass::scalarConstant(clip->input(1)), 0.0) ||
        !is(pass::scalarConstant(clip->input(2)), 6.0)) {
      return ctx.fail("not Clip(.., 0, 6)");
    }
    ir::Node* add = pass::singleUseProducer(clip->input(0), "Add");
    ir::Value* x = add ? partnerOf(*add, 3.0) : nullptr;
    if (x == nullptr) return ctx.fail("not x + 3");
    if (!keepsRank(*div, x, {div->input(1), clip->input(1), clip->input(2), otherOperand(*add, x)},
                   ctx)) {
      return false;
    }
    replaceWith(div, "HardSigmoid", x, {{"alpha", 1.0f / 6.0f}, {"beta", 0.5f}}, {div, clip, add},
                ctx);
    return true;
  }
};

class HardSwishPattern final : public rewrite::Pattern {
 public:
  HardSwishPattern() : Pattern("fuse-hardswish", "Mul", "", 2, 14) {}
  bool matchAndRewrite(ir::Node* mul, PatternContext& ctx) const override {
    for (int side = 0; side < 2; ++side) {
      ir::Node* hs = pass::singleUseProducer(mul->input(side), "HardSigmoid");
      if (hs == nullptr || hs->input(0) != mul->input(1 - side)) continue;
      if (!is(pass::attrFloat(*hs, "alpha", 0.2f), 1.0 / 6.0) ||
          !is(pass::attrFloat(*hs, "beta", 0.5f), 0.5)) {
        return ctx.fail("HardSigmoid parameters differ from HardSwish's");
      }
      replaceWith(mul, "HardSwish", hs->input(0), {}, {mul, hs}, ctx);
      return true;
    }
    return ctx.fail("not x * HardSigmoid(x)");
  }
};

class MishPattern final : public rewrite::Pattern {
 public:
  MishPattern() : Pattern("fuse-mish", "Mul", "", 1, 18) {}
  bool matchAndRewrite(ir::Node* mul, PatternContext& ctx) const override {
    for (int side = 0; side < 2; ++side) {
      ir::Node* tanh = pass::singleUseProducer(mul->input(side), "Tanh");
      ir::Node* sp = tanh ? pass::singleUseProducer(tanh->input(0), "Softplus") : nullptr;
      if (sp == nullptr || sp->input(0) != mul->input(1 - side)) continue;
      replaceWith(mul, "Mish", sp->input(0), {}, {mul, tanh, sp}, ctx);
      return true;
    }
    return ctx.fail("not x * tanh(softplus(x))");
  }
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
