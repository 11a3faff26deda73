// PassManager's skipping: a pass that changed nothing is not run again until something changed
// since (a graph change by any pass, or a type that shape inference refined); a pass run again
// after any change, a different model, or a type refinement runs for real. inferShapesOnce, the
// shape inference passes share, follows the same rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/builder.h"
#include "onnxopt/pass/pass_manager.h"

namespace onnxopt {
namespace {

constexpr char kModel[] = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) { y = Neg(x) }
)";

/// Counts its runs; reports a change on the runs listed in `changes_on` (1-based), and on the
/// runs listed in `refines_on` adds one type refinement without reporting a change, as
/// infer-shapes does.
class ScriptedPass final : public pass::Pass {
 public:
  ScriptedPass(std::string id, std::vector<int> changes_on, std::vector<int> refines_on, int* runs)
      : id_(std::move(id)),
        changes_on_(std::move(changes_on)),
        refines_on_(std::move(refines_on)),
        runs_(runs) {}
  std::string id() const override { return id_; }
  std::string summary() const override { return "a scripted test pass"; }
  StatusOr<bool> run(ir::Model& /*model*/, pass::PassContext& ctx) override {
    int run = ++*runs_;
    if (std::count(refines_on_.begin(), refines_on_.end(), run)) ++ctx.type_refinements;
    return std::count(changes_on_.begin(), changes_on_.end(), run) > 0;
  }

 private:
  std::string id_;
  std::vector<int> changes_on_, refines_on_;
  int* runs_;
};

pass::PipelineEntry entry(std::unique_ptr<pass::Pass> p) {
  pass::PipelineEntry e;
  e.pass = std::move(p);
  return e;
}

/// fixpoint(a, b), with a and b scripted.
pass::PassManager fixpoint(std::unique_ptr<pass::Pass> a, std::unique_ptr<pass::Pass> b) {
  pass::PipelineEntry group;
  group.group.push_back(entry(std::move(a)));
  group.group.push_back(entry(std::move(b)));
  std::vector<pass::PipelineEntry> pipeline;
  pipeline.push_back(std::move(group));
  return pass::PassManager(std::move(pipeline), pass::PassContext{}, pass::Instrumentation{});
}

std::unique_ptr<ir::Model> model() {
  auto m = io::parseModelText(kModel);
  EXPECT_TRUE(m.isOk()) << m.status().message();
  return std::move(*m);
}

TEST(SkipClean, APassAfterTheLastChangeIsSkippedInTheNextRound) {
  // Round 1: a changes, b changes nothing. Round 2: a changes nothing, so nothing changed since
  // b's clean run: b is skipped, and the fixpoint ends.
  int a_runs = 0, b_runs = 0;
  auto pm = fixpoint(
      std::make_unique<ScriptedPass>("a", std::vector<int>{1}, std::vector<int>{}, &a_runs),
      std::make_unique<ScriptedPass>("b", std::vector<int>{}, std::vector<int>{}, &b_runs));
  auto m = model();
  auto changed = pm.run(*m);
  ASSERT_TRUE(changed.isOk());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(a_runs, 2);
  EXPECT_EQ(b_runs, 1);
  EXPECT_EQ(pm.records()[1].skipped_runs, 1);
}

TEST(SkipClean, AChangeBeforeItMakesThePassRunAgain) {
  // Round 1: a clean, b changes. Round 2: a runs again (b changed since), changes; b runs and
  // is clean. Round 3: a runs (it changed last time), clean; nothing changed since b's clean
  // run, so b is skipped and the fixpoint ends.
  int a_runs = 0, b_runs = 0;
  auto pm = fixpoint(
      std::make_unique<ScriptedPass>("a", std::vector<int>{2}, std::vector<int>{}, &a_runs),
      std::make_unique<ScriptedPass>("b", std::vector<int>{1}, std::vector<int>{}, &b_runs));
  auto m = model();
  ASSERT_TRUE(pm.run(*m).isOk());
  EXPECT_EQ(a_runs, 3);
  EXPECT_EQ(b_runs, 2);
}

TEST(SkipClean, ATypeRefinementCountsAsAChange) {
  // Round 1: a changes, b clean. Round 2: a changes nothing but refines a type: b must run again
  // (its rewrites may depend on the refined type), and is clean. Round 2 changed nothing, so the
  // fixpoint ends.
  int a_runs = 0, b_runs = 0;
  auto pm = fixpoint(
      std::make_unique<ScriptedPass>("a", std::vector<int>{1}, std::vector<int>{2}, &a_runs),
      std::make_unique<ScriptedPass>("b", std::vector<int>{}, std::vector<int>{}, &b_runs));
  auto m = model();
  ASSERT_TRUE(pm.run(*m).isOk());
  EXPECT_EQ(a_runs, 2);
  EXPECT_EQ(b_runs, 2);
  EXPECT_EQ(pm.records()[1].skipped_runs, 0);
}

TEST(SkipClean, ANewRunStartsWithNothingSkipped) {
  // The same manager on a second model: b's clean run on the first says nothing of the second.
  int a_runs = 0, b_runs = 0;
  auto pm = fixpoint(
      std::make_unique<ScriptedPass>("a", std::vector<int>{1}, std::vector<int>{}, &a_runs),
      std::make_unique<ScriptedPass>("b", std::vector<int>{}, std::vector<int>{}, &b_runs));
  auto first = model();
  ASSERT_TRUE(pm.run(*first).isOk());
  int b_before = b_runs;
  auto second = model();
  ASSERT_TRUE(pm.run(*second).isOk());
  EXPECT_GE(b_runs, b_before + 1);
}

// inferShapesOnce: infer-shapes then fold-constants with nothing changed between infer once. The
// second call is served from the first (a type cleared behind its back stays cleared); a graph
// change or a refined type since makes it infer again; without a pass manager (no graph_changes)
// nothing is reused.
TEST(InferShapesOnce, ReusesTheLastInferenceWhileNothingChanged) {
  auto m = model();
  ir::Value* y = m->graph->outputs().front();
  pass::PassContext ctx;
  ctx.graph_changes = 0;
  ASSERT_TRUE(pass::inferShapesOnce(*m, ctx).isOk());
  ASSERT_TRUE(ctx.inferred.at.has_value());
  ir::Builder::setType(y, ir::Type());
  ASSERT_TRUE(pass::inferShapesOnce(*m, ctx).isOk());
  EXPECT_FALSE(y->type().isKnown());  // served from the first inference

  ctx.graph_changes = 1;  // a pass changed the graph since
  ASSERT_TRUE(pass::inferShapesOnce(*m, ctx).isOk());
  EXPECT_TRUE(y->type().isKnown());

  ir::Builder::setType(y, ir::Type());
  ++ctx.type_refinements;  // a type was refined since
  ASSERT_TRUE(pass::inferShapesOnce(*m, ctx).isOk());
  EXPECT_TRUE(y->type().isKnown());
}

TEST(InferShapesOnce, InfersEveryTimeWithoutAPassManager) {
  auto m = model();
  ir::Value* y = m->graph->outputs().front();
  pass::PassContext ctx;  // graph_changes unset: a pass run alone
  ASSERT_TRUE(pass::inferShapesOnce(*m, ctx).isOk());
  EXPECT_FALSE(ctx.inferred.at.has_value());
  ir::Builder::setType(y, ir::Type());
  ASSERT_TRUE(pass::inferShapesOnce(*m, ctx).isOk());
  EXPECT_TRUE(y->type().isKnown());
}

}  // namespace
}  // namespace onnxopt
