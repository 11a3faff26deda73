// The verifier must catch each broken invariant it claims to check.
#include "onnxopt/ir/verifier.h"

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/builder.h"

namespace onnxopt::ir {
namespace {

using B = onnxopt::ir::Builder;

Type floatVec(int64_t n) {
  return Type::tensor(DataType::kFloat, std::vector<Dim>{Dim::known(n)});
}

TEST(VerifierTest, AcceptsWellFormedGraph) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* n = B::createNode(g, "Relu", "", {x}, 1);
  B::setName(n->output(), "y");
  B::addOutput(g, n->output());
  EXPECT_TRUE(verifyGraph(g).isOk());
}

TEST(VerifierTest, RejectsUseBeforeDefinition) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* a = B::createNode(g, "A", "", {x}, 1);
  Node* b = B::createNode(g, "B", "", {a->output()}, 1);
  B::addOutput(g, b->output());
  B::moveBefore(b, a);  // now B uses A's output before A runs
  Status st = verifyGraph(g);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("not defined before use"), std::string::npos) << st.message();
}

TEST(VerifierTest, RejectsDuplicateNamesInOneScope) {
  Graph g;
  Value* x = B::addInput(g, "x", floatVec(4));
  Node* a = B::createNode(g, "A", "", {x}, 1);
  B::setName(a->output(), "x");
  B::addOutput(g, a->output());
  Status st = verifyGraph(g);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("defined twice"), std::string::npos) << st.message();
}

TEST(VerifierTest, AllowsShadowingAcrossScopes) {
  auto model = io::parseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x, bool c) => (float[4] y) {
      y = If(c) <
        then_branch = g1 () => (float[4] x1) { x1 = Neg(x) },
        else_branch = g2 () => (float[4] x2) { x2 = Abs(x) }
      >
    }
  )");
  ASSERT_TRUE(model.isOk()) << model.status().message();
  // Rename an inner value to the outer input's name: legal shadowing in another scope.
  Graph* then_g = (*model)->graph->firstNode()->findAttribute("then_branch")->graphs[0].get();
  B::setName(then_g->firstNode()->output(), "x");
  EXPECT_TRUE(verifyModel(**model).isOk());
}

TEST(VerifierTest, RejectsInnerValueUsedOutsideItsScope) {
  auto model = io::parseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x, bool c) => (float[4] y, float[4] z) {
      y = If(c) <
        then_branch = g1 () => (float[4] a) { a = Neg(x) },
        else_branch = g2 () => (float[4] b) { b = Abs(x) }
      >
      z = Relu(x)
    }
  )");
  ASSERT_TRUE(model.isOk()) << model.status().message();
  Graph& g = *(*model)->graph;
  Node* if_node = g.firstNode();
  Value* inner = if_node->findAttribute("then_branch")->graphs[0]->firstNode()->output();
  B::setInput(g.lastNode(), 0, inner);  // Relu in the outer graph now reads a then-branch value
  Status st = verifyModel(**model);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("not defined before use"), std::string::npos) << st.message();
}

TEST(VerifierTest, RejectsInitializerTypeMismatch) {
  Graph g;
  Tensor t(DataType::kFloat, {2});
  t.setBytes(std::string(8, '\0'));
  Value* w = B::addInitializer(g, "w", t);
  B::setType(w, Type::tensor(DataType::kInt64, std::vector<Dim>{Dim::known(2)}));
  B::addOutput(g, w);
  Status st = verifyGraph(g);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("holds float data"), std::string::npos) << st.message();
}

TEST(VerifierTest, RejectsInitializerShapeMismatch) {
  Graph g;
  Tensor t(DataType::kFloat, {2});
  t.setBytes(std::string(8, '\0'));
  Value* w = B::addInitializer(g, "w", t);
  B::setType(w, Type::tensor(DataType::kFloat, std::vector<Dim>{Dim::known(3)}));
  B::addOutput(g, w);
  EXPECT_FALSE(verifyGraph(g).isOk());
}

TEST(VerifierTest, RejectsDuplicateOpsetImport) {
  Model m;
  m.graph = std::make_unique<Graph>();
  m.opset_imports = {{"", 17}, {"ai.onnx", 18}};
  EXPECT_FALSE(verifyModel(m).isOk());
}

TEST(VerifierTest, RejectsConstantReshapeShapesTheSpecRulesOut) {
  // Checked in the verifier, so that a pass writing such a shape is caught as well as a file.
  auto verdict = [](std::vector<int64_t> target, int64_t allowzero) {
    Graph g;
    Value* x = B::addInput(g, "x", floatVec(4));
    Tensor shape(DataType::kInt64, {static_cast<int64_t>(target.size())});
    shape.setBytes(std::string(reinterpret_cast<const char*>(target.data()), target.size() * 8));
    Value* s = B::addInitializer(g, "s", std::move(shape));
    Node* n = B::createNode(g, "Reshape", "", {x, s}, 1);
    Attribute a;
    a.name = "allowzero";
    a.kind = Attribute::Kind::kInt;
    a.i = allowzero;
    B::setAttribute(n, std::move(a));
    B::addOutput(g, n->output());
    return verifyGraph(g);
  };
  EXPECT_TRUE(verdict({-1, 2}, 0).isOk());
  EXPECT_TRUE(verdict({0, -1}, 0).isOk());
  Status two = verdict({-1, -1}, 0);
  ASSERT_FALSE(two.isOk());
  EXPECT_NE(two.message().find("holds -1 2 times"), std::string::npos) << two.message();
  EXPECT_FALSE(verdict({-3, 4}, 0).isOk());
  EXPECT_FALSE(verdict({0, -1}, 1).isOk());
}

Type vecOf(DataType t, int64_t n) {
  return Type::tensor(t, std::vector<Dim>{Dim::known(n)});
}

/// LayerNormalization(x, scale, bias) -> y with the given element types, named "ln".
Graph& layerNorm(Graph& g, DataType x, DataType scale, DataType bias, DataType y) {
  Node* n =
      B::createNode(g, "LayerNormalization", "",
                    {B::addInput(g, "x", vecOf(x, 4)), B::addInput(g, "scale", vecOf(scale, 4)),
                     B::addInput(g, "bias", vecOf(bias, 4))},
                    1);
  B::setName(n, "ln");
  B::setName(n->output(), "y");
  B::setType(n->output(), vecOf(y, 4));
  B::addOutput(g, n->output());
  return g;
}

TEST(VerifierTest, RejectsOneTypeParameterBoundToTwoTypes) {
  // torch's TorchScript export of an fp16 DistilBERT: X float, Scale and B float16.
  Graph g;
  layerNorm(g, DataType::kFloat, DataType::kFloat16, DataType::kFloat16, DataType::kFloat);
  Status st = verifyGraph(g, VerifyOptions{.opset = 17});
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.message(),
            "node 'ln' (LayerNormalization): input 1 'scale' is float16 but input 0 'x' is float; "
            "LayerNormalization binds them to one type");
}

TEST(VerifierTest, RejectsOutputOfAnotherTypeThanItsTiedInputs) {
  Graph g;
  layerNorm(g, DataType::kFloat16, DataType::kFloat16, DataType::kFloat16, DataType::kFloat);
  Status st = verifyGraph(g, VerifyOptions{.opset = 17});
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("output 0 'y' is float but input 0 'x' is float16"),
            std::string::npos)
      << st.message();
}

TEST(VerifierTest, AcceptsTiedValuesOfOneType) {
  Graph g;
  layerNorm(g, DataType::kFloat16, DataType::kFloat16, DataType::kFloat16, DataType::kFloat16);
  EXPECT_TRUE(verifyGraph(g, VerifyOptions{.opset = 17}).isOk());
}

TEST(VerifierTest, TiedTypesNeedTheOpsetAndTheDefaultDomain) {
  Graph g;
  layerNorm(g, DataType::kFloat, DataType::kFloat16, DataType::kFloat16, DataType::kFloat);
  EXPECT_TRUE(verifyGraph(g).isOk());  // no opset given: no schema to hold the node to
  Graph h;
  Node* n = B::createNode(h, "Add", "ai.onnxopt",
                          {B::addInput(h, "a", vecOf(DataType::kFloat, 4)),
                           B::addInput(h, "b", vecOf(DataType::kFloat16, 4))},
                          1);
  B::addOutput(h, n->output());
  EXPECT_TRUE(verifyGraph(h, VerifyOptions{.opset = 17}).isOk());
}

TEST(VerifierTest, ImportChecksVariadicTiedInputsAtTheModelsOpset) {
  auto model = io::parseModelText(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] a, float16[4] b) => (float[8] y) { y = Concat<axis = 0>(a, b) }
  )");
  // The importer's verifyModel takes the opset from the model's imports.
  ASSERT_FALSE(model.isOk());
  EXPECT_NE(model.status().message().find("input 1 'b' is float16 but input 0 'a' is float"),
            std::string::npos)
      << model.status().message();
}

}  // namespace
}  // namespace onnxopt::ir
