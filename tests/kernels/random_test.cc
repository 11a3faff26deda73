// Tests of numpy's legacy generator (kernels/reference/mt19937.h) and of the training-mode kernels:
// Dropout and BatchNormalization in training mode, the Random* ops and Bernoulli, and the
// ai.onnx.preview.training optimizers (training.cc), with their bad inputs (kInvalidArgument). tests/python/
// test_random_generator.py checks the seeded ops against ONNX's reference implementation.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../../kernels/reference/mt19937.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/runtime/compare.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;
using Values = std::vector<double>;

HostTensor floats(Dims dims, const Values& v) {
  HostTensor t = HostTensor::zeros(DataType::kFloat, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i)
    t.set<float>(static_cast<int64_t>(i), static_cast<float>(v[i]));
  return t;
}

HostTensor boolScalar(bool b) {
  HostTensor t = HostTensor::zeros(DataType::kBool, {});
  t.set<uint8_t>(0, b ? 1 : 0);
  return t;
}

StatusOr<std::vector<HostTensor>> runOp(const std::string& op, int64_t opset,
                                        const std::vector<std::optional<HostTensor>>& inputs,
                                        const KernelAttrs& attrs, size_t num_outputs = 1) {
  std::vector<const HostTensor*> ptrs;
  for (const auto& in : inputs) ptrs.push_back(in ? &*in : nullptr);
  return runReferenceKernel(op, opset, ptrs, attrs, num_outputs);
}

Values values(const HostTensor& t) {
  auto v = runtime::tensorAsDoubles(t);
  return v ? Values(v->begin(), v->end()) : Values();
}

void expectNear(const Values& got, const Values& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "at " << i;
}

TEST(Mt19937Test, MatchesThePublishedSequenceForSeed5489) {
  // init_genrand(5489), the reference code's default seed: its first outputs, and the 10000th
  // (the value the C++ standard gives for std::mt19937).
  ref::Mt19937 mt(5489);
  EXPECT_EQ(mt.nextU32(), 3499211612u);
  EXPECT_EQ(mt.nextU32(), 581869302u);
  EXPECT_EQ(mt.nextU32(), 3890346734u);
  for (int i = 3; i < 9999; ++i) mt.nextU32();
  EXPECT_EQ(mt.nextU32(), 4123659995u);
}

TEST(Mt19937Test, MatchesNumpyRandomState) {
  // Constants from running numpy once: RandomState(42).random_sample(3), RandomState(42).randn(3),
  // RandomState(0).binomial(1, [0, 1, 0.3, 0.8, 0.5]).
  ref::Mt19937 u(42);
  EXPECT_EQ(u.nextDouble(), 0.3745401188473625);
  EXPECT_EQ(u.nextDouble(), 0.9507143064099162);
  EXPECT_EQ(u.nextDouble(), 0.7319939418114051);
  ref::Mt19937 g(42);
  EXPECT_EQ(g.nextGauss(), 0.4967141530112327);
  EXPECT_EQ(g.nextGauss(), -0.13826430117118466);
  EXPECT_EQ(g.nextGauss(), 0.6476885381006925);
  ref::Mt19937 b(0);
  std::vector<int> got;
  for (double p : {0.0, 1.0, 0.3, 0.8, 0.5}) got.push_back(b.nextBernoulli(p));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 0, 1, 0}));
}

TEST(DropoutTrainingTest, SeededMaskAndScale) {
  HostTensor x = floats({2, 3}, {1, -2, 3, -4, 5, -6});
  KernelAttrs a;
  a.ints["seed"] = 42;
  auto out = runOp("Dropout", 13, {x, floats({}, {0.5}), boolScalar(true)}, a, 2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  // RandomState(42).uniform(0, 1, 6) >= 0.5: the first three draws are 0.37, 0.95, 0.73.
  Values mask = values((*out)[1]);
  EXPECT_EQ(mask[0], 0);
  EXPECT_EQ(mask[1], 1);
  EXPECT_EQ(mask[2], 1);
  Values y = values((*out)[0]);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(y[i], mask[i] != 0 ? 2 * values(x)[i] : 0.0);
  // The same seed gives the same result.
  auto again = runOp("Dropout", 13, {x, floats({}, {0.5}), boolScalar(true)}, a, 2);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(values((*again)[1]), mask);
}

TEST(DropoutTrainingTest, RejectsBadRatioAndSeed) {
  HostTensor x = floats({4}, {1, 2, 3, 4});
  KernelAttrs a;
  a.ints["seed"] = 1;
  EXPECT_EQ(runOp("Dropout", 12, {x, floats({}, {1.0}), boolScalar(true)}, a).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(runOp("Dropout", 12, {x, floats({}, {-0.5}), boolScalar(true)}, a).status().code(),
            StatusCode::kInvalidArgument);
  a.ints["seed"] = -1;
  EXPECT_EQ(runOp("Dropout", 12, {x, floats({}, {0.5}), boolScalar(true)}, a).status().code(),
            StatusCode::kInvalidArgument);
  // Inference mode ignores the seed.
  EXPECT_TRUE(runOp("Dropout", 12, {x, floats({}, {0.5}), boolScalar(false)}, a).isOk());
}

TEST(RandomOpsTest, RejectSeedsNumpyRejects) {
  KernelAttrs a;
  a.int_lists["shape"] = {3};
  a.floats["seed"] = -1.0f;
  EXPECT_EQ(runOp("RandomUniform", 22, {}, a).status().code(), StatusCode::kInvalidArgument);
  a.floats["seed"] = 5e9f;
  EXPECT_EQ(runOp("RandomNormal", 22, {}, a).status().code(), StatusCode::kInvalidArgument);
  KernelAttrs b;
  b.floats["seed"] = 0.0f;
  EXPECT_EQ(runOp("Bernoulli", 22, {floats({2}, {0.5, 1.5})}, b).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(BatchNormTrainingTest, RunningStatisticsAndSavedOutputs) {
  HostTensor x = floats({2, 2}, {1, 2, 3, 4});
  std::vector<std::optional<HostTensor>> in = {x, floats({2}, {1, 2}), floats({2}, {0, 1}),
                                               floats({2}, {0, 0}), floats({2}, {1, 1})};
  KernelAttrs a;
  a.floats["epsilon"] = 0.0f;
  a.ints["training_mode"] = 1;
  auto out = runOp("BatchNormalization", 15, in, a, 3);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  // Channel 0 holds 1, 3 (mean 2, var 1), channel 1 holds 2, 4 (mean 3, var 1).
  expectNear(values((*out)[0]), {-1, -1, 1, 3});
  expectNear(values((*out)[1]), {0.2, 0.3});
  expectNear(values((*out)[2]), {1, 1});
  // Before opset 14 the statistics outputs select training mode; saved_mean and saved_var follow.
  KernelAttrs old;
  old.floats["epsilon"] = 0.0f;
  auto out9 = runOp("BatchNormalization", 9, in, old, 5);
  ASSERT_TRUE(out9.isOk()) << out9.status().toString();
  expectNear(values((*out9)[0]), {-1, -1, 1, 3});
  expectNear(values((*out9)[3]), {2, 3});
  expectNear(values((*out9)[4]), {1, 1});
  // More outputs than the mode has, and an empty batch, are refused.
  EXPECT_EQ(runOp("BatchNormalization", 15, in, a, 4).status().code(),
            StatusCode::kInvalidArgument);
  KernelAttrs inference;
  EXPECT_EQ(runOp("BatchNormalization", 15, in, inference, 3).status().code(),
            StatusCode::kInvalidArgument);
  in[0] = floats({0, 2}, {});
  EXPECT_EQ(runOp("BatchNormalization", 15, in, a, 3).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(BatchNormTrainingTest, NonSpatialBeforeOpset9) {
  HostTensor x = floats({1, 2, 2}, {1, 2, 3, 4});
  HostTensor ones = floats({2, 2}, {1, 1, 1, 1});
  KernelAttrs a;
  a.ints["spatial"] = 0;
  a.floats["epsilon"] = 0.0f;
  auto out = runOp("BatchNormalization", 7, {x, ones, floats({2, 2}, {0, 0, 0, 0}), ones, ones}, a);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  expectNear(values((*out)[0]), {0, 1, 2, 3});
  // Per-channel parameters do not fit spatial=0.
  HostTensor c = floats({2}, {1, 1});
  EXPECT_EQ(runOp("BatchNormalization", 7, {x, c, c, c, c}, a).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(OptimizerTest, AdagradStepAndBadInputs) {
  const std::string op = "ai.onnx.preview.training.Adagrad";
  HostTensor r = floats({}, {0.1});
  HostTensor t = HostTensor::zeros(DataType::kInt64, {});
  t.set<int64_t>(0, 1);
  HostTensor x = floats({2}, {1, 2}), g = floats({2}, {3, -4}), h = floats({2}, {0, 9});
  KernelAttrs a;
  a.floats = {{"epsilon", 0.0f}, {"decay_factor", 1.0f}};
  auto out = runOp(op, 1, {r, t, x, g, h}, a, 2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  // r = 0.1 / 2; H' = H + G^2 = {9, 25}; X' = X - r * G / sqrt(H').
  expectNear(values((*out)[1]), {9, 25});
  expectNear(values((*out)[0]), {1 - 0.05 * 3 / 3, 2 + 0.05 * 4 / 5});
  // Inputs not in groups of three, the wrong output count, a non-scalar R, a float T.
  EXPECT_EQ(runOp(op, 1, {r, t, x, g}, a, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(runOp(op, 1, {r, t, x, g, h}, a, 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(runOp(op, 1, {x, t, x, g, h}, a, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(runOp(op, 1, {r, r, x, g, h}, a, 2).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(runOp(op, 1, {r, t, x, floats({1}, {1}), h}, a, 2).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(OptimizerTest, MomentumNeedsItsAttributes) {
  const std::string op = "ai.onnx.preview.training.Momentum";
  HostTensor r = floats({}, {0.1});
  HostTensor t = HostTensor::zeros(DataType::kInt64, {});
  HostTensor x = floats({1}, {1});
  KernelAttrs a;
  a.floats = {{"alpha", 0.5f}, {"beta", 0.5f}, {"norm_coefficient", 0.0f}};
  EXPECT_EQ(runOp(op, 1, {r, t, x, x, x}, a, 2).status().code(), StatusCode::kInvalidArgument);
  a.strings["mode"] = "heavy-ball";
  EXPECT_EQ(runOp(op, 1, {r, t, x, x, x}, a, 2).status().code(), StatusCode::kInvalidArgument);
  a.strings["mode"] = "standard";
  auto out = runOp(op, 1, {r, t, x, x, x}, a, 2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  // T = 0: the gradient's coefficient is 1, V' = 0.5 * 1 + 1 = 1.5, X' = 1 - 0.1 * 1.5.
  expectNear(values((*out)[1]), {1.5});
  expectNear(values((*out)[0]), {0.85});
}

}  // namespace
}  // namespace onnxopt::kernels
