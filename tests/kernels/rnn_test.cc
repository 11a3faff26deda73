// Tests of the recurrent reference kernels (kernels/reference/rnn.cc): values worked out by hand
// from the ops' equations with hidden size 1, over the float element types; directions,
// sequence_lens, layout 1, the LSTM and GRU options; and inputs that break the contract.
// ONNX's node conformance cases and tests/python/test_rnn_ort.py (onnxruntime) are the other oracles.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/reference.h"
#include "test_tensors.h"

namespace onnxopt::kernels {
namespace {

using Inputs = std::vector<std::optional<HostTensor>>;
using Values = std::vector<double>;
using Dims = std::vector<int64_t>;

/// The element types of T: the kernel computes in double and rounds once to each.
constexpr DataType kFloatTypes[] = {DataType::kFloat16, DataType::kBfloat16, DataType::kFloat,
                                    DataType::kDouble};

HostTensor floats(DataType type, Dims dims, const Values& values) {
  return test::tensorOf(type, std::move(dims), values);
}

StatusOr<std::vector<HostTensor>> run(const std::string& op, const Inputs& inputs,
                                      const KernelAttrs& attrs, size_t outputs,
                                      int64_t opset = 14) {
  std::vector<const HostTensor*> ptrs;
  for (const auto& t : inputs) ptrs.push_back(t ? &*t : nullptr);
  return runReferenceKernel(op, opset, ptrs, attrs, outputs);
}

double at(const HostTensor& t, int64_t i) {
  switch (t.dtype) {
    case DataType::kFloat:
      return t.get<float>(i);
    case DataType::kDouble:
      return t.get<double>(i);
    case DataType::kFloat16:
      return halfToFloat(t.get<uint16_t>(i));
    case DataType::kBfloat16:
      return bfloat16ToFloat(t.get<uint16_t>(i));
    default:
      ADD_FAILURE() << "not a float tensor";
      return 0;
  }
}

double tolerance(DataType type) {
  return type == DataType::kBfloat16 ? 2e-2 : type == DataType::kFloat16 ? 2e-3 : 1e-6;
}

void expectValues(const HostTensor& t, const Dims& dims, const Values& want,
                  const std::string& what) {
  EXPECT_EQ(t.dims, dims) << what;
  ASSERT_EQ(t.numElements(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(at(t, static_cast<int64_t>(i)), want[i],
                tolerance(t.dtype) * (1 + std::abs(want[i])))
        << what << " element " << i;
  }
}

KernelAttrs attrs(std::map<std::string, int64_t> ints,
                  std::map<std::string, std::string> strings = {}) {
  KernelAttrs a;
  a.ints = std::move(ints);
  a.strings = std::move(strings);
  return a;
}

double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

// RNN, hidden 1: h_t = tanh(w x_t + r h_{t-1} + wb + rb).
TEST(RnnKernel, ForwardReverseAndBidirectionalByHand) {
  const double w = 0.5, r = -0.25, wb = 0.1, rb = 0.2;
  const Values xs = {1, 2, 3};
  auto forward = [&](bool reverse, size_t len) {
    Values ys(xs.size(), 0.0);
    double h = 0;
    for (size_t k = 0; k < len; ++k) {
      size_t t = reverse ? len - 1 - k : k;
      h = std::tanh(w * xs[t] + r * h + wb + rb);
      ys[t] = h;
    }
    return std::pair{ys, h};
  };
  for (DataType type : kFloatTypes) {
    std::string what = dataTypeName(type);
    Inputs in = {floats(type, {3, 1, 1}, xs), floats(type, {1, 1, 1}, {w}),
                 floats(type, {1, 1, 1}, {r}), floats(type, {1, 2}, {wb, rb})};
    auto out = run("RNN", in, attrs({{"hidden_size", 1}}), 2);
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    auto [fy, fh] = forward(false, 3);
    expectValues((*out)[0], {3, 1, 1, 1}, fy, what + " Y");
    expectValues((*out)[1], {1, 1, 1}, {fh}, what + " Y_h");

    auto rev = run("RNN", in, attrs({{"hidden_size", 1}}, {{"direction", "reverse"}}), 2);
    ASSERT_TRUE(rev.isOk()) << rev.status().toString();
    auto [ry, rh] = forward(true, 3);
    expectValues((*rev)[0], {3, 1, 1, 1}, ry, what + " reverse Y");
    expectValues((*rev)[1], {1, 1, 1}, {rh}, what + " reverse Y_h");

    Inputs bi = {floats(type, {3, 1, 1}, xs), floats(type, {2, 1, 1}, {w, w}),
                 floats(type, {2, 1, 1}, {r, r}), floats(type, {2, 2}, {wb, rb, wb, rb})};
    auto both = run("RNN", bi, attrs({{"hidden_size", 1}}, {{"direction", "bidirectional"}}), 2);
    ASSERT_TRUE(both.isOk()) << both.status().toString();
    expectValues((*both)[0], {3, 2, 1, 1}, {fy[0], ry[0], fy[1], ry[1], fy[2], ry[2]},
                 what + " bidirectional Y");
    expectValues((*both)[1], {2, 1, 1}, {fh, rh}, what + " bidirectional Y_h");

    // One direction's activation list serves both directions.
    KernelAttrs one = attrs({{"hidden_size", 1}}, {{"direction", "bidirectional"}});
    one.string_lists["activations"] = {"Tanh"};
    auto shared = run("RNN", bi, one, 2);
    ASSERT_TRUE(shared.isOk()) << shared.status().toString();
    expectValues((*shared)[1], {2, 1, 1}, {fh, rh}, what + " one activation list Y_h");
  }
}

// Batch entry 1 runs 2 of 3 steps: Y is zero after them, Y_h is the second step's state; in
// reverse, the steps run 1, 0. Layout 1 holds the same numbers batch-major.
TEST(RnnKernel, SequenceLensAndLayout) {
  const Values xs = {1, -1, 2, 0.5, 3, 7};  // [seq 3, batch 2, 1]
  Inputs in = {floats(DataType::kFloat, {3, 2, 1}, xs), floats(DataType::kFloat, {2, 1, 1}, {1, 1}),
               floats(DataType::kFloat, {2, 1, 1}, {0.5, 0.5}), std::nullopt,
               floats(DataType::kInt32, {2}, {3, 2})};
  auto out = run("RNN", in, attrs({{"hidden_size", 1}}, {{"direction", "bidirectional"}}), 2);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  auto step = [](double x, double h) { return std::tanh(x + 0.5 * h); };
  double f0 = step(1, 0), f1 = step(2, f0), f2 = step(3, f1);  // batch 0 forward
  double g0 = step(-1, 0), g1 = step(0.5, g0);                 // batch 1 forward
  double r2 = step(3, 0), r1 = step(2, r2), r0 = step(1, r1);  // batch 0 reverse
  double s1 = step(0.5, 0), s0 = step(-1, s1);                 // batch 1 reverse
  Values y = {f0, g0, r0, s0, f1, g1, r1, s1, f2, 0, r2, 0};   // [seq, dir, batch, 1]
  expectValues((*out)[0], {3, 2, 2, 1}, y, "Y");
  expectValues((*out)[1], {2, 2, 1}, {f2, g1, r0, s0}, "Y_h");

  // layout 1: X [batch, seq, 1], Y [batch, seq, dir, 1], Y_h [batch, dir, 1].
  Inputs bf = in;
  bf[0] = floats(DataType::kFloat, {2, 3, 1}, {1, 2, 3, -1, 0.5, 7});
  auto batchwise = run(
      "RNN", bf, attrs({{"hidden_size", 1}, {"layout", 1}}, {{"direction", "bidirectional"}}), 2);
  ASSERT_TRUE(batchwise.isOk()) << batchwise.status().toString();
  expectValues((*batchwise)[0], {2, 3, 2, 1}, {f0, r0, f1, r1, f2, r2, g0, s0, g1, s1, 0, 0},
               "layout 1 Y");
  expectValues((*batchwise)[1], {2, 2, 1}, {f2, r0, g1, s0}, "layout 1 Y_h");
}

// A batch entry of length 0 has no last step: Y_h and Y_c are zero there (onnxruntime's answer),
// not the initial state.
TEST(RnnKernel, ZeroLengthGivesZeroState) {
  Inputs in = {floats(DataType::kFloat, {1, 2, 1}, {1, 2}),
               floats(DataType::kFloat, {1, 4, 1}, {1, 1, 1, 1}),
               floats(DataType::kFloat, {1, 4, 1}, {1, 1, 1, 1}),
               std::nullopt,
               floats(DataType::kInt32, {2}, {0, 1}),
               floats(DataType::kFloat, {1, 2, 1}, {3, 3}),
               floats(DataType::kFloat, {1, 2, 1}, {4, 4})};
  auto out = run("LSTM", in, attrs({{"hidden_size", 1}}), 3);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(at((*out)[0], 0), 0.0);
  EXPECT_NE(at((*out)[0], 1), 0.0);
  EXPECT_EQ(at((*out)[1], 0), 0.0);
  EXPECT_EQ(at((*out)[2], 0), 0.0);
  EXPECT_NE(at((*out)[2], 1), 0.0);
}

// GRU, hidden 1, one step from h0: both linear_before_reset forms.
TEST(RnnKernel, GruByHand) {
  const double x = 0.7, h0 = 0.4;
  const Values w = {0.3, -0.2, 0.9}, r = {0.5, 0.8, -0.6}, b = {0.1, 0.2, 0.3, -0.1, 0.05, 0.4};
  double z = sigmoid(w[0] * x + r[0] * h0 + b[0] + b[3]);
  double rr = sigmoid(w[1] * x + r[1] * h0 + b[1] + b[4]);
  double n0 = std::tanh(w[2] * x + r[2] * (rr * h0) + b[5] + b[2]);
  double n1 = std::tanh(w[2] * x + rr * (r[2] * h0 + b[5]) + b[2]);
  for (DataType type : kFloatTypes) {
    Inputs in = {floats(type, {1, 1, 1}, {x}),
                 floats(type, {1, 3, 1}, w),
                 floats(type, {1, 3, 1}, r),
                 floats(type, {1, 6}, b),
                 std::nullopt,
                 floats(type, {1, 1, 1}, {h0})};
    for (int64_t lbr : {0, 1}) {
      auto out = run("GRU", in, attrs({{"hidden_size", 1}, {"linear_before_reset", lbr}}), 2);
      ASSERT_TRUE(out.isOk()) << out.status().toString();
      double n = lbr ? n1 : n0;
      double h = (1 - z) * n + z * h0;
      expectValues((*out)[1], {1, 1, 1}, {h},
                   std::string(dataTypeName(type)) + " lbr " + std::to_string(lbr));
    }
  }
}

// LSTM, hidden 1, one step with peepholes, clip, input_forget and custom activations.
TEST(RnnKernel, LstmByHand) {
  const double x = 0.6, h0 = -0.3, c0 = 0.8;
  const Values w = {0.2, -0.4, 0.7, 0.5}, r = {0.3, 0.1, -0.2, 0.6};  // i o f c
  const Values b = {0.1, 0.0, -0.1, 0.2, 0.05, 0.1, 0.0, -0.2};
  const Values p = {0.4, -0.5, 0.3};  // i o f
  auto pre = [&](int g) { return w[g] * x + r[g] * h0 + b[g] + b[4 + g]; };
  Inputs in = {floats(DataType::kFloat, {1, 1, 1}, {x}),
               floats(DataType::kFloat, {1, 4, 1}, w),
               floats(DataType::kFloat, {1, 4, 1}, r),
               floats(DataType::kFloat, {1, 8}, b),
               std::nullopt,
               floats(DataType::kFloat, {1, 1, 1}, {h0}),
               floats(DataType::kFloat, {1, 1, 1}, {c0}),
               floats(DataType::kFloat, {1, 3}, p)};
  {
    double i = sigmoid(pre(0) + p[0] * c0), f = sigmoid(pre(2) + p[2] * c0);
    double c = f * c0 + i * std::tanh(pre(3));
    double o = sigmoid(pre(1) + p[1] * c);
    auto out = run("LSTM", in, attrs({{"hidden_size", 1}}), 3);
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    expectValues((*out)[0], {1, 1, 1, 1}, {o * std::tanh(c)}, "Y");
    expectValues((*out)[1], {1, 1, 1}, {o * std::tanh(c)}, "Y_h");
    expectValues((*out)[2], {1, 1, 1}, {c}, "Y_c");
  }
  {
    // input_forget, clip 0.05, activations HardSigmoid(0.3, 0.4) Elu(default 1) ScaledTanh(2, 0.5).
    auto clip = [](double v) { return std::clamp(v, -0.05, 0.05); };
    auto hs = [](double v) { return std::clamp(0.3 * v + 0.4, 0.0, 1.0); };
    auto elu = [](double v) { return v >= 0 ? v : std::exp(v) - 1; };
    double i = hs(clip(pre(0) + p[0] * c0));
    double c = (1 - i) * c0 + i * elu(clip(pre(3)));
    double o = hs(clip(pre(1) + p[1] * c));
    double h = o * 2 * std::tanh(0.5 * c);
    KernelAttrs a = attrs({{"hidden_size", 1}, {"input_forget", 1}});
    a.floats["clip"] = 0.05f;
    a.string_lists["activations"] = {"HardSigmoid", "Elu", "ScaledTanh"};
    // The lists are read in order by the functions that take them: alpha for HardSigmoid, Elu and
    // ScaledTanh, beta for HardSigmoid and ScaledTanh.
    a.float_lists["activation_alpha"] = {0.3f, 1.0f, 2.0f};
    a.float_lists["activation_beta"] = {0.4f, 0.5f};
    auto out = run("LSTM", in, a, 3);
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    expectValues((*out)[1], {1, 1, 1}, {h}, "options Y_h");
    expectValues((*out)[2], {1, 1, 1}, {c}, "options Y_c");
  }
}

TEST(RnnKernel, RefusesBrokenInputs) {
  auto f = [](Dims dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return floats(DataType::kFloat, dims, Values(static_cast<size_t>(n), 0.5));
  };
  Inputs good = {f({2, 1, 3}), f({1, 4, 3}), f({1, 4, 1})};
  ASSERT_TRUE(run("LSTM", good, attrs({{"hidden_size", 1}}), 3).isOk());
  auto expectInvalid = [](const StatusOr<std::vector<HostTensor>>& r, const std::string& what) {
    ASSERT_FALSE(r.isOk()) << what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument)
        << what << ": " << r.status().toString();
  };
  expectInvalid(run("LSTM", good, attrs({{"hidden_size", 2}}), 1), "hidden_size mismatch");
  expectInvalid(run("LSTM", good, attrs({}, {{"direction", "sideways"}}), 1), "direction");
  expectInvalid(run("LSTM", good, attrs({}, {{"direction", "bidirectional"}}), 1), "W for 1 dir");
  expectInvalid(run("LSTM", good, attrs({{"layout", 2}}), 1), "layout");
  expectInvalid(run("LSTM", good, attrs({}), 4), "too many outputs");
  expectInvalid(run("GRU", good, attrs({}), 1), "W rows for LSTM given to GRU");
  expectInvalid(run("LSTM", {f({2, 3}), f({1, 4, 3}), f({1, 4, 1})}, attrs({}), 1), "X rank");
  Inputs bad_b = good;
  bad_b.push_back(f({1, 7}));
  expectInvalid(run("LSTM", bad_b, attrs({}), 1), "B shape");
  Inputs bad_len = {f({2, 1, 3}), f({1, 4, 3}), f({1, 4, 1}), std::nullopt,
                    floats(DataType::kInt32, {1}, {3})};
  expectInvalid(run("LSTM", bad_len, attrs({}), 1), "sequence length past seq_length");
  bad_len[4] = floats(DataType::kInt32, {1}, {-1});
  expectInvalid(run("LSTM", bad_len, attrs({}), 1), "negative sequence length");
  bad_len[4] = floats(DataType::kInt32, {2}, {1, 1});
  expectInvalid(run("LSTM", bad_len, attrs({}), 1), "sequence_lens shape");
  Inputs bad_h = good;
  bad_h.resize(6);
  bad_h[5] = f({1, 2, 1});
  expectInvalid(run("LSTM", bad_h, attrs({}), 1), "initial_h shape");
  Inputs mixed = {f({2, 1, 3}), floats(DataType::kDouble, {1, 4, 3}, Values(12, 0.5)),
                  f({1, 4, 1})};
  expectInvalid(run("LSTM", mixed, attrs({}), 1), "mixed element types");
  KernelAttrs unknown = attrs({});
  unknown.string_lists["activations"] = {"Sigmoid", "Tanh", "Swish"};
  expectInvalid(run("LSTM", good, unknown, 1), "unknown activation");
  unknown.string_lists["activations"] = {"Sigmoid", "Tanh"};
  expectInvalid(run("LSTM", good, unknown, 1), "too few activations");
  KernelAttrs clip = attrs({});
  clip.floats["clip"] = -1.0f;
  expectInvalid(run("LSTM", good, clip, 1), "negative clip");
  // Integer X is not an element type the op has.
  Inputs ints = {floats(DataType::kInt32, {2, 1, 3}, Values(6, 1)),
                 floats(DataType::kInt32, {1, 4, 3}, Values(12, 1)),
                 floats(DataType::kInt32, {1, 4, 1}, Values(4, 1))};
  EXPECT_EQ(run("LSTM", ints, attrs({}), 1).status().code(), StatusCode::kUnimplemented);
}

// A hostile shape is refused before any work or allocation.
TEST(RnnKernel, RefusesTooMuchWork) {
  // 2^20 steps of 4 x 2^10 gate rows of length 2^10 + 1: past 2^42 multiply-adds.
  HostTensor x = HostTensor::zeros(DataType::kFloat, {int64_t{1} << 20, 1, 1});
  HostTensor w = HostTensor::zeros(DataType::kFloat, {1, 4 << 10, 1});
  HostTensor r = HostTensor::zeros(DataType::kFloat, {1, 4 << 10, 1 << 10});
  auto out = run("LSTM", {x, w, r}, attrs({}), 1);
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted) << out.status().toString();
}

}  // namespace
}  // namespace onnxopt::kernels
