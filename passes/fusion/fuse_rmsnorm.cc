// fuse-rmsnorm: a decomposed root-mean-square normalization becomes RMSNormalization (opset 23).
//
//   ms = ReduceMean(Pow(x, 2) | Mul(x, x), axes = trailing k axes, keepdims)
//   sd = Sqrt(Add(ms, eps))
//   n  = Mul(x, Reciprocal(sd)) | Mul(x, Div(1, sd)) | Div(x, sd)
//   y  = [Mul](n, gamma)
//   ==>  y = RMSNormalization<axis = r - k, epsilon = eps>(x, gamma)
//
// This is Llama's RMSNorm as both PyTorch exporters write it (rsqrt as Div(1, Sqrt) or Reciprocal).
// Operands of Add/Mul may come in either order. gamma must be a constant broadcasting over the
// normalized dims (it is stored shaped like them); without gamma, a ones tensor is made. The
// normalized dims must be static; every intermediate must have no other user. Float, float16 and
// bfloat16 (the default stash type computes in float, as the decomposition's upcast does).
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using pass::otherOperand;
using rewrite::PatternContext;

class RmsNormPattern final : public rewrite::Pattern {
 public:
  // Rooted at the normalization (Mul or Div by the root mean square); the scale is read forward.
  explicit RmsNormPattern(const char* root)
      : Pattern(std::string("fuse-rmsnorm-") + root, root, "", 2, 23) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Value* x = nullptr;
    ir::Node* sqrt_node = nullptr;
    ir::Node* inv = nullptr;  // Reciprocal(sd) or Div(1, sd)
    if (node->opType() == "Div") {
      x = node->input(0);
      sqrt_node = pass::singleUseProducer(node->input(1), "Sqrt");
    } else {
      for (int side = 0; side < 2 && sqrt_node == nullptr; ++side) {
        ir::Node* r = pass::singleUseProducer(node->input(side), "Reciprocal");
        if (r == nullptr) {
          r = pass::singleUseProducer(node->input(side), "Div");
          if (r != nullptr && pass::scalarConstant(r->input(0)) != std::optional<double>(1.0))
            r = nullptr;
        }
        if (r == nullptr) continue;
        ir::Node* s = pass::singleUseProducer(r->input(r->opType() == "Div" ? 1 : 0), "Sqrt");
        if (s == nullptr) continue;
        inv = r;
        sqrt_node = s;
        x = node->input(1 - side);
      }
    }
    if (sqrt_node == nullptr || x == nullptr) return ctx.fail("no 1/Sqrt factor");
    ir::Node* add_eps = pass::singleUseProducer(sqrt_node->input(0), "Add");
    if (add_eps == nullptr) return ctx.fail("no epsilon Add");
    ir::Node* mean = nullptr;
    std::optional<double> eps;
    for (int side = 0; side < 2 && mean == nullptr; ++side) {
      mean = pass::singleUseProducer(add_eps->input(side), "ReduceMean");
      if (mean != nullptr) eps = pass::scalarConstant(add_eps->input(1 - side));
    }
    if (mean == nullptr || !eps) return ctx.fail("no mean-square ReduceMean plus constant epsilon");
    ir::Node* square = pass::singleUseProducer(mean->input(0), "Pow");
    if (square != nullptr) {
      if (square->input(0) != x || pass::scalarConstant(square->input(1)) != 2.0)
        return ctx.fail("Pow is not x^2 of the normalized x");
    } else {
      square = pass::singleUseProducer(mean->input(0), "Mul");
      if (square == nullptr || square->input(0) != x || square->input(1) != x)
        return ctx.fail("no x*x of the normalized x");
    }
    auto rank = pass::rankOf(x);
    auto elem = pass::elemTypeOf(x);
    if (!rank || !elem) return ctx.fail("x's rank or type unknown");
    if (*elem != DataType::kFloat && *elem != DataType::kFloat16 && *elem != DataType::kBfloat16) {
      return ctx.fail("element type not float, float16 or bfloat16");
    }
    auto axes = pass::reduceAxes(*mean, ctx.opset(), *rank);
    if (!axes) return ctx.fail("reduction axes not constant");
    for (size_t i = 0; i < axes->size(); ++i) {
      if ((*axes)[i] != *rank - static_cast<int64_t>(axes->size()) + static_cast<int64_t>(i)) {
        return ctx.fail("axes are not the trailing axes");
      }
    }
    int64_t axis = *rank - static_cast<int64_t>(axes->size());
    auto norm_dims = pass::staticDimsFrom(x, axis);
    if (!norm_dims) return ctx.fail("normalized dims not static");

    // Optional scale: Mul by a constant broadcasting over the normalized dims only.
    ir::Value* out = node->output(0);
    ir::Node* scale_mul = nullptr;
    std::optional<ir::Tensor> gamma;
    if (pass::hasSingleUse(out)) {
      ir::Node* next = out->uses()[0].user;
      if (next->opType() == "Mul" && next->domain().empty()) {
        ir::Value* c = otherOperand(*next, out);
        auto t = c != nullptr ? pass::constantTensor(c) : std::nullopt;
        if (t && t->dtype() == *elem && t->dims().size() <= axes->size()) {
          gamma = std::move(t);
          scale_mul = next;
          out = next->output(0);
        }
      }
    }
    auto& rw = ctx.rewriter();
    ir::Value* scale = nullptr;
    if (gamma && gamma->dims() == *norm_dims) {
      scale = otherOperand(*scale_mul, node->output(0));
    } else {
      auto full = pass::broadcastFloatConstant(gamma ? &*gamma : nullptr, 1.0, *elem, *norm_dims);
      if (!full) return ctx.fail("scale does not broadcast to the normalized dims");
      scale = rw.createInitializer(*node->owningGraph(), "rms_scale", std::move(*full));
    }
    rw.setInsertionPoint(scale_mul != nullptr ? scale_mul : node);
    ir::Node* rms = rw.createNode("RMSNormalization", "", {x, scale}, 1);
    rw.setAttribute(rms, pass::intAttr("axis", axis));
    rw.setAttribute(rms, pass::floatAttr("epsilon", static_cast<float>(*eps)));
    rw.setType(rms->output(0), out->type());
    rw.replaceAllUsesWith(out, rms->output(0));
    // Erase the decomposed chain, users first.
    rw.eraseDeadNodes({scale_mul, node, inv, sqrt_node, add_eps, mean, square});
    return true;
  }
};

class FuseRmsNormPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-rmsnorm"; }
  std::string summary() const override {
    return "Fuse decomposed RMS normalization into RMSNormalization (opset 23+)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<RmsNormPattern>("Mul"));
    list.push_back(std::make_unique<RmsNormPattern>("Div"));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseRmsNormPass() {
  return std::make_unique<FuseRmsNormPass>();
}

}  // namespace onnxopt::passes
