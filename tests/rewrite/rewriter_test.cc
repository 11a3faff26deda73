// The Rewriter (output names, listener notifications), the greedy driver (fixed point, cap) and the
// pipeline parser.
#include "onnxopt/rewrite/rewriter.h"

#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/builder.h"
#include "onnxopt/ir/verifier.h"
#include "onnxopt/pass/pass_manager.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/rewrite/pattern.h"

namespace onnxopt::rewrite {
namespace {

std::unique_ptr<ir::Model> parse(const char* text) {
  auto model = io::parseModelText(text);
  EXPECT_TRUE(model.isOk()) << model.status().message();
  return std::move(model).value();
}

constexpr char kChain[] = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) { t = Neg(x) y = Identity(t) }
)";

TEST(RewriterTest, ReplacingAModelOutputKeepsItsName) {
  auto model = parse(kChain);
  ir::Graph& g = *model->graph;
  ir::Node* neg = g.firstNode();
  ir::Node* id = neg->next();
  Rewriter rw;
  ASSERT_TRUE(rw.canReplaceWithoutIdentity(id->output(), neg->output()));
  rw.replaceNode(id, {neg->output()});
  EXPECT_EQ(g.output(0), neg->output());
  EXPECT_EQ(neg->output()->name(), "y");  // Neg's output took the output's name
  EXPECT_TRUE(ir::verifyModel(*model).isOk());
}

TEST(RewriterTest, GraphInputCannotTakeAnOutputNameSoAnIdentityIsInserted) {
  auto model = parse(kChain);
  ir::Graph& g = *model->graph;
  ir::Value* x = g.inputs()[0];
  ir::Node* id = g.lastNode();
  Rewriter rw;
  EXPECT_FALSE(rw.canReplaceWithoutIdentity(id->output(), x));
  rw.replaceAllUsesWith(id->output(), x);
  ir::Value* out = g.output(0);
  EXPECT_EQ(out->name(), "y");
  ASSERT_NE(out->producer(), nullptr);
  EXPECT_EQ(out->producer()->opType(), "Identity");
  EXPECT_EQ(out->producer()->input(0), x);
  EXPECT_TRUE(ir::verifyModel(*model).isOk());
}

TEST(RewriterTest, SubgraphOutputsMustBeProducedInTheirGraph) {
  auto model = parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x, bool c) => (float[2] y) {
      y = If(c) <
        then_branch = g1 () => (float[2] a) { t = Neg(x) a = Identity(t) },
        else_branch = g2 () => (float[2] b) { b = Neg(x) }
      >
    })");
  ir::Graph* then_g = model->graph->firstNode()->findAttribute("then_branch")->graphs[0].get();
  ir::Value* a = then_g->output(0);
  ir::Value* t = then_g->firstNode()->output();
  ir::Value* x = model->graph->inputs()[0];
  EXPECT_FALSE(isNamedOutput(a));  // positional: its name is free to change
  Rewriter rw;
  // An outer value cannot be a branch output (onnx.checker); a node output of the branch can.
  EXPECT_FALSE(rw.canReplaceWithoutIdentity(a, x));
  EXPECT_TRUE(rw.canReplaceWithoutIdentity(a, t));
  rw.replaceAllUsesWith(a, t);
  EXPECT_EQ(then_g->output(0), t);
  EXPECT_EQ(t->name(), "t");
  EXPECT_TRUE(t->type().isKnown());  // takes the output's declared type
  EXPECT_TRUE(ir::verifyModel(*model).isOk());
}

TEST(RewriterTest, OneValueIsNeverTwoOutputsOfAGraph) {
  auto model = parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y, float[2] z) { y = Neg(x) z = Identity(y) })");
  ir::Graph& g = *model->graph;
  ir::Node* id = g.lastNode();
  Rewriter rw;
  EXPECT_FALSE(rw.canReplaceWithoutIdentity(id->output(), g.output(0)));
}

constexpr char kConvChain[] = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] z) <float[2] w = {1.0, 2.0}> { c = Mul(x, w) y = Neg(c) z = Abs(y) }
)";

// A node changed in place (as a Conv absorbing a BatchNormalization) now computes the value it
// replaces: its output takes that value's name, and its own, which meant what it computed before,
// goes.
TEST(RewriterTest, AChangedNodeTakesTheReplacedValuesName) {
  auto model = parse(kConvChain);
  ir::Graph& g = *model->graph;
  ir::Node* mul = g.firstNode();
  ir::Node* neg = mul->next();
  Rewriter rw;
  rw.setInput(mul, 1, rw.createInitializer(g, "w_neg", ir::Tensor(DataType::kFloat, {2})));
  rw.replaceNode(neg, {mul->output()});
  EXPECT_EQ(mul->output()->name(), "y");
  EXPECT_EQ(g.lastNode()->input(0), mul->output());
  EXPECT_EQ(uniqueValueName(g, "c"), "c");  // freed
  EXPECT_TRUE(ir::verifyModel(*model).isOk());
}

// A new node's output (unnamed, or named by the pass) takes the name of the value it replaces.
TEST(RewriterTest, ACreatedNodeTakesTheReplacedValuesName) {
  auto model = parse(kConvChain);
  ir::Graph& g = *model->graph;
  ir::Node* neg = g.firstNode()->next();
  Rewriter rw;
  rw.setInsertionPoint(neg);
  ir::Node* fused = rw.createNode("Neg", "", {g.inputs()[0]}, 1);
  rw.setName(fused->output(), "fresh");
  rw.replaceNode(neg, {fused->output()});
  EXPECT_EQ(fused->output()->name(), "y");
  EXPECT_EQ(uniqueValueName(g, "fresh"), "fresh");
  // Replacing an unnamed value leaves a created node's fresh name as it is.
  rw.setInsertionPoint(g.lastNode());
  ir::Node* unnamed = rw.createNode("Relu", "", {fused->output()}, 1);
  ir::Node* again = rw.createNode("Relu", "", {fused->output()}, 1);
  rw.setName(again->output(), "fresh");
  rw.replaceAllUsesWith(unnamed->output(), again->output());
  EXPECT_EQ(again->output()->name(), "fresh");
}

// A value left as it was (an untouched node's output, a graph input, an initializer) keeps its
// name where it stands for another (eliminate-noop, cse): both names meant the same value.
TEST(RewriterTest, AnUntouchedValueKeepsItsName) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] z) <float[2] w = {1.0, 2.0}> {
  c = Mul(x, w) y = Identity(c) i = Identity(x) j = Identity(w) s = Sum(y, i, j) z = Abs(s)
}
)");
  ir::Graph& g = *model->graph;
  ir::Node* mul = g.firstNode();
  ir::Node* id_y = mul->next();
  ir::Node* id_x = id_y->next();
  ir::Node* id_w = id_x->next();
  Rewriter rw;
  rw.replaceNode(id_y, {mul->output()});
  rw.replaceNode(id_x, {g.inputs()[0]});
  rw.replaceNode(id_w, {g.initializers()[0]});
  EXPECT_EQ(mul->output()->name(), "c");
  EXPECT_EQ(g.inputs()[0]->name(), "x");
  EXPECT_EQ(g.initializers()[0]->name(), "w");
  EXPECT_TRUE(ir::verifyModel(*model).isOk());
}

// An unnamed value (an earlier pass's) that stands for a named one takes its name: no name is
// lost where one can be kept.
TEST(RewriterTest, AnUnnamedValueTakesTheReplacedValuesName) {
  auto model = parse(kConvChain);
  ir::Node* mul = model->graph->firstNode();
  Rewriter earlier;
  earlier.setName(mul->output(), "");  // as a pass that created it left it
  Rewriter rw;
  rw.replaceNode(mul->next(), {mul->output()});
  EXPECT_EQ(mul->output()->name(), "y");
  EXPECT_TRUE(ir::verifyModel(*model).isOk());
}

// markChanged: a value a rewrite changed in place loses its name, and one that then replaces
// another takes that one's name; a model output keeps its name whatever replaces it.
TEST(RewriterTest, MarkChangedFreesTheNameAndAReplacementTakesOne) {
  auto model = parse(kConvChain);
  ir::Graph& g = *model->graph;
  ir::Node* mul = g.firstNode();
  ir::Node* neg = mul->next();
  ir::Node* abs = neg->next();
  Rewriter rw;
  rw.markChanged(mul->output());
  EXPECT_EQ(mul->output()->name(), "");
  rw.markChanged(neg->output());
  rw.replaceNode(abs, {neg->output()});
  EXPECT_EQ(neg->output()->name(), "z");  // the model output's name, as before
  EXPECT_EQ(g.output(0), neg->output());
  EXPECT_TRUE(ir::verifyModel(*model).isOk());
}

TEST(RewriterDeathTest, MarkChangedRefusesAModelOutput) {
  auto model = parse(kConvChain);
  Rewriter rw;
  EXPECT_DEATH(rw.markChanged(model->graph->lastNode()->output()), "model output 'z'");
}

class RecordingListener : public RewriteListener {
 public:
  void nodeCreated(ir::Node* n) override { created.push_back(n->opType()); }
  void nodeErased(ir::Node* n) override { erased.push_back(n->opType()); }
  void nodeModified(ir::Node* n) override { modified.push_back(n->opType()); }
  std::vector<std::string> created, erased, modified;
};

/// The Rewriter's fresh name for `base`, checked against uniqueValueName (which collects every
/// name): a stale index would hand out a name in use.
std::string agreedName(Rewriter& rw, const ir::Graph& g, const std::string& base) {
  std::string name = rw.uniqueName(g, base);
  EXPECT_EQ(name, uniqueValueName(g, base)) << base;
  return name;
}

// The Rewriter's name index gives what uniqueValueName (which collects every name) gives, after
// its own renames, creations and erasures, and after changes made around it (ir::Builder, a
// subgraph): a stale index would hand out a name in use.
TEST(RewriterTest, UniqueNameAgreesWithCollectingEveryName) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c) => (float[2] y) {
  t = Neg(x)
  u = Abs(t)
  y = If(c) <then_branch = g1 () => (float[2] a) { a = Identity(u) },
             else_branch = g2 () => (float[2] b) { b = Relu(u) }>
}
)");
  ir::Graph& g = *model->graph;
  Rewriter rw;
  auto agree = [&](const std::string& base) { return agreedName(rw, g, base); };
  EXPECT_EQ(agree("t"), "t_1");
  EXPECT_EQ(agree("a"), "a_1");  // a subgraph's value counts
  EXPECT_EQ(agree("w"), "w");
  ir::Value* w = rw.createInitializer(g, "w", ir::Tensor(DataType::kFloat, {1}));
  EXPECT_EQ(w->name(), "w");
  EXPECT_EQ(agree("w"), "w_1");
  EXPECT_EQ(rw.createInitializer(g, "w", ir::Tensor(DataType::kFloat, {2}))->name(), "w_1");
  EXPECT_EQ(agree("w"), "w_2");
  // A rename frees the old name and takes the new one.
  ir::Node* neg = g.firstNode();
  rw.setName(neg->output(), "");
  EXPECT_EQ(agree("t"), "t");
  rw.setName(neg->output(), "t");
  EXPECT_EQ(agree("t"), "t_1");
  // An erased node's outputs free their names.
  ir::Node* abs = neg->next();
  ir::Node* if_node = abs->next();
  ir::Builder::replaceAllUsesWith(abs->output(), neg->output());
  rw.eraseNode(abs);
  EXPECT_EQ(agree("u"), "u");
  // A change made without this Rewriter is seen too.
  ir::Builder::addInput(g, "u", ir::Type());
  EXPECT_EQ(agree("u"), "u_1");
  Rewriter other;
  other.setName(neg->output(), "v");
  EXPECT_EQ(agree("t"), "t");
  EXPECT_EQ(agree("v"), "v_1");
  // Erasing a node with subgraphs frees their names.
  ir::Builder::replaceAllUsesWith(if_node->output(), neg->output());
  rw.eraseNode(if_node);
  EXPECT_EQ(agree("a"), "a");
  // An initializer that takes a value's name over: the value loses it, the index follows.
  rw.setInsertionPoint(neg);
  ir::Node* sq = rw.createNode("Sqrt", "", {g.inputs()[0]});
  rw.setName(sq->output(), "s");
  EXPECT_EQ(agree("s"), "s_1");
  ir::Value* c = rw.createInitializerNamedAs(sq->output(), ir::Tensor(DataType::kFloat, {2}));
  EXPECT_EQ(c->name(), "s");
  EXPECT_EQ(c->initializer()->name(), "s");
  EXPECT_EQ(sq->output()->name(), "");
  EXPECT_EQ(agree("s"), "s_1");
  EXPECT_EQ(rw.createInitializer(g, "s", ir::Tensor(DataType::kFloat, {1}))->name(), "s_1");
}

TEST(RewriterTest, NotifiesTheListener) {
  auto model = parse(kChain);
  ir::Graph& g = *model->graph;
  RecordingListener listener;
  Rewriter rw(&listener);
  ir::Node* neg = g.firstNode();
  ir::Node* id = g.lastNode();
  rw.setInsertionPoint(id);
  ir::Node* abs = rw.createNode("Abs", "", {g.inputs()[0]});
  rw.setInput(id, 0, abs->output());  // Neg is now unused
  rw.eraseNode(neg);
  EXPECT_EQ(listener.created, std::vector<std::string>{"Abs"});
  EXPECT_EQ(listener.erased, std::vector<std::string>{"Neg"});
  EXPECT_FALSE(listener.modified.empty());
  EXPECT_TRUE(rw.changed());
}

TEST(RewriterTest, CreateNodeGivesResultTypesAndCreateNodeLikeTakesTheName) {
  auto model = parse(kChain);
  ir::Graph& g = *model->graph;
  ir::Node* id = g.lastNode();
  Rewriter rw;
  rw.setInsertionPoint(id);
  ir::Type t = g.inputs()[0]->type();
  ir::Node* abs = rw.createNode("Abs", "", {g.inputs()[0]}, std::vector<ir::Type>{t, t});
  ASSERT_EQ(abs->numOutputs(), 2u);
  EXPECT_EQ(abs->output(1)->type(), t);
  ir::Node* like = rw.createNodeLike("Neg", "", {g.inputs()[0]}, id);
  EXPECT_EQ(like->name(), id->name());
  EXPECT_EQ(like->output()->type(), id->output()->type());
  EXPECT_TRUE(like->output()->type().isKnown());
}

TEST(RewriterTest, SetTypeRevisitsTheUsersAndSetOpTypeTheNode) {
  auto model = parse(kChain);
  ir::Graph& g = *model->graph;
  ir::Node* neg = g.firstNode();
  RecordingListener listener;
  Rewriter rw(&listener);
  ir::Type t = neg->output()->type();
  t.shape = std::nullopt;
  rw.setType(neg->output(), t);
  EXPECT_FALSE(neg->output()->type().shape.has_value());
  EXPECT_EQ(listener.modified, std::vector<std::string>{"Identity"});  // the user, not Neg
  rw.setOpType(neg, "Abs", "");
  EXPECT_EQ(neg->opType(), "Abs");
  EXPECT_EQ(listener.modified.back(), "Abs");
  rw.setName(neg, "renamed");
  EXPECT_EQ(neg->name(), "renamed");
  EXPECT_TRUE(rw.changed());
}

// Subgraphs moved within the model by setAttribute (as inlining a branch that holds an If does)
// keep their names counted; a subgraph from outside adds its names; a replaced one frees them.
TEST(RewriterTest, UniqueNameFollowsSubgraphsMovedBetweenNodes) {
  auto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c, bool d) => (float[2] y) {
  y = If(c) <then_branch = g1 () => (float[2] a) {
                a = If(d) <then_branch = g3 () => (float[2] deep) { deep = Neg(x) },
                           else_branch = g4 () => (float[2] deeper) { deeper = Abs(x) }>
              },
             else_branch = g2 () => (float[2] b) { b = Relu(x) }>
}
)");
  ir::Graph& g = *model->graph;
  Rewriter rw;
  auto agree = [&](const std::string& base) { return agreedName(rw, g, base); };
  EXPECT_EQ(agree("deep"), "deep_1");
  ir::Node* if_node = g.lastNode();
  ir::Graph& then_g = *if_node->findAttribute("then_branch")->graphs[0];
  std::vector<ir::Value*> results = rw.inlineBranch(if_node, then_g);
  rw.replaceNode(if_node, results);
  EXPECT_EQ(agree("deep"), "deep_1");  // moved with the inner If, still in the model
  EXPECT_EQ(agree("b"), "b");          // the erased else branch freed it
  // A subgraph from another model adds its names; replacing it frees them again.
  auto other = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
h (bool e) => (float[1] z) {
  z = If(e) <then_branch = h1 () => (float[1] far) { far = Constant<value = float[1] {1}>() },
             else_branch = h2 () => (float[1] farther) { farther = Constant<value = float[1] {2}>() }>
}
)");
  ir::Node* inner = g.lastNode();
  ASSERT_EQ(inner->opType(), "If");
  ir::Attribute moved;
  for (ir::Attribute& a : ir::Builder::mutableAttributes(other->graph->lastNode())) {
    if (a.name == "then_branch") moved = std::move(a);
  }
  ASSERT_EQ(moved.graphs.size(), 1u);
  rw.setAttribute(inner, std::move(moved));
  EXPECT_EQ(agree("far"), "far_1");
  EXPECT_EQ(agree("deep"), "deep");  // the replaced then_branch took it along
}

TEST(RewriterTest, InlineBranchMovesNodesAndInitializersBeforeTheNode) {
  auto model = parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) {
      c = Constant<value = bool {1}>()
      y = If(c) <
        then_branch = g1 () => (float[2] a) { w = Constant<value = float[2] {1, 2}>() t = Add(x, w) a = Neg(t) },
        else_branch = g2 () => (float[2] b) { b = Neg(x) }
      >
    })");
  ir::Graph& g = *model->graph;
  ir::Node* if_node = g.lastNode();
  ir::Graph& then_g = *if_node->findAttribute("then_branch")->graphs[0];
  RecordingListener listener;
  Rewriter rw(&listener);
  std::vector<ir::Value*> results = rw.inlineBranch(if_node, then_g);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_NE(results[0]->producer(), nullptr);
  EXPECT_EQ(results[0]->owningGraph(), &g);
  EXPECT_EQ(results[0]->producer()->opType(), "Neg");
  EXPECT_EQ(results[0]->name(), "a");  // free in the model, so kept
  EXPECT_EQ(listener.created, (std::vector<std::string>{"Constant", "Add", "Neg"}));
  rw.replaceNode(if_node, results);
  EXPECT_EQ(g.output(0), results[0]);
  EXPECT_EQ(g.output(0)->name(), "y");
  std::vector<std::string> ops;
  for (ir::Node* n : g) ops.push_back(n->opType());
  EXPECT_EQ(ops, (std::vector<std::string>{"Constant", "Constant", "Add", "Neg"}));
  EXPECT_TRUE(ir::verifyModel(*model).isOk());
}

/// Rewrites Neg(Neg(x)) -> x: a pattern the driver must apply repeatedly to reach the fixed point.
class DoubleNegation final : public Pattern {
 public:
  DoubleNegation() : Pattern("double-negation", "Neg") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Value* in = node->input(0);
    if (in->producer() == nullptr || in->producer()->opType() != "Neg") {
      return ctx.fail("input is not a Neg");
    }
    ir::Value* x = in->producer()->input(0);
    if (!ctx.rewriter().canReplaceWithoutIdentity(node->output(), x)) return ctx.fail("name");
    ctx.rewriter().replaceNode(node, {x});
    return true;
  }
};

TEST(DriverTest, ReachesTheFixedPoint) {
  auto model = parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) { a = Neg(x) b = Neg(a) c = Neg(b) d = Neg(c) y = Relu(d) })");
  DoubleNegation pattern;
  std::ostringstream debug;
  DriverConfig config;
  config.debug = &debug;
  auto result = applyPatternsGreedily(*model, {&pattern}, config);
  ASSERT_TRUE(result.isOk()) << result.status().message();
  EXPECT_TRUE(result->converged);
  EXPECT_TRUE(result->changed);
  EXPECT_EQ(result->applied["double-negation"], 2);
  // Dead Negs are left for DCE; Relu now reads x.
  EXPECT_EQ(model->graph->lastNode()->input(0), model->graph->inputs()[0]);
  EXPECT_NE(debug.str().find("no match: input is not a Neg"), std::string::npos);
  EXPECT_TRUE(ir::verifyModel(*model).isOk());
}

/// Flips the op type between two names: with one node of each, both patterns apply every round.
class Flip final : public Pattern {
 public:
  Flip(const char* from, const char* to)
      : Pattern(std::string(from) + "-to-" + to, from, "t"), to_(to) {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ctx.rewriter().setOpType(node, to_, node->domain());
    return true;
  }
  std::string to_;
};

TEST(DriverTest, StopsAtTheCapAndNamesThePatterns) {
  auto model = parse(R"(
    <ir_version: 8, opset_import: ["" : 17, "t" : 1]>
    g (float[2] x) => (float[2] y, float[2] z) { y = t.A(x) z = t.B(x) })");
  Flip a("A", "B"), b("B", "A");
  DriverConfig config;
  config.max_rounds = 5;
  auto result = applyPatternsGreedily(*model, {&a, &b}, config);
  ASSERT_TRUE(result.isOk());
  EXPECT_FALSE(result->converged);
  EXPECT_EQ(result->rounds, 5);
  EXPECT_EQ(result->last_round_patterns, (std::vector<std::string>{"A-to-B", "B-to-A"}));

  config.verify_convergence = true;
  auto strict = applyPatternsGreedily(*model, {&a, &b}, config);
  ASSERT_FALSE(strict.isOk());
  EXPECT_NE(strict.status().message().find("did not converge in 5 rounds"), std::string::npos);
  EXPECT_NE(strict.status().message().find("A-to-B, B-to-A"), std::string::npos);
}

TEST(DriverTest, OpsetRangeLimitsAPattern) {
  auto model = parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (float[2] y) { a = Neg(x) b = Neg(a) y = Relu(b) })");
  class Old final : public Pattern {
   public:
    Old() : Pattern("old-only", "Neg", "", 1, 1, 12) {}
    bool matchAndRewrite(ir::Node*, PatternContext&) const override { return true; }
  } old;
  auto result = applyPatternsGreedily(*model, {&old}, DriverConfig{});
  ASSERT_TRUE(result.isOk());
  EXPECT_FALSE(result->changed);
}

TEST(PipelineTest, ParsesNestedFixpointsAndOptions) {
  auto pipeline = pass::parsePipeline(
      "lift-constants, fixpoint(cse, fixpoint(dce)), eliminate-noop{strict-signed-zero=false}",
      &passes::createPass);
  ASSERT_TRUE(pipeline.isOk()) << pipeline.status().message();
  // Options are part of the canonical text: reproducers and reports must run what ran.
  EXPECT_EQ(pass::pipelineToString(*pipeline),
            "lift-constants,fixpoint(cse,fixpoint(dce)),eliminate-noop{strict-signed-zero=false}");
  EXPECT_FALSE(pass::parsePipeline("cse,,dce", &passes::createPass).isOk());
  EXPECT_FALSE(pass::parsePipeline("fixpoint()", &passes::createPass).isOk());
  EXPECT_FALSE(
      pass::parsePipeline("eliminate-noop{strict-signed-zero=maybe}", &passes::createPass).isOk());
}

TEST(PipelineTest, EveryLevelParses) {
  for (int level = 0; level <= 3; ++level) {
    auto text = passes::pipelineForLevel(level);
    ASSERT_TRUE(text.isOk());
    EXPECT_TRUE(pass::parsePipeline(*text, &passes::createPass).isOk()) << *text;
  }
  EXPECT_FALSE(passes::pipelineForLevel(4).isOk());
}

// A quoted option value holds any character but '"' and prints back quoted; an unclosed quote is
// an error.
TEST(PipelineTest, QuotedOptionValuesRoundTrip) {
  auto pipeline = pass::parsePipeline(
      R"(convert-precision{to=fp16,keep-nodes="/block.0/Add,/block.1/MatMul:0"},dce)",
      &passes::createPass);
  ASSERT_TRUE(pipeline.isOk()) << pipeline.status().message();
  EXPECT_EQ(pass::pipelineToString(*pipeline),
            R"(convert-precision{to=fp16,keep-nodes="/block.0/Add,/block.1/MatMul:0"},dce)");
  EXPECT_FALSE(
      pass::parsePipeline(R"(convert-precision{keep-nodes="/a)", &passes::createPass).isOk());
}

// --precision puts convert-precision after -O1's cleanup and the weight absorption (float32),
// before the other fusions; a --passes pipeline
// (or -O0) gets it first, after infer-shapes.
TEST(PipelineTest, PrecisionGoesAfterCleanup) {
  auto o2 = passes::pipelineFor(2, 0, "");
  ASSERT_TRUE(o2.isOk());
  auto with = passes::withPrecision(*o2, "bf16", false, {"Softmax"}, {"/a/b"});
  ASSERT_TRUE(with.isOk()) << with.status().message();
  size_t convert = with->find("convert-precision{to=bf16,keep-io-types=false,keep-ops=\"Softmax\"");
  ASSERT_NE(convert, std::string::npos) << *with;
  EXPECT_LT(with->find("fold-constant-if,fixpoint(fold-constants"), convert) << *with;
  // Weight absorption in float32 before it, the other fusions after.
  EXPECT_LT(with->find("fuse-conv-affine"), convert) << *with;
  EXPECT_GT(with->find("fuse-gelu"), convert) << *with;
  EXPECT_TRUE(pass::parsePipeline(*with, &passes::createPass).isOk()) << *with;
  auto custom = passes::withPrecision("cse", "fp16", true, {}, {});
  ASSERT_TRUE(custom.isOk());
  EXPECT_EQ(custom->rfind("infer-shapes,convert-precision{to=fp16}", 0), 0u) << *custom;
  EXPECT_FALSE(passes::withPrecision("cse", "fp8", true, {}, {}).isOk());
  EXPECT_FALSE(passes::withPrecision("cse", "fp16", true, {}, {"a,b"}).isOk());
}

// --quantize puts quantize-weights after every portable rewrite (the weights are final there),
// before -O3 --target cuda's rewrites, at the end of a --passes pipeline; bad values are refused.
TEST(PipelineTest, QuantizeGoesAfterThePortableRewrites) {
  passes::WeightQuantization q;
  q.weights = "int4";
  q.exclude = {"lm_head*", "*.embed"};
  q.lm_head = false;
  auto o2 = passes::pipelineFor(2, 0, "");
  ASSERT_TRUE(o2.isOk());
  auto with = passes::withQuantize(*o2, q);
  ASSERT_TRUE(with.isOk()) << with.status().message();
  EXPECT_EQ(*with, *o2 +
                       ",quantize-weights{weights=int4,block-size=32,symmetric=true,"
                       "exclude=\"lm_head*,*.embed\",lm-head=false}");
  EXPECT_TRUE(pass::parsePipeline(*with, &passes::createPass).isOk()) << *with;
  auto o3 = passes::pipelineFor(3, 0, "cuda");
  ASSERT_TRUE(o3.isOk());
  q.exclude.clear();
  auto cuda = passes::withQuantize(*o3, q);
  ASSERT_TRUE(cuda.isOk());
  size_t quantize = cuda->find("quantize-weights");
  EXPECT_LT(cuda->find("fuse-matmul-scale"), quantize) << *cuda;
  EXPECT_GT(cuda->find("fuse-matmul-epilogue"), quantize) << *cuda;
  EXPECT_TRUE(pass::parsePipeline(*cuda, &passes::createPass).isOk()) << *cuda;
  auto custom = passes::withQuantize("", q);
  ASSERT_TRUE(custom.isOk());
  EXPECT_EQ(custom->rfind("quantize-weights{weights=int4", 0), 0u) << *custom;
  q.weights = "int3";
  EXPECT_FALSE(passes::withQuantize("cse", q).isOk());
  q.weights = "int8";
  q.exclude = {"a,b"};
  EXPECT_FALSE(passes::withQuantize("cse", q).isOk());
}

// --target cuda adds its rewrites at -O3 only; other targets are refused by name.
TEST(PipelineTest, CudaTargetAddsItsFusionsAtO3Only) {
  auto o3 = passes::pipelineFor(3, 0, "cuda");
  ASSERT_TRUE(o3.isOk()) << o3.status().message();
  EXPECT_NE(o3->find("fuse-matmul-epilogue"), std::string::npos) << *o3;
  EXPECT_TRUE(pass::parsePipeline(*o3, &passes::createPass).isOk()) << *o3;
  for (int level = 0; level <= 2; ++level) {
    auto lower = passes::pipelineFor(level, 0, "cuda");
    ASSERT_TRUE(lower.isOk());
    auto portable = passes::pipelineFor(level, 0, "");
    ASSERT_TRUE(portable.isOk());
    EXPECT_EQ(*lower, *portable) << level;
  }
  auto o3_portable = passes::pipelineFor(3, 0, "");
  auto o2_portable = passes::pipelineFor(2, 0, "");
  ASSERT_TRUE(o3_portable.isOk() && o2_portable.isOk());
  EXPECT_EQ(*o3_portable, *o2_portable);
  auto tpu = passes::pipelineFor(3, 0, "tpu");
  ASSERT_FALSE(tpu.isOk());
  EXPECT_NE(tpu.status().message().find("'tpu'"), std::string::npos);
}

// addFunction adds the function and the domains its body imports; addOpsetImport keeps an existing
// import's version.
TEST(RewriterTest, AddFunctionImportsItsDomains) {
  auto model = io::parseModelText(R"(
<ir_version: 9, opset_import: ["" : 20]>
g (float[2] x) => (float[2] y) { y = Relu(x) }
)");
  ASSERT_TRUE(model.isOk()) << model.status().toString();
  auto fn = std::make_unique<ir::Function>();
  fn->name = "F";
  fn->domain = "ai.onnxopt";
  fn->opset_imports = {{"", 18}, {"local", 2}};
  fn->body = std::make_unique<ir::Graph>();
  rewrite::Rewriter rw;
  rw.addFunction(**model, std::move(fn));
  EXPECT_TRUE(rw.changed());
  ASSERT_EQ((*model)->functions.size(), 1u);
  EXPECT_EQ((*model)->opsetVersion(""), 20);  // kept
  EXPECT_EQ((*model)->opsetVersion("local"), 2);
  rw.resetChanged();
  rw.addOpsetImport(**model, "local", 5);
  EXPECT_FALSE(rw.changed());
  EXPECT_EQ((*model)->opsetVersion("local"), 2);
}

TEST(PipelineTest, PassIdsAreKebabCaseAndUnique) {
  std::set<std::string> ids;
  for (const auto& p : passes::allPasses()) {
    EXPECT_TRUE(ids.insert(p->id()).second) << p->id();
    for (char c : p->id()) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '-') << p->id();
    EXPECT_FALSE(p->summary().empty()) << p->id();
  }
}

}  // namespace
}  // namespace onnxopt::rewrite
