// Unit tests of the IR mutation API: use-lists, node order, erasing while iterating, subgraph
// scopes.
#include "onnxopt/ir/graph.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/verifier.h"

namespace onnxopt::ir {
namespace {

Type floatVec(int64_t n) {
  return Type::tensor(DataType::kFloat, std::vector<Dim>{Dim::known(n)});
}

std::vector<std::string> opOrder(const Graph& g) {
  std::vector<std::string> ops;
  for (Node* n : g) ops.push_back(n->opType());
  return ops;
}

bool hasUse(const Value* v, const Node* n, size_t i) {
  return std::count(v->uses().begin(), v->uses().end(), Use{const_cast<Node*>(n), i}) == 1;
}

TEST(GraphTest, CreateNodeRecordsUses) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Node* relu = g.createNode("Relu", "", {x}, 1);
  Node* add = g.createNode("Add", "", {relu->output(), x}, 1);
  g.addOutput(add->output());

  EXPECT_EQ(x->uses().size(), 2u);
  EXPECT_TRUE(hasUse(x, relu, 0));
  EXPECT_TRUE(hasUse(x, add, 1));
  EXPECT_TRUE(hasUse(relu->output(), add, 0));
  EXPECT_TRUE(add->output()->isGraphOutput());
  EXPECT_FALSE(relu->output()->isGraphOutput());
  EXPECT_EQ(relu->output()->producer(), relu);
  EXPECT_EQ(g.numNodes(), 2u);
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, InsertBeforeKeepsTopologicalOrder) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Node* a = g.createNode("A", "", {x}, 1);
  Node* c = g.createNode("C", "", {a->output()}, 1);
  Node* b = g.createNode("B", "", {a->output()}, 1, /*before=*/c);
  c->setInput(0, b->output());
  g.addOutput(c->output());
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(b->prev(), a);
  EXPECT_EQ(b->next(), c);
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, ReplaceAllUsesWithMovesEveryUse) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Node* a = g.createNode("A", "", {x}, 1);
  Node* b = g.createNode("B", "", {a->output(), a->output()}, 1);
  g.addOutput(a->output());
  a->output()->replaceAllUsesWith(x);
  EXPECT_FALSE(a->output()->hasUses());
  EXPECT_EQ(b->input(0), x);
  EXPECT_EQ(b->input(1), x);
  EXPECT_EQ(g.output(0), x);
  EXPECT_EQ(x->uses().size(), 4u);  // a's operand, b's two operands, the graph output
  g.eraseNode(a);
  EXPECT_EQ(x->uses().size(), 3u);
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, SetAndRemoveInputRenumberUses) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Value* y = g.addInput("y", floatVec(4));
  Value* z = g.addInput("z", floatVec(4));
  Node* n = g.createNode("Sum", "", {x, y, z}, 1);
  g.addOutput(n->output());
  n->removeInput(0);
  EXPECT_EQ(n->numInputs(), 2u);
  EXPECT_FALSE(x->hasUses());
  EXPECT_TRUE(hasUse(y, n, 0));
  EXPECT_TRUE(hasUse(z, n, 1));
  n->setInput(1, nullptr);  // an omitted optional input
  EXPECT_FALSE(z->hasUses());
  n->addInput(x);
  EXPECT_TRUE(hasUse(x, n, 2));
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, EraseWhileIterating) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Value* cur = x;
  for (int i = 0; i < 6; ++i) cur = g.createNode(i % 2 ? "Keep" : "Drop", "", {cur}, 1)->output();
  g.addOutput(cur);
  // Remove every Drop by forwarding its input; erase the node the iterator stands on.
  for (Node* n : g) {
    if (n->opType() != "Drop") continue;
    n->output()->replaceAllUsesWith(n->input(0));
    g.eraseNode(n);
  }
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"Keep", "Keep", "Keep"}));
  EXPECT_EQ(g.numNodes(), 3u);
  EXPECT_TRUE(verifyGraph(g).isOk());
  g.collectGarbage();
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, EraseSuccessorOfCurrentWhileIterating) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Node* a = g.createNode("A", "", {x}, 1);
  Node* b = g.createNode("B", "", {x}, 1);
  Node* c = g.createNode("C", "", {x}, 1);
  g.addOutput(a->output());
  g.addOutput(c->output());
  std::vector<std::string> seen;
  for (auto it = g.begin(); it != g.end(); ++it) {
    Node* n = *it;
    seen.push_back(n->opType());
    if (n == a) {
      g.eraseNode(b);  // a later node, erased before the iterator reaches it
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"A", "C"}));
  (void)c;
}

TEST(GraphTest, EraseTwoAdjacentNodesDuringIteration) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Node* a = g.createNode("A", "", {x}, 1);
  Node* b = g.createNode("B", "", {x}, 1);
  Node* c = g.createNode("C", "", {x}, 1);
  g.addOutput(c->output());
  std::vector<std::string> seen;
  for (Node* n : g) {
    seen.push_back(n->opType());
    if (n == a) {
      g.eraseNode(a);
      g.eraseNode(b);  // the erased current node's successor is erased too
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"A", "C"}));
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"C"}));
}

TEST(GraphTest, EraseNodeWithUsedOutputAborts) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Node* a = g.createNode("A", "", {x}, 1);
  g.addOutput(a->output());
  EXPECT_DEATH(g.eraseNode(a), "still has uses");
}

TEST(GraphTest, MoveBefore) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Node* a = g.createNode("A", "", {x}, 1);
  Node* b = g.createNode("B", "", {x}, 1);
  g.addOutput(a->output());
  g.addOutput(b->output());
  b->moveBefore(a);
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"B", "A"}));
  EXPECT_EQ(g.firstNode(), b);
  EXPECT_EQ(g.lastNode(), a);
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, RemoveOutputShiftsIndices) {
  Graph g;
  Value* x = g.addInput("x", floatVec(4));
  Node* split = g.createNode("Split", "", {x}, 3);
  g.addOutput(split->output(2));
  split->removeOutput(0);
  EXPECT_EQ(split->numOutputs(), 2u);
  EXPECT_EQ(split->output(1)->outputIndex(), 1u);
  EXPECT_TRUE(split->output(1)->isGraphOutput());
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, InitializersAndInputDefaults) {
  Graph g;
  Tensor t(DataType::kFloat, {2});
  t.setBytes(std::string(8, '\0'));
  Value* w = g.addInitializer("w", t);
  Value* x = g.addInput("x", floatVec(2));
  g.setInputDefault(x, t);
  EXPECT_EQ(g.initializers().size(), 2u);
  EXPECT_EQ(w->kind(), Value::Kind::kInitializer);
  EXPECT_NE(x->initializer(), nullptr);
  g.removeInitializer(x);  // drops the default, keeps the input
  EXPECT_EQ(x->initializer(), nullptr);
  EXPECT_EQ(g.inputs().size(), 1u);
  g.removeInitializer(w);
  EXPECT_TRUE(g.initializers().empty());
}

constexpr char kIfModel[] = R"(
<ir_version: 8, opset_import: ["" : 17]>
outer (float[4] x, bool c) => (float[4] y) {
  t = Relu(x)
  y = If(c) <
    then_branch = g1 () => (float[4] a) { a = Neg(t) },
    else_branch = g2 () => (float[4] b) { b = Abs(x) }
  >
}
)";

TEST(GraphTest, SubgraphUsesOuterScopeValues) {
  auto model = io::parseModelText(kIfModel);
  ASSERT_TRUE(model.isOk()) << model.status().message();
  Graph& g = *(*model)->graph;
  Node* relu = g.firstNode();
  Node* if_node = relu->next();
  ASSERT_EQ(if_node->opType(), "If");
  Value* t = relu->output();
  // t is used by Neg inside then_branch: the use is on the outer value's use-list.
  ASSERT_EQ(t->uses().size(), 1u);
  Node* neg = t->uses()[0].user;
  EXPECT_EQ(neg->opType(), "Neg");
  EXPECT_EQ(neg->owningGraph()->parentNode(), if_node);
  EXPECT_EQ(neg->owningGraph()->parentGraph(), &g);
  // x is used by Relu and by Abs in the else branch.
  Value* x = g.inputs()[0];
  EXPECT_EQ(x->uses().size(), 2u);
  EXPECT_TRUE(verifyModel(**model).isOk());

  // Erasing the If drops the inner uses of outer values.
  if_node->output()->replaceAllUsesWith(t);
  g.eraseNode(if_node);
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(t->uses().size(), 1u);  // only the graph output now
  EXPECT_TRUE(t->isGraphOutput());
  g.collectGarbage();
  EXPECT_TRUE(verifyModel(**model).isOk());
}

TEST(GraphTest, ReplacingSubgraphAttributeDropsOldUses) {
  auto model = io::parseModelText(kIfModel);
  ASSERT_TRUE(model.isOk()) << model.status().message();
  Graph& g = *(*model)->graph;
  Node* if_node = g.firstNode()->next();
  Value* t = g.firstNode()->output();
  ASSERT_EQ(t->uses().size(), 1u);
  Attribute empty;
  empty.name = "then_branch";
  empty.kind = Attribute::Kind::kGraph;
  auto body = std::make_unique<Graph>();
  Value* inner_x = g.inputs()[0];
  Node* id = body->createNode("Identity", "", {inner_x}, 1);
  body->addOutput(id->output());
  empty.graphs.push_back(std::move(body));
  if_node->setAttribute(std::move(empty));
  EXPECT_FALSE(t->hasUses());
  EXPECT_EQ(if_node->findAttribute("then_branch")->graphs[0]->parentNode(), if_node);
  EXPECT_TRUE(verifyModel(**model).isOk());
}

}  // namespace
}  // namespace onnxopt::ir
