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
// rank (a [1,1,1] "scalar" broadcasts x up). Every intermediate must have no other user.
#include <cmath>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

bool near(std::optional<double> v, double want) {
  return v && std::fabs(*v - want) <= 1e-4 * std::fabs(want);
}

/// The single user of `v` when it is `op` of the default domain; `other` gets its other operand.
ir::Node* onlyUser(const ir::Value* v, const char* op, ir::Value** other) {
  if (!pass::hasSingleUse(v)) return nullptr;
  ir::Node* u = v->uses()[0].user;
  if (u->opType() != op || !u->domain().empty() || u->numInputs() != 2) return nullptr;
  *other = u->input(0) == v ? u->input(1) : u->input(0);
  return u;
}

/// From f = Erf(...) or Tanh(...) computed from x: matches 0.5 * x * (1 + f) in its three
/// arrangements, replaces the result by Gelu(x) and erases the chain (`pre` are the nodes computing
/// f's input, users first).
bool fuseTail(ir::Node* f, ir::Value* x, const std::vector<ir::Node*>& pre, const char* approximate,
              PatternContext& ctx) {
  ir::Value* one = nullptr;
  ir::Node* add = onlyUser(f->output(0), "Add", &one);
  if (add == nullptr || !near(pass::scalarConstant(one), 1.0))
    return ctx.fail("no 1 + {}", f->opType());
  ir::Value* other = nullptr;
  ir::Node* m1 = onlyUser(add->output(0), "Mul", &other);
  if (m1 == nullptr) return ctx.fail("1 + {} is not multiplied", f->opType());
  ir::Node* last = nullptr;
  ir::Node* half_node = nullptr;  // Mul(x, 0.5) in the third arrangement
  if (other == x) {
    // Mul(Mul(x, a), 0.5)
    ir::Value* half = nullptr;
    last = onlyUser(m1->output(0), "Mul", &half);
    if (last == nullptr || !near(pass::scalarConstant(half), 0.5))
      return ctx.fail("no final * 0.5");
  } else if (near(pass::scalarConstant(other), 0.5)) {
    // Mul(x, Mul(a, 0.5))
    ir::Value* xx = nullptr;
    last = onlyUser(m1->output(0), "Mul", &xx);
    if (last == nullptr || xx != x) return ctx.fail("no final * x");
  } else if (other->producer() != nullptr && other->producer()->opType() == "Mul" &&
             pass::hasSingleUse(other)) {
    // Mul(Mul(x, 0.5), a)
    half_node = other->producer();
    bool ok = (half_node->input(0) == x && near(pass::scalarConstant(half_node->input(1)), 0.5)) ||
              (half_node->input(1) == x && near(pass::scalarConstant(half_node->input(0)), 0.5));
    if (!ok) return ctx.fail("not x * 0.5");
    last = m1;
  } else {
    return ctx.fail("not a GELU arrangement");
  }
  // A one-element constant of higher rank than x ([1,1,1] * x) grows the result's rank, which
  // Gelu(x) would lose: the result must be known to keep x's rank.
  auto rx = pass::rankOf(x);
  if (!rx || pass::rankOf(last->output(0)) != rx) {
    return ctx.fail("the constants may broadcast x to a higher rank");
  }
  auto& rw = ctx.rewriter();
  rw.setInsertionPoint(last);
  ir::Node* gelu = rw.createNode("Gelu", "", {x}, 1);
  if (std::string(approximate) != "none") {
    ir::Attribute a;
    a.name = "approximate";
    a.kind = ir::Attribute::Kind::kString;
    a.s = approximate;
    rw.setAttribute(gelu, std::move(a));
  }
  rw.setType(gelu->output(0), last->output(0)->type());
  rw.replaceAllUsesWith(last->output(0), gelu->output(0));
  std::vector<ir::Node*> chain{last};
  if (last != m1) chain.push_back(m1);
  chain.push_back(add);
  chain.push_back(f);
  chain.insert(chain.end(), pre.begin(), pre.end());
  if (half_node != nullptr) chain.push_back(half_node);
  for (ir::Node* n : chain) {
    if (!n->output(0)->hasUses()) rw.eraseNode(n);
  }
  return true;
}

class GeluErfPattern final : public rewrite::Pattern {
 public:
  GeluErfPattern() : Pattern("fuse-gelu-erf", "Erf", "", 2, 20) {}

  bool matchAndRewrite(ir::Node* erf, PatternContext& ctx) const override {
    ir::Value* scaled = erf->input(0);
    ir::Node* pre = scaled != nullptr ? scaled->producer() : nullptr;
    if (pre == nullptr || !pass::hasSingleUse(scaled) || !pre->domain().empty()) {
      return ctx.fail("Erf input is not a single-use scaling");
    }
    ir::Value* x = nullptr;
    if (pre->opType() == "Div" && near(pass::scalarConstant(pre->input(1)), std::sqrt(2.0))) {
      x = pre->input(0);
    } else if (pre->opType() == "Mul") {
      for (int side = 0; side < 2 && x == nullptr; ++side) {
        if (near(pass::scalarConstant(pre->input(side)), 1.0 / std::sqrt(2.0)))
          x = pre->input(1 - side);
      }
    }
    if (x == nullptr) return ctx.fail("Erf input is not x / sqrt(2)");
    return fuseTail(erf, x, {pre}, "none", ctx);
  }
};

/// The operand of a single-use Mul `v` that is not the scalar constant `c` (nullptr if none).
ir::Value* scaledBy(const ir::Value* v, double c, ir::Node** mul) {
  *mul = v != nullptr ? v->producer() : nullptr;
  if (*mul == nullptr || (*mul)->opType() != "Mul" || !(*mul)->domain().empty() ||
      !pass::hasSingleUse(v)) {
    return nullptr;
  }
  for (int side = 0; side < 2; ++side) {
    if (near(pass::scalarConstant((*mul)->input(side)), c)) return (*mul)->input(1 - side);
  }
  return nullptr;
}

class GeluTanhPattern final : public rewrite::Pattern {
 public:
  GeluTanhPattern() : Pattern("fuse-gelu-tanh", "Tanh", "", 2, 20) {}

  // Tanh(sqrt(2/pi) * (x + 0.044715 * Pow(x, 3)))
  bool matchAndRewrite(ir::Node* tanh, PatternContext& ctx) const override {
    ir::Node* outer = nullptr;
    ir::Value* inner = scaledBy(tanh->input(0), std::sqrt(2.0 / M_PI), &outer);
    if (inner == nullptr) return ctx.fail("Tanh input is not sqrt(2/pi) * (...)");
    ir::Node* sum = inner->producer();
    if (sum == nullptr || sum->opType() != "Add" || !pass::hasSingleUse(inner))
      return ctx.fail("no x + ...");
    for (int side = 0; side < 2; ++side) {
      ir::Value* x = sum->input(side);
      ir::Node* cube_mul = nullptr;
      ir::Value* cube = scaledBy(sum->input(1 - side), 0.044715, &cube_mul);
      if (cube == nullptr || cube->producer() == nullptr || !pass::hasSingleUse(cube)) continue;
      ir::Node* pow = cube->producer();
      if (pow->opType() != "Pow" || pow->input(0) != x ||
          !near(pass::scalarConstant(pow->input(1)), 3.0))
        continue;
      return fuseTail(tanh, x, {outer, sum, cube_mul, pow}, "tanh", ctx);
    }
    return ctx.fail("no x + 0.044715 * x^3");
  }
};

class FuseGeluPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-gelu"; }
  std::string summary() const override {
    return "Fuse GELU (erf form, and the tanh approximation) into Gelu (opset 20+)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<GeluErfPattern>());
    list.push_back(std::make_unique<GeluTanhPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseGeluPass() {
  return std::make_unique<FuseGeluPass>();
}

}  // namespace onnxopt::passes
