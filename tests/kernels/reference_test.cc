// Tests of the CPU reference kernels (kernels/reference), per op family, parameterised over element
// types where the op is generic. ONNX's node conformance cases are the second oracle (run by the
// Python conformance harness through the fold pass).
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/support/half.h"
#include "test_tensors.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;
using Values = std::vector<double>;

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
         t == DataType::kBfloat16;
}

/// A tensor of `type` holding `values` (converted the way a user would write them).
HostTensor tensor(DataType type, Dims dims, const Values& values) {
  EXPECT_TRUE(kNumericTypes.contains(type) || type == DataType::kBool) << "unsupported test type";
  HostTensor t = test::tensorOf(type, std::move(dims), values);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numElements());
  return t;
}

HostTensor f32(Dims dims, const Values& v) {
  return tensor(DataType::kFloat, std::move(dims), v);
}
HostTensor i64(Dims dims, const std::vector<int64_t>& v) {
  HostTensor t = HostTensor::zeros(DataType::kInt64, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i) t.set<int64_t>(static_cast<int64_t>(i), v[i]);
  return t;
}
HostTensor i64s(const std::vector<int64_t>& v) {
  return i64({static_cast<int64_t>(v.size())}, v);
}
HostTensor i64Scalar(int64_t v) {
  return i64({}, {v});
}
HostTensor strings(Dims dims, std::vector<std::string> v) {
  HostTensor t = HostTensor::zeros(DataType::kString, std::move(dims));
  t.strings = std::move(v);
  return t;
}

Values values(const HostTensor& t) {
  auto v = runtime::tensorAsDoubles(t);
  if (!v) ADD_FAILURE() << "unsupported test type";
  return v ? Values(v->begin(), v->end()) : Values();
}

struct KernelRun {
  std::string op;
  int64_t opset = 18;
  std::vector<std::optional<HostTensor>> inputs;
  KernelAttrs attrs;
  size_t num_outputs = 1;

  StatusOr<std::vector<HostTensor>> operator()() const {
    std::vector<const HostTensor*> ptrs;
    for (const auto& in : inputs) ptrs.push_back(in ? &*in : nullptr);
    return runReferenceKernel(op, opset, ptrs, attrs, num_outputs);
  }
};

/// Runs a one-output op and returns its output (failing the test on error).
HostTensor run1(const std::string& op, int64_t opset, std::vector<std::optional<HostTensor>> inputs,
                KernelAttrs attrs = {}) {
  KernelRun r{op, opset, std::move(inputs), std::move(attrs), 1};
  auto result = r();
  EXPECT_TRUE(result.isOk()) << op << ": " << result.status().toString();
  if (!result.isOk()) return HostTensor{};
  return result.value()[0];
}

StatusCode code(const std::string& op, int64_t opset, std::vector<std::optional<HostTensor>> inputs,
                KernelAttrs attrs = {}, size_t num_outputs = 1) {
  KernelRun r{op, opset, std::move(inputs), std::move(attrs), num_outputs};
  auto result = r();
  return result.isOk() ? StatusCode::kOk : result.status().code();
}

KernelAttrs ints(std::initializer_list<std::pair<const std::string, int64_t>> kv) {
  KernelAttrs a;
  a.ints = kv;
  return a;
}

void expectValues(const HostTensor& t, DataType type, const Dims& dims, const Values& want) {
  EXPECT_EQ(t.dtype, type) << dataTypeName(t.dtype);
  EXPECT_EQ(t.dims, dims);
  Values got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] == want[i]) continue;  // also infinities
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": " << got[i];
    } else if (isFloatType(type)) {
      double tol = type == DataType::kFloat16 || type == DataType::kBfloat16 ? 1e-2 : 1e-6;
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << "at " << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << "at " << i << " of " << dataTypeName(type);
    }
  }
}

std::string typeName(const testing::TestParamInfo<DataType>& info) {
  return dataTypeName(info.param);
}

const std::vector<DataType> kNumericTypes = {
    DataType::kFloat, DataType::kFloat16, DataType::kBfloat16, DataType::kDouble,
    DataType::kInt8,  DataType::kInt16,   DataType::kInt32,    DataType::kInt64,
    DataType::kUint8, DataType::kUint16,  DataType::kUint32,   DataType::kUint64};
const std::vector<DataType> kFloatTypes = {DataType::kFloat, DataType::kFloat16,
                                           DataType::kBfloat16, DataType::kDouble};

// --- half.h
// ---------------------------------------------------------------------------------------

TEST(HalfConversion, RoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);                      // below the halfway point to 65536
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);                      // halfway: ties to even (infinity)
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);             // tie -> 0
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002);         // tie -> even
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400);             // smallest normal
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite half survives a round trip
    ASSERT_EQ(floatToHalf(halfToFloat(static_cast<uint16_t>(h))), h);
  }
}

TEST(HalfConversion, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie -> even
  EXPECT_EQ(floatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(floatToBfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(std::nanf("")))));
}

// --- registry
// ---------------------------------------------------------------------------------------

TEST(Registry, ListsOpsSortedAndChecksOpsets) {
  std::vector<std::string> ops = referenceKernelOps();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_GE(ops.size(), 80u);
  EXPECT_TRUE(hasReferenceKernel("Add", 7));
  EXPECT_TRUE(hasReferenceKernel("Add", 23));
  EXPECT_FALSE(hasReferenceKernel("Add", 6));
  EXPECT_FALSE(hasReferenceKernel("LessOrEqual", 11));
  EXPECT_TRUE(hasReferenceKernel("Resize", 13));
  EXPECT_FALSE(hasReferenceKernel("Resize", 9));  // Resize arrived at opset 10
  EXPECT_FALSE(hasReferenceKernel("NoSuchOp", 13));
}

TEST(Registry, NamesOpsOfOtherDomainsWithTheirDomain) {
  EXPECT_EQ(referenceOpName("", "Add"), "Add");
  EXPECT_EQ(referenceOpName("ai.onnx", "Add"), "Add");
  EXPECT_EQ(referenceOpName("ai.onnx.ml", "Binarizer"), "ai.onnx.ml.Binarizer");
  // A domain the kernels do not know: the capability query says which, as the executor reports.
  OpQuery q;
  q.domain = "com.example";
  q.op = "Add";
  q.opset = 1;
  Support s = referenceCapabilities().supports(q);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.reason, "domain 'com.example' has no reference kernels");
  // The default-domain kernel is not found under another domain's name.
  EXPECT_FALSE(hasReferenceKernel(referenceOpName("com.example", "Add"), 13));
  EXPECT_EQ(code(referenceOpName("com.example", "Add"), 13, {f32({1}, {1}), f32({1}, {1})}),
            StatusCode::kUnimplemented);
}

TEST(Registry, Errors) {
  EXPECT_EQ(code("NoSuchOp", 13, {f32({1}, {1})}), StatusCode::kUnimplemented);
  EXPECT_EQ(code("Add", 6, {f32({1}, {1}), f32({1}, {1})}), StatusCode::kUnimplemented);
  EXPECT_EQ(code("Add", 13, {f32({1}, {1})}), StatusCode::kInvalidArgument);  // missing input
  EXPECT_EQ(code("Add", 13, {f32({1}, {1}), f32({1}, {1})}, {}, 2), StatusCode::kInvalidArgument);
  HostTensor bad = f32({2}, {1, 2});
  bad.bytes.pop_back();  // payload shorter than its dims
  EXPECT_EQ(code("Relu", 14, {bad}), StatusCode::kInvalidArgument);
  HostTensor negative = f32({1}, {1});
  negative.dims = {-1};
  EXPECT_EQ(code("Relu", 14, {negative}), StatusCode::kInvalidArgument);
  HostTensor str = strings({1}, {"a"});
  EXPECT_EQ(code("Add", 14, {str, str}), StatusCode::kUnimplemented);
  EXPECT_EQ(code("Add", 14, {f32({1}, {1}), i64s({1})}), StatusCode::kInvalidArgument);
}

TEST(Registry, HugeOutputsAreResourceExhausted) {
  EXPECT_EQ(code("Expand", 13, {f32({1}, {1}), i64s({1 << 20, 1 << 20})}),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(code("ConstantOfShape", 13, {i64s({1 << 30, 4})}), StatusCode::kResourceExhausted);
  EXPECT_EQ(code("Tile", 13, {f32({2}, {1, 2}), i64s({int64_t{1} << 62})}),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(code("Range", 13, {i64Scalar(0), i64Scalar(int64_t{1} << 40), i64Scalar(1)}),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(code("Pad", 13, {f32({1}, {1}), i64s({0, int64_t{1} << 34})}),
            StatusCode::kResourceExhausted);
}

TEST(HostTensorTest, Zeros) {
  HostTensor t = HostTensor::zeros(DataType::kFloat16, {2, 3});
  EXPECT_EQ(t.bytes.size(), 12u);
  EXPECT_EQ(t.numElements(), 6);
  HostTensor s = HostTensor::zeros(DataType::kString, {2});
  EXPECT_EQ(s.strings.size(), 2u);
  HostTensor b = HostTensor::zeros(DataType::kInt4, {3});
  EXPECT_EQ(b.bytes.size(), 2u);
  EXPECT_EQ(HostTensor::zeros(DataType::kInt64, {}).bytes.size(), 8u);
}

// --- elementwise arithmetic, every numeric type
// -------------------------------------------------------

class ArithmeticTest : public testing::TestWithParam<DataType> {};

TEST_P(ArithmeticTest, AddSubMulDivBroadcast) {
  DataType t = GetParam();
  HostTensor a = tensor(t, {2, 1, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor b = tensor(t, {2, 1}, {1, 2});
  expectValues(run1("Add", 14, {a, b}), t, {2, 2, 3}, {2, 3, 4, 3, 4, 5, 5, 6, 7, 6, 7, 8});
  expectValues(run1("Mul", 14, {a, b}), t, {2, 2, 3}, {1, 2, 3, 2, 4, 6, 4, 5, 6, 8, 10, 12});
  expectValues(run1("Sub", 14, {a, tensor(t, {}, {1})}), t, {2, 1, 3}, {0, 1, 2, 3, 4, 5});
  HostTensor c = tensor(t, {3}, {8, 9, 7});
  Values div = isFloatType(t) ? Values{8, 4.5, 7.0 / 3} : Values{8, 4, 2};
  expectValues(run1("Div", 14, {c, tensor(t, {3}, {1, 2, 3})}), t, {3}, div);
}

TEST_P(ArithmeticTest, ZeroSizedBroadcast) {
  DataType t = GetParam();
  HostTensor a = tensor(t, {0, 3}, {});
  expectValues(run1("Add", 14, {a, tensor(t, {1, 3}, {1, 2, 3})}), t, {0, 3}, {});
  expectValues(run1("Mul", 14, {tensor(t, {2, 1}, {1, 2}), tensor(t, {0}, {})}), t, {2, 0}, {});
  EXPECT_EQ(code("Add", 14, {tensor(t, {2}, {1, 2}), tensor(t, {3}, {1, 2, 3})}),
            StatusCode::kInvalidArgument);
}

TEST_P(ArithmeticTest, MinMaxSumVariadic) {
  DataType t = GetParam();
  HostTensor a = tensor(t, {3}, {1, 5, 3});
  HostTensor b = tensor(t, {1}, {4});
  HostTensor c = tensor(t, {2, 1}, {2, 6});
  expectValues(run1("Max", 13, {a, b, c}), t, {2, 3}, {4, 5, 4, 6, 6, 6});
  expectValues(run1("Min", 13, {a, b, c}), t, {2, 3}, {1, 2, 2, 1, 4, 3});
  expectValues(run1("Sum", 13, {a, b}), t, {3}, {5, 9, 7});
  expectValues(run1("Max", 13, {a}), t, {3}, {1, 5, 3});
}

TEST_P(ArithmeticTest, Comparisons) {
  DataType t = GetParam();
  HostTensor a = tensor(t, {3}, {1, 2, 3});
  HostTensor b = tensor(t, {}, {2});
  expectValues(run1("Equal", 13, {a, b}), DataType::kBool, {3}, {0, 1, 0});
  expectValues(run1("Less", 13, {a, b}), DataType::kBool, {3}, {1, 0, 0});
  expectValues(run1("Greater", 13, {a, b}), DataType::kBool, {3}, {0, 0, 1});
  expectValues(run1("LessOrEqual", 16, {a, b}), DataType::kBool, {3}, {1, 1, 0});
  expectValues(run1("GreaterOrEqual", 16, {a, b}), DataType::kBool, {3}, {0, 1, 1});
}

TEST_P(ArithmeticTest, AbsSignClipCumSum) {
  DataType t = GetParam();
  bool is_signed = t != DataType::kUint8 && t != DataType::kUint16 && t != DataType::kUint32 &&
                   t != DataType::kUint64;
  HostTensor x = is_signed ? tensor(t, {4}, {-3, 0, 2, 7}) : tensor(t, {4}, {3, 0, 2, 7});
  expectValues(run1("Abs", 13, {x}), t, {4}, {3, 0, 2, 7});
  expectValues(run1("Sign", 13, {x}), t, {4}, {is_signed ? -1.0 : 1.0, 0, 1, 1});
  expectValues(run1("Clip", 13, {x, tensor(t, {}, {1}), tensor(t, {}, {5})}), t, {4},
               {is_signed ? 1.0 : 3.0, 1, 2, 5});
  expectValues(run1("Clip", 13, {x, std::nullopt, tensor(t, {}, {2})}), t, {4},
               {is_signed ? -3.0 : 2.0, 0, 2, 2});
  HostTensor y = tensor(t, {2, 3}, {1, 2, 3, 4, 5, 6});
  expectValues(run1("CumSum", 14, {y, i64Scalar(1)}), t, {2, 3}, {1, 3, 6, 4, 9, 15});
  expectValues(run1("CumSum", 14, {y, i64Scalar(-2)}, ints({{"exclusive", 1}})), t, {2, 3},
               {0, 0, 0, 1, 2, 3});
  expectValues(run1("CumSum", 14, {y, i64Scalar(1)}, ints({{"reverse", 1}})), t, {2, 3},
               {6, 5, 3, 15, 11, 6});
}

INSTANTIATE_TEST_SUITE_P(Types, ArithmeticTest, testing::ValuesIn(kNumericTypes), typeName);

// --- integer specifics
// --------------------------------------------------------------------------------

TEST(IntegerArithmetic, DivTruncatesAndRejectsZero) {
  HostTensor a = tensor(DataType::kInt32, {4}, {7, -7, 7, -7});
  HostTensor b = tensor(DataType::kInt32, {4}, {2, 2, -2, -2});
  expectValues(run1("Div", 14, {a, b}), DataType::kInt32, {4}, {3, -3, -3, 3});
  EXPECT_EQ(code("Div", 14, {a, tensor(DataType::kInt32, {1}, {0})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Mod", 13, {a, tensor(DataType::kInt32, {1}, {0})}), StatusCode::kInvalidArgument);
  HostTensor min = tensor(DataType::kInt32, {1}, {std::numeric_limits<int32_t>::min()});
  expectValues(run1("Div", 14, {min, tensor(DataType::kInt32, {1}, {-1})}), DataType::kInt32, {1},
               {std::numeric_limits<int32_t>::min()});  // wraps
  expectValues(run1("Mod", 13, {min, tensor(DataType::kInt32, {1}, {-1})}), DataType::kInt32, {1},
               {0});
}

TEST(IntegerArithmetic, ModFollowsDivisorOrDividend) {
  HostTensor a = tensor(DataType::kInt64, {4}, {7, -7, 7, -7});
  HostTensor b = tensor(DataType::kInt64, {4}, {3, 3, -3, -3});
  expectValues(run1("Mod", 13, {a, b}), DataType::kInt64, {4}, {1, 2, -2, -1});
  expectValues(run1("Mod", 13, {a, b}, ints({{"fmod", 1}})), DataType::kInt64, {4}, {1, -1, 1, -1});
  HostTensor f = f32({2}, {-7.5, 7.5});
  expectValues(run1("Mod", 13, {f, f32({1}, {2})}, ints({{"fmod", 1}})), DataType::kFloat, {2},
               {-1.5, 1.5});
  EXPECT_EQ(code("Mod", 13, {f, f32({1}, {2})}), StatusCode::kInvalidArgument);  // fmod=0
}

TEST(IntegerArithmetic, OverflowWraps) {
  HostTensor a = tensor(DataType::kInt8, {3}, {127, -128, 100});
  HostTensor b = tensor(DataType::kInt8, {3}, {1, 1, 2});
  expectValues(run1("Add", 14, {a, b}), DataType::kInt8, {3}, {-128, -127, 102});
  expectValues(run1("Mul", 14, {a, b}), DataType::kInt8, {3}, {127, -128, -56});
  expectValues(run1("Neg", 13, {a}), DataType::kInt8, {3}, {-127, -128, -100});
  HostTensor u = tensor(DataType::kUint16, {1}, {65535});
  expectValues(run1("Mul", 14, {u, u}), DataType::kUint16, {1}, {1});
  expectValues(
      run1("Sub", 14, {tensor(DataType::kUint8, {1}, {0}), tensor(DataType::kUint8, {1}, {1})}),
      DataType::kUint8, {1}, {255});
}

TEST(Pow, OutputHasBaseType) {
  expectValues(run1("Pow", 15, {f32({3}, {2, 4, -2}), f32({1}, {2})}), DataType::kFloat, {3},
               {4, 16, 4});
  expectValues(run1("Pow", 15, {f32({2}, {4, 9}), tensor(DataType::kInt64, {1}, {-1})}),
               DataType::kFloat, {2}, {0.25, 1.0 / 9});
  expectValues(run1("Pow", 15, {tensor(DataType::kInt32, {3}, {2, 3, -2}), f32({1}, {2.5})}),
               DataType::kInt32, {3}, {5, 15, 0});
  expectValues(
      run1("Pow", 15,
           {tensor(DataType::kInt64, {3}, {2, 3, -2}), tensor(DataType::kInt64, {1}, {3})}),
      DataType::kInt64, {3}, {8, 27, -8});
}

// --- unary float ops
// ------------------------------------------------------------------------------------

class FloatUnaryTest : public testing::TestWithParam<DataType> {};

TEST_P(FloatUnaryTest, MathFunctions) {
  DataType t = GetParam();
  HostTensor x = tensor(t, {4}, {0.25, 1, 2, 4});
  expectValues(run1("Sqrt", 13, {x}), t, {4}, {0.5, 1, std::sqrt(2.0), 2});
  expectValues(run1("Reciprocal", 13, {x}), t, {4}, {4, 1, 0.5, 0.25});
  expectValues(run1("Exp", 13, {x}), t, {4},
               {std::exp(0.25), std::exp(1.0), std::exp(2.0), std::exp(4.0)});
  expectValues(run1("Log", 13, {x}), t, {4}, {std::log(0.25), 0, std::log(2.0), std::log(4.0)});
  HostTensor y = tensor(t, {5}, {-2.5, -0.5, 0, 0.5, 1.5});
  expectValues(run1("Floor", 13, {y}), t, {5}, {-3, -1, 0, 0, 1});
  expectValues(run1("Ceil", 13, {y}), t, {5}, {-2, -0, 0, 1, 2});
  expectValues(run1("Round", 11, {y}), t, {5}, {-2, -0, 0, 0, 2});  // half to even
  expectValues(run1("Relu", 14, {y}), t, {5}, {0, 0, 0, 0.5, 1.5});
  expectValues(run1("Neg", 13, {y}), t, {5}, {2.5, 0.5, 0, -0.5, -1.5});
  expectValues(run1("Sigmoid", 13, {y}), t, {5},
               {1 / (1 + std::exp(2.5)), 1 / (1 + std::exp(0.5)), 0.5, 1 / (1 + std::exp(-0.5)),
                1 / (1 + std::exp(-1.5))});
  expectValues(run1("Tanh", 13, {y}), t, {5},
               {std::tanh(-2.5), std::tanh(-0.5), 0, std::tanh(0.5), std::tanh(1.5)});
  expectValues(run1("Erf", 13, {y}), t, {5},
               {std::erf(-2.5), std::erf(-0.5), 0, std::erf(0.5), std::erf(1.5)});
  expectValues(run1("Sin", 7, {y}), t, {5},
               {std::sin(-2.5), std::sin(-0.5), 0, std::sin(0.5), std::sin(1.5)});
  expectValues(run1("Cos", 7, {y}), t, {5},
               {std::cos(-2.5), std::cos(-0.5), 1, std::cos(0.5), std::cos(1.5)});
  double inf = std::numeric_limits<double>::infinity();
  HostTensor z = tensor(t, {4}, {std::nan(""), inf, -inf, 1});
  expectValues(run1("IsNaN", 13, {z}), DataType::kBool, {4}, {1, 0, 0, 0});
  expectValues(run1("IsInf", 10, {z}), DataType::kBool, {4}, {0, 1, 1, 0});
  expectValues(run1("IsInf", 10, {z}, ints({{"detect_negative", 0}})), DataType::kBool, {4},
               {0, 1, 0, 0});
  expectValues(run1("Mean", 13, {x, tensor(t, {1}, {1})}), t, {4}, {0.625, 1, 1.5, 2.5});
  expectValues(run1("Max", 13, {z, tensor(t, {1}, {0})}), t, {4}, {std::nan(""), inf, 0, 1});
}

INSTANTIATE_TEST_SUITE_P(Types, FloatUnaryTest, testing::ValuesIn(kFloatTypes), typeName);

TEST(FloatUnary, RejectsIntegerInputs) {
  EXPECT_EQ(code("Sqrt", 13, {tensor(DataType::kInt32, {1}, {4})}), StatusCode::kUnimplemented);
  EXPECT_EQ(code("Neg", 13, {tensor(DataType::kUint8, {1}, {4})}), StatusCode::kUnimplemented);
  EXPECT_EQ(code("IsNaN", 13, {tensor(DataType::kInt32, {1}, {4})}), StatusCode::kUnimplemented);
}

TEST(Float16Arithmetic, RoundsOnceToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next half; computed in float and rounded once.
  HostTensor a = tensor(DataType::kFloat16, {1}, {1});
  HostTensor b = tensor(DataType::kFloat16, {1}, {std::ldexp(1.0, -11)});
  HostTensor sum = run1("Add", 14, {a, b});
  EXPECT_EQ(sum.get<uint16_t>(0), 0x3c00);
  HostTensor big = tensor(DataType::kFloat16, {1}, {60000});
  EXPECT_EQ(run1("Add", 14, {big, big}).get<uint16_t>(0), 0x7c00);  // overflow to infinity
}

// --- logical, bitwise, where, clip
// ------------------------------------------------------------------------

TEST(Logical, AndOrXorNot) {
  HostTensor a = tensor(DataType::kBool, {2, 2}, {0, 0, 1, 1});
  HostTensor b = tensor(DataType::kBool, {2}, {0, 1});
  expectValues(run1("And", 7, {a, b}), DataType::kBool, {2, 2}, {0, 0, 0, 1});
  expectValues(run1("Or", 7, {a, b}), DataType::kBool, {2, 2}, {0, 1, 1, 1});
  expectValues(run1("Xor", 7, {a, b}), DataType::kBool, {2, 2}, {0, 1, 1, 0});
  expectValues(run1("Not", 1, {b}), DataType::kBool, {2}, {1, 0});
  expectValues(run1("Equal", 13, {a, b}), DataType::kBool, {2, 2}, {1, 0, 0, 1});
  EXPECT_EQ(code("And", 7, {f32({1}, {1}), f32({1}, {1})}), StatusCode::kUnimplemented);
  EXPECT_EQ(code("Less", 13, {a, b}), StatusCode::kUnimplemented);
}

TEST(Bitwise, IntegerTypes) {
  HostTensor a = tensor(DataType::kUint8, {3}, {0xf0, 0x0f, 0xff});
  HostTensor b = tensor(DataType::kUint8, {1}, {0x3c});
  expectValues(run1("BitwiseAnd", 18, {a, b}), DataType::kUint8, {3}, {0x30, 0x0c, 0x3c});
  expectValues(run1("BitwiseOr", 18, {a, b}), DataType::kUint8, {3}, {0xfc, 0x3f, 0xff});
  expectValues(run1("BitwiseXor", 18, {a, b}), DataType::kUint8, {3}, {0xcc, 0x33, 0xc3});
  expectValues(run1("BitwiseNot", 18, {a}), DataType::kUint8, {3}, {0x0f, 0xf0, 0});
  expectValues(run1("BitwiseNot", 18, {tensor(DataType::kInt32, {2}, {0, -1})}), DataType::kInt32,
               {2}, {-1, 0});
  EXPECT_EQ(code("BitwiseAnd", 18, {f32({1}, {1}), f32({1}, {1})}), StatusCode::kUnimplemented);
}

TEST(Where, BroadcastsAllThreeAndMovesStrings) {
  HostTensor cond = tensor(DataType::kBool, {2, 1}, {1, 0});
  expectValues(run1("Where", 16, {cond, f32({3}, {1, 2, 3}), f32({}, {-1})}), DataType::kFloat,
               {2, 3}, {1, 2, 3, -1, -1, -1});
  HostTensor s = run1("Where", 16, {cond, strings({1}, {"yes"}), strings({1}, {"no"})});
  EXPECT_EQ(s.strings, (std::vector<std::string>{"yes", "no"}));
  EXPECT_EQ(code("Where", 16, {f32({1}, {1}), f32({1}, {1}), f32({1}, {1})}),
            StatusCode::kInvalidArgument);
}

TEST(Clip, AttributesBeforeOpset11AndMinAboveMax) {
  HostTensor x = f32({4}, {-2, 0, 3, std::nan("")});
  KernelAttrs attrs;
  attrs.floats = {{"min", -1.0f}, {"max", 2.0f}};
  expectValues(run1("Clip", 6 + 1, {x}, attrs), DataType::kFloat, {4}, {-1, 0, 2, std::nan("")});
  expectValues(run1("Clip", 13, {x, f32({}, {5}), f32({}, {1})}), DataType::kFloat, {4},
               {1, 1, 1, std::nan("")});
  expectValues(run1("Clip", 13, {x}), DataType::kFloat, {4}, {-2, 0, 3, std::nan("")});
  EXPECT_EQ(code("Clip", 13, {x, f32({2}, {0, 1})}), StatusCode::kInvalidArgument);
}

TEST(Comparison, StringEqual) {
  HostTensor a = strings({3}, {"a", "b", "c"});
  expectValues(run1("Equal", 19, {a, strings({}, {"b"})}), DataType::kBool, {3}, {0, 1, 0});
}

// --- cast
// -----------------------------------------------------------------------------------------------

class CastTest : public testing::TestWithParam<DataType> {};

TEST_P(CastTest, RoundTripsSmallIntegersFromEveryType) {
  DataType t = GetParam();
  HostTensor x = tensor(t, {4}, {0, 1, 2, 100});
  for (DataType to : kNumericTypes) {
    KernelAttrs attrs = ints({{"to", static_cast<int64_t>(to)}});
    HostTensor y = run1("Cast", 21, {x}, attrs);
    expectValues(y, to, {4}, {0, 1, 2, 100});
    expectValues(run1("CastLike", 21, {x, tensor(to, {0}, {})}), to, {4}, {0, 1, 2, 100});
  }
  expectValues(run1("Cast", 21, {x}, ints({{"to", 9}})), DataType::kBool, {4}, {0, 1, 1, 1});
}

INSTANTIATE_TEST_SUITE_P(Types, CastTest, testing::ValuesIn(kNumericTypes), typeName);

TEST(Cast, FloatToIntTruncatesAndNeverCrashes) {
  HostTensor x = f32({6}, {2.7, -2.7, std::nan(""), 1e30, -1e30, 300});
  HostTensor y = run1("Cast", 13, {x}, ints({{"to", static_cast<int64_t>(DataType::kInt32)}}));
  Values v = values(y);
  EXPECT_EQ(v[0], 2);
  EXPECT_EQ(v[1], -2);
  EXPECT_EQ(v[2], 0);
  HostTensor z = run1("Cast", 13, {x}, ints({{"to", static_cast<int64_t>(DataType::kUint64)}}));
  EXPECT_EQ(z.get<uint64_t>(0), 2u);
  HostTensor h = run1("Cast", 13, {f32({2}, {1.0 + std::ldexp(1.0, -11), 70000})},
                      ints({{"to", static_cast<int64_t>(DataType::kFloat16)}}));
  EXPECT_EQ(h.get<uint16_t>(0), 0x3c00);
  EXPECT_EQ(h.get<uint16_t>(1), 0x7c00);
  expectValues(run1("Cast", 13, {tensor(DataType::kBool, {2}, {1, 0})}, ints({{"to", 1}})),
               DataType::kFloat, {2}, {1, 0});
  EXPECT_EQ(code("Cast", 13, {x}, ints({{"to", static_cast<int64_t>(DataType::kComplex64)}})),
            StatusCode::kUnimplemented);
  EXPECT_EQ(code("Cast", 13, {x}, ints({{"to", static_cast<int64_t>(DataType::kFloat6E2M3)}})),
            StatusCode::kUnimplemented);
  EXPECT_EQ(code("Cast", 13, {x}), StatusCode::kInvalidArgument);
}

// --- shape ops
// --------------------------------------------------------------------------------------------

class MoveTest : public testing::TestWithParam<DataType> {};

HostTensor iota(DataType t, Dims dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (t == DataType::kString) {
    std::vector<std::string> s;
    for (int64_t i = 0; i < n; ++i) s.push_back(std::to_string(i));
    return strings(std::move(dims), std::move(s));
  }
  Values v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(t == DataType::kBool ? i % 2 : static_cast<double>(i));
  return tensor(t, std::move(dims), v);
}

/// The elements of a moved tensor as doubles (strings parsed back).
Values moved(const HostTensor& t) {
  if (t.dtype != DataType::kString) return values(t);
  Values v;
  for (const auto& s : t.strings) v.push_back(std::stod(s));
  return v;
}

Values iotaValues(DataType t, const Values& idx) {
  Values v;
  for (double i : idx) v.push_back(t == DataType::kBool ? std::fmod(i, 2) : i);
  return v;
}

TEST_P(MoveTest, TransposeConcatSplit) {
  DataType t = GetParam();
  HostTensor x = iota(t, {2, 3});
  HostTensor y = run1("Transpose", 13, {x});
  EXPECT_EQ(y.dims, (Dims{3, 2}));
  EXPECT_EQ(moved(y), iotaValues(t, {0, 3, 1, 4, 2, 5}));
  KernelAttrs perm;
  perm.int_lists["perm"] = {1, 0};
  EXPECT_EQ(moved(run1("Transpose", 13, {x}, perm)), iotaValues(t, {0, 3, 1, 4, 2, 5}));
  HostTensor c = run1("Concat", 13, {x, iota(t, {2, 0}), x}, ints({{"axis", -1}}));
  EXPECT_EQ(c.dims, (Dims{2, 6}));
  EXPECT_EQ(moved(c), iotaValues(t, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  KernelRun split{"Split", 13, {x, i64s({1, 2})}, ints({{"axis", 1}}), 2};
  auto parts = split();
  ASSERT_TRUE(parts.isOk()) << parts.status().toString();
  EXPECT_EQ(parts.value()[0].dims, (Dims{2, 1}));
  EXPECT_EQ(moved(parts.value()[0]), iotaValues(t, {0, 3}));
  EXPECT_EQ(moved(parts.value()[1]), iotaValues(t, {1, 2, 4, 5}));
}

TEST_P(MoveTest, SliceGatherExpandTilePad) {
  DataType t = GetParam();
  HostTensor x = iota(t, {2, 3});
  HostTensor s =
      run1("Slice", 13, {x, i64s({-1, 10}), i64s({-100, -10}), i64s({1, 0}), i64s({-1, -2})});
  EXPECT_EQ(s.dims, (Dims{1, 3}));
  EXPECT_EQ(moved(s), iotaValues(t, {5, 4, 3}));
  HostTensor s2 = run1("Slice", 13, {x, i64s({10}), i64s({-100}), i64s({1}), i64s({-2})});
  EXPECT_EQ(s2.dims, (Dims{2, 2}));
  EXPECT_EQ(moved(s2), iotaValues(t, {2, 0, 5, 3}));
  HostTensor g = run1("Gather", 13, {x, i64({2, 2}, {-1, 0, 2, 2})}, ints({{"axis", 1}}));
  EXPECT_EQ(g.dims, (Dims{2, 2, 2}));
  EXPECT_EQ(moved(g), iotaValues(t, {2, 0, 2, 2, 5, 3, 5, 5}));
  HostTensor e = run1("Expand", 13, {iota(t, {3, 1}), i64s({2, 1, 2})});
  EXPECT_EQ(e.dims, (Dims{2, 3, 2}));
  EXPECT_EQ(moved(e), iotaValues(t, {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
  HostTensor tl = run1("Tile", 13, {iota(t, {2}), i64s({3})});
  EXPECT_EQ(moved(tl), iotaValues(t, {0, 1, 0, 1, 0, 1}));
  HostTensor id = run1("Identity", 16, {x});
  EXPECT_EQ(moved(id), moved(x));
  if (t != DataType::kString) {
    HostTensor p = run1("Pad", 13, {iota(t, {3}), i64s({2, 1})}, {});
    EXPECT_EQ(moved(p), iotaValues(t, {0, 0, 0, 1, 2, 0}));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MoveTest,
                         testing::Values(DataType::kFloat, DataType::kFloat16, DataType::kInt8,
                                         DataType::kInt64, DataType::kBool, DataType::kString),
                         typeName);

TEST(Shape, StartEndAndSize) {
  HostTensor x = f32({2, 3, 4}, Values(24, 0));
  expectValues(run1("Shape", 13, {x}), DataType::kInt64, {3}, {2, 3, 4});
  expectValues(run1("Shape", 15, {x}, ints({{"start", -2}})), DataType::kInt64, {2}, {3, 4});
  expectValues(run1("Shape", 15, {x}, ints({{"start", 1}, {"end", -1}})), DataType::kInt64, {1},
               {3});
  expectValues(run1("Shape", 15, {x}, ints({{"start", 5}, {"end", -9}})), DataType::kInt64, {0},
               {});
  expectValues(run1("Size", 13, {x}), DataType::kInt64, {}, {24});
  expectValues(run1("Shape", 13, {f32({}, {1})}), DataType::kInt64, {0}, {});
}

TEST(Reshape, ZeroMinusOneAndAllowzero) {
  HostTensor x = f32({2, 3, 4}, Values(24, 1));
  EXPECT_EQ(run1("Reshape", 14, {x, i64s({0, -1})}).dims, (Dims{2, 12}));
  EXPECT_EQ(run1("Reshape", 14, {x, i64s({-1})}).dims, (Dims{24}));
  EXPECT_EQ(run1("Reshape", 14, {x, i64s({4, 0, 2})}).dims, (Dims{4, 3, 2}));
  EXPECT_EQ(code("Reshape", 14, {x, i64s({5, -1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Reshape", 14, {x, i64s({-1, -1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Reshape", 14, {x, i64s({0, 0, 0, 0})}), StatusCode::kInvalidArgument);
  HostTensor empty = f32({0, 3}, {});
  EXPECT_EQ(run1("Reshape", 14, {empty, i64s({3, 0})}, ints({{"allowzero", 1}})).dims,
            (Dims{3, 0}));
  EXPECT_EQ(code("Reshape", 14, {empty, i64s({0, -1})}, ints({{"allowzero", 1}})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Reshape", 14, {empty, i64s({0, -1})}), StatusCode::kInvalidArgument);
}

TEST(Flatten, Axes) {
  HostTensor x = f32({2, 3, 4}, Values(24, 1));
  EXPECT_EQ(run1("Flatten", 13, {x}).dims, (Dims{2, 12}));
  EXPECT_EQ(run1("Flatten", 13, {x}, ints({{"axis", 0}})).dims, (Dims{1, 24}));
  EXPECT_EQ(run1("Flatten", 13, {x}, ints({{"axis", 3}})).dims, (Dims{24, 1}));
  EXPECT_EQ(run1("Flatten", 13, {x}, ints({{"axis", -1}})).dims, (Dims{6, 4}));
  EXPECT_EQ(code("Flatten", 13, {x}, ints({{"axis", 4}})), StatusCode::kInvalidArgument);
}

TEST(SqueezeUnsqueeze, AttributeBefore13InputAfter) {
  HostTensor x = f32({1, 3, 1}, {1, 2, 3});
  KernelAttrs axes;
  axes.int_lists["axes"] = {-1};
  EXPECT_EQ(run1("Squeeze", 11, {x}, axes).dims, (Dims{1, 3}));
  EXPECT_EQ(run1("Squeeze", 13, {x, i64s({-1})}).dims, (Dims{1, 3}));
  EXPECT_EQ(run1("Squeeze", 13, {x}).dims, (Dims{3}));
  EXPECT_EQ(code("Squeeze", 13, {x, i64s({1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Squeeze", 13, {x, i64s({3})}), StatusCode::kInvalidArgument);
  HostTensor y = f32({3}, {1, 2, 3});
  KernelAttrs uaxes;
  uaxes.int_lists["axes"] = {0, -1};
  EXPECT_EQ(run1("Unsqueeze", 11, {y}, uaxes).dims, (Dims{1, 3, 1}));
  EXPECT_EQ(run1("Unsqueeze", 13, {y, i64s({-1, 0})}).dims, (Dims{1, 3, 1}));
  EXPECT_EQ(run1("Unsqueeze", 13, {f32({}, {1}), i64s({0})}).dims, (Dims{1}));
  EXPECT_EQ(code("Unsqueeze", 13, {y, i64s({0, 0})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Unsqueeze", 13, {y, i64s({3})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Unsqueeze", 13, {y}), StatusCode::kInvalidArgument);
}

TEST(Split, AttributeInputAndNumOutputs) {
  HostTensor x = f32({5}, {1, 2, 3, 4, 5});
  KernelAttrs split_attr;
  split_attr.int_lists["split"] = {2, 3};
  auto a = KernelRun{"Split", 11, {x}, split_attr, 2}();
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(values(a.value()[1]), (Values{3, 4, 5}));
  auto b = KernelRun{"Split", 18, {x}, ints({{"num_outputs", 2}}), 2}();
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  EXPECT_EQ(values(b.value()[0]), (Values{1, 2, 3}));
  EXPECT_EQ(values(b.value()[1]), (Values{4, 5}));
  EXPECT_EQ(code("Split", 13, {x}, {}, 2), StatusCode::kInvalidArgument);  // 5 is odd
  EXPECT_EQ(code("Split", 13, {x, i64s({2, 2})}, {}, 2), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Split", 13, {x, i64s({6, -1})}, {}, 2), StatusCode::kInvalidArgument);
  auto c = KernelRun{"Split", 13, {f32({0, 2}, {})}, {}, 2}();
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c.value()[1].dims, (Dims{0, 2}));
}

TEST(Slice, StepsClampingAndOpset1Attributes) {
  HostTensor x = f32({6}, {0, 1, 2, 3, 4, 5});
  expectValues(
      run1("Slice", 13,
           {x, i64s({-1}), i64s({std::numeric_limits<int64_t>::min()}), i64s({0}), i64s({-2})}),
      DataType::kFloat, {3}, {5, 3, 1});
  expectValues(run1("Slice", 13,
                    {x, i64s({1}), i64s({std::numeric_limits<int64_t>::max()}), std::nullopt,
                     i64s({std::numeric_limits<int64_t>::max()})}),
               DataType::kFloat, {1}, {1});
  expectValues(run1("Slice", 13, {x, i64s({4}), i64s({1})}), DataType::kFloat, {0}, {});
  expectValues(run1("Slice", 13,
                    {x, tensor(DataType::kInt32, {1}, {-3}), tensor(DataType::kInt32, {1}, {-1})}),
               DataType::kFloat, {2}, {3, 4});
  KernelAttrs attrs;
  attrs.int_lists = {{"starts", {1}}, {"ends", {3}}};
  expectValues(run1("Slice", 9, {x}, attrs), DataType::kFloat, {2}, {1, 2});
  EXPECT_EQ(code("Slice", 13, {x, i64s({0}), i64s({1}), i64s({0}), i64s({0})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Slice", 13, {x, i64s({0}), i64s({1}), i64s({1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Slice", 13, {x, i64s({0, 0}), i64s({1})}), StatusCode::kInvalidArgument);
}

// The kernel copies runs of consecutive elements (trailing axes taken whole at step 1, and the
// axis before them): each case below takes a different run length against an element-wise
// reading of the same slice.
TEST(Slice, ContiguousRunsMatchElementwiseSlicing) {
  Values v(2 * 3 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  HostTensor x = f32({2, 3, 4}, v);
  auto at = [&](int64_t a, int64_t b, int64_t c) {
    return v[static_cast<size_t>(a * 12 + b * 4 + c)];
  };
  // rows 1..2 of each matrix, whole: runs of 8 elements (axis 1 partial, axis 2 whole)
  expectValues(run1("Slice", 13, {x, i64s({1}), i64s({3}), i64s({1})}), DataType::kFloat, {2, 2, 4},
               {at(0, 1, 0), at(0, 1, 1), at(0, 1, 2), at(0, 1, 3), at(0, 2, 0), at(0, 2, 1),
                at(0, 2, 2), at(0, 2, 3), at(1, 1, 0), at(1, 1, 1), at(1, 1, 2), at(1, 1, 3),
                at(1, 2, 0), at(1, 2, 1), at(1, 2, 2), at(1, 2, 3)});
  // columns 1..2: runs of 2 elements
  expectValues(run1("Slice", 13, {x, i64s({1}), i64s({3}), i64s({2})}), DataType::kFloat, {2, 3, 2},
               {at(0, 0, 1), at(0, 0, 2), at(0, 1, 1), at(0, 1, 2), at(0, 2, 1), at(0, 2, 2),
                at(1, 0, 1), at(1, 0, 2), at(1, 1, 1), at(1, 1, 2), at(1, 2, 1), at(1, 2, 2)});
  // the second matrix reversed row by row (a negative step outside a whole-row run)
  expectValues(run1("Slice", 13, {x, i64s({1, -1}), i64s({2, -4}), i64s({0, 1}), i64s({1, -1})}),
               DataType::kFloat, {1, 3, 4},
               {at(1, 2, 0), at(1, 2, 1), at(1, 2, 2), at(1, 2, 3), at(1, 1, 0), at(1, 1, 1),
                at(1, 1, 2), at(1, 1, 3), at(1, 0, 0), at(1, 0, 1), at(1, 0, 2), at(1, 0, 3)});
  // a step of 2 on the last axis: no run longer than one element
  expectValues(run1("Slice", 13, {x, i64s({1}), i64s({4}), i64s({2}), i64s({2})}), DataType::kFloat,
               {2, 3, 2},
               {at(0, 0, 1), at(0, 0, 3), at(0, 1, 1), at(0, 1, 3), at(0, 2, 1), at(0, 2, 3),
                at(1, 0, 1), at(1, 0, 3), at(1, 1, 1), at(1, 1, 3), at(1, 2, 1), at(1, 2, 3)});
  // everything: one run
  expectValues(run1("Slice", 13, {x, i64s({0}), i64s({2}), i64s({0})}), DataType::kFloat, {2, 3, 4},
               v);
}

TEST(Gather, IndexErrorsAndScalars) {
  HostTensor x = f32({3}, {10, 20, 30});
  expectValues(run1("Gather", 13, {x, i64Scalar(-1)}), DataType::kFloat, {}, {30});
  expectValues(run1("Gather", 13, {x, i64({0}, {})}), DataType::kFloat, {0}, {});
  EXPECT_EQ(code("Gather", 13, {x, i64Scalar(3)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Gather", 13, {x, i64Scalar(-4)}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Gather", 13, {x, i64Scalar(0)}, ints({{"axis", 1}})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Gather", 13, {x, f32({}, {0})}), StatusCode::kInvalidArgument);
  HostTensor y = f32({2, 2}, {1, 2, 3, 4});
  expectValues(run1("GatherElements", 13, {y, i64({2, 2}, {0, 0, 1, -2})}, ints({{"axis", 1}})),
               DataType::kFloat, {2, 2}, {1, 1, 4, 3});
  expectValues(run1("GatherElements", 13, {y, i64({1, 2}, {1, 0})}), DataType::kFloat, {1, 2},
               {3, 2});
  EXPECT_EQ(code("GatherElements", 13, {y, i64({2, 2}, {0, 0, 2, 0})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("GatherElements", 13, {y, i64({2, 3}, {0, 0, 0, 0, 0, 0})}),
            StatusCode::kInvalidArgument);
}

TEST(Expand, BidirectionalAndErrors) {
  HostTensor x = f32({2, 1}, {1, 2});
  EXPECT_EQ(run1("Expand", 13, {x, i64s({1, 1})}).dims, (Dims{2, 1}));
  EXPECT_EQ(run1("Expand", 13, {x, i64s({3})}).dims, (Dims{2, 3}));
  EXPECT_EQ(run1("Expand", 13, {x, i64s({0})}).dims, (Dims{2, 0}));
  EXPECT_EQ(code("Expand", 13, {x, i64s({3, 3})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Expand", 13, {x, i64s({-1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Tile", 13, {x, i64s({1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Tile", 13, {x, i64s({1, -1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(run1("Tile", 13, {x, i64s({0, 2})}).dims, (Dims{0, 2}));
}

TEST(Pad, Modes) {
  HostTensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  KernelAttrs reflect;
  reflect.strings["mode"] = "reflect";
  expectValues(run1("Pad", 13, {x, i64s({0, 2, 0, 1})}, reflect), DataType::kFloat, {2, 6},
               {3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5});
  KernelAttrs edge;
  edge.strings["mode"] = "edge";
  expectValues(run1("Pad", 13, {x, i64s({1, 1, 0, 0})}, edge), DataType::kFloat, {3, 4},
               {1, 1, 2, 3, 1, 1, 2, 3, 4, 4, 5, 6});
  expectValues(run1("Pad", 13, {x, i64s({0, -1, 0, 1}), f32({}, {9})}), DataType::kFloat, {2, 3},
               {2, 3, 9, 5, 6, 9});
  expectValues(run1("Pad", 18, {x, i64s({1, 0}), f32({}, {7}), i64s({-1})}), DataType::kFloat,
               {2, 4}, {7, 1, 2, 3, 7, 4, 5, 6});
  KernelAttrs old;
  old.int_lists["pads"] = {0, 1, 0, 0};
  old.floats["value"] = 2.5f;
  expectValues(run1("Pad", 7, {x}, old), DataType::kFloat, {2, 4}, {2.5, 1, 2, 3, 2.5, 4, 5, 6});
  KernelAttrs wrap;
  wrap.strings["mode"] = "wrap";
  expectValues(run1("Pad", 19, {x, i64s({0, 1, 0, 1})}, wrap), DataType::kFloat, {2, 5},
               {3, 1, 2, 3, 1, 6, 4, 5, 6, 4});
  EXPECT_EQ(code("Pad", 13, {x, i64s({0, 1})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Pad", 13, {x, i64s({0, -4, 0, 0})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Pad", 13, {f32({0}, {}), i64s({1, 1})}, edge), StatusCode::kInvalidArgument);
}

// --- generators
// -------------------------------------------------------------------------------------------

TEST(Generators, RangeConstantOfShapeNonZeroOneHot) {
  expectValues(run1("Range", 11, {f32({}, {1}), f32({}, {2}), f32({}, {0.25})}), DataType::kFloat,
               {4}, {1, 1.25, 1.5, 1.75});
  expectValues(run1("Range", 11, {i64Scalar(10), i64Scalar(4), i64Scalar(-3)}), DataType::kInt64,
               {2}, {10, 7});
  expectValues(run1("Range", 11, {i64Scalar(1), i64Scalar(1), i64Scalar(3)}), DataType::kInt64, {0},
               {});
  EXPECT_EQ(code("Range", 11, {i64Scalar(1), i64Scalar(5), i64Scalar(0)}),
            StatusCode::kInvalidArgument);
  expectValues(run1("ConstantOfShape", 9, {i64s({2, 1})}), DataType::kFloat, {2, 1}, {0, 0});
  KernelAttrs value;
  value.tensors["value"] = tensor(DataType::kInt32, {1}, {7});
  expectValues(run1("ConstantOfShape", 9, {i64s({2})}, value), DataType::kInt32, {2}, {7, 7});
  expectValues(run1("ConstantOfShape", 9, {i64({0}, {})}, value), DataType::kInt32, {}, {7});
  EXPECT_EQ(code("ConstantOfShape", 9, {i64s({-2})}), StatusCode::kInvalidArgument);
  expectValues(run1("NonZero", 13, {f32({2, 2}, {1, 0, 0, 3})}), DataType::kInt64, {2, 2},
               {0, 1, 0, 1});
  expectValues(run1("NonZero", 13, {tensor(DataType::kBool, {0}, {})}), DataType::kInt64, {1, 0},
               {});
  expectValues(run1("OneHot", 11, {i64s({0, -1, 5}), i64Scalar(3), f32({2}, {0, 1})}),
               DataType::kFloat, {3, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 0});
  expectValues(
      run1("OneHot", 11, {i64s({0, 2}), f32({}, {3}), f32({2}, {0, 1})}, ints({{"axis", 0}})),
      DataType::kFloat, {3, 2}, {1, 0, 0, 0, 0, 1});
  EXPECT_EQ(code("OneHot", 11, {i64s({0}), i64Scalar(0), f32({2}, {0, 1})}),
            StatusCode::kInvalidArgument);
}

// --- reductions
// ----------------------------------------------------------------------------------------

class ReduceTest : public testing::TestWithParam<DataType> {};

TEST_P(ReduceTest, AllReductionsOverAxes) {
  DataType t = GetParam();
  HostTensor x = tensor(t, {2, 3}, {1, 2, 3, 4, 5, 6});
  expectValues(run1("ReduceSum", 13, {x, i64s({1})}), t, {2, 1}, {6, 15});
  expectValues(run1("ReduceSum", 13, {x, i64s({-2})}, ints({{"keepdims", 0}})), t, {3}, {5, 7, 9});
  expectValues(run1("ReduceSum", 13, {x}), t, {1, 1}, {21});
  expectValues(run1("ReduceMax", 18, {x, i64s({1})}), t, {2, 1}, {3, 6});
  expectValues(run1("ReduceMin", 18, {x, i64s({0})}), t, {1, 3}, {1, 2, 3});
  expectValues(run1("ReduceProd", 18, {x, i64s({1})}), t, {2, 1}, {6, 120});
  expectValues(run1("ReduceL1", 18, {x, i64s({1})}), t, {2, 1}, {6, 15});
  expectValues(run1("ReduceSumSquare", 18, {x, i64s({1})}), t, {2, 1}, {14, 77});
  Values mean = isFloatType(t) ? Values{2, 5} : Values{2, 5};
  expectValues(run1("ReduceMean", 18, {x, i64s({1})}), t, {2, 1}, mean);
  if (isFloatType(t)) {
    expectValues(run1("ReduceL2", 18, {x, i64s({1})}), t, {2, 1},
                 {std::sqrt(14.0), std::sqrt(77.0)});
    expectValues(run1("ReduceLogSumExp", 18, {x, i64s({1})}), t, {2, 1},
                 {std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)),
                  std::log(std::exp(4.0) + std::exp(5.0) + std::exp(6.0))});
    expectValues(run1("ReduceMean", 18, {x, i64s({0})}), t, {1, 3}, {2.5, 3.5, 4.5});
  }
  HostTensor am = run1("ArgMax", 13, {x}, ints({{"axis", -1}, {"keepdims", 0}}));
  expectValues(am, DataType::kInt64, {2}, {2, 2});
  expectValues(run1("ArgMin", 13, {x}), DataType::kInt64, {1, 3}, {0, 0, 0});
}

TEST_P(ReduceTest, EmptyReductionsAndNoop) {
  DataType t = GetParam();
  HostTensor x = tensor(t, {2, 0}, {});
  expectValues(run1("ReduceSum", 13, {x, i64s({1})}), t, {2, 1}, {0, 0});
  expectValues(run1("ReduceProd", 18, {x, i64s({1})}), t, {2, 1}, {1, 1});
  expectValues(run1("ReduceSum", 13, {x, i64s({0})}), t, {1, 0}, {});
  HostTensor y = tensor(t, {2}, {1, 2});
  expectValues(run1("ReduceSum", 13, {y, i64({0}, {})}, ints({{"noop_with_empty_axes", 1}})), t,
               {2}, {1, 2});
  expectValues(run1("ReduceMax", 18, {y}, ints({{"noop_with_empty_axes", 1}})), t, {2}, {1, 2});
  EXPECT_EQ(code("ArgMax", 13, {x}, ints({{"axis", 1}})), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Types, ReduceTest,
                         testing::Values(DataType::kFloat, DataType::kFloat16, DataType::kBfloat16,
                                         DataType::kDouble, DataType::kInt32, DataType::kInt64,
                                         DataType::kUint8, DataType::kUint64),
                         typeName);

TEST(Reduce, AxesAttributeBeforeInputOpsetAndErrors) {
  HostTensor x = f32({2, 2}, {1, 2, 3, 4});
  KernelAttrs axes;
  axes.int_lists["axes"] = {0};
  expectValues(run1("ReduceSum", 11, {x}, axes), DataType::kFloat, {1, 2}, {4, 6});
  expectValues(run1("ReduceMax", 13, {x}, axes), DataType::kFloat, {1, 2}, {3, 4});
  expectValues(run1("ReduceMax", 18, {x, i64s({0})}), DataType::kFloat, {1, 2}, {3, 4});
  expectValues(run1("ReduceMax", 18, {f32({2}, {1, std::nan("")})}), DataType::kFloat, {1},
               {std::nan("")});
  expectValues(
      run1("ReduceMax", 18, {f32({2, 0}, {}), i64s({1})}), DataType::kFloat, {2, 1},
      {-std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()});
  EXPECT_EQ(code("ReduceSum", 13, {x, i64s({2})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ReduceSum", 13, {x, i64s({0, -2})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("ReduceMean", 18, {tensor(DataType::kInt32, {0}, {})}),
            StatusCode::kInvalidArgument);
  HostTensor b = tensor(DataType::kBool, {3}, {0, 1, 0});
  expectValues(run1("ReduceMax", 20, {b}), DataType::kBool, {1}, {1});
  EXPECT_EQ(code("ReduceSum", 20, {b}), StatusCode::kUnimplemented);
}

TEST(ArgMax, SelectLastIndex) {
  HostTensor x = f32({4}, {1, 3, 3, 0});
  expectValues(run1("ArgMax", 13, {x}), DataType::kInt64, {1}, {1});
  expectValues(run1("ArgMax", 13, {x}, ints({{"select_last_index", 1}})), DataType::kInt64, {1},
               {2});
  expectValues(run1("ArgMin", 13, {f32({3}, {0, 1, 0})}, ints({{"select_last_index", 1}})),
               DataType::kInt64, {1}, {2});
}

// --- linear algebra
// --------------------------------------------------------------------------------------

class LinalgTest : public testing::TestWithParam<DataType> {};

TEST_P(LinalgTest, MatMulShapes) {
  DataType t = GetParam();
  HostTensor a = tensor(t, {2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor b = tensor(t, {3, 2}, {1, 0, 0, 1, 1, 1});
  expectValues(run1("MatMul", 13, {a, b}), t, {2, 2}, {4, 5, 10, 11});
  HostTensor v = tensor(t, {3}, {1, 1, 1});
  expectValues(run1("MatMul", 13, {a, v}), t, {2}, {6, 15});
  expectValues(run1("MatMul", 13, {v, b}), t, {2}, {2, 2});
  expectValues(run1("MatMul", 13, {v, v}), t, {}, {3});
  HostTensor batch = tensor(t, {2, 1, 1, 3}, {1, 1, 1, 2, 2, 2});
  expectValues(run1("MatMul", 13, {batch, tensor(t, {3, 3, 1}, {1, 0, 0, 0, 1, 0, 0, 0, 1})}), t,
               {2, 3, 1, 1}, {1, 1, 1, 2, 2, 2});
  expectValues(run1("MatMul", 13, {tensor(t, {2, 0}, {}), tensor(t, {0, 2}, {})}), t, {2, 2},
               {0, 0, 0, 0});
  EXPECT_EQ(code("MatMul", 13, {a, a}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("MatMul", 13, {tensor(t, {}, {1}), a}), StatusCode::kInvalidArgument);
}

TEST_P(LinalgTest, Gemm) {
  DataType t = GetParam();
  HostTensor a = tensor(t, {3, 2}, {1, 4, 2, 5, 3, 6});  // transposed [2, 3]
  HostTensor b = tensor(t, {2, 3}, {1, 0, 1, 0, 1, 1});  // transposed [3, 2]
  KernelAttrs attrs = ints({{"transA", 1}, {"transB", 1}});
  attrs.floats = {{"alpha", 2.0f}, {"beta", 3.0f}};
  expectValues(run1("Gemm", 13, {a, b, tensor(t, {2}, {1, 0})}, attrs), t, {2, 2},
               {11, 10, 23, 22});
  expectValues(run1("Gemm", 13, {tensor(t, {1, 1}, {2}), tensor(t, {1, 1}, {3})}), t, {1, 1}, {6});
  EXPECT_EQ(code("Gemm", 13, {a, b, tensor(t, {3}, {1, 2, 3})}, attrs),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Gemm", 13, {a, a}), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Types, LinalgTest,
                         testing::Values(DataType::kFloat, DataType::kFloat16, DataType::kBfloat16,
                                         DataType::kDouble, DataType::kInt32, DataType::kInt64,
                                         DataType::kUint32, DataType::kUint64),
                         typeName);

// --- quantization
// ----------------------------------------------------------------------------------------

TEST(Quantization, DequantizePerTensorPerAxisBlocked) {
  HostTensor x = tensor(DataType::kUint8, {2, 2}, {0, 128, 255, 10});
  expectValues(
      run1("DequantizeLinear", 13, {x, f32({}, {0.5}), tensor(DataType::kUint8, {}, {128})}),
      DataType::kFloat, {2, 2}, {-64, 0, 63.5, -59});
  expectValues(
      run1("DequantizeLinear", 13, {x, f32({2}, {1, 2}), tensor(DataType::kUint8, {2}, {0, 10})},
           ints({{"axis", 0}})),
      DataType::kFloat, {2, 2}, {0, 128, 490, 0});
  HostTensor y = tensor(DataType::kInt8, {1, 4}, {1, 2, 3, -4});
  expectValues(run1("DequantizeLinear", 21, {y, f32({1, 2}, {1, 10})},
                    ints({{"axis", 1}, {"block_size", 2}})),
               DataType::kFloat, {1, 4}, {1, 2, 30, -40});
  expectValues(run1("DequantizeLinear", 13, {tensor(DataType::kInt32, {2}, {-5, 7}), f32({}, {2})}),
               DataType::kFloat, {2}, {-10, 14});
  HostTensor half_scale = tensor(DataType::kFloat16, {}, {0.5});
  expectValues(run1("DequantizeLinear", 19, {x, half_scale}), DataType::kFloat16, {2, 2},
               {0, 64, 127.5, 5});
  EXPECT_EQ(code("DequantizeLinear", 13, {x, f32({3}, {1, 2, 3})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("DequantizeLinear", 13, {x, f32({}, {1}), tensor(DataType::kInt8, {}, {0})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("DequantizeLinear", 13, {f32({1}, {1}), f32({}, {1})}),
            StatusCode::kUnimplemented);
}

TEST(Quantization, QuantizeRoundsHalfToEvenAndSaturates) {
  HostTensor x = f32({6}, {0.5, 1.5, 2.5, -1, 1000, -1000});
  expectValues(run1("QuantizeLinear", 13, {x, f32({}, {1})}), DataType::kUint8, {6},
               {0, 2, 2, 0, 255, 0});
  expectValues(run1("QuantizeLinear", 13, {x, f32({}, {1}), tensor(DataType::kInt8, {}, {1})}),
               DataType::kInt8, {6}, {1, 3, 3, 0, 127, -128});
  expectValues(
      run1("QuantizeLinear", 13,
           {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 2}), tensor(DataType::kUint8, {2}, {0, 1})},
           ints({{"axis", 1}})),
      DataType::kUint8, {2, 2}, {1, 2, 3, 3});
}

// --- robustness: every op, every type, odd shapes: statuses, never crashes
// ------------------------------

TEST(Robustness, EveryOpEveryTypeNeverCrashes) {
  std::vector<DataType> types = kNumericTypes;
  types.push_back(DataType::kBool);
  types.push_back(DataType::kString);
  types.push_back(DataType::kFloat8E4M3FN);
  types.push_back(DataType::kInt4);
  std::vector<Dims> shapes = {{}, {0}, {1}, {2, 3}, {3, 1, 2}};
  int runs = 0;
  for (const std::string& op : referenceKernelOps()) {
    for (int64_t opset : {7, 11, 13, 18, 21}) {
      if (!hasReferenceKernel(op, opset)) continue;
      for (DataType t : types) {
        for (const Dims& shape : shapes) {
          HostTensor x = HostTensor::zeros(t, shape);
          if (t != DataType::kString && !x.bytes.empty()) x.bytes[0] = 1;
          HostTensor axes = i64s({1});
          for (size_t n_in = 1; n_in <= 3; ++n_in) {
            std::vector<std::optional<HostTensor>> inputs(n_in, x);
            if (n_in >= 2) inputs[1] = (op == "Pow" || op == "Where") ? x : axes;
            KernelAttrs attrs = ints({{"axis", 1}, {"to", 1}});
            for (size_t outs : {1, 2}) {
              KernelRun r{op, opset, inputs, attrs, outs};
              auto result = r();
              ++runs;
              if (result.isOk()) {
                EXPECT_EQ(result.value().size(), outs);
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(runs, 1000);
}

}  // namespace
}  // namespace onnxopt::kernels
