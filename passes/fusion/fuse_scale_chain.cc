// fuse-scale-chain: two scalings by constants become one.
//
//   Mul(Mul(x, a), b)  ->  Mul(x, a * b)          Div(Mul(x, a), b)  ->  Mul(x, a / b)
//   Mul(Div(x, a), b)  ->  Mul(x, b / a)          Div(Div(x, a), b)  ->  Div(x, a * b)
//
// a and b are float constants (Mul operands in either order; a Div's constant is its divisor); the
// inner result must have no other user. Broadcasting is associative, so x's result shape is the
// same; the combined constant takes the broadcast shape of a and b, which must not hold more
// elements than the larger of the two (scalars, or ones like [C,1,1] against [C,1,1]).
//
// This reassociates: round(round(x * a) * b) becomes round(x * round(a * b)), which may differ in
// the last place (and an intermediate overflow or underflow of x * a no longer happens). It is an
// -O2 rewrite for that reason; -O1 keeps results bit-exact. The constant is computed in double and
// rounded once to its element type; constants with a non-finite, zero divisor, or a combined value
// that overflows or underflows in the element type are left alone.
#include <cmath>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/support/half.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// One scaling step: `x` op `c`, with c a float constant (the divisor for Div).
struct Scaling {
  ir::Value* x = nullptr;
  ir::Tensor c;
  bool divide = false;
};

std::optional<Scaling> scalingOf(const ir::Node& n) {
  if (!n.domain().empty() || n.numInputs() != 2 || !n.input(0) || !n.input(1)) return std::nullopt;
  bool divide = n.opType() == "Div";
  if (!divide && n.opType() != "Mul") return std::nullopt;
  for (size_t side = 1;; --side) {
    auto t = pass::constantTensor(n.input(side));
    if (t && pass::isFloatType(t->dtype()) && !pass::constantTensor(n.input(1 - side))) {
      return Scaling{n.input(1 - side), std::move(*t), divide};
    }
    if (side == 0 || divide) return std::nullopt;  // a Div's dividend is not a scale
  }
}

/// numpy's broadcast of two static shapes; nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcastDims(const std::vector<int64_t>& a,
                                                  const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t da = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    int64_t db = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[k] = da == 1 ? db : da;
  }
  return out;
}

bool representable(double v, ir::DataType dtype) {
  if (!std::isfinite(v)) return false;
  // The stored value must not overflow or flush to zero in the element type.
  double stored = v;
  if (dtype == ir::DataType::kFloat) {
    stored = static_cast<float>(v);
  } else if (dtype == ir::DataType::kFloat16 || dtype == ir::DataType::kBfloat16) {
    stored = fromLowPrecision(toLowPrecision(static_cast<float>(v), dtype, false), dtype);
  }
  return std::isfinite(stored) && (stored != 0.0) == (v != 0.0);
}

/// The constant's values broadcast to `dims` (which it broadcasts to), in double.
std::optional<std::vector<double>> valuesAt(const ir::Tensor& t, const std::vector<int64_t>& dims) {
  if (t.dims() == dims) return pass::floatValues(t);
  auto wide = pass::broadcastFloatConstant(&t, 0.0, t.dtype(), dims);
  return wide ? pass::floatValues(*wide) : std::nullopt;
}

class ScaleChainPattern final : public rewrite::Pattern {
 public:
  explicit ScaleChainPattern(const char* op) : Pattern(std::string("fuse-scale-chain-") + op, op) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    auto outer = scalingOf(*node);
    if (!outer) return ctx.fail("no float constant scale operand");
    ir::Node* inner_node = outer->x->producer();
    if (inner_node == nullptr || !pass::hasSingleUse(outer->x)) {
      return ctx.fail("scaled value is not a single-use node output");
    }
    auto inner = scalingOf(*inner_node);
    if (!inner) return ctx.fail("not fed by a Mul or Div by a float constant");
    const ir::Tensor& a = inner->c;
    const ir::Tensor& b = outer->c;
    if (a.dtype() != b.dtype()) return ctx.fail("constants of different types");
    auto dims = broadcastDims(a.dims(), b.dims());
    auto na = a.numElements(), nb = b.numElements();
    if (!dims || !na || !nb || *na == 0 || *nb == 0) {
      return ctx.fail("constants empty or not broadcastable");
    }
    const int64_t limit = std::max(*na, *nb);
    int64_t combined_count = 1;
    for (int64_t d : *dims) {
      if (combined_count > limit / d) {  // d >= 1: neither constant is empty
        return ctx.fail("the combined constant would be larger than both");
      }
      combined_count *= d;
    }
    auto va = valuesAt(a, *dims);
    auto vb = valuesAt(b, *dims);
    if (!va || !vb) return ctx.fail("constants not readable");
    // x*a*b = x*(a*b);  x*a/b = x*(a/b);  x/a*b = x*(b/a);  x/a/b = x/(a*b).
    bool divide = inner->divide && outer->divide;
    std::vector<double> combined(va->size());
    for (size_t i = 0; i < combined.size(); ++i) {
      double x = (*va)[i], y = (*vb)[i];
      if (!std::isfinite(x) || !std::isfinite(y)) return ctx.fail("non-finite constant");
      if ((inner->divide && x == 0.0) || (outer->divide && y == 0.0)) {
        return ctx.fail("division by zero");
      }
      if (inner->divide == outer->divide) {
        combined[i] = x * y;
      } else {
        combined[i] = inner->divide ? y / x : x / y;
      }
      if (!representable(combined[i], a.dtype())) {
        return ctx.fail("combined constant overflows or underflows");
      }
    }
    auto& rw = ctx.rewriter();
    ir::Value* c = rw.createInitializer(*node->owningGraph(),
                                        node->name().empty() ? "scale" : node->name() + "_scale",
                                        pass::makeFloatTensor(a.dtype(), *dims, combined));
    ir::Node* fused = rw.createNodeLike(divide ? "Div" : "Mul", "", {inner->x, c}, node);
    rw.replaceNode(node, {fused->output(0)});
    rw.eraseNode(inner_node);
    return true;
  }
};

class FuseScaleChainPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-scale-chain"; }
  std::string summary() const override {
    return "Mul/Div by a constant after Mul/Div by a constant to one Mul or Div (reassociates)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<ScaleChainPattern>("Mul"));
    list.push_back(std::make_unique<ScaleChainPattern>("Div"));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseScaleChainPass() {
  return std::make_unique<FuseScaleChainPass>();
}

}  // namespace onnxopt::passes
