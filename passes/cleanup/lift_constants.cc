// lift-constants: Constant nodes become initializers of their graph.
//
//   %c = Constant<value=T>()          ==>   initializer %c = T
//   %c = Constant<value_floats=[..]>  ==>   initializer %c = float[n]{..}
//     (likewise value_float, value_int(s), value_string(s))
//
// One representation of constant data lets later patterns and CSE treat all constants alike.
// sparse_value Constants and Constants in function bodies (whose values may be attribute
// references) stay as they are.
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

class LiftConstantPattern final : public rewrite::Pattern {
 public:
  LiftConstantPattern() : Pattern("lift-constant", "Constant") {}

  bool matchAndRewrite(ir::Node* node, rewrite::PatternContext& ctx) const override {
    ir::Graph* g = node->owningGraph();
    for (const ir::Graph* top = g; top != nullptr; top = top->parentGraph()) {
      if (top->parentGraph() == nullptr && top != ctx.model().graph.get()) {
        return ctx.fail("inside a function body");
      }
    }
    auto tensor = pass::constantNodeTensor(*node);
    if (!tensor) return ctx.fail("not a plain Constant (sparse or attribute reference)");
    ir::Value* out = node->output(0);
    if (out == nullptr) return ctx.fail("no output");
    if (out->isGraphOutput() && out->owningGraph()->parentNode() != nullptr) {
      return ctx.fail("a subgraph output must stay a node output");
    }
    // The initializer takes the name over: directly, or by the rewriter's renaming when the value
    // is a model output.
    ir::Value* init = rewrite::isNamedOutput(out)
                          ? ctx.rewriter().createInitializer(*g, out->name(), std::move(*tensor))
                          : ctx.rewriter().createInitializerNamedAs(out, std::move(*tensor));
    ctx.rewriter().replaceNode(node, {init});
    return true;
  }
};

class LiftConstantsPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "lift-constants"; }
  std::string summary() const override { return "Turn Constant nodes into initializers"; }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<LiftConstantPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createLiftConstantsPass() {
  return std::make_unique<LiftConstantsPass>();
}

}  // namespace onnxopt::passes
