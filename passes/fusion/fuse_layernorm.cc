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
//
// The fused node is computed in x's type, and Scale and B are of x's type too (LayerNormalization
// binds X, Scale, B and Y to one T; the verifier holds every node to that). torch's float16
// decomposition normalizes Cast<float>(x) and casts back before the float16 Mul and Add: the tail
// stops at that Cast, so the fused node is float with a float ones Scale. Then
//
//   y = Cast<T>(LayerNormalization(Cast<float>(x: T), ones, [zeros]))  [Mul(y, gamma: T)]
//       [Add(., beta: T)]
//   ==>  y = LayerNormalization(x, gamma | ones, beta | zeros)          T = float16, bfloat16
//
// takes the casts and the T affine in: exact, as LayerNormalization computes in its stash type
// (float, so the variance is not rounded to T) and applies Scale and B in T
// (norm::matchCastNormalization).
#include "normalization.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/pass/pattern_match.h"

namespace onnxopt::passes {
namespace {

using namespace pass::match;  // NOLINT: the matcher vocabulary reads as the rule
using rewrite::PatternContext;

class LayerNormPattern final : public rewrite::Pattern {
 public:
  // Rooted at the normalization (Div, or Mul by a Reciprocal); the optional affine tail is read
  // forward from there.
  explicit LayerNormPattern(const char* root)
      : Pattern(std::string("fuse-layernorm-") + root, root, "", 2, 17), pattern_(rule(root)) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    auto n = matchAt(node, ctx);
    if (!n) return false;
    norm::rewrite("LayerNormalization", *n, {"ln_scale", "ln_bias"}, ctx);
    return true;
  }

 private:
  static Matcher rule(const std::string& root) {
    // d = Sub(x, ReduceMean(x)); sd = Sqrt(Add(ReduceMean(Pow(d, 2) | Mul(d, d)), eps))
    Matcher d = bind("d", op("Sub", bind("x"),
                             bind("mu", singleUse(op("ReduceMean", bind("x"), anyOrAbsent())))
                                 .orFail("Sub does not center x by its mean")));
    Matcher sd = norm::sqrtOfMeanPlusEps(norm::squareOf("d", "the centered x"),
                                         "no variance ReduceMean plus constant epsilon");
    // n = Div(d, sd) | Mul(d, Reciprocal(sd))
    if (root == "Div") return op("Div", d, sd.orFail("no Sqrt denominator"));
    return commutative("Mul", d, singleUse(op("Reciprocal", sd)).orFail("no Sqrt denominator"));
  }

  std::optional<norm::Normalization> matchAt(ir::Node* node, PatternContext& ctx) const {
    Match m = pattern_.match(node);
    if (!m) return ctx.fail("{}", m.why()), std::nullopt;
    // d is read exactly by the square and the normalization.
    ir::Value* d = m["d"];
    const ir::Node* square = m.node("mean")->input(0)->producer();
    if (d->isGraphOutput() || d->uses().size() != (square->opType() == "Mul" ? 3u : 2u)) {
      return ctx.fail("the centered value has other users"), std::nullopt;
    }
    return norm::matchTail(node, m["x"], *m.scalar("eps"), {m.node("mu"), m.node("mean")},
                           m.nodes(), /*with_bias=*/true, ctx);
  }

  const Matcher pattern_;
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
    list.push_back(std::make_unique<norm::CastNormPattern>(
        "fuse-layernorm-cast", "LayerNormalization", /*with_bias=*/true,
        std::vector<const char*>{"ln_scale", "ln_bias"}, 17));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseLayerNormPass() {
  return std::make_unique<FuseLayerNormPass>();
}

}  // namespace onnxopt::passes
