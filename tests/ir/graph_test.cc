// Unit tests of the IR mutation API: use-lists, node order, erasing while iterating, subgraph
// scopes.
#include "onnxopt/ir/graph.h"

#include <algorithm>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/builder.h"
#include "onnxopt/ir/verifier.h"

namespace onnxopt::ir {
namespace {

using B = onnxopt::ir::Builder;

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
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* relu = B::createNode(g, "Relu", "", {x}, 1);
  Node* add = B::createNode(g, "Add", "", {relu->output(), x}, 1);
  B::addOutput(g, add->output());

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
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* a = B::createNode(g, "A", "", {x}, 1);
  Node* c = B::createNode(g, "C", "", {a->output()}, 1);
  Node* b = B::createNode(g, "B", "", {a->output()}, 1, /*before=*/c);
  B::setInput(c, 0, b->output());
  B::addOutput(g, c->output());
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(b->prev(), a);
  EXPECT_EQ(b->next(), c);
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, ReplaceAllUsesWithMovesEveryUse) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* a = B::createNode(g, "A", "", {x}, 1);
  Node* b = B::createNode(g, "B", "", {a->output(), a->output()}, 1);
  B::addOutput(g, a->output());
  B::replaceAllUsesWith(a->output(), x);
  EXPECT_FALSE(a->output()->hasUses());
  EXPECT_EQ(b->input(0), x);
  EXPECT_EQ(b->input(1), x);
  EXPECT_EQ(g.output(0), x);
  EXPECT_EQ(x->uses().size(), 4u);  // a's operand, b's two operands, the graph output
  B::eraseNode(g, a);
  EXPECT_EQ(x->uses().size(), 3u);
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, SetAndRemoveInputRenumberUses) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Value* y = B::addInput(g, "y", floatVec(4));
  Value* z = B::addInput(g, "z", floatVec(4));
  Node* n = B::createNode(g, "Sum", "", {x, y, z}, 1);
  B::addOutput(g, n->output());
  B::removeInput(n, 0);
  EXPECT_EQ(n->numInputs(), 2u);
  EXPECT_FALSE(x->hasUses());
  EXPECT_TRUE(hasUse(y, n, 0));
  EXPECT_TRUE(hasUse(z, n, 1));
  B::setInput(n, 1, nullptr);  // an omitted optional input
  EXPECT_FALSE(z->hasUses());
  B::addInput(n, x);
  EXPECT_TRUE(hasUse(x, n, 2));
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, EraseWhileIterating) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Value* cur = x;
  for (int i = 0; i < 6; ++i)
    cur = B::createNode(g, i % 2 ? "Keep" : "Drop", "", {cur}, 1)->output();
  B::addOutput(g, cur);
  // Remove every Drop by forwarding its input; erase the node the iterator stands on.
  for (Node* n : g) {
    if (n->opType() != "Drop") continue;
    B::replaceAllUsesWith(n->output(), n->input(0));
    B::eraseNode(g, n);
  }
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"Keep", "Keep", "Keep"}));
  EXPECT_EQ(g.numNodes(), 3u);
  EXPECT_TRUE(verifyGraph(g).isOk());
  g.collectGarbage();
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, EraseSuccessorOfCurrentWhileIterating) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* a = B::createNode(g, "A", "", {x}, 1);
  Node* b = B::createNode(g, "B", "", {x}, 1);
  Node* c = B::createNode(g, "C", "", {x}, 1);
  B::addOutput(g, a->output());
  B::addOutput(g, c->output());
  std::vector<std::string> seen;
  for (auto it = g.begin(); it != g.end(); ++it) {
    Node* n = *it;
    seen.push_back(n->opType());
    if (n == a) {
      B::eraseNode(g, b);  // a later node, erased before the iterator reaches it
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"A", "C"}));
  (void)c;
}

TEST(GraphTest, EraseTwoAdjacentNodesDuringIteration) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* a = B::createNode(g, "A", "", {x}, 1);
  Node* b = B::createNode(g, "B", "", {x}, 1);
  Node* c = B::createNode(g, "C", "", {x}, 1);
  B::addOutput(g, c->output());
  std::vector<std::string> seen;
  for (Node* n : g) {
    seen.push_back(n->opType());
    if (n == a) {
      B::eraseNode(g, a);
      B::eraseNode(g, b);  // the erased current node's successor is erased too
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"A", "C"}));
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"C"}));
}

TEST(GraphTest, EraseNodeWithUsedOutputAborts) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* a = B::createNode(g, "A", "", {x}, 1);
  B::addOutput(g, a->output());
  EXPECT_DEATH(B::eraseNode(g, a), "still has uses");
}

TEST(GraphTest, MoveBefore) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* a = B::createNode(g, "A", "", {x}, 1);
  Node* b = B::createNode(g, "B", "", {x}, 1);
  B::addOutput(g, a->output());
  B::addOutput(g, b->output());
  B::moveBefore(b, a);
  EXPECT_EQ(opOrder(g), (std::vector<std::string>{"B", "A"}));
  EXPECT_EQ(g.firstNode(), b);
  EXPECT_EQ(g.lastNode(), a);
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, RemoveOutputShiftsIndices) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* split = B::createNode(g, "Split", "", {x}, 3);
  B::addOutput(g, split->output(2));
  B::removeOutput(split, 0);
  EXPECT_EQ(split->numOutputs(), 2u);
  EXPECT_EQ(split->output(1)->outputIndex(), 1u);
  EXPECT_TRUE(split->output(1)->isGraphOutput());
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(GraphTest, InitializersAndInputDefaults) {
  Graph g;
  Tensor t(DataType::kFloat, {2});
  t.setBytes(std::string(8, '\0'));
  Value* w = B::addInitializer(g, "w", t);
  Value* x = B::addInput(g, "x", floatVec(2));
  B::setInputDefault(g, x, t);
  EXPECT_EQ(g.initializers().size(), 2u);
  EXPECT_EQ(w->kind(), Value::Kind::kInitializer);
  EXPECT_NE(x->initializer(), nullptr);
  B::removeInitializers(g, {x});  // drops the default, keeps the input
  EXPECT_EQ(x->initializer(), nullptr);
  EXPECT_EQ(g.inputs().size(), 1u);
  B::removeInitializers(g, {w});
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

TEST(TensorTest, SubViewSharesTheBytes) {
  Tensor t(DataType::kFloat, {2, 3});
  std::string bytes(24, '\0');
  for (int i = 0; i < 24; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(i);
  t.setBytes(bytes);
  t.setName("w");
  t.setExternalSource(ExternalSource{"/data/w.bin", 100, 24});
  Tensor v = t.subView({1, 3}, 12, 12);
  EXPECT_EQ(v.data(), t.data() + 12);  // no copy
  EXPECT_EQ(v.byteSize(), 12u);
  EXPECT_EQ(v.dims(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(v.dtype(), DataType::kFloat);
  EXPECT_EQ(v.name(), "");
  ASSERT_TRUE(v.externalSource().has_value());
  EXPECT_EQ(v.externalSource()->offset, 112u);
  EXPECT_EQ(v.externalSource()->length, 12u);
  t = Tensor();  // the view keeps the buffer alive
  EXPECT_EQ(v.bytes(), bytes.substr(12));
  EXPECT_DEATH(v.subView({4}, 4, 12), "out of the tensor's range");
}

/// A lazy buffer that counts the calls that fetch its bytes.
class CountingLazyBuffer final : public Buffer {
 public:
  explicit CountingLazyBuffer(std::string bytes) : bytes_(std::move(bytes)) {}
  const uint8_t* data() const override {
    ++fetches;
    return reinterpret_cast<const uint8_t*>(bytes_.data());
  }
  size_t size() const override { return bytes_.size(); }
  bool lazy() const override { return true; }
  mutable int fetches = 0;

 private:
  std::string bytes_;
};

TEST(TensorTest, ALazyViewFetchesOnlyWhenItsBytesAreRead) {
  auto buffer = std::make_shared<CountingLazyBuffer>("abcdefgh");
  Tensor t(DataType::kUint8, {8});
  t.setView(buffer, 0, 8);
  Tensor v = t.subView({4}, 2, 4);
  Tensor copy = t;
  EXPECT_EQ(buffer->fetches, 0);  // viewing, copying and sizing read nothing
  EXPECT_EQ(t.byteSize(), 8u);
  EXPECT_TRUE(t.viewsAllOf(buffer.get()));
  EXPECT_TRUE(copy.viewsAllOf(buffer.get()));
  EXPECT_FALSE(v.viewsAllOf(buffer.get()));  // a part of it
  EXPECT_EQ(buffer->fetches, 0);
  EXPECT_EQ(v.bytes(), "cdef");
  EXPECT_EQ(t.bytes(), "abcdefgh");
  EXPECT_GT(buffer->fetches, 0);
  t.setBytes("abcdefgh");  // the same bytes, owned now: no longer the buffer's
  EXPECT_FALSE(t.viewsAllOf(buffer.get()));
  EXPECT_EQ(t.bytes(), "abcdefgh");
}

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
  B::replaceAllUsesWith(if_node->output(), t);
  B::eraseNode(g, if_node);
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
  Node* id = B::createNode(*body, "Identity", "", {inner_x}, 1);
  B::addOutput(*body, id->output());
  empty.graphs.push_back(std::move(body));
  B::setAttribute(if_node, std::move(empty));
  EXPECT_FALSE(t->hasUses());
  EXPECT_EQ(if_node->findAttribute("then_branch")->graphs[0]->parentNode(), if_node);
  EXPECT_TRUE(verifyModel(**model).isOk());
}

}  // namespace
}  // namespace onnxopt::ir
