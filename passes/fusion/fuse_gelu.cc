// fuse-gelu: the erf form of GELU becomes Gelu (opset 20).
//
//   y = 0.5 * x * (1 + Erf(x / sqrt(2)))  ==>  y = Gelu(x)
//
// Accepted arrangements (operands of Add/Mul in either order):
//   Erf(Div(x, sqrt(2))) or Erf(Mul(x, 1/sqrt(2)));  a = Add(erf, 1);  then
//   Mul(Mul(x, a), 0.5)  |  Mul(x, Mul(a, 0.5))  |  Mul(Mul(x, 0.5), a)
// Constants are scalars within 1e-4 relative of their exact values. Every intermediate must have no
// other user. The tanh approximation is not matched yet.
#include <cmath>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

bool near(std::optional<double> v, double want) {
  return v && std::fabs(*v - want) <= 1e-4 * std::fabs(want);
}

std::optional<double> scalarOf(const ir::Value* v) {
  auto t = pass::constantTensor(v);
  if (!t || t->numElements().value_or(0) != 1) return std::nullopt;
  return pass::elementAsDouble(*t, 0);
}

/// The single user of `v` when it is `op` of the default domain; `other` gets its other operand.
ir::Node* onlyUser(const ir::Value* v, const char* op, ir::Value** other) {
  if (!pass::hasSingleUse(v)) return nullptr;
  ir::Node* u = v->uses()[0].user;
  if (u->opType() != op || !u->domain().empty() || u->numInputs() != 2) return nullptr;
  *other = u->input(0) == v ? u->input(1) : u->input(0);
  return u;
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
    if (pre->opType() == "Div" && near(scalarOf(pre->input(1)), std::sqrt(2.0))) {
      x = pre->input(0);
    } else if (pre->opType() == "Mul") {
      for (int side = 0; side < 2 && x == nullptr; ++side) {
        if (near(scalarOf(pre->input(side)), 1.0 / std::sqrt(2.0))) x = pre->input(1 - side);
      }
    }
    if (x == nullptr) return ctx.fail("Erf input is not x / sqrt(2)");
    ir::Value* one = nullptr;
    ir::Node* add = onlyUser(erf->output(0), "Add", &one);
    if (add == nullptr || !near(scalarOf(one), 1.0)) return ctx.fail("no 1 + erf");
    ir::Value* other = nullptr;
    ir::Node* m1 = onlyUser(add->output(0), "Mul", &other);
    if (m1 == nullptr) return ctx.fail("1 + erf is not multiplied");
    ir::Node* last = nullptr;
    std::vector<ir::Node*> extra;  // nodes besides pre, erf, add, m1 to remove
    if (other == x) {
      // Mul(Mul(x, a), 0.5)
      ir::Value* half = nullptr;
      last = onlyUser(m1->output(0), "Mul", &half);
      if (last == nullptr || !near(scalarOf(half), 0.5)) return ctx.fail("no final * 0.5");
    } else if (near(scalarOf(other), 0.5)) {
      // Mul(x, Mul(a, 0.5))
      ir::Value* xx = nullptr;
      last = onlyUser(m1->output(0), "Mul", &xx);
      if (last == nullptr || xx != x) return ctx.fail("no final * x");
    } else if (other->producer() != nullptr && other->producer()->opType() == "Mul" &&
               pass::hasSingleUse(other)) {
      // Mul(Mul(x, 0.5), a)
      ir::Node* h = other->producer();
      bool ok = (h->input(0) == x && near(scalarOf(h->input(1)), 0.5)) ||
                (h->input(1) == x && near(scalarOf(h->input(0)), 0.5));
      if (!ok) return ctx.fail("not x * 0.5");
      last = m1;
      extra.push_back(h);
    } else {
      return ctx.fail("not a GELU arrangement");
    }
    auto& rw = ctx.rewriter();
    rw.setInsertionPoint(last);
    ir::Node* gelu = rw.createNode("Gelu", "", {x}, 1);
    gelu->output(0)->setType(last->output(0)->type());
    rw.replaceAllUsesWith(last->output(0), gelu->output(0));
    std::vector<ir::Node*> chain{last};
    if (last != m1) chain.push_back(m1);
    chain.push_back(add);
    chain.push_back(erf);
    chain.push_back(pre);
    chain.insert(chain.end(), extra.begin(), extra.end());
    for (ir::Node* n : chain) {
      if (!n->output(0)->hasUses()) rw.eraseNode(n);
    }
    return true;
  }
};

class FuseGeluPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-gelu"; }
  std::string summary() const override { return "Fuse the erf form of GELU into Gelu (opset 20+)"; }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<GeluErfPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseGeluPass() {
  return std::make_unique<FuseGeluPass>();
}

}  // namespace onnxopt::passes
