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
//
//   y = Cast<T>(RMSNormalization(Cast<float>(x: T), ones))  [Mul(y, gamma: T)]
//   ==>  y = RMSNormalization(x, gamma | ones: T)                              T = float16, bfloat16
//
// is torch's float16 decomposition after the rule above (Hugging Face's RMSNorm upcasts, normalizes,
// casts back, then scales in float16): exact, as RMSNormalization computes in its stash type
// (float) and scales in T (norm::matchCastNormalization).
#include "normalization.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/pass/pattern_match.h"

namespace onnxopt::passes {
namespace {

using namespace pass::match;  // NOLINT: the matcher vocabulary reads as the rule
using rewrite::PatternContext;

class RmsNormPattern final : public rewrite::Pattern {
 public:
  // Rooted at the normalization (Mul or Div by the root mean square); the scale is read forward.
  explicit RmsNormPattern(const char* root)
      : Pattern(std::string("fuse-rmsnorm-") + root, root, "", 2, 23), pattern_(rule(root)) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    Match m = pattern_.match(node);
    if (!m) return ctx.fail("{}", m.why());
    auto n = norm::matchTail(node, m["x"], *m.scalar("eps"), {m.node("mean")}, m.nodes(),
                             /*with_bias=*/false, ctx);
    if (!n) return false;
    norm::rewrite("RMSNormalization", *n, {"rms_scale"}, ctx);
    return true;
  }

 private:
  static Matcher rule(const std::string& root) {
    // sd = Sqrt(Add(ReduceMean(Pow(x, 2) | Mul(x, x)), eps))
    Matcher sd = norm::sqrtOfMeanPlusEps(norm::squareOf("x", "the normalized x"),
                                         "no mean-square ReduceMean plus constant epsilon");
    // n = Div(x, sd) | Mul(x, Reciprocal(sd) | Div(1, sd))
    if (root == "Div") return op("Div", bind("x"), sd).orFail("no 1/Sqrt factor");
    Matcher inverse = oneOf({op("Reciprocal", sd), op("Div", scalar(1.0), sd)});
    return commutative("Mul", bind("x"), singleUse(inverse)).orFail("no 1/Sqrt factor");
  }

  const Matcher pattern_;
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
    list.push_back(std::make_unique<norm::CastNormPattern>(
        "fuse-rmsnorm-cast", "RMSNormalization", /*with_bias=*/false,
        std::vector<const char*>{"rms_scale"}, 23));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseRmsNormPass() {
  return std::make_unique<FuseRmsNormPass>();
}

}  // namespace onnxopt::passes
