// The roofline cost of plan steps (runtime/step_cost.h): each product family's flops from its
// planned dims, bytes as each distinct value once, and nothing claimed where dims are unknown.
#include "onnxopt/runtime/step_cost.h"

#include <gtest/gtest.h>

#include "model_feeds.h"

namespace onnxopt::runtime {
namespace {

/// A device that claims every op, so that every node is a device step.
class AnyOp final : public kernels::Capabilities {
 public:
  const char* name() const override { return "any"; }
  kernels::Support supports(const kernels::OpQuery&) const override {
    return kernels::Support::yes();
  }
};

/// The cost of the step running the node that writes `output`.
StepCost costOf(const std::string& text, const InputShapes& shapes, const std::string& output) {
  auto model = test::parseInferred(text);
  AnyOp device;
  auto plan = buildPlan(*model, shapes, device);
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  if (!plan.isOk()) return {};
  for (const Step& step : plan->steps) {
    if (step.kind != Step::Kind::kNode) continue;
    const PlannedNode& n = plan->nodes[static_cast<size_t>(step.node)];
    if (!n.outputs.empty() && plan->values[static_cast<size_t>(n.outputs[0])].name == output) {
      return stepCost(*plan, step);
    }
  }
  ADD_FAILURE() << "no step writes " << output;
  return {};
}

TEST(StepCost, MatMulIsTwiceMNKAndReadsEachOperandOnce) {
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float16[B, 64, 32] a, float16[32, 48] b) => (float16[B, 64, 48] y) { y = MatMul(a, b) }
)";
  StepCost c = costOf(
      text, {{"a", {DataType::kFloat16, {3, 64, 32}}}, {"b", {DataType::kFloat16, {32, 48}}}}, "y");
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 3 * 64 * 48 * 32);
  EXPECT_EQ(c.bytes, 2 * (3 * 64 * 32 + 32 * 48 + 3 * 64 * 48));
  EXPECT_EQ(c.dtype, DataType::kFloat16);
  // The same value twice is read once.
  const char* square = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[8, 8] a) => (float[8, 8] y) { y = MatMul(a, a) }
)";
  EXPECT_EQ(costOf(square, {{"a", {DataType::kFloat, {8, 8}}}}, "y").bytes, 4 * (64 + 64));
}

TEST(StepCost, GemmReducesOverTransposedA) {
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[20, 10] a, float[20, 30] b) => (float[10, 30] y) { y = Gemm<transA = 1>(a, b) }
)";
  StepCost c =
      costOf(text, {{"a", {DataType::kFloat, {20, 10}}}, {"b", {DataType::kFloat, {20, 30}}}}, "y");
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 10 * 30 * 20);
}

TEST(StepCost, ConvolutionsCountTheirWindows) {
  const char* conv = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 8, 10, 10] x, float[16, 4, 3, 3] w) => (float[1, 16, 8, 8] y) { y = Conv<group = 2>(x, w) }
)";
  StepCost c = costOf(
      conv, {{"x", {DataType::kFloat, {1, 8, 10, 10}}}, {"w", {DataType::kFloat, {16, 4, 3, 3}}}},
      "y");
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * (16 * 8 * 8) * (4 * 3 * 3));
  const char* transposed = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 4, 5, 5] x, float[4, 6, 3, 3] w) => (float[1, 6, 7, 7] y) { y = ConvTranspose(x, w) }
)";
  c = costOf(transposed,
             {{"x", {DataType::kFloat, {1, 4, 5, 5}}}, {"w", {DataType::kFloat, {4, 6, 3, 3}}}},
             "y");
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * (4 * 5 * 5) * (6 * 3 * 3));
}

TEST(StepCost, AttentionCountsBothProductsOverTheKeys) {
  const char* text = R"(
<ir_version: 10, opset_import: ["" : 23]>
g (float16[2, 4, 16, 8] q, float16[2, 2, 32, 8] k, float16[2, 2, 32, 8] v) => (float16[2, 4, 16, 8] y) {
  y = Attention(q, k, v)
}
)";
  StepCost c = costOf(text,
                      {{"q", {DataType::kFloat16, {2, 4, 16, 8}}},
                       {"k", {DataType::kFloat16, {2, 2, 32, 8}}},
                       {"v", {DataType::kFloat16, {2, 2, 32, 8}}}},
                      "y");
  EXPECT_DOUBLE_EQ(c.flops, 4.0 * (2 * 4 * 16 * 8) * 32);
}

TEST(StepCost, LstmCountsEveryStepsGateProducts) {
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[5, 3, 10] x, float[1, 24, 10] w, float[1, 24, 6] r) => (float[5, 1, 3, 6] y) {
  y = LSTM<hidden_size = 6>(x, w, r)
}
)";
  StepCost c = costOf(text,
                      {{"x", {DataType::kFloat, {5, 3, 10}}},
                       {"w", {DataType::kFloat, {1, 24, 10}}},
                       {"r", {DataType::kFloat, {1, 24, 6}}}},
                      "y");
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 5 * 3 * (24 * 10 + 24 * 6));
}

TEST(StepCost, OtherOpsMoveBytesOnly) {
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4, 6] a, float[6] b) => (float[4, 6] y) { y = Add(a, b) }
)";
  StepCost c =
      costOf(text, {{"a", {DataType::kFloat, {4, 6}}}, {"b", {DataType::kFloat, {6}}}}, "y");
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.dtype, DataType::kUndefined);
  EXPECT_EQ(c.bytes, 4 * (24 + 6 + 24));
}

}  // namespace
}  // namespace onnxopt::runtime
