// Symbolic dims and shape inference, per op family: broadcasting edge cases, negative axes,
// zero-sized dims, shape values flowing through Shape chains, subgraphs, and declared-type
// contradictions.
#include "onnxopt/ir/shape_inference.h"

#include <limits>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/builder.h"

namespace onnxopt::ir {
namespace {

using B = onnxopt::ir::Builder;

// ---------------------------------------------------------------------------------------------
// Symbolic expressions

TEST(SymbolicTest, CanonicalFormMakesEqualDimsCompareEqual) {
  SymExpr b = SymExpr::symbol("batch"), s = SymExpr::symbol("seq"), n = SymExpr::symbol("N");
  EXPECT_EQ(SymExpr::floorDiv(b * s, s), b);
  EXPECT_EQ(SymExpr::floorDiv(s * b, b * s), SymExpr::constant(1));
  EXPECT_EQ((n + SymExpr::constant(1)) - SymExpr::constant(1), n);
  EXPECT_EQ(SymExpr::constant(2) * n + n, SymExpr::constant(3) * n);
  EXPECT_EQ(b * s, s * b);
  EXPECT_EQ((b * s).toString(), "batch*seq");
  EXPECT_EQ((SymExpr::constant(2) * n + SymExpr::constant(1)).toString(), "2*N + 1");
  EXPECT_EQ((n - n).constantValue(), 0);
  EXPECT_EQ(SymExpr::symbol("N").symbolName(), "N");
  EXPECT_FALSE((n + SymExpr::constant(1)).symbolName().has_value());
}

TEST(SymbolicTest, DivisionModuloMinMax) {
  SymExpr n = SymExpr::symbol("N");
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::constant(-7), SymExpr::constant(2)).constantValue(), -4);
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::constant(7), SymExpr::constant(2)).constantValue(), 3);
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::constant(4) * n, SymExpr::constant(2)),
            SymExpr::constant(2) * n);
  EXPECT_EQ(SymExpr::floorDiv(n, SymExpr::constant(2)).toString(), "floor(N/2)");
  EXPECT_EQ(SymExpr::ceilDiv(SymExpr::constant(7), SymExpr::constant(2)).constantValue(), 4);
  EXPECT_EQ(SymExpr::mod(SymExpr::constant(-7), SymExpr::constant(3)).constantValue(), 2);
  EXPECT_EQ(SymExpr::mod(SymExpr::constant(6) * n, SymExpr::constant(3)).constantValue(), 0);
  EXPECT_EQ(SymExpr::min(n, SymExpr::constant(3)), SymExpr::min(SymExpr::constant(3), n));
  EXPECT_EQ(SymExpr::max(n, n), n);
  EXPECT_EQ(SymExpr::max(SymExpr::constant(2), SymExpr::constant(5)).constantValue(), 5);
  // Atoms take part in arithmetic like symbols.
  SymExpr h = SymExpr::floorDiv(n, SymExpr::constant(2));
  EXPECT_EQ(h + h, SymExpr::constant(2) * h);
}

TEST(SymbolicTest, DivisionCancelsOnlyExactPolynomialFactors) {
  SymExpr f = SymExpr::symbol("F"), a = SymExpr::symbol("a"), b = SymExpr::symbol("b");
  SymExpr one = SymExpr::constant(1);
  // Multi-term divisors cancel when they divide the dividend as polynomials.
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::constant(1024) * (f + one), f + one),
            SymExpr::constant(1024));
  EXPECT_EQ(SymExpr::floorDiv((a + b) * (a - b), a - b), a + b);
  EXPECT_EQ(SymExpr::floorDiv(a * b * (f + one), b * (f + one)), a);
  EXPECT_EQ(SymExpr::floorDiv(SymExpr::constant(-6) * a, SymExpr::constant(-3)),
            SymExpr::constant(2) * a);
  EXPECT_EQ(SymExpr::mod(SymExpr::constant(3) * (f + one) * a, f + one).constantValue(), 0);
  // Anything else stays a floor division: an exact rational quotient is not enough (the
  // integer quotient of (2F + 1) / 2 is F, not F + 1/2), nor is a remainder.
  auto isFloorAtom = [](const SymExpr& e) { return e.toString().rfind("floor(", 0) == 0; };
  EXPECT_TRUE(isFloorAtom(SymExpr::floorDiv(SymExpr::constant(2) * f + one, SymExpr::constant(2))));
  EXPECT_TRUE(isFloorAtom(SymExpr::floorDiv(f + SymExpr::constant(2), f + one)));
  EXPECT_TRUE(isFloorAtom(SymExpr::floorDiv(a * f + one, f)));
  EXPECT_TRUE(
      isFloorAtom(SymExpr::floorDiv(f + one, SymExpr::constant(2) * f + SymExpr::constant(2))));
  EXPECT_FALSE(SymExpr::mod(f + SymExpr::constant(2), f + one).isConstant());
}

TEST(SymbolicTest, DimFromExpr) {
  EXPECT_TRUE(Dim::fromExpr(SymExpr::constant(4)).isKnown());
  EXPECT_EQ(Dim::fromExpr(SymExpr::symbol("B")).kind, Dim::Kind::kParam);
  Dim e = Dim::fromExpr(SymExpr::symbol("B") * SymExpr::symbol("S"));
  EXPECT_EQ(e.kind, Dim::Kind::kExpr);
  EXPECT_EQ(e.param, "B*S");
  EXPECT_EQ(e, Dim::fromExpr(SymExpr::symbol("S") * SymExpr::symbol("B")));
}

// ---------------------------------------------------------------------------------------------
// Broadcasting

std::vector<Dim> dims(std::initializer_list<const char*> ds) {
  std::vector<Dim> out;
  for (const char* d : ds) {
    if (std::string(d) == "?")
      out.push_back(Dim::unknown());
    else if (std::isdigit(static_cast<unsigned char>(d[0])))
      out.push_back(Dim::known(std::stoll(d)));
    else
      out.push_back(Dim::symbol(d));
  }
  return out;
}

std::string shapeText(const std::optional<std::vector<Dim>>& s) {
  return s ? typeToString(Type::tensor(DataType::kFloat, *s)) : "incompatible";
}

TEST(BroadcastTest, EdgeCases) {
  EXPECT_EQ(shapeText(broadcastShapes(dims({"N", "1"}), dims({"1", "M"}))), "float[N,M]");
  EXPECT_EQ(shapeText(broadcastShapes(dims({"3"}), dims({"2", "3"}))), "float[2,3]");
  EXPECT_EQ(shapeText(broadcastShapes(dims({}), dims({"2", "3"}))), "float[2,3]");
  EXPECT_EQ(shapeText(broadcastShapes(dims({"2"}), dims({"3"}))), "incompatible");
  EXPECT_EQ(shapeText(broadcastShapes(dims({"N"}), dims({"N"}))), "float[N]");
  EXPECT_EQ(shapeText(broadcastShapes(dims({"N"}), dims({"M"}))), "float[?]");  // either may be 1
  EXPECT_EQ(shapeText(broadcastShapes(dims({"N"}), dims({"4"}))), "float[4]");  // N is 1 or 4
  EXPECT_EQ(shapeText(broadcastShapes(dims({"0", "3"}), dims({"1", "3"}))), "float[0,3]");
  EXPECT_EQ(shapeText(broadcastShapes(dims({"0"}), dims({"2"}))), "incompatible");
  EXPECT_EQ(shapeText(broadcastShapes(dims({"?", "3"}), dims({"5", "1"}))), "float[5,3]");
}

// ---------------------------------------------------------------------------------------------
// Ops, through small models

struct Inferred {
  std::map<std::string, std::string> types;
  std::vector<std::string> warnings;
};

Inferred infer(const char* text) {
  auto model = io::parseModelText(text);
  EXPECT_TRUE(model.isOk()) << model.status().message();
  Inferred out;
  if (!model.isOk()) return out;
  auto stats = inferShapes(**model);
  EXPECT_TRUE(stats.isOk());
  out.warnings = stats->warnings;
  auto visit = [&](const Graph& g, auto& self) -> void {
    for (const Node* n : g) {
      for (const Value* v : n->outputs()) {
        if (v != nullptr) out.types[v->name()] = typeToString(v->type());
      }
      for (const Graph* sub : n->subgraphs()) self(*sub, self);
    }
  };
  visit(*(*model)->graph, visit);
  return out;
}

TEST(InferenceTest, ElementwiseAndComparison) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,1,4] a, float[3,1] b, int64[N,3,4] i) => (float[N,3,4] y) {
      y = Add(a, b)
      c = Less(a, b)
      w = Where(c, a, b)
      k = Cast <to = 7> (a)
      e = Exp(a)
      m = Max(a, b, y)
    })");
  EXPECT_EQ(r.types["y"], "float[N,3,4]");
  EXPECT_EQ(r.types["c"], "bool[N,3,4]");
  EXPECT_EQ(r.types["w"], "float[N,3,4]");
  EXPECT_EQ(r.types["k"], "int64[N,1,4]");
  EXPECT_EQ(r.types["e"], "float[N,1,4]");
  EXPECT_EQ(r.types["m"], "float[N,3,4]");
}

// `refined` counts the values whose type a run changed: the pass manager's evidence that passes
// that did nothing before may now do something. A second run over the same model refines nothing,
// including where inference made up a symbol for a data-dependent dim.
TEST(InferenceTest, RefinedCountsTypeChangesOnly) {
  auto model = io::parseModelText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,4] a, float[4] b) => (float[N,4] y) {
      s = Add(a, b)
      z = NonZero(s)
      y = Relu(s)
    })");
  ASSERT_TRUE(model.isOk()) << model.status().message();
  auto first = inferShapes(**model);
  ASSERT_TRUE(first.isOk());
  EXPECT_EQ(first->refined, 2);  // s and z; y was declared float[N,4] already
  auto second = inferShapes(**model);
  ASSERT_TRUE(second.isOk());
  EXPECT_EQ(second->refined, 0);
  ShapeInferenceOptions mark;
  mark.write_value_info = true;
  auto marked = inferShapes(**model, mark);
  ASSERT_TRUE(marked.isOk());
  EXPECT_EQ(marked->refined, 2);  // s and z marked for export as value_info
}

TEST(InferenceTest, ReshapeTargetsFromShapeChainsStaySymbolic) {
  // The exported-transformer idiom: split heads with a target built from Shape, then merge them.
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[batch,seq,768] x) => (float[batch,seq,12,64] heads) <int64 zero = {0}, int64 one = {1}, int64[2] hd = {12, 64}, int64[1] minus1 = {-1}, int64[1] hidden = {768}, int64[1] ax0 = {0}> {
      s = Shape(x)
      b = Gather <axis = 0> (s, zero)
      q = Gather <axis = 0> (s, one)
      b1 = Unsqueeze(b, ax0)
      q1 = Unsqueeze(q, ax0)
      target = Concat <axis = 0> (b1, q1, hd)
      heads = Reshape(x, target)
      bq = Mul(b, q)
      bq1 = Unsqueeze(bq, ax0)
      flat_target = Concat <axis = 0> (bq1, hidden)
      flat = Reshape(x, flat_target)
      back = Reshape(flat, target)
      rows = Reshape(x, minus1)
      n = Size(x)
    })");
  EXPECT_EQ(r.types["s"], "int64[3]");
  EXPECT_EQ(r.types["target"], "int64[4]");
  EXPECT_EQ(r.types["heads"], "float[batch,seq,12,64]");
  EXPECT_EQ(r.types["flat"], "float[(batch*seq),768]");
  EXPECT_EQ(r.types["back"], "float[batch,seq,12,64]");
  EXPECT_EQ(r.types["rows"], "float[(768*batch*seq)]");
  EXPECT_EQ(r.types["n"], "int64[]");
}

TEST(InferenceTest, ReshapeZeroAndMinusOne) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,12,64] x, float[0,3] z) => (float[N,768] y) <int64[2] t = {0, -1}, int64[2] t2 = {-1, 3}> {
      y = Reshape(x, t)
      w = Reshape(z, t2)
    })");
  EXPECT_EQ(r.types["y"], "float[N,768]");
  EXPECT_EQ(r.types["w"], "float[0,3]");
}

TEST(InferenceTest, NegativeAxes) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3,4] x, int64[5] idx) => (float[2,3,4,1] u) <int64[1] m1 = {-1}, int64[1] s = {-3}, int64[1] e = {9223372036854775807}> {
      u = Unsqueeze(x, m1)
      q = Squeeze(u, m1)
      c = Concat <axis = -1> (x, x)
      ga = Gather <axis = -1> (x, idx)
      t = Transpose(x)
      sl = Slice(x, s, e, m1)
      rm = ReduceMean <axes = [-1, -2], keepdims = 1> (x)
      rs = ReduceSum <keepdims = 0> (x, m1)
      am = ArgMax <axis = -2, keepdims = 0> (x)
      sm = Softmax <axis = -1> (x)
      fl = Flatten <axis = -1> (x)
    })");
  EXPECT_EQ(r.types["u"], "float[2,3,4,1]");
  EXPECT_EQ(r.types["q"], "float[2,3,4]");
  EXPECT_EQ(r.types["c"], "float[2,3,8]");
  EXPECT_EQ(r.types["ga"], "float[2,3,5]");
  EXPECT_EQ(r.types["t"], "float[4,3,2]");
  EXPECT_EQ(r.types["sl"], "float[2,3,3]");
  EXPECT_EQ(r.types["rm"], "float[2,1,1]");
  EXPECT_EQ(r.types["rs"], "float[2,3]");
  EXPECT_EQ(r.types["am"], "int64[2,4]");
  EXPECT_EQ(r.types["sm"], "float[2,3,4]");
  EXPECT_EQ(r.types["fl"], "float[6,4]");
}

TEST(InferenceTest, ZeroSizedDims) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[0,3] z, float[2,3] x) => (float[2,3] c) <int64[1] s = {1}, int64[1] e = {5}, int64[1] a0 = {0}> {
      c = Concat <axis = 0> (z, x)
      s0 = Slice(z, s, e, a0)
      r = ReduceSum <keepdims = 1> (z, a0)
      p, q = Split <axis = 1, num_outputs = 2> (z)
    })");
  EXPECT_EQ(r.types["c"], "float[2,3]");
  EXPECT_EQ(r.types["s0"], "float[0,3]");
  EXPECT_EQ(r.types["r"], "float[1,3]");
  EXPECT_EQ(r.types["p"], "float[0,2]");
  EXPECT_EQ(r.types["q"], "float[0,1]");
}

TEST(InferenceTest, ConvPoolingMatmul) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,3,224,224] x, float[N,3,H,W] d, float[64,3,7,7] w, float[B,8,S,64] q, float[B,8,64,S] k, float[4,5] a, float[6,5] b) => (float[N,64,112,112] c) {
      c = Conv <pads = [3, 3, 3, 3], strides = [2, 2]> (x, w)
      p = MaxPool <kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]> (c)
      pc = AveragePool <kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1> (p)
      cd = Conv <strides = [2, 2], auto_pad = "SAME_UPPER"> (d, w)
      gp = GlobalAveragePool(c)
      att = MatMul(q, k)
      gm = Gemm <transB = 1> (a, b)
      bn = BatchNormalization(c, w, w, w, w)
    })");
  EXPECT_EQ(r.types["c"], "float[N,64,112,112]");
  EXPECT_EQ(r.types["p"], "float[N,64,56,56]");
  EXPECT_EQ(r.types["pc"], "float[N,64,28,28]");
  EXPECT_EQ(r.types["cd"], "float[N,64,(floor(H + 1/2)),(floor(W + 1/2))]");
  EXPECT_EQ(r.types["gp"], "float[N,64,1,1]");
  EXPECT_EQ(r.types["att"], "float[B,8,S,S]");
  EXPECT_EQ(r.types["gm"], "float[4,6]");
  EXPECT_EQ(r.types["bn"], "float[N,64,112,112]");
}

// A convolution over a known size: the spec's formula, floor((x + pads - dil*(k-1) - 1) / stride)
// + 1, or ceil(x / stride) for SAME padding, over a sweep of sizes, kernels, strides, dilations
// and pads (negative ones crop).
TEST(InferenceTest, ConvOutputSizesFollowTheFormula) {
  struct Case {
    const char* auto_pad;
    int64_t pad_head, pad_tail;
  };
  const Case cases[] = {{"NOTSET", 0, 0},    {"NOTSET", 2, 1}, {"NOTSET", -1, 0},
                        {"NOTSET", 3, 3},    {"VALID", 0, 0},  {"SAME_UPPER", 0, 0},
                        {"SAME_LOWER", 0, 0}};
  int checked = 0;
  for (const Case& c : cases) {
    for (int64_t x : {1, 2, 7, 16, 33}) {
      for (int64_t k : {1, 3, 4}) {
        for (int64_t stride : {1, 2, 3}) {
          for (int64_t dil : {1, 2}) {
            const bool same = std::string(c.auto_pad).rfind("SAME", 0) == 0;
            const bool valid = std::string(c.auto_pad) == "VALID";
            int64_t expected = 0;
            if (same) {
              expected = (x + stride - 1) / stride;
            } else {
              int64_t span = x + (valid ? 0 : c.pad_head + c.pad_tail) - dil * (k - 1) - 1;
              if (span < 0) continue;  // no window fits
              expected = span / stride + 1;
            }
            std::string pads = std::string(c.auto_pad) == "NOTSET"
                                   ? ", pads = [" + std::to_string(c.pad_head) + ", " +
                                         std::to_string(c.pad_tail) + "]"
                                   : "";
            std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\n g (float[1,1," +
                               std::to_string(x) + "] a, float[1,1," + std::to_string(k) +
                               "] w) => (float[?,?,?] y) {\n y = Conv <auto_pad = \"" + c.auto_pad +
                               "\", strides = [" + std::to_string(stride) + "], dilations = [" +
                               std::to_string(dil) + "]" + pads + "> (a, w)\n }";
            auto r = infer(text.c_str());
            EXPECT_EQ(r.types["y"], "float[1,1," + std::to_string(expected) + "]") << text;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(InferenceTest, DataDependentSizesGetFreshSymbols) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,4] x, int64[1] k) => (int64[2,?] nz) {
      nz = NonZero(x)
      v, i = TopK <axis = -1> (x, k)
    })");
  EXPECT_EQ(r.types["nz"], "int64[2,unk__0]");
  EXPECT_EQ(r.types["v"], "float[N,unk__1]");
  EXPECT_EQ(r.types["i"], "int64[N,unk__1]");
}

TEST(InferenceTest, SubgraphsAndControlFlow) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,4] x, bool c) => (float[N,4] y) <int64 n = {3}, bool t = {1}> {
      y = If(c) <
        then_branch = g1 () => (float[N,4] a) { a = Neg(x) },
        else_branch = g2 () => (float[N,4] b) { b = Abs(x) }
      >
      z = If(c) <
        then_branch = g3 () => (float[N,4] p) { p = Neg(x) },
        else_branch = g4 () => (float[N,8] q) { q = Concat <axis = 1> (x, x) }
      >
      lc, ls = Loop(n, t, x) <
        body = body (int64 i, bool cin, float[N,4] v) => (bool cout, float[N,4] vout, float[N,4] scan) {
          cout = Identity(cin)
          vout = Neg(v)
          scan = Abs(v)
        }
      >
    })");
  EXPECT_EQ(r.types["y"], "float[N,4]");
  EXPECT_EQ(r.types["z"], "float[N,?]");
  EXPECT_EQ(r.types["lc"], "float[N,4]");
  EXPECT_EQ(r.types["ls"], "float[?,N,4]");
  EXPECT_EQ(r.types["vout"], "float[N,4]");
}

TEST(InferenceTest, DeclaredContradictionWarnsAndInferenceWins) {
  // A wrong declared value_info (onnx's own inference gets AveragePool with ceil_mode wrong) must
  // not survive: Shape would be folded from it.
  auto model = io::parseModelText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[2,3] y) {
      t = Neg(x)
      y = Relu(t)
    })");
  ASSERT_TRUE(model.isOk());
  Value* t = (*model)->graph->firstNode()->output();
  B::setType(t, Type::tensor(DataType::kFloat, dims({"5", "3"})));  // a wrong declared value_info
  CollectingDiagnosticSink diagnostics;
  ShapeInferenceOptions options;
  options.diagnostics = &diagnostics;
  auto stats = inferShapes(**model, options);
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(typeToString(t->type()), "float[2,3]");
  // Reported once; Relu(t) then agrees with the declared output.
  ASSERT_EQ(stats->warnings.size(), 1u);
  EXPECT_EQ(typeToString((*model)->graph->output(0)->type()), "float[2,3]");
  ASSERT_EQ(diagnostics.diagnostics().size(), 1u);
  const Diagnostic& d = diagnostics.diagnostics()[0];
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_EQ(d.node, "t");  // the unnamed Neg, by its output
  EXPECT_EQ(d.message, stats->warnings[0]);
  EXPECT_NE(d.message.find("output 't' is declared float[5,3] but inferred float[2,3]"),
            std::string::npos)
      << d.message;
}

TEST(InferenceTest, DeclaredDimsYieldToInferredOnesAndFillUnknownOnes) {
  auto model = io::parseModelText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,3] x, int64[2] s) => (float[N,3] t) <int64[1] minus1 = {-1}> {
      t = Neg(x)
      r = Reshape(x, minus1)
      q = Reshape(x, s)
    })");
  ASSERT_TRUE(model.isOk());
  std::map<std::string, Value*> values;
  for (Node* n : *(*model)->graph) values[n->output(0)->name()] = n->output(0);
  // Declared for one traced input size: N is symbolic, so the concrete 4 must not stay.
  B::setType(values["t"], Type::tensor(DataType::kFloat, dims({"4", "3"})));
  // A declared rank and element type that differ are replaced (the element type is reported).
  B::setType(values["r"], Type::tensor(DataType::kInt64, dims({"7", "7"})));
  // Where inference has nothing to say (a run-time target), the declared dims stay.
  B::setType(values["q"], Type::tensor(DataType::kFloat, dims({"6", "1"})));
  auto stats = inferShapes(**model);
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(typeToString(values["t"]->type()), "float[N,3]");
  EXPECT_EQ(typeToString(values["r"]->type()), "float[(3*N)]");
  EXPECT_EQ(typeToString(values["q"]->type()), "float[6,1]");
  EXPECT_EQ(stats->warnings.size(), 1u);
}

TEST(InferenceTest, ContradictedDeclaredTypeLeavesNoDimBehind) {
  // Declared [5,7], inferred [2,?]: the declared 5 is wrong, so its 7 is no evidence either.
  // Keeping it would write [2,7], a type neither side gave (a Loop-carried value that changes
  // shape per iteration is where exporters write such declared types).
  auto model = io::parseModelText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x, float[2,?] z) => (float[2,?] y) {
      c = Concat <axis = 1> (x, z)
      y = Relu(c)
    })");
  ASSERT_TRUE(model.isOk());
  Value* c = (*model)->graph->firstNode()->output();
  B::setType(c, Type::tensor(DataType::kFloat, dims({"5", "7"})));
  auto stats = inferShapes(**model);
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(typeToString(c->type()), "float[2,?]");
  ASSERT_EQ(stats->warnings.size(), 1u);
  EXPECT_NE(stats->warnings[0].find("declared float[5,7] but inferred float[2,?]"),
            std::string::npos)
      << stats->warnings[0];
}

TEST(InferenceTest, DisputedPoolSizeReplacesTheDeclaredOne) {
  // AveragePool-11, ceil_mode: onnx infers 3 (written as the declared type), onnxruntime runs 2.
  // Neither is written; the declared 3 goes too. Floor mode, where they agree, keeps its size.
  auto model = io::parseModelText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,1,5,5] x) => (float[1,1,2,2] q) {
      p = AveragePool <kernel_shape = [1, 1], strides = [3, 3], ceil_mode = 1> (x)
      q = AveragePool <kernel_shape = [1, 1], strides = [3, 3]> (x)
    })");
  ASSERT_TRUE(model.isOk());
  Value* p = (*model)->graph->firstNode()->output();
  B::setType(p, Type::tensor(DataType::kFloat, dims({"1", "1", "3", "3"})));
  auto stats = inferShapes(**model);
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(typeToString(p->type()), "float[1,1,?,?]");
  EXPECT_EQ(typeToString((*model)->graph->output(0)->type()), "float[1,1,2,2]");
}

TEST(InferenceTest, DeclaredUnknownDimsAreFilledIn) {
  auto model = io::parseModelText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float[?,3] y) { y = Relu(x) })");
  ASSERT_TRUE(model.isOk());
  auto stats = inferShapes(**model);
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ(typeToString((*model)->graph->output(0)->type()), "float[2,3]");
  EXPECT_TRUE(stats->warnings.empty());
}

TEST(InferenceTest, RecurrentAndNormalization) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[S,B,16] x, float[2,128,16] w, float[2,128,32] rw, float[B,S,768] h, float[768] gamma) => (float[S,2,B,32] y) {
      y, yh, yc = LSTM <hidden_size = 32, direction = "bidirectional"> (x, w, rw)
      ln, mean, inv = LayerNormalization <axis = -1> (h, gamma, gamma)
    })");
  EXPECT_EQ(r.types["y"], "float[S,2,B,32]");
  EXPECT_EQ(r.types["yh"], "float[2,B,32]");
  EXPECT_EQ(r.types["ln"], "float[B,S,768]");
  EXPECT_EQ(r.types["mean"], "float[B,S,1]");
}

// ---------------------------------------------------------------------------------------------
// Edges: arithmetic traps and overflow, out-of-range and repeated axes, absurd attribute values.
// Each must give a deterministic type (often unknown) and never trap, read out of bounds or wrap.

TEST(InferenceEdgesTest, IntegerDivisionAndModuloNeverTrap) {
  // INT64_MIN / -1 traps (SIGFPE) in C++; so do x / 0 and x % 0.
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2] x) => (int64[1] q) <int64[1] lo = {-9223372036854775807}, int64[1] one = {1}, int64[1] m1 = {-1}, int64[1] z = {0}> {
      min = Sub(lo, one)
      q = Div(min, m1)
      qz = Div(one, z)
      e = ConstantOfShape(q)
      ez = ConstantOfShape(qz)
    })");
  EXPECT_EQ(r.types["q"], "int64[1]");
  EXPECT_EQ(r.types["e"], "float[?]");  // the quotient has no value
  EXPECT_EQ(r.types["ez"], "float[?]");
  SymExpr lo = SymExpr::constant(std::numeric_limits<int64_t>::min());
  SymExpr n = SymExpr::symbol("N");
  EXPECT_TRUE(SymExpr::floorDiv(lo, SymExpr::constant(-1)).overflowed());
  EXPECT_EQ(SymExpr::mod(lo, SymExpr::constant(-1)).constantValue(), 0);
  EXPECT_TRUE(SymExpr::floorDiv(n, SymExpr::constant(0)).overflowed());
  EXPECT_TRUE(SymExpr::floorDiv(SymExpr::constant(0), SymExpr::constant(0)).overflowed());
  EXPECT_TRUE(SymExpr::mod(n, SymExpr::constant(0)).overflowed());
  EXPECT_TRUE(SymExpr::ceilDiv(SymExpr::constant(5), SymExpr::constant(0)).overflowed());
  EXPECT_TRUE((lo - SymExpr::constant(1)).overflowed());
  EXPECT_TRUE((SymExpr::constant(0) - lo).overflowed());
  EXPECT_TRUE((SymExpr::constant(int64_t{1} << 62) * SymExpr::constant(4)).overflowed());
  EXPECT_TRUE(Dim::fromExpr(lo - SymExpr::constant(1)).isUnknown());
}

TEST(InferenceEdgesTest, ExpressionsStopGrowingPastABound) {
  // min(e, e + 1) nests e twice: unchecked, its text doubles with every step.
  SymExpr e = SymExpr::symbol("N");
  for (int i = 0; i < 64 && !e.overflowed(); ++i) e = SymExpr::min(e, e + SymExpr::constant(1));
  EXPECT_TRUE(e.overflowed());
  EXPECT_TRUE(Dim::fromExpr(e).isUnknown());
  // Squaring (N + 1) doubles its terms: unchecked, forty squarings need 2^40 of them.
  SymExpr p = SymExpr::symbol("N") + SymExpr::constant(1);
  for (int i = 0; i < 40 && !p.overflowed(); ++i) p = p * p;
  EXPECT_TRUE(p.overflowed());
  // Likewise through a model: Mul of shape values.
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N] x) => (float[?] y) <int64[1] one = {1}> {
      s = Shape(x)
      p0 = Add(s, one)
      p1 = Mul(p0, p0)
      p2 = Mul(p1, p1)
      p3 = Mul(p2, p2)
      p4 = Mul(p3, p3)
      p5 = Mul(p4, p4)
      p6 = Mul(p5, p5)
      p7 = Mul(p6, p6)
      p8 = Mul(p7, p7)
      p9 = Mul(p8, p8)
      p10 = Mul(p9, p9)
      y = ConstantOfShape(p10)
    })");
  EXPECT_EQ(r.types["y"], "float[?]");
}

TEST(InferenceEdgesTest, RepeatedOrOutOfRangeAxesGiveUnknownShapes) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,1,3] x) => (float[2,1,1,3] ok) <int64[2] dup = {0, 0}, int64[2] dup_neg = {1, -2}, int64[2] dup_u = {1, -4}, int64[1] far = {7}, int64[1] s0 = {0}, int64[1] e1 = {1}, int64[2] s2 = {0, 0}, int64[2] e2 = {1, 1}, int64[2] a2 = {0, 0}, int64[2] p2 = {1, 1}, float c0 = {0.0}> {
      u = Unsqueeze(x, dup)
      u2 = Unsqueeze(x, dup_u)
      uf = Unsqueeze(x, far)
      q = Squeeze(x, dup_neg)
      qn = Squeeze(x, s0)
      t = Transpose <perm = [0, 0, 1]> (x)
      tf = Transpose <perm = [0, 1, 5]> (x)
      ts = Transpose <perm = [1, 0]> (x)
      sl = Slice(x, s2, e2, a2)
      sa = Slice(x, s2, e2, s0)
      p = Pad(x, p2, c0, a2)
      rd = ReduceSum <keepdims = 1> (x, dup)
      ok = Unsqueeze(x, e1)
    })");
  for (const char* v : {"u", "u2", "uf", "q", "qn", "t", "tf", "ts"}) {
    EXPECT_EQ(r.types[v], "float") << v;
  }
  EXPECT_EQ(r.types["sl"], "float[?,?,?]");
  EXPECT_EQ(r.types["sa"], "float[?,1,3]");  // three starts for one axis: the axis is unknown
  EXPECT_EQ(r.types["p"], "float[?,?,?]");
  EXPECT_EQ(r.types["rd"], "float[1,1,3]");  // a reduction over a set of axes
  EXPECT_EQ(r.types["ok"], "float[2,1,1,3]");
  EXPECT_GE(r.warnings.size(), 10u);
  // Deterministic: the same model gives the same types and warnings again.
  auto again = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3] x) => (float u) <int64[2] dup = {0, 0}> { u = Unsqueeze(x, dup) })");
  ASSERT_EQ(again.warnings.size(), 1u);
  EXPECT_NE(again.warnings[0].find("axes out of range or repeated"), std::string::npos);
}

TEST(InferenceEdgesTest, SliceExtremes) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[5] x, float[0] z, float[N] n) => (float[5] rev) <int64[1] imin = {-9223372036854775807}, int64[1] imax = {9223372036854775807}, int64[1] m1 = {-1}, int64[1] a0 = {0}, int64[1] two = {2}, int64[1] big_step = {4611686018427387904}, int64[1] m5 = {-5}, int64[1] zero = {0}> {
      rev = Slice(x, m1, imin, a0, m1)
      step_min = Slice(x, imax, imin, a0, imin)
      huge = Slice(x, two, imax, a0, big_step)
      empty_rev = Slice(z, m1, imin, a0, m1)
      last5 = Slice(n, m5, imax, a0)
      from2 = Slice(n, two, imax, a0)
      first2 = Slice(n, zero, two, a0)
      n_rev = Slice(n, m1, imin, a0, m1)
      zero_step = Slice(x, zero, imax, a0, zero)
    })");
  EXPECT_EQ(r.types["rev"], "float[5]");
  EXPECT_EQ(r.types["step_min"], "float[1]");
  EXPECT_EQ(r.types["huge"], "float[1]");
  EXPECT_EQ(r.types["empty_rev"], "float[0]");
  // The clamp happens at run time: never 5 for x[-5:] on a dim that may be 3.
  EXPECT_EQ(r.types["last5"], "float[(min(5, N))]");
  EXPECT_EQ(r.types["from2"], "float[(max(0, N - 2))]");
  EXPECT_EQ(r.types["first2"], "float[(min(2, N))]");
  EXPECT_EQ(r.types["n_rev"], "float[N]");
  EXPECT_EQ(r.types["zero_step"], "float[?]");
}

TEST(InferenceEdgesTest, AbsurdAttributesAndValues) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[1,2,8,8] x, float[4,2,3,3] w, float[2,3,3] d, int64[2,3] i, int64[10000000000] huge) => (float ds) <int64[1] lo = {-9223372036854775807}, int64[1] hi = {9223372036854775807}, int64[1] one = {1}, float f0 = {0.0}, float fbig = {1e30}, float f1 = {1.0}, int64[8] pbig = {0, 0, 0, 4611686018427387904, 0, 0, 0, 4611686018427387904}, int64[8] pneg = {0, 0, -9, 0, 0, 0, 0, 0}, int64[3] sneg = {1, -1, 2}, float[4] sc = {1.0, 1.0, 1e30, -2.0}, float depth = {1e30}> {
      c0 = Conv <strides = [0, 1]> (x, w)
      cd = Conv <dilations = [4611686018427387904, 1]> (x, w)
      ck = AveragePool <kernel_shape = [0, 1]> (x)
      ct = ConvTranspose <output_padding = [1]> (x, w)
      r1 = Range(lo, hi, one)
      r2 = Range(f0, fbig, f1)
      pb = Pad(x, pbig)
      pn = Pad(x, pneg)
      sp0, sp1, sp2 = Split <axis = 1> (d, sneg)
      u0, u1, u2, u3 = Split <axis = 1, num_outputs = 4> (w)
      rs = Resize(x, , sc)
      oh = OneHot(i, depth, w)
      gn = GatherND <batch_dims = -1> (x, i)
      ds = DepthToSpace <blocksize = 0> (x)
      rh = Reshape(x, huge)
      eh = Expand(x, huge)
      ch = ConstantOfShape(huge)
    })");
  // A shape tensor of absurd length gives an unknown rank, not that many dims.
  EXPECT_EQ(r.types["rh"], "float");
  EXPECT_EQ(r.types["eh"], "float");
  EXPECT_EQ(r.types["ch"], "float");
  EXPECT_EQ(r.types["c0"], "float[?,?,?,?]");
  EXPECT_EQ(r.types["cd"], "float[1,4,?,6]");
  EXPECT_EQ(r.types["ck"], "float[?,?,?,?]");
  EXPECT_EQ(r.types["ct"], "float[?,?,?,?]");
  EXPECT_EQ(r.types["r1"], "int64[?]");
  EXPECT_EQ(r.types["r2"], "float[?]");
  EXPECT_EQ(r.types["pb"], "float[1,2,8,?]");
  EXPECT_EQ(r.types["pn"], "float[1,2,?,8]");
  EXPECT_EQ(r.types["sp0"], "float[2,?,3]");
  EXPECT_EQ(r.types["u0"], "float[4,1,3,3]");
  // 2 into 4 parts of 1 leaves the last at -1: a negative dim, unknown (as onnx writes it).
  EXPECT_EQ(r.types["u3"], "float[4,-1,3,3]");
  EXPECT_EQ(r.types["rs"], "float[?,?,?,?]");
  EXPECT_EQ(r.types["oh"], "float[2,3,?]");
  EXPECT_EQ(r.types["gn"], "float");
  // Reshape with two -1 is refused at import now (test_malformed.py), so it is not here.
  EXPECT_EQ(r.types["ds"], "float[?,?,?,?]");
}

TEST(InferenceEdgesTest, ControlFlowWithTooFewInputs) {
  auto r = infer(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[3,2] x) => (float s) {
      s = Scan (x) <
        num_scan_inputs = 5, body = body (float[2] v) => (float[2] o) { o = Neg(v) }
      >
    })");
  EXPECT_EQ(r.warnings.size(), 1u);
}

}  // namespace
}  // namespace onnxopt::ir
