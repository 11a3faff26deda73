// The host planner of the CUDA elementwise kernels' broadcasting (kernels/cuda/elementwise/broadcast.h): output
// dims, per-input strides (0 on broadcast dims), the linear fast path and the refusals. Runs
// without a GPU.
#include "kernels/cuda/elementwise/broadcast.h"

#include <gtest/gtest.h>

namespace onnxopt::kernels::cuda {
namespace {

ConstTensorView view(std::vector<int64_t> dims) {
  std::vector<int64_t> strides = contiguousStrides(dims);
  return ConstTensorView(DataType::kFloat, std::move(dims), std::move(strides), nullptr,
                         MemoryKind::kDevice);
}

TEST(BroadcastDims, Multidirectional) {
  auto dims = broadcastDims({{2, 1, 3}, {4, 3}, {}}, "Add");
  ASSERT_TRUE(dims.isOk()) << dims.status().toString();
  EXPECT_EQ(*dims, (std::vector<int64_t>{2, 4, 3}));
}

TEST(BroadcastDims, MismatchNamesTheOpAndDims) {
  auto dims = broadcastDims({{2, 3}, {4, 3}}, "Mul");
  ASSERT_FALSE(dims.isOk());
  EXPECT_EQ(dims.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dims.status().message().find("Mul"), std::string::npos) << dims.status().message();
  EXPECT_NE(dims.status().message().find("[2, 3] and [4, 3]"), std::string::npos)
      << dims.status().message();
}

TEST(PlanBroadcast, StridesAreZeroOnBroadcastDims) {
  auto plan = planBroadcast({view({2, 1, 3}), view({4, 3})}, view({2, 4, 3}), "Add");
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_FALSE(plan->linear);
  EXPECT_EQ(plan->rank, 3);
  EXPECT_EQ(plan->count, 24);
  EXPECT_EQ(plan->strides[0][0], 3);
  EXPECT_EQ(plan->strides[0][1], 0);
  EXPECT_EQ(plan->strides[0][2], 1);
  EXPECT_EQ(plan->strides[1][0], 0);
  EXPECT_EQ(plan->strides[1][1], 3);
  EXPECT_EQ(plan->strides[1][2], 1);
}

TEST(PlanBroadcast, CoalescesDimsEveryInputStepsThroughAsOne) {
  // A bias over [32, 128, 768]: the two leading dims are one for both inputs.
  auto plan = planBroadcast({view({32, 128, 768}), view({768})}, view({32, 128, 768}), "Add");
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->rank, 2);
  EXPECT_EQ(plan->dims[0], 4096);
  EXPECT_EQ(plan->dims[1], 768);
  EXPECT_EQ(plan->strides[0][0], 768);
  EXPECT_EQ(plan->strides[0][1], 1);
  EXPECT_EQ(plan->strides[1][0], 0);
  EXPECT_EQ(plan->strides[1][1], 1);
  EXPECT_TRUE(plan->index32);
  // An attention mask [2, 1, 1, 16] over [2, 3, 4, 16]: heads and rows merge (both broadcast),
  // size-1 dims go.
  plan = planBroadcast({view({2, 3, 4, 16}), view({2, 1, 1, 16})}, view({2, 3, 4, 16}), "Add");
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->rank, 3);
  EXPECT_EQ(plan->dims[1], 12);
  EXPECT_EQ(plan->strides[1][0], 16);
  EXPECT_EQ(plan->strides[1][1], 0);
  EXPECT_EQ(plan->strides[1][2], 1);
  // Not coalesced on request: the output's dims.
  plan = planBroadcast({view({32, 128, 768}), view({768})}, view({32, 128, 768}), "Sum", false);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->rank, 3);
}

TEST(PlanBroadcast, IndexesIn32BitsOnlyWhereEveryOffsetFits) {
  auto big =
      planBroadcast({view({1 << 16, 1 << 15}), view({1 << 15})}, view({1 << 16, 1 << 15}), "Add");
  ASSERT_TRUE(big.isOk()) << big.status().toString();
  EXPECT_FALSE(big->index32);  // 2^31 elements
  auto fits =
      planBroadcast({view({1 << 15, 1 << 15}), view({1 << 15})}, view({1 << 15, 1 << 15}), "Add");
  ASSERT_TRUE(fits.isOk()) << fits.status().toString();
  EXPECT_TRUE(fits->index32);
}

TEST(PlanBroadcast, SameShapesAreLinear) {
  auto plan = planBroadcast({view({5, 7}), view({5, 7})}, view({5, 7}), "Sub");
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_TRUE(plan->linear);
}

TEST(PlanBroadcast, StridedInputKeepsItsStrides) {
  // A transposed view of a [3, 2] buffer: dims [2, 3], strides [1, 2].
  ConstTensorView t(DataType::kFloat, {2, 3}, {1, 2}, nullptr, MemoryKind::kDevice);
  auto plan = planBroadcast({t}, view({2, 3}), "Relu");
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_FALSE(plan->linear);
  EXPECT_EQ(plan->strides[0][0], 1);
  EXPECT_EQ(plan->strides[0][1], 2);
}

TEST(PlanBroadcast, ScalarInputReadsElementZero) {
  auto plan = planBroadcast({view({}), view({4})}, view({4}), "Add");
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->strides[0][0], 0);
  EXPECT_EQ(plan->strides[1][0], 1);
}

TEST(PlanBroadcast, RefusesAWrongOutputShape) {
  auto plan = planBroadcast({view({2, 3}), view({3})}, view({3, 2}), "Add");
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("[3, 2]"), std::string::npos) << plan.status().message();
}

TEST(PlanBroadcast, RefusesANonContiguousOutput) {
  ConstTensorView out(DataType::kFloat, {2, 3}, {1, 2}, nullptr, MemoryKind::kDevice);
  auto plan = planBroadcast({view({2, 3})}, out, "Neg");
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("contiguous"), std::string::npos);
}

TEST(PlanBroadcast, RankAboveEightIsUnimplemented) {
  std::vector<int64_t> dims(9, 1);
  auto plan = planBroadcast({view(dims)}, view(dims), "Exp");
  ASSERT_FALSE(plan.isOk());
  EXPECT_EQ(plan.status().code(), StatusCode::kUnimplemented);
  auto eight =
      planBroadcast({view(std::vector<int64_t>(8, 2))}, view(std::vector<int64_t>(8, 2)), "Exp");
  EXPECT_TRUE(eight.isOk()) << eight.status().toString();
}

}  // namespace
}  // namespace onnxopt::kernels::cuda
