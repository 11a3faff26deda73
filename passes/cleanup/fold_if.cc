// fold-constant-if: an If whose condition is constant becomes the branch it takes.
//
//   %y = If(%c = true) { then: %a = F(%x) -> %a ; else: ... }   ==>   %y = F(%x)
//
// The taken branch's nodes are moved (recreated) before the If, in order; its initializers become
// initializers of the enclosing graph. Values keep their names where those are free in the model,
// else get a fresh one. The If's outputs are replaced by the branch outputs.
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

class FoldConstantIfPattern final : public rewrite::Pattern {
 public:
  FoldConstantIfPattern() : Pattern("fold-constant-if", "If") {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    auto cond = pass::constantTensor(node->input(0));
    if (!cond || cond->numElements().value_or(0) != 1 || cond->byteSize() < 1) {
      return ctx.fail("condition is not a constant scalar");
    }
    bool take_then = pass::elementAsDouble(*cond, 0).value_or(0) != 0;
    const ir::Attribute* branch_attr =
        node->findAttribute(take_then ? "then_branch" : "else_branch");
    if (branch_attr == nullptr || branch_attr->graphs.size() != 1) return ctx.fail("no branch");
    ir::Graph& branch = *branch_attr->graphs[0];
    if (branch.numOutputs() != node->numOutputs()) return ctx.fail("branch arity differs");
    // A model output fed straight by an outer value gets an Identity from the rewriter: still
    // one node instead of the If and its branch.
    auto& rw = ctx.rewriter();
    std::vector<ir::Value*> results = rw.inlineBranch(node, branch);
    rw.replaceNode(node, results);
    return true;
  }
};

class FoldConstantIfPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fold-constant-if"; }
  std::string summary() const override {
    return "Replace an If with a constant condition by its taken branch";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<FoldConstantIfPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFoldConstantIfPass() {
  return std::make_unique<FoldConstantIfPass>();
}

}  // namespace onnxopt::passes
