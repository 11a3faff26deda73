// fuse-gelu: GELU written out becomes Gelu (opset 20).
//
//   y = 0.5 * x * (1 + Erf(x / sqrt(2)))  ==>  y = Gelu(x)
//
// Accepted arrangements (operands of Add/Mul in either order):
//   Erf(Div(x, sqrt(2))) or Erf(Mul(x, 1/sqrt(2)));  a = Add(erf, 1);  then
//   Mul(Mul(x, a), 0.5)  |  Mul(x, Mul(a, 0.5))  |  Mul(Mul(x, 0.5), a)
//   0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * Pow(x, 3))))  ==>  Gelu<approximate="tanh">(x)
//     with the same three arrangements of the final products.
// Constants are scalars within 1e-4 relative of their exact values, and the result must keep x's
// rank (a [1,1,1] "scalar" broadcasts x up). Every intermediate must have no other user. The
// patterns are rooted at the last Mul.
#include <cmath>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/pass/pattern_match.h"

namespace onnxopt::passes {
namespace {

using namespace pass::match;  // NOLINT: the matcher vocabulary reads as the rule
using rewrite::PatternContext;

constexpr double kTolerance = 1e-4;

/// 0.5 * x * (1 + f) in its three arrangements, rooted at the last Mul.
Matcher geluOf(const Matcher& f) {
  Matcher x = bind("x");
  Matcher a = singleUse(commutative("Add", f, scalar(1.0, kTolerance)));
  Matcher half = scalar(0.5, kTolerance);
  return oneOf({commutative("Mul", singleUse(commutative("Mul", x, a)), half),
                commutative("Mul", x, singleUse(commutative("Mul", a, half))),
                commutative("Mul", singleUse(commutative("Mul", x, half)), a)})
      .orFail("not a GELU arrangement");
}

/// Gelu(x) in place of the matched chain.
class GeluPattern final : public rewrite::Pattern {
 public:
  GeluPattern(const char* name, Matcher f, const char* approximate)
      : Pattern(name, "Mul", "", 2, 20), pattern_(geluOf(f)), approximate_(approximate) {}

  bool matchAndRewrite(ir::Node* last, PatternContext& ctx) const override {
    Match m = pattern_.match(last);
    if (!m) return ctx.fail("{}", m.why());
    ir::Value* x = m["x"];
    // A one-element constant of higher rank than x ([1,1,1] * x) grows the result's rank, which
    // Gelu(x) would lose: the result must be known to keep x's rank.
    auto rx = pass::rankOf(x);
    if (!rx || pass::rankOf(last->output(0)) != rx) {
      return ctx.fail("the constants may broadcast x to a higher rank");
    }
    auto& rw = ctx.rewriter();
    rw.setInsertionPoint(last);
    ir::Node* gelu = rw.createNode("Gelu", "", {x}, {last->output(0)->type()});
    if (approximate_ != "none") {
      ir::Attribute a;
      a.name = "approximate";
      a.kind = ir::Attribute::Kind::kString;
      a.s = approximate_;
      rw.setAttribute(gelu, std::move(a));
    }
    rw.replaceAllUsesWith(last->output(0), gelu->output(0));
    rw.eraseDeadNodes(m.nodes());
    return true;
  }

 private:
  const Matcher pattern_;
  const std::string approximate_;
};

/// Erf(x / sqrt(2)) or Erf(x * (1/sqrt(2))).
Matcher erfForm() {
  Matcher x = bind("x");
  Matcher scaled = oneOf({op("Div", x, scalar(std::sqrt(2.0), kTolerance)),
                          commutative("Mul", x, scalar(1.0 / std::sqrt(2.0), kTolerance))});
  return singleUse(op("Erf", singleUse(scaled).orFail("Erf input is not x / sqrt(2)")));
}

/// Tanh(sqrt(2/pi) * (x + 0.044715 * Pow(x, 3))).
Matcher tanhForm() {
  Matcher x = bind("x");
  Matcher cube = singleUse(commutative("Mul", singleUse(op("Pow", x, scalar(3.0, kTolerance))),
                                       scalar(0.044715, kTolerance)));
  Matcher inner = singleUse(commutative("Add", x, cube)).orFail("no x + 0.044715 * x^3");
  Matcher scaled = singleUse(commutative("Mul", inner, scalar(std::sqrt(2.0 / M_PI), kTolerance)));
  return singleUse(op("Tanh", scaled.orFail("Tanh input is not sqrt(2/pi) * (...)")));
}

class FuseGeluPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-gelu"; }
  std::string summary() const override {
    return "Fuse GELU (erf form, and the tanh approximation) into Gelu (opset 20+)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<GeluPattern>("fuse-gelu-erf", erfForm(), "none"));
    list.push_back(std::make_unique<GeluPattern>("fuse-gelu-tanh", tanhForm(), "tanh"));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseGeluPass() {
  return std::make_unique<FuseGeluPass>();
}

}  // namespace onnxopt::passes
