// fuse-matmul-scale: a scaling by a scalar constant after a MatMul by a constant weight moves into
// the weight (weight absorption), through the shape-only ops between them.
//
//   Mul(V(MatMul(x, W)), c)          ==>  V(MatMul(x, W * c))         (Div by c: W / c)
//   Mul(V(Add(MatMul(x, W), b)), c)  ==>  V(Add(MatMul(x, W * c), b * c))
//
// V is zero or more Reshape / Transpose / Squeeze / Unsqueeze / Flatten: they move elements, and a
// scalar commutes with that. c is a one-element float constant (Mul operands in either order, a
// Div's divisor, not zero) whose rank is no more than its operand's (so the result keeps the
// chain's shape); W and b are float constants of c's type read by nothing else. Every
// intermediate has no other user. The new W and b are computed in double and rounded once;
// an element that would overflow or flush to zero leaves the chain alone.
//
// This reassociates: round(round(x W) * c) becomes round(x round(W c)), which may differ in the
// last place; an -O2 rewrite for that reason, as fuse-scale-chain. The case it was written for is
// PyTorch's exported scaled dot-product attention where fuse-attention does not apply (the
// exporter's IsNaN guard on the probabilities): Q and K^T are each multiplied by sqrt(scale)
// after the head split, two kernels over [B, H, S, D] per layer that the weights absorb.
#include <cmath>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

bool movesElementsOnly(const ir::Node& n) {
  const std::string& op = n.opType();
  return n.domain().empty() && (op == "Reshape" || op == "Transpose" || op == "Squeeze" ||
                                op == "Unsqueeze" || op == "Flatten");
}

/// `t` with every element multiplied (or divided) by `c`, rounded to t's type; nullopt when an
/// element is not finite or the result overflows or flushes to zero.
std::optional<ir::Tensor> scaled(const ir::Tensor& t, double c, bool divide) {
  auto values = pass::floatValues(t);
  if (!values) return std::nullopt;
  std::vector<double> out(values->size());
  for (size_t i = 0; i < out.size(); ++i) {
    double v = (*values)[i];
    if (!std::isfinite(v)) return std::nullopt;
    out[i] = divide ? v / c : v * c;
  }
  ir::Tensor result = pass::makeFloatTensor(t.dtype(), t.dims(), out);
  auto back = pass::floatValues(result);
  if (!back) return std::nullopt;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite((*back)[i]) || (((*back)[i] == 0.0) != (out[i] == 0.0))) {
      return std::nullopt;
    }
  }
  return result;
}

/// The side of `n`'s inputs that is a float constant read only by `n` (nullopt: neither).
std::optional<size_t> ownConstantSide(const ir::Node& n) {
  for (size_t side = 0; side < 2; ++side) {
    auto t = pass::constantTensor(n.input(side));
    if (t && pass::isFloatType(t->dtype()) && pass::onlyUsedBy(n.input(side), &n) &&
        !pass::constantTensor(n.input(1 - side))) {
      return side;
    }
  }
  return std::nullopt;
}

class MatMulScalePattern final : public rewrite::Pattern {
 public:
  explicit MatMulScalePattern(const char* op)
      : Pattern(std::string("fuse-matmul-scale-") + op, op) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    if (!node->domain().empty() || node->numInputs() != 2 || !node->input(0) || !node->input(1)) {
      return ctx.fail("not a binary op");
    }
    bool divide = node->opType() == "Div";
    // The scale: a one-element float constant (a Div's divisor).
    size_t scale_side = 1;
    auto c = pass::constantTensor(node->input(1));
    if (!divide && (!c || c->numElements().value_or(0) != 1)) {
      scale_side = 0;
      c = pass::constantTensor(node->input(0));
    }
    if (!c || c->numElements().value_or(0) != 1 || !pass::isFloatType(c->dtype())) {
      return ctx.fail("no scalar float constant scale");
    }
    auto cv = pass::floatValues(*c);
    if (!cv || !std::isfinite((*cv)[0]) || (divide && (*cv)[0] == 0.0)) {
      return ctx.fail("the scale is not finite, or a zero divisor");
    }
    ir::Value* x = node->input(1 - scale_side);
    auto rank = pass::rankOf(x);
    if (!rank || static_cast<int64_t>(c->dims().size()) > *rank) {
      return ctx.fail("the scale may broadcast its operand to a higher rank");
    }
    // Up through the shape-only ops, then an optional bias Add, to the MatMul.
    ir::Value* v = x;
    std::vector<ir::Value*> chain;  // x, up to the MatMul's output: each will hold c times itself
    while (v->producer() != nullptr && movesElementsOnly(*v->producer())) {
      if (!pass::hasSingleUse(v)) return ctx.fail("a moved value has other users");
      chain.push_back(v);
      v = v->producer()->input(0);
    }
    if (!pass::hasSingleUse(v) || v->producer() == nullptr) {
      return ctx.fail("not a single-use MatMul result");
    }
    ir::Node* add = nullptr;
    std::optional<size_t> bias_side;
    if (v->producer()->opType() == "Add" && v->producer()->domain().empty()) {
      add = v->producer();
      bias_side = ownConstantSide(*add);
      if (!bias_side) return ctx.fail("the Add is no bias Add by a constant of its own");
      chain.push_back(v);
      v = add->input(1 - *bias_side);
      if (!pass::hasSingleUse(v) || v->producer() == nullptr) {
        return ctx.fail("the biased value is not a single-use MatMul result");
      }
    }
    ir::Node* matmul = v->producer();
    if (matmul->opType() != "MatMul" || !matmul->domain().empty() || matmul->numInputs() != 2) {
      return ctx.fail("not fed by a MatMul");
    }
    auto w = pass::constantTensor(matmul->input(1));
    if (!w || w->dtype() != c->dtype() || !pass::onlyUsedBy(matmul->input(1), matmul)) {
      return ctx.fail("the MatMul's weight is no constant of the scale's type of its own");
    }
    auto new_w = scaled(*w, (*cv)[0], divide);
    if (!new_w) return ctx.fail("the scaled weight overflows, underflows or is not finite");
    std::optional<ir::Tensor> new_b;
    if (add != nullptr) {
      auto b = pass::constantTensor(add->input(*bias_side));
      if (b->dtype() != c->dtype()) return ctx.fail("the bias is of another type");
      new_b = scaled(*b, (*cv)[0], divide);
      if (!new_b) return ctx.fail("the scaled bias overflows, underflows or is not finite");
    }
    auto& rw = ctx.rewriter();
    ir::Graph& graph = *node->owningGraph();
    std::string base = matmul->input(1)->name().empty() ? "weight" : matmul->input(1)->name();
    rw.setInput(matmul, 1, rw.createInitializer(graph, base + "_scaled", std::move(*new_w)));
    if (add != nullptr) {
      std::string bias = add->input(*bias_side)->name();
      rw.setInput(add, *bias_side,
                  rw.createInitializer(graph, (bias.empty() ? "bias" : bias) + "_scaled",
                                       std::move(*new_b)));
    }
    // The chain's values are scaled now: none keeps the name of what it held; x takes the
    // Mul's, whose value it now is.
    chain.push_back(v);
    for (ir::Value* scaled_value : chain) rw.markChanged(scaled_value);
    rw.replaceNode(node, {x});
    return true;
  }
};

class FuseMatMulScalePass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-matmul-scale"; }
  std::string summary() const override {
    return "Mul/Div by a scalar constant after MatMul by a constant weight (through "
           "Reshape/Transpose/..., and a bias Add) into the weight (reassociates)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<MatMulScalePattern>("Mul"));
    list.push_back(std::make_unique<MatMulScalePattern>("Div"));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseMatMulScalePass() {
  return std::make_unique<FuseMatMulScalePass>();
}

}  // namespace onnxopt::passes
