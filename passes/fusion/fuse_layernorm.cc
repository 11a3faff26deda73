// fuse-layernorm: a decomposed layer normalization becomes LayerNormalization (opset 17+).
//
//   m  = ReduceMean(x, axes = trailing k axes, keepdims)
//   d  = Sub(x, m)
//   v  = ReduceMean(Pow(d, 2) | Mul(d, d), same axes)
//   n  = Div(d, Sqrt(Add(v, eps)))  |  Mul(d, Reciprocal(Sqrt(Add(v, eps))))
//   y  = [Add]([Mul](n, gamma), beta)
//   ==>  y = LayerNormalization<axis = r - k, epsilon = eps>(x, gamma, beta)
//
// Operands of Add/Mul may come in either order. gamma and beta must be constants shaped like the
// normalized (trailing) dims, or broadcast to them; without gamma, a ones tensor is made (static
// normalized dims needed). Every intermediate must have no other user. Float, float16 and bfloat16.
#include <algorithm>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

using pass::otherOperand;
using pass::reduceAxes;

class LayerNormPattern final : public rewrite::Pattern {
 public:
  // Rooted at the normalization (Div, or Mul by a Reciprocal); the optional affine tail is read
  // forward from there.
  explicit LayerNormPattern(const char* root)
      : Pattern(std::string("fuse-layernorm-") + root, root, "", 2, 17) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    // n = Div(d, sd) or Mul(d, Reciprocal(sd)) / Mul(Reciprocal(sd), d)
    ir::Value* d = nullptr;
    ir::Node* sqrt_node = nullptr;
    ir::Node* recip = nullptr;
    if (node->opType() == "Div") {
      d = node->input(0);
      sqrt_node = pass::singleUseProducer(node->input(1), "Sqrt");
    } else {
      for (int side = 0; side < 2 && sqrt_node == nullptr; ++side) {
        recip = pass::singleUseProducer(node->input(side), "Reciprocal");
        if (recip != nullptr) {
          d = node->input(1 - side);
          sqrt_node = pass::singleUseProducer(recip->input(0), "Sqrt");
        }
      }
    }
    if (sqrt_node == nullptr || d == nullptr) return ctx.fail("no Sqrt denominator");
    ir::Node* sub = d->producer();
    if (sub == nullptr || sub->opType() != "Sub" || !sub->domain().empty())
      return ctx.fail("no Sub");
    ir::Node* add_eps = pass::singleUseProducer(sqrt_node->input(0), "Add");
    if (add_eps == nullptr) return ctx.fail("no epsilon Add");
    ir::Node* var_mean = nullptr;
    std::optional<double> eps;
    for (int side = 0; side < 2 && var_mean == nullptr; ++side) {
      var_mean = pass::singleUseProducer(add_eps->input(side), "ReduceMean");
      if (var_mean != nullptr) eps = pass::scalarConstant(add_eps->input(1 - side));
    }
    if (var_mean == nullptr || !eps)
      return ctx.fail("no variance ReduceMean plus constant epsilon");
    ir::Node* square = pass::singleUseProducer(var_mean->input(0), "Pow");
    if (square != nullptr) {
      auto e = pass::scalarConstant(square->input(1));
      if (square->input(0) != d || !e || *e != 2.0) return ctx.fail("Pow is not d^2");
    } else {
      square = pass::singleUseProducer(var_mean->input(0), "Mul");
      if (square == nullptr || square->input(0) != d || square->input(1) != d)
        return ctx.fail("no d*d");
    }
    // d is read exactly by the square and the normalization.
    size_t d_uses = d->uses().size();
    if (d->isGraphOutput() || d_uses != (square->opType() == "Mul" ? 3u : 2u)) {
      return ctx.fail("the centered value has other users");
    }
    ir::Value* x = sub->input(0);
    ir::Node* mean = pass::singleUseProducer(sub->input(1), "ReduceMean");
    if (mean == nullptr || mean->input(0) != x)
      return ctx.fail("Sub does not center x by its mean");
    auto rank = pass::rankOf(x);
    auto elem = pass::elemTypeOf(x);
    if (!rank || !elem) return ctx.fail("x's rank or type unknown");
    if (*elem != DataType::kFloat && *elem != DataType::kFloat16 && *elem != DataType::kBfloat16) {
      return ctx.fail("element type not supported by LayerNormalization's default stash type");
    }
    auto a1 = reduceAxes(*mean, ctx.opset(), *rank);
    auto a2 = reduceAxes(*var_mean, ctx.opset(), *rank);
    if (!a1 || !a2 || *a1 != *a2) return ctx.fail("reductions differ or axes not constant");
    for (size_t i = 0; i < a1->size(); ++i) {
      if ((*a1)[i] != *rank - static_cast<int64_t>(a1->size()) + static_cast<int64_t>(i)) {
        return ctx.fail("axes are not the trailing axes");
      }
    }
    int64_t axis = *rank - static_cast<int64_t>(a1->size());
    // Only the normalized (trailing) dims need to be known: batch and sequence may be symbolic.
    std::optional<std::vector<int64_t>> norm_dims = pass::staticDimsFrom(x, axis);

    // Optional affine tail: Mul by gamma, then Add beta (both constants broadcasting over the
    // normalized dims only).
    ir::Value* out = node->output(0);
    ir::Node* last = node;
    ir::Value* gamma = nullptr;
    ir::Value* beta = nullptr;
    auto affineOperand = [&](ir::Node* n, ir::Value* from) -> ir::Value* {
      ir::Value* c = otherOperand(*n, from);
      auto t = c ? pass::constantTensor(c) : std::nullopt;
      if (!t || t->dtype() != *elem || t->dims().size() > a1->size()) return nullptr;
      return c;
    };
    if (pass::hasSingleUse(out)) {
      ir::Node* next = out->uses()[0].user;
      if (next->opType() == "Mul" && next->domain().empty()) {
        if ((gamma = affineOperand(next, out)) != nullptr) {
          last = next;
          out = next->output(0);
        }
      }
      if (pass::hasSingleUse(out)) {
        ir::Node* after = out->uses()[0].user;
        if (after->opType() == "Add" && after->domain().empty()) {
          if ((beta = affineOperand(after, out)) != nullptr) {
            last = after;
            out = after->output(0);
          }
        }
      }
    }
    auto& rw = ctx.rewriter();
    // LayerNormalization wants Scale (and B) shaped like the normalized dims.
    auto expandTo = [&](ir::Value* v, double fill, const char* base) -> ir::Value* {
      if (!norm_dims) return nullptr;
      std::optional<ir::Tensor> t = v != nullptr ? pass::constantTensor(v) : std::nullopt;
      if (t && t->dims() == *norm_dims) return v;
      auto full = pass::broadcastFloatConstant(t ? &*t : nullptr, fill, *elem, *norm_dims);
      if (!full) return nullptr;
      return rw.createInitializer(*node->owningGraph(), base, std::move(*full));
    };
    ir::Value* scale = expandTo(gamma, 1.0, "ln_scale");
    if (scale == nullptr) return ctx.fail("cannot shape Scale like the normalized dims");
    ir::Value* bias = beta != nullptr ? expandTo(beta, 0.0, "ln_bias") : nullptr;
    if (beta != nullptr && bias == nullptr)
      return ctx.fail("cannot shape B like the normalized dims");
    rw.setInsertionPoint(last);
    std::vector<ir::Value*> inputs{x, scale};
    if (bias != nullptr) inputs.push_back(bias);
    ir::Node* ln = rw.createNode("LayerNormalization", "", inputs, 1);
    rw.setAttribute(ln, pass::intAttr("axis", axis));
    rw.setAttribute(ln, pass::floatAttr("epsilon", static_cast<float>(*eps)));
    rw.setType(ln->output(0), out->type());
    rw.replaceAllUsesWith(out, ln->output(0));
    // Erase the decomposed chain, users first, so it cannot match again.
    std::vector<ir::Node*> chain;
    if (last != node) chain.push_back(last);
    if (gamma != nullptr && beta != nullptr) {
      // last = beta Add, its other input is the gamma Mul's output
      ir::Value* mul_out = otherOperand(*last, beta);
      chain.push_back(mul_out->producer());
    }
    chain.push_back(node);
    if (recip != nullptr) chain.push_back(recip);
    chain.push_back(sqrt_node);
    chain.push_back(add_eps);
    chain.push_back(var_mean);
    chain.push_back(square);
    chain.push_back(sub);
    chain.push_back(mean);
    rw.eraseDeadNodes(chain);
    return true;
  }
};

class FuseLayerNormPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-layernorm"; }
  std::string summary() const override {
    return "Fuse decomposed layer normalization into LayerNormalization (opset 17+)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<LayerNormPattern>("Div"));
    list.push_back(std::make_unique<LayerNormPattern>("Mul"));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseLayerNormPass() {
  return std::make_unique<FuseLayerNormPass>();
}

}  // namespace onnxopt::passes
