// Tests of the neural-network reference kernels (kernels/reference/nn.cc, nn_norm.cc): values
// worked out by hand or from the op's formula, over the float element types, and the error cases
// (bad pads, group counts, ranks, attributes). ONNX's node conformance cases are the second oracle.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/reference.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/support/half.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;
using Values = std::vector<double>;
using Inputs = std::vector<std::optional<HostTensor>>;

const std::vector<DataType> kFloatTypes = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                           DataType::kBfloat16};

HostTensor tensor(DataType type, Dims dims, const Values& values) {
  HostTensor t = HostTensor::zeros(type, std::move(dims));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numElements());
  for (size_t j = 0; j < values.size(); ++j) {
    auto i = static_cast<int64_t>(j);
    switch (type) {
      case DataType::kFloat:
        t.set<float>(i, static_cast<float>(values[j]));
        break;
      case DataType::kDouble:
        t.set<double>(i, values[j]);
        break;
      case DataType::kFloat16:
        t.set<uint16_t>(i, floatToHalf(static_cast<float>(values[j])));
        break;
      case DataType::kBfloat16:
        t.set<uint16_t>(i, floatToBfloat16(static_cast<float>(values[j])));
        break;
      case DataType::kInt8:
        t.set<int8_t>(i, static_cast<int8_t>(values[j]));
        break;
      case DataType::kInt32:
        t.set<int32_t>(i, static_cast<int32_t>(values[j]));
        break;
      case DataType::kBool:
        t.set<uint8_t>(i, values[j] != 0 ? 1 : 0);
        break;
      default:
        ADD_FAILURE() << "unsupported test type";
    }
  }
  return t;
}

HostTensor f32(Dims dims, const Values& v) {
  return tensor(DataType::kFloat, std::move(dims), v);
}

Values values(const HostTensor& t) {
  auto v = runtime::tensorAsDoubles(t);
  if (!v) ADD_FAILURE() << "unsupported test type";
  return v ? Values(v->begin(), v->end()) : Values();
}

StatusOr<std::vector<HostTensor>> runOp(const std::string& op, int64_t opset, const Inputs& inputs,
                                        const KernelAttrs& attrs, size_t num_outputs) {
  std::vector<const HostTensor*> ptrs;
  for (const auto& in : inputs) ptrs.push_back(in ? &*in : nullptr);
  return runReferenceKernel(op, opset, ptrs, attrs, num_outputs);
}

std::vector<HostTensor> runN(const std::string& op, int64_t opset, const Inputs& inputs,
                             const KernelAttrs& attrs, size_t num_outputs) {
  auto result = runOp(op, opset, inputs, attrs, num_outputs);
  EXPECT_TRUE(result.isOk()) << op << ": " << result.status().toString();
  if (!result.isOk()) return std::vector<HostTensor>(num_outputs);
  return result.value();
}

HostTensor run1(const std::string& op, int64_t opset, const Inputs& inputs,
                const KernelAttrs& attrs = {}) {
  return runN(op, opset, inputs, attrs, 1)[0];
}

StatusCode code(const std::string& op, int64_t opset, const Inputs& inputs,
                const KernelAttrs& attrs = {}, size_t num_outputs = 1) {
  auto result = runOp(op, opset, inputs, attrs, num_outputs);
  return result.isOk() ? StatusCode::kOk : result.status().code();
}

void expectValues(const HostTensor& t, DataType type, const Dims& dims, const Values& want) {
  EXPECT_EQ(t.dtype, type) << dataTypeName(t.dtype);
  EXPECT_EQ(t.dims, dims);
  Values got = values(t);
  ASSERT_EQ(got.size(), want.size());
  double tol = type == DataType::kFloat16 || type == DataType::kBfloat16 ? 1e-2 : 1e-5;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
          << "at " << i << " of " << dataTypeName(type);
    }
  }
}

KernelAttrs attrs(std::initializer_list<std::pair<const std::string, std::vector<int64_t>>> lists,
                  std::initializer_list<std::pair<const std::string, int64_t>> ints = {}) {
  KernelAttrs a;
  a.int_lists = lists;
  a.ints = ints;
  return a;
}

Values iota(int64_t n, double start = 0) {
  Values v;
  for (int64_t i = 0; i < n; ++i) v.push_back(start + static_cast<double>(i));
  return v;
}

std::string typeName(const ::testing::TestParamInfo<DataType>& info) {
  return dataTypeName(info.param);
}

// --- Conv and ConvTranspose
// -------------------------------------------------------------------------

class ConvTyped : public ::testing::TestWithParam<DataType> {};

TEST_P(ConvTyped, TwoDimensionalWithAndWithoutPads) {
  DataType t = GetParam();
  HostTensor x = tensor(t, {1, 1, 5, 5}, iota(25));
  HostTensor w = tensor(t, {1, 1, 3, 3}, Values(9, 1.0));
  expectValues(run1("Conv", 11, {x, w}, attrs({{"pads", {1, 1, 1, 1}}})), t, {1, 1, 5, 5},
               {12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
  expectValues(run1("Conv", 11, {x, w}), t, {1, 1, 3, 3},
               {54, 63, 72, 99, 108, 117, 144, 153, 162});
  // Strides 2, padding along H only (pads are [H_begin, W_begin, H_end, W_end]).
  expectValues(run1("Conv", 11, {x, w}, attrs({{"strides", {2, 2}}, {"pads", {1, 0, 1, 0}}})), t,
               {1, 1, 3, 2}, {21, 33, 99, 117, 111, 123});
}

TEST_P(ConvTyped, GroupsBiasAndDilation) {
  DataType t = GetParam();
  // Depthwise: two channels, each with its own 1-D kernel and bias.
  HostTensor x = tensor(t, {1, 2, 4}, {1, 2, 3, 4, 10, 20, 30, 40});
  HostTensor w = tensor(t, {2, 1, 2}, {1, 1, 1, -1});
  HostTensor b = tensor(t, {2}, {0.5, -1});
  expectValues(run1("Conv", 11, {x, w, b}, attrs({}, {{"group", 2}})), t, {1, 2, 3},
               {3.5, 5.5, 7.5, -11, -11, -11});
  // Dilation 2: taps at i and i + 2.
  expectValues(run1("Conv", 11, {x, w, b}, attrs({{"dilations", {2}}}, {{"group", 2}})), t,
               {1, 2, 2}, {4.5, 6.5, -21, -21});
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, ConvTyped, ::testing::ValuesIn(kFloatTypes), typeName);

TEST(Conv, AutoPadSameUpperVersusLower) {
  HostTensor x = f32({1, 1, 4}, {1, 2, 3, 4});
  HostTensor w = f32({1, 1, 2}, {1, 10});
  KernelAttrs upper, lower, valid;
  upper.strings["auto_pad"] = "SAME_UPPER";
  lower.strings["auto_pad"] = "SAME_LOWER";
  valid.strings["auto_pad"] = "VALID";
  // Total padding 1: at the end for SAME_UPPER, at the beginning for SAME_LOWER.
  expectValues(run1("Conv", 11, {x, w}, upper), DataType::kFloat, {1, 1, 4}, {21, 32, 43, 4});
  expectValues(run1("Conv", 11, {x, w}, lower), DataType::kFloat, {1, 1, 4}, {10, 21, 32, 43});
  expectValues(run1("Conv", 11, {x, w}, valid), DataType::kFloat, {1, 1, 3}, {21, 32, 43});
}

TEST(Conv, RejectsBadShapesAndAttributes) {
  HostTensor x = f32({1, 4, 3, 3}, Values(36, 1.0));
  HostTensor w = f32({2, 2, 2, 2}, Values(16, 1.0));
  EXPECT_EQ(code("Conv", 11, {x, w}, attrs({}, {{"group", 2}})), StatusCode::kOk);
  // group 3 does not divide 4 channels; group 4 leaves W's 2 channels per group wrong.
  EXPECT_EQ(code("Conv", 11, {x, w}, attrs({}, {{"group", 3}})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", 11, {x, w}, attrs({}, {{"group", 4}})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", 11, {x, w}, attrs({}, {{"group", 0}})), StatusCode::kInvalidArgument);
  // Output channels not divisible by the group.
  HostTensor w3 = f32({3, 2, 2, 2}, Values(24, 1.0));
  EXPECT_EQ(code("Conv", 11, {x, w3}, attrs({}, {{"group", 2}})), StatusCode::kInvalidArgument);
  // Pads: negative, wrong count; strides 0; kernel larger than the padded input.
  EXPECT_EQ(code("Conv", 11, {x, w}, attrs({{"pads", {-1, 0, 0, 0}}}, {{"group", 2}})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", 11, {x, w}, attrs({{"pads", {1, 1}}}, {{"group", 2}})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", 11, {x, w}, attrs({{"strides", {0, 1}}}, {{"group", 2}})),
            StatusCode::kInvalidArgument);
  HostTensor big = f32({1, 4, 5, 5}, Values(100, 1.0));
  EXPECT_EQ(code("Conv", 11, {f32({1, 4, 1, 1}, Values(4, 1.0)), big}),
            StatusCode::kInvalidArgument);
  // Ranks: X 2-D, W of another rank; B of the wrong length.
  EXPECT_EQ(code("Conv", 11, {f32({4, 3}, Values(12, 1.0)), w}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", 11, {x, f32({2, 4, 2}, Values(16, 1.0))}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", 11, {x, w, f32({3}, {1, 2, 3})}, attrs({}, {{"group", 2}})),
            StatusCode::kInvalidArgument);
  KernelAttrs bad_pad = attrs({}, {{"group", 2}});
  bad_pad.strings["auto_pad"] = "SAME";
  EXPECT_EQ(code("Conv", 11, {x, w}, bad_pad), StatusCode::kInvalidArgument);
  // Integer Conv is not covered.
  HostTensor xi = tensor(DataType::kInt32, {1, 1, 2}, {1, 2});
  EXPECT_EQ(code("Conv", 11, {xi, xi}), StatusCode::kUnimplemented);
}

TEST(ConvTranspose, StridesPadsOutputShapeAndGroups) {
  HostTensor x = f32({1, 1, 2}, {1, 2});
  HostTensor w = f32({1, 1, 3}, {1, 1, 1});
  expectValues(run1("ConvTranspose", 11, {x, w}), DataType::kFloat, {1, 1, 4}, {1, 3, 3, 2});
  expectValues(run1("ConvTranspose", 11, {x, w}, attrs({{"strides", {2}}})), DataType::kFloat,
               {1, 1, 5}, {1, 1, 3, 2, 2});
  expectValues(run1("ConvTranspose", 11, {x, w}, attrs({{"strides", {2}}, {"pads", {1, 1}}})),
               DataType::kFloat, {1, 1, 3}, {1, 3, 2});
  // output_shape one larger than the natural size: the extra element is at the end.
  expectValues(run1("ConvTranspose", 11, {x, w}, attrs({{"strides", {2}}, {"output_shape", {6}}})),
               DataType::kFloat, {1, 1, 6}, {1, 1, 3, 2, 2, 0});
  // Two groups with bias: W is [C, M / group, k].
  HostTensor x2 = f32({1, 2, 1}, {1, 2});
  HostTensor w2 = f32({2, 1, 2}, {1, 2, 3, 4});
  expectValues(run1("ConvTranspose", 11, {x2, w2, f32({2}, {10, 20})}, attrs({}, {{"group", 2}})),
               DataType::kFloat, {1, 2, 2}, {11, 12, 26, 28});
  EXPECT_EQ(code("ConvTranspose", 11, {x2, w2}, attrs({}, {{"group", 3}})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ConvTranspose", 11, {x, w}, attrs({{"pads", {3, 3}}})),
            StatusCode::kInvalidArgument);
}

// --- pooling
// ----------------------------------------------------------------------------------------

TEST(MaxPool, CeilModeDilationsIndicesAndIntegers) {
  HostTensor x = f32({1, 1, 4, 4}, iota(16));
  auto outs = runN("MaxPool", 12, {x}, attrs({{"kernel_shape", {2, 2}}, {"strides", {2, 2}}}), 2);
  expectValues(outs[0], DataType::kFloat, {1, 1, 2, 2}, {5, 7, 13, 15});
  expectValues(outs[1], DataType::kInt64, {1, 1, 2, 2}, {5, 7, 13, 15});
  // storage_order 1: column-major indices (h + w * H).
  auto cm = runN("MaxPool", 12, {x},
                 attrs({{"kernel_shape", {2, 2}}, {"strides", {2, 2}}}, {{"storage_order", 1}}), 2);
  expectValues(cm[1], DataType::kInt64, {1, 1, 2, 2}, {5, 13, 7, 15});
  // ceil_mode: a 3-wide input, kernel 2, stride 2 gives two windows, the last one partial.
  HostTensor x3 = f32({1, 1, 3}, {1, 5, 3});
  expectValues(run1("MaxPool", 12, {x3},
                    attrs({{"kernel_shape", {2}}, {"strides", {2}}}, {{"ceil_mode", 1}})),
               DataType::kFloat, {1, 1, 2}, {5, 3});
  expectValues(run1("MaxPool", 12, {x3}, attrs({{"kernel_shape", {2}}, {"strides", {2}}})),
               DataType::kFloat, {1, 1, 1}, {5});
  // Dilation 2: taps i and i + 2.
  expectValues(run1("MaxPool", 12, {f32({1, 1, 4}, {4, 1, 2, 3})},
                    attrs({{"kernel_shape", {2}}, {"dilations", {2}}})),
               DataType::kFloat, {1, 1, 2}, {4, 3});
  HostTensor xi = tensor(DataType::kInt8, {1, 1, 3}, {-5, -7, -1});
  expectValues(run1("MaxPool", 12, {xi}, attrs({{"kernel_shape", {2}}, {"pads", {1, 0}}})),
               DataType::kInt8, {1, 1, 3}, {-5, -5, -1});
  EXPECT_EQ(code("MaxPool", 12, {x}), StatusCode::kInvalidArgument);  // no kernel_shape
  EXPECT_EQ(code("MaxPool", 12, {x}, attrs({{"kernel_shape", {2}}})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("MaxPool", 12, {f32({4, 4}, iota(16))}, attrs({{"kernel_shape", {2}}})),
            StatusCode::kInvalidArgument);
}

TEST(AveragePool, CountIncludePad) {
  HostTensor x = f32({1, 1, 3}, {3, 6, 9});
  KernelAttrs a = attrs({{"kernel_shape", {2}}, {"pads", {1, 1}}});
  expectValues(run1("AveragePool", 19, {x}, a), DataType::kFloat, {1, 1, 4}, {3, 4.5, 7.5, 9});
  a.ints["count_include_pad"] = 1;
  expectValues(run1("AveragePool", 19, {x}, a), DataType::kFloat, {1, 1, 4}, {1.5, 4.5, 7.5, 4.5});
  // Integer inputs are not defined for AveragePool.
  EXPECT_EQ(code("AveragePool", 19, {tensor(DataType::kInt8, {1, 1, 3}, {1, 2, 3})}, a),
            StatusCode::kUnimplemented);
  EXPECT_EQ(code("AveragePool", 19, {x}, attrs({{"kernel_shape", {5}}})),
            StatusCode::kInvalidArgument);
}

TEST(GlobalPool, AverageAndMax) {
  HostTensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -4});
  expectValues(run1("GlobalAveragePool", 1, {x}), DataType::kFloat, {1, 2, 1, 1}, {2.5, -2.5});
  expectValues(run1("GlobalMaxPool", 1, {x}), DataType::kFloat, {1, 2, 1, 1}, {4, -1});
  EXPECT_EQ(code("GlobalMaxPool", 1, {f32({2, 2}, iota(4))}), StatusCode::kInvalidArgument);
}

// --- normalization
// ----------------------------------------------------------------------------------

class NormTyped : public ::testing::TestWithParam<DataType> {};

TEST_P(NormTyped, BatchNormalizationInference) {
  DataType t = GetParam();
  HostTensor x = tensor(t, {1, 2, 2}, {1, 2, 3, 4});
  Inputs in = {x, tensor(t, {2}, {1, 2}), tensor(t, {2}, {0, 1}), tensor(t, {2}, {1, 3}),
               tensor(t, {2}, {4, 1})};
  KernelAttrs a;
  a.floats["epsilon"] = 0;
  // (x - mean) / sqrt(var) * scale + B
  expectValues(run1("BatchNormalization", 15, in, a), t, {1, 2, 2}, {0, 0.5, 1, 3});
  // Training mode (batch statistics) is tested in random_test.cc; the running statistics
  // outputs need it.
  EXPECT_EQ(code("BatchNormalization", 15, in, a, 3), StatusCode::kInvalidArgument);
  a.ints["training_mode"] = 1;
  EXPECT_EQ(code("BatchNormalization", 15, in, a, 3), StatusCode::kOk);
}

TEST_P(NormTyped, LayerNormalizationWithStatistics) {
  DataType t = GetParam();
  HostTensor x = tensor(t, {2, 2}, {1, 3, 0, 4});
  KernelAttrs a;
  a.floats["epsilon"] = 0;
  auto outs =
      runN("LayerNormalization", 17, {x, tensor(t, {2}, {1, 2}), tensor(t, {2}, {0, 1})}, a, 3);
  expectValues(outs[0], t, {2, 2}, {-1, 3, -1, 3});
  expectValues(outs[1], DataType::kFloat, {2, 1}, {2, 2});
  expectValues(outs[2], DataType::kFloat, {2, 1}, {1, 0.5});
  // Two outputs: Y and Mean only.
  EXPECT_EQ(runN("LayerNormalization", 17, {x, tensor(t, {2}, {1, 2})}, a, 2).size(), 2u);
}

TEST_P(NormTyped, RmsInstanceAndGroupNormalization) {
  DataType t = GetParam();
  KernelAttrs a;
  a.floats["epsilon"] = 0;
  expectValues(run1("RMSNormalization", 23, {tensor(t, {1, 2}, {3, 4}), tensor(t, {2}, {1, 2})}, a),
               t, {1, 2}, {3 / std::sqrt(12.5), 8 / std::sqrt(12.5)});
  HostTensor x = tensor(t, {1, 2, 2}, {1, 3, 5, 9});
  expectValues(
      run1("InstanceNormalization", 6, {x, tensor(t, {2}, {2, 1}), tensor(t, {2}, {0, 7})}, a), t,
      {1, 2, 2}, {-2, 2, 6, 8});
  // One group over both channels: mean 4.5, variance 8.75; per-channel scale and bias (opset 21).
  a.ints["num_groups"] = 1;
  double s = 1 / std::sqrt(8.75);
  expectValues(
      run1("GroupNormalization", 21, {x, tensor(t, {2}, {1, 2}), tensor(t, {2}, {0, 1})}, a), t,
      {1, 2, 2}, {-3.5 * s, -1.5 * s, s + 1, 9 * s + 1});
  // Opset 18: one scale and bias per group.
  a.ints["num_groups"] = 2;
  expectValues(
      run1("GroupNormalization", 18, {x, tensor(t, {2}, {1, 2}), tensor(t, {2}, {0, 1})}, a), t,
      {1, 2, 2}, {-1, 1, -1, 3});
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, NormTyped, ::testing::ValuesIn(kFloatTypes), typeName);

TEST(Normalization, Errors) {
  HostTensor x = f32({1, 4, 2}, iota(8));
  HostTensor c4 = f32({4}, {1, 1, 1, 1});
  KernelAttrs a;
  a.ints["num_groups"] = 3;
  EXPECT_EQ(code("GroupNormalization", 21, {x, c4, c4}, a), StatusCode::kInvalidArgument);
  a.ints["num_groups"] = 2;
  EXPECT_EQ(code("GroupNormalization", 21, {x, c4, c4}, a), StatusCode::kOk);
  // Opset 18 scales per group: four values for two groups is a contract violation.
  EXPECT_EQ(code("GroupNormalization", 18, {x, c4, c4}, a), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("GroupNormalization", 21, {x, c4, c4}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("InstanceNormalization", 6, {x, f32({3}, {1, 1, 1}), c4}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("BatchNormalization", 15, {f32({4}, iota(4)), c4, c4, c4, c4}),
            StatusCode::kInvalidArgument);
  // Scale that cannot be broadcast to the normalized shape; an axis out of range.
  EXPECT_EQ(code("LayerNormalization", 17, {x, f32({3}, {1, 1, 1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("LayerNormalization", 17, {x, c4}, attrs({}, {{"axis", 3}})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("LayerNormalization", 17, {x, f32({2}, {1, 1})}, attrs({}, {{"stash_type", 16}})),
            StatusCode::kUnimplemented);
}

// --- softmax and activations
// ------------------------------------------------------------------------

TEST(Softmax, CoerceTo2DBeforeOpset13) {
  HostTensor x = f32({2, 2}, {0, 0, 0, std::log(3.0)});
  KernelAttrs axis0 = attrs({}, {{"axis", 0}});
  // Opset 11, axis 0: one row of all four elements.
  expectValues(run1("Softmax", 11, {x}, axis0), DataType::kFloat, {2, 2},
               {1 / 6.0, 1 / 6.0, 1 / 6.0, 0.5});
  // Opset 13, axis 0: each column on its own.
  expectValues(run1("Softmax", 13, {x}, axis0), DataType::kFloat, {2, 2}, {0.5, 0.25, 0.5, 0.75});
  expectValues(run1("LogSoftmax", 13, {x}), DataType::kFloat, {2, 2},
               {std::log(0.5), std::log(0.5), std::log(0.25), std::log(0.75)});
  EXPECT_EQ(code("Softmax", 13, {x}, attrs({}, {{"axis", 2}})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Softmax", 13, {tensor(DataType::kInt32, {2}, {1, 2})}),
            StatusCode::kUnimplemented);
}

TEST(Activations, Formulas) {
  Values xs = {-2, -0.5, 0, 0.5, 3};
  HostTensor x = f32({5}, xs);
  auto each = [&](double (*f)(double)) {
    Values v;
    for (double e : xs) v.push_back(f(e));
    return v;
  };
  auto check = [&](const std::string& op, int64_t opset, double (*f)(double), KernelAttrs a = {}) {
    SCOPED_TRACE(op);
    expectValues(run1(op, opset, {x}, a), DataType::kFloat, {5}, each(f));
  };
  check("LeakyRelu", 16, [](double v) { return v < 0 ? 0.01 * v : v; });
  check("Elu", 6, [](double v) { return v < 0 ? std::exp(v) - 1 : v; });
  check("Selu", 6, [](double v) {
    return 1.0507009873554805 * (v > 0 ? v : 1.6732632423543772 * (std::exp(v) - 1));
  });
  check("Celu", 12, [](double v) { return std::max(0.0, v) + std::min(0.0, std::exp(v) - 1); });
  check("HardSigmoid", 6, [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); });
  check("HardSwish", 14, [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); });
  check("Softplus", 1, [](double v) { return std::log(1 + std::exp(v)); });
  check("Softsign", 1, [](double v) { return v / (1 + std::fabs(v)); });
  check("Mish", 18, [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); });
  check("ThresholdedRelu", 10, [](double v) { return v > 1 ? v : 0.0; });
  check("Gelu", 20, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  KernelAttrs tanh_approx;
  tanh_approx.strings["approximate"] = "tanh";
  check(
      "Gelu", 20,
      [](double v) {
        return 0.5 * v *
               (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
      },
      tanh_approx);
  KernelAttrs alpha;
  alpha.floats["alpha"] = 0.5f;
  check(
      "LeakyRelu", 16, [](double v) { return v < 0 ? 0.5 * v : v; }, alpha);
  KernelAttrs bad;
  bad.strings["approximate"] = "fast";
  EXPECT_EQ(code("Gelu", 20, {x}, bad), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Elu", 6, {tensor(DataType::kInt32, {1}, {1})}), StatusCode::kUnimplemented);
}

TEST(PRelu, BroadcastSlopeAndIntegers) {
  HostTensor x = f32({2, 2}, {-1, 2, -3, 4});
  expectValues(run1("PRelu", 16, {x, f32({2, 1}, {0.5, 2})}), DataType::kFloat, {2, 2},
               {-0.5, 2, -6, 4});
  expectValues(run1("PRelu", 16,
                    {tensor(DataType::kInt32, {2}, {-3, 3}), tensor(DataType::kInt32, {1}, {2})}),
               DataType::kInt32, {2}, {-6, 3});
  // The slope broadcasts to X, never the other way.
  EXPECT_EQ(code("PRelu", 16, {f32({2}, {1, 2}), f32({2, 2}, {1, 1, 1, 1})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("PRelu", 16, {x, f32({3}, {1, 1, 1})}), StatusCode::kInvalidArgument);
}

TEST(Dropout, InferenceIsIdentityWithTrueMask) {
  HostTensor x = f32({3}, {1, -2, 3});
  auto outs = runN("Dropout", 13, {x, f32({}, {0.3})}, {}, 2);
  expectValues(outs[0], DataType::kFloat, {3}, {1, -2, 3});
  expectValues(outs[1], DataType::kBool, {3}, {1, 1, 1});
  HostTensor yes = tensor(DataType::kBool, {}, {1});
  // Training mode draws a mask (random_test.cc); without a seed it still runs.
  EXPECT_EQ(code("Dropout", 13, {x, f32({}, {0.3}), yes}), StatusCode::kOk);
  EXPECT_EQ(code("Dropout", 13, {x, f32({}, {0}), yes}), StatusCode::kOk);
  EXPECT_EQ(code("Dropout", 13, {x, f32({2}, {0, 0})}), StatusCode::kInvalidArgument);
}

// --- Attention
// -------------------------------------------------------------------------------------

TEST(Attention, CausalMaskAndGqa) {
  // One batch, one head, two queries and keys of size 1, scale 1: the first query attends to
  // the first key only under is_causal; without it, both scores are equal.
  HostTensor q = f32({1, 1, 2, 1}, {0, 0});
  HostTensor k = f32({1, 1, 2, 1}, {1, 2});
  HostTensor v = f32({1, 1, 2, 2}, {1, 10, 3, 30});
  expectValues(run1("Attention", 23, {q, k, v}), DataType::kFloat, {1, 1, 2, 2}, {2, 20, 2, 20});
  KernelAttrs causal = attrs({}, {{"is_causal", 1}});
  expectValues(run1("Attention", 23, {q, k, v}, causal), DataType::kFloat, {1, 1, 2, 2},
               {1, 10, 2, 20});
  // A bool mask hiding key 1 for every query; a float mask adding log(3) to key 1.
  HostTensor hide = tensor(DataType::kBool, {2, 2}, {1, 0, 1, 0});
  expectValues(run1("Attention", 23, {q, k, v, hide}), DataType::kFloat, {1, 1, 2, 2},
               {1, 10, 1, 10});
  HostTensor bias = f32({1, 2}, {0, std::log(3.0)});
  expectValues(run1("Attention", 23, {q, k, v, bias}), DataType::kFloat, {1, 1, 2, 2},
               {2.5, 25, 2.5, 25});
  // 3-D with two query heads sharing one kv head (GQA): both heads see the same keys.
  HostTensor q3 = f32({1, 1, 2}, {0, 0});
  HostTensor k3 = f32({1, 2, 1}, {1, 2});
  HostTensor v3 = f32({1, 2, 1}, {1, 3});
  KernelAttrs heads = attrs({}, {{"q_num_heads", 2}, {"kv_num_heads", 1}});
  expectValues(run1("Attention", 23, {q3, k3, v3}, heads), DataType::kFloat, {1, 1, 2}, {2, 2});
  // Scores of head size 4 scaled by 1/sqrt(4) by default: q.k = 4 and 0 -> softmax(2, 0).
  HostTensor q4 = f32({1, 1, 1, 4}, {1, 1, 1, 1});
  HostTensor k4 = f32({1, 1, 2, 4}, {1, 1, 1, 1, 0, 0, 0, 0});
  HostTensor v4 = f32({1, 1, 2, 1}, {1, 0});
  double p = std::exp(2.0) / (std::exp(2.0) + 1);
  expectValues(run1("Attention", 23, {q4, k4, v4}), DataType::kFloat, {1, 1, 1, 1}, {p});
}

TEST(Attention, Errors) {
  HostTensor q = f32({1, 3, 2, 2}, Values(12, 0.0));
  HostTensor kv = f32({1, 2, 2, 2}, Values(8, 0.0));
  // Three query heads are not a multiple of two kv heads.
  EXPECT_EQ(code("Attention", 23, {q, kv, kv}), StatusCode::kInvalidArgument);
  HostTensor q3 = f32({1, 2, 4}, Values(8, 0.0));
  EXPECT_EQ(code("Attention", 23, {q3, q3, q3}), StatusCode::kInvalidArgument);  // no num_heads
  EXPECT_EQ(
      code("Attention", 23, {q3, q3, q3}, attrs({}, {{"q_num_heads", 3}, {"kv_num_heads", 1}})),
      StatusCode::kInvalidArgument);
  // Mixed ranks; a mask with more columns than keys.
  EXPECT_EQ(code("Attention", 23, {q3, kv, kv}), StatusCode::kInvalidArgument);
  HostTensor q4 = f32({1, 2, 2, 2}, Values(8, 0.0));
  EXPECT_EQ(code("Attention", 23, {q4, kv, kv, f32({2, 3}, Values(6, 0.0))}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Attention", 23, {q4, kv, kv}), StatusCode::kOk);
}

TEST(Attention, NonpadKvSeqlen) {
  // Batch 2, one head, one query of size 1 (scale 1), three keys: batch 0 counts two valid keys,
  // batch 1 none (the row is fully masked: Y = 0, not NaN).
  HostTensor q = f32({2, 1, 1, 1}, {0, 0});
  HostTensor k = f32({2, 1, 3, 1}, {1, 2, 3, 1, 2, 3});
  HostTensor v = f32({2, 1, 3, 1}, {1, 3, 100, 1, 3, 100});
  HostTensor lens = HostTensor::zeros(DataType::kInt64, {2});
  lens.set<int64_t>(0, 2);
  expectValues(run1("Attention", 24, {q, k, v, std::nullopt, std::nullopt, std::nullopt, lens}),
               DataType::kFloat, {2, 1, 1, 1}, {2, 0});
  // is_causal ends the diagonal at the last valid key: query 0 of batch 0 sees keys 0 and 1.
  KernelAttrs causal = attrs({}, {{"is_causal", 1}});
  lens.set<int64_t>(1, 1);
  expectValues(
      run1("Attention", 24, {q, k, v, std::nullopt, std::nullopt, std::nullopt, lens}, causal),
      DataType::kFloat, {2, 1, 1, 1}, {2, 1});
  // Errors: before opset 24, with past_key, a count beyond the keys, a wrong shape or type.
  Inputs with = {q, k, v, std::nullopt, std::nullopt, std::nullopt, lens};
  EXPECT_EQ(code("Attention", 23, with), StatusCode::kInvalidArgument);
  HostTensor past = f32({2, 1, 1, 1}, {0, 0});
  EXPECT_EQ(code("Attention", 24, {q, k, v, std::nullopt, past, past, lens}),
            StatusCode::kInvalidArgument);
  lens.set<int64_t>(1, 4);
  EXPECT_EQ(code("Attention", 24, {q, k, v, std::nullopt, std::nullopt, std::nullopt, lens}),
            StatusCode::kInvalidArgument);
  HostTensor one = HostTensor::zeros(DataType::kInt64, {1});
  EXPECT_EQ(code("Attention", 24, {q, k, v, std::nullopt, std::nullopt, std::nullopt, one}),
            StatusCode::kInvalidArgument);
  HostTensor i32 = HostTensor::zeros(DataType::kInt32, {2});
  EXPECT_EQ(code("Attention", 24, {q, k, v, std::nullopt, std::nullopt, std::nullopt, i32}),
            StatusCode::kInvalidArgument);
}

TEST(FlexAttention, KernelAndErrors) {
  // Without modifiers: softmax(Q K^T * scale) V with GQA; scale 1 here, scores 0 and log(3).
  const std::string op = "ai.onnx.preview.FlexAttention";
  HostTensor q = f32({1, 2, 1, 1}, {1, 1});
  HostTensor k = f32({1, 1, 2, 1}, {0, std::log(3.0)});
  HostTensor v = f32({1, 1, 2, 1}, {4, 8});
  KernelAttrs one;
  one.floats["scale"] = 1;
  expectValues(run1(op, 1, {q, k, v}, one), DataType::kFloat, {1, 2, 1, 1}, {7, 7});
  // 3-D inputs, a head size mismatch, heads that do not group, a non-float softmax_precision.
  HostTensor q3 = f32({1, 1, 2}, {0, 0});
  EXPECT_EQ(code(op, 1, {q3, q3, q3}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(op, 1, {f32({1, 2, 1, 2}, Values(4, 0.0)), k, v}), StatusCode::kInvalidArgument);
  HostTensor kv3 = f32({1, 3, 2, 1}, Values(6, 0.0));
  EXPECT_EQ(code(op, 1, {q, kv3, kv3}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(op, 1, {q, k, v}, attrs({}, {{"softmax_precision", 7}})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code(op, 1, {q, k, v}, attrs({}, {{"softmax_precision", 11}})), StatusCode::kOk);
}

// --- RotaryEmbedding
// --------------------------------------------------------------------------------

class RotaryTyped : public ::testing::TestWithParam<DataType> {};

TEST_P(RotaryTyped, HalvesInterleavedAndPartial) {
  // One head of size 4, two tokens at angles 0 and 90 degrees: token 1's (x1, x2) -> (-x2, x1).
  DataType t = GetParam();
  HostTensor x = tensor(t, {1, 1, 2, 4}, iota(8, 1));
  HostTensor cs = tensor(t, {2, 2}, {1, 1, 0, 0});
  HostTensor sn = tensor(t, {2, 2}, {0, 0, 1, 1});
  HostTensor pos = HostTensor::zeros(DataType::kInt64, {1, 2});
  pos.set<int64_t>(1, 1);
  expectValues(run1("RotaryEmbedding", 23, {x, cs, sn, pos}), t, {1, 1, 2, 4},
               {1, 2, 3, 4, -7, -8, 5, 6});
  expectValues(run1("RotaryEmbedding", 23, {x, cs, sn, pos}, attrs({}, {{"interleaved", 1}})), t,
               {1, 1, 2, 4}, {1, 2, 3, 4, -6, 5, -8, 7});
  HostTensor cs1 = tensor(t, {1, 2, 1}, {1, 0});
  HostTensor sn1 = tensor(t, {1, 2, 1}, {0, 1});
  expectValues(run1("RotaryEmbedding", 23, {x, cs1, sn1, std::nullopt},
                    attrs({}, {{"rotary_embedding_dim", 2}})),
               t, {1, 1, 2, 4}, {1, 2, 3, 4, -6, 5, 7, 8});
  // 3-D [B, S, heads * head] with two heads of size 2.
  HostTensor x3 = tensor(t, {1, 2, 4}, iota(8, 1));
  expectValues(
      run1("RotaryEmbedding", 23, {x3, cs1, sn1, std::nullopt}, attrs({}, {{"num_heads", 2}})), t,
      {1, 2, 4}, {1, 2, 3, 4, -6, 5, -8, 7});
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, RotaryTyped, ::testing::ValuesIn(kFloatTypes), typeName);

TEST(RotaryEmbedding, Errors) {
  HostTensor x = f32({1, 1, 2, 4}, iota(8));
  HostTensor cs = f32({2, 2}, {1, 1, 0, 0});
  HostTensor pos = HostTensor::zeros(DataType::kInt64, {1, 2});
  EXPECT_EQ(code("RotaryEmbedding", 23, {x, cs, cs, pos}), StatusCode::kOk);
  // 2-D input; 3-D input without num_heads or with a hidden size it does not divide.
  EXPECT_EQ(code("RotaryEmbedding", 23, {f32({2, 4}, iota(8)), cs, cs, pos}),
            StatusCode::kInvalidArgument);
  HostTensor x3 = f32({1, 2, 4}, iota(8));
  EXPECT_EQ(code("RotaryEmbedding", 23, {x3, cs, cs, pos}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("RotaryEmbedding", 23, {x3, cs, cs, pos}, attrs({}, {{"num_heads", 3}})),
            StatusCode::kInvalidArgument);
  // num_heads contradicting a 4-D input; an odd or too large rotary_embedding_dim.
  EXPECT_EQ(code("RotaryEmbedding", 23, {x, cs, cs, pos}, attrs({}, {{"num_heads", 2}})),
            StatusCode::kInvalidArgument);
  for (int64_t dim : {3, 6, -2}) {
    EXPECT_EQ(
        code("RotaryEmbedding", 23, {x, cs, cs, pos}, attrs({}, {{"rotary_embedding_dim", dim}})),
        StatusCode::kInvalidArgument)
        << dim;
  }
  // Caches of the wrong width, of different shapes, or 2-D without position_ids.
  HostTensor wide = f32({2, 3}, iota(6));
  EXPECT_EQ(code("RotaryEmbedding", 23, {x, wide, wide, pos}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("RotaryEmbedding", 23, {x, cs, f32({1, 2}, {0, 0}), pos}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("RotaryEmbedding", 23, {x, cs, cs}), StatusCode::kInvalidArgument);
  // position_ids of the wrong shape or outside the cache.
  EXPECT_EQ(code("RotaryEmbedding", 23, {x, cs, cs, HostTensor::zeros(DataType::kInt64, {2})}),
            StatusCode::kInvalidArgument);
  pos.set<int64_t>(1, 2);
  EXPECT_EQ(code("RotaryEmbedding", 23, {x, cs, cs, pos}), StatusCode::kInvalidArgument);
  pos.set<int64_t>(1, -1);
  EXPECT_EQ(code("RotaryEmbedding", 23, {x, cs, cs, pos}), StatusCode::kInvalidArgument);
  // Mixed element types; an integer input.
  EXPECT_EQ(code("RotaryEmbedding", 23,
                 {tensor(DataType::kDouble, {1, 1, 2, 4}, iota(8)), cs, cs,
                  HostTensor::zeros(DataType::kInt64, {1, 2})}),
            StatusCode::kInvalidArgument);
  HostTensor ints = HostTensor::zeros(DataType::kInt32, {1, 1, 2, 4});
  HostTensor icache = HostTensor::zeros(DataType::kInt32, {2, 2});
  EXPECT_EQ(code("RotaryEmbedding", 23,
                 {ints, icache, icache, HostTensor::zeros(DataType::kInt64, {1, 2})}),
            StatusCode::kUnimplemented);
}

// --- Einsum
// ----------------------------------------------------------------------------------------

KernelAttrs equation(const std::string& eq) {
  KernelAttrs a;
  a.strings["equation"] = eq;
  return a;
}

TEST(Einsum, MatmulDiagonalImplicitOutputAndBroadcast) {
  HostTensor a = f32({2, 2}, {1, 2, 3, 4});
  HostTensor b = f32({2, 2}, {5, 6, 7, 8});
  expectValues(run1("Einsum", 12, {a, b}, equation("ij,jk->ik")), DataType::kFloat, {2, 2},
               {19, 22, 43, 50});
  // Implicit output: the labels used once, in character order ("ik" here; "ki" is transposed).
  expectValues(run1("Einsum", 12, {a, b}, equation("ij,jk")), DataType::kFloat, {2, 2},
               {19, 22, 43, 50});
  expectValues(run1("Einsum", 12, {a, b}, equation("kj,ji")), DataType::kFloat, {2, 2},
               {19, 43, 22, 50});
  expectValues(run1("Einsum", 12, {a}, equation("ii")), DataType::kFloat, {}, {5});
  expectValues(run1("Einsum", 12, {a}, equation("ii->i")), DataType::kFloat, {2}, {1, 4});
  expectValues(run1("Einsum", 12, {a}, equation("ij->")), DataType::kFloat, {}, {10});
  // Ellipsis dims broadcast: [2, 1, 2] x [3, 2] batch dims [2, 1] and [3].
  HostTensor x = f32({2, 1, 2}, {1, 2, 3, 4});
  HostTensor y = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  expectValues(run1("Einsum", 12, {x, y}, equation("...i,...i->...")), DataType::kFloat, {2, 3},
               {1, 2, 3, 3, 4, 7});
  expectValues(
      run1("Einsum", 12,
           {tensor(DataType::kInt32, {3}, {1, 2, 3}), tensor(DataType::kInt32, {3}, {4, 5, 6})},
           equation("i,i")),
      DataType::kInt32, {}, {32});
  EXPECT_EQ(code("Einsum", 12, {a, b}, equation("ij,jk,kl->il")), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Einsum", 12, {a, f32({3}, {1, 2, 3})}, equation("ij,j->i")),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Einsum", 12, {a}, equation("ijk->i")), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Einsum", 12, {a}, equation("ij->iz")), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Einsum", 12, {a}, equation("i.j")), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Einsum", 12, {a}, equation("ij->ii")), StatusCode::kInvalidArgument);
}

// --- hostile inputs: statuses, never crashes or overflow
// -------------------------------------------------------------

TEST(NnRobustness, EmptyTensorsWithHugeDimsAndHugeWindows) {
  constexpr int64_t kHuge = int64_t{1} << 40;
  // Zero-sized tensors pass validation whatever their other dims; kernels must not multiply those.
  HostTensor empty = HostTensor::zeros(DataType::kFloat, {0, 1, kHuge, kHuge});
  HostTensor w = f32({1, 1, 1, 1}, {1});
  EXPECT_EQ(code("Conv", 11, {empty, w}), StatusCode::kOk);
  EXPECT_EQ(code("MaxPool", 12, {empty}, attrs({{"kernel_shape", {1, 1}}})), StatusCode::kOk);
  EXPECT_EQ(code("Softmax", 11, {empty}, attrs({}, {{"axis", 1}})), StatusCode::kOk);
  EXPECT_EQ(code("LayerNormalization", 17, {empty, f32({1}, {1})}, attrs({}, {{"axis", 1}})),
            StatusCode::kOk);
  EXPECT_EQ(code("BatchNormalization", 15, {empty, w, w, w, w}, {}), StatusCode::kInvalidArgument);
  HostTensor one = f32({1}, {1});
  EXPECT_EQ(code("BatchNormalization", 15, {empty, one, one, one, one}), StatusCode::kOk);
  EXPECT_EQ(code("InstanceNormalization", 6, {empty, one, one}), StatusCode::kOk);
  HostTensor wide = HostTensor::zeros(DataType::kFloat, {kHuge, 0, kHuge});
  EXPECT_EQ(code("GlobalAveragePool", 1, {wide}), StatusCode::kOk);
  HostTensor no_spatial = HostTensor::zeros(DataType::kFloat, {kHuge, kHuge, 0});
  EXPECT_EQ(code("GlobalAveragePool", 1, {no_spatial}), StatusCode::kInvalidArgument);
  // Kernels with 2^60 taps, or a stride that makes the output overflow.
  HostTensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  int64_t big = int64_t{1} << 30;
  EXPECT_EQ(code("MaxPool", 12, {x},
                 attrs({{"kernel_shape", {big, big}},
                        {"pads", {big, big, big, big}},
                        {"strides", {big, big}}})),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(code("AveragePool", 19, {x},
                 attrs({{"kernel_shape", {1, 1}}, {"pads", {big, big, big, big}}})),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(code("ConvTranspose", 11, {x, w}, attrs({{"strides", {int64_t{1} << 31, 1}}})),
            StatusCode::kResourceExhausted);  // 2^32 outputs
  EXPECT_EQ(code("ConvTranspose", 11, {HostTensor::zeros(DataType::kFloat, {1, 1, 1 << 20, 1}), w},
                 attrs({{"strides", {int64_t{1} << 31, 1}}})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Conv", 11, {x, w}, attrs({{"dilations", {int64_t{1} << 40, 1}}})),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onnxopt::kernels
