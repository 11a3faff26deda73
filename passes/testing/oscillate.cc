// test-oscillate: two patterns that undo each other, to prove the driver's cap (tests only).
//
//   test.A(x) -> test.B(x)        test.B(x) -> test.A(x)
//
// The driver must stop after --max-rounds with a warning naming both, or fail under
// --verify-convergence.
#include "onnxopt/pass/pass.h"
#include "onnxopt/passes/registry.h"
#include "testing/test_passes.h"

namespace onnxopt::passes {
namespace {

class RenameOpPattern final : public rewrite::Pattern {
 public:
  RenameOpPattern(const char* from, const char* to)
      : Pattern(std::string("test-") + from + "-to-" + to, from, "test"), to_(to) {}
  bool matchAndRewrite(ir::Node* node, rewrite::PatternContext& ctx) const override {
    ctx.rewriter().setOpType(node, to_, node->domain());
    return true;
  }

 private:
  std::string to_;
};

class OscillatePass final : public pass::PatternPass {
 public:
  std::string id() const override { return "test-oscillate"; }
  std::string summary() const override {
    return "(test only) test.A <-> test.B forever, to exercise the fixed-point cap";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<RenameOpPattern>("A", "B"));
    list.push_back(std::make_unique<RenameOpPattern>("B", "A"));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createOscillatePass() {
  return std::make_unique<OscillatePass>();
}

void registerTestPasses() {
  registerPass(&createOscillatePass);
}

}  // namespace onnxopt::passes
