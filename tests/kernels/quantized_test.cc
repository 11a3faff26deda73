// Tests of the low-precision casts (float8, float4, int4/int2, strings), the quantized kernels
// (kernels/reference/quantized.cc) and the signal kernels (signal.cc) where ONNX's node tests
// leave gaps: rounding and saturation edges, sub-byte packing, and inputs refused with
// kInvalidArgument.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/reference.h"
#include "test_tensors.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;
using test::tensorOf;

KernelAttrs ints(std::map<std::string, int64_t> v) {
  KernelAttrs a;
  a.ints = std::move(v);
  return a;
}

StatusOr<std::vector<HostTensor>> run(const std::string& op, int64_t opset,
                                      const std::vector<const HostTensor*>& in,
                                      const KernelAttrs& attrs = {}, size_t outputs = 1) {
  return runReferenceKernel(op, opset, in, attrs, outputs);
}

HostTensor run1(const std::string& op, int64_t opset, const std::vector<const HostTensor*>& in,
                const KernelAttrs& attrs = {}) {
  auto r = run(op, opset, in, attrs);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? (*r)[0] : HostTensor{};
}

uint8_t byteAt(const HostTensor& t, size_t i) {
  return static_cast<uint8_t>(t.bytes[i]);
}

HostTensor castTo(const HostTensor& x, DataType to, int64_t saturate = 1) {
  return run1("Cast", 21, {&x}, ints({{"to", static_cast<int64_t>(to)}, {"saturate", saturate}}));
}

TEST(LowPrecisionCast, Float8RoundsToNearestEvenAndSaturates) {
  HostTensor x = tensorOf(DataType::kFloat, {6}, {464, 465, 1e9, -INFINITY, 0.0, -0.0});
  HostTensor sat = castTo(x, DataType::kFloat8E4M3FN);
  EXPECT_EQ(byteAt(sat, 0), 0x7e);  // 464 ties to 448 (even mantissa)
  EXPECT_EQ(byteAt(sat, 1), 0x7e);  // clamped to 448
  EXPECT_EQ(byteAt(sat, 2), 0x7e);
  EXPECT_EQ(byteAt(sat, 3), 0xfe);  // -inf saturates to -448
  EXPECT_EQ(byteAt(sat, 4), 0x00);
  EXPECT_EQ(byteAt(sat, 5), 0x80);
  HostTensor wrap = castTo(x, DataType::kFloat8E4M3FN, 0);
  EXPECT_EQ(byteAt(wrap, 0), 0x7e);
  EXPECT_EQ(byteAt(wrap, 1), 0x7f);  // NaN: E4M3FN has no infinity
  HostTensor e5 = castTo(x, DataType::kFloat8E5M2, 0);
  EXPECT_EQ(byteAt(e5, 2), 0x7c);  // +inf
  EXPECT_EQ(byteAt(e5, 3), 0xfc);  // -inf
  HostTensor uz = castTo(x, DataType::kFloat8E4M3FNUZ, 0);
  EXPECT_EQ(byteAt(uz, 2), 0x80);  // the one NaN
  EXPECT_EQ(byteAt(uz, 5), 0x00);  // no negative zero
}

TEST(LowPrecisionCast, Float8SubnormalsRoundTrip) {
  // E4M3FN's smallest subnormal is 2^-9; half of it ties to zero, three halves to 2^-8.
  HostTensor x = tensorOf(DataType::kFloat, {3},
                          {std::ldexp(1.0, -9), std::ldexp(1.0, -10), 3 * std::ldexp(1.0, -10)});
  HostTensor f8 = castTo(x, DataType::kFloat8E4M3FN);
  EXPECT_EQ(byteAt(f8, 0), 0x01);
  EXPECT_EQ(byteAt(f8, 1), 0x00);
  EXPECT_EQ(byteAt(f8, 2), 0x02);
  HostTensor back = castTo(f8, DataType::kFloat);
  EXPECT_EQ(back.get<float>(0), std::ldexp(1.0f, -9));
  EXPECT_EQ(back.get<float>(2), std::ldexp(1.0f, -8));
}

TEST(LowPrecisionCast, PackedIntegersWrapAndPackLowNibbleFirst) {
  HostTensor x = tensorOf(DataType::kFloat, {3}, {-9, 2.7, 7});
  HostTensor i4 = castTo(x, DataType::kInt4);
  ASSERT_EQ(i4.bytes.size(), 2u);  // three elements, two bytes
  EXPECT_EQ(byteAt(i4, 0), 0x27);  // 7 (from -9) low, 2 (2.7 truncated) high
  EXPECT_EQ(byteAt(i4, 1) & 0x0f, 0x07);
  HostTensor back = castTo(i4, DataType::kInt8);
  EXPECT_EQ(back.get<int8_t>(0), 7);
  EXPECT_EQ(back.get<int8_t>(1), 2);
  HostTensor neg = castTo(tensorOf(DataType::kInt8, {1}, {-3}), DataType::kInt2);
  EXPECT_EQ(castTo(neg, DataType::kInt32).get<int32_t>(0), 1);  // -3 wraps to 1 in 2 bits
}

TEST(LowPrecisionCast, Float4SaturatesAlways) {
  HostTensor x = tensorOf(DataType::kFloat, {4}, {1e6, -INFINITY, 0.25, 2.5});
  HostTensor f4 = castTo(x, DataType::kFloat4E2M1, 0);
  HostTensor back = castTo(f4, DataType::kFloat);
  EXPECT_EQ(back.get<float>(0), 6.0f);
  EXPECT_EQ(back.get<float>(1), -6.0f);
  EXPECT_EQ(back.get<float>(2), 0.0f);  // ties to even
  EXPECT_EQ(back.get<float>(3), 2.0f);
}

TEST(LowPrecisionCast, StringsParseAndFormat) {
  HostTensor s = HostTensor::zeros(DataType::kString, {5});
  s.strings = {"1e-5", "-INF", "nan", " 100.5", "+inf"};
  HostTensor f = castTo(s, DataType::kFloat);
  EXPECT_FLOAT_EQ(f.get<float>(0), 1e-5f);
  EXPECT_TRUE(std::isinf(f.get<float>(1)) && f.get<float>(1) < 0);
  EXPECT_TRUE(std::isnan(f.get<float>(2)));
  EXPECT_FLOAT_EQ(f.get<float>(3), 100.5f);
  EXPECT_TRUE(std::isinf(f.get<float>(4)));
  HostTensor i = castTo(s, DataType::kInt64);  // "100.5" may give 100
  EXPECT_EQ(i.get<int64_t>(3), 100);
  HostTensor back =
      castTo(tensorOf(DataType::kFloat, {3}, {1.5, 0.1, -INFINITY}), DataType::kString);
  EXPECT_EQ(back.strings, (std::vector<std::string>{"1.5", "0.1", "-INF"}));
  HostTensor big = HostTensor::zeros(DataType::kString, {1});
  big.strings = {"18446744073709551615"};
  EXPECT_EQ(castTo(big, DataType::kUint64).get<uint64_t>(0), UINT64_MAX);
  HostTensor bad = HostTensor::zeros(DataType::kString, {1});
  bad.strings = {"Hello World!"};
  auto r = run("Cast", 21, {&bad}, ints({{"to", 1}}));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(LowPrecisionCast, E8M0RoundModes) {
  HostTensor x = tensorOf(DataType::kFloat, {2}, {1.1, 3.0});
  auto with = [&](const char* mode) {
    KernelAttrs a = ints({{"to", static_cast<int64_t>(DataType::kFloat8E8M0)}});
    a.strings["round_mode"] = mode;
    return run1("Cast", 25, {&x}, a);
  };
  EXPECT_EQ(byteAt(with("up"), 0), 128);       // 2
  EXPECT_EQ(byteAt(with("down"), 0), 127);     // 1
  EXPECT_EQ(byteAt(with("nearest"), 1), 129);  // 3 -> 4
  KernelAttrs bad = ints({{"to", static_cast<int64_t>(DataType::kFloat8E8M0)}});
  bad.strings["round_mode"] = "sideways";
  EXPECT_EQ(run("Cast", 25, {&x}, bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(Quantized, QuantizeToInt4SaturatesAndPacks) {
  HostTensor x = tensorOf(DataType::kFloat, {3}, {100, -100, 2.5});
  HostTensor scale = tensorOf(DataType::kFloat, {}, {1});
  HostTensor zp = HostTensor::zeros(DataType::kInt4, {});
  HostTensor q = run1("QuantizeLinear", 21, {&x, &scale, &zp});
  EXPECT_EQ(byteAt(q, 0), 0x87);         // 7 low, -8 high
  EXPECT_EQ(byteAt(q, 1) & 0x0f, 0x02);  // 2.5 rounds to even
  HostTensor d = run1("DequantizeLinear", 21, {&q, &scale, &zp});
  EXPECT_EQ(d.get<float>(0), 7.0f);
  EXPECT_EQ(d.get<float>(1), -8.0f);
}

TEST(Quantized, MatMulIntegerPerRowZeroPoint) {
  HostTensor a = tensorOf(DataType::kUint8, {2, 2}, {1, 2, 3, 4});
  HostTensor b = tensorOf(DataType::kUint8, {2, 1}, {1, 1});
  HostTensor za = tensorOf(DataType::kUint8, {2}, {1, 3});
  HostTensor y = run1("MatMulInteger", 10, {&a, &b, &za});
  EXPECT_EQ(y.get<int32_t>(0), 1);  // (1-1) + (2-1)
  EXPECT_EQ(y.get<int32_t>(1), 1);  // (3-3) + (4-3)
  HostTensor bad = tensorOf(DataType::kUint8, {3}, {1, 2, 3});
  EXPECT_EQ(run("MatMulInteger", 10, {&a, &b, &bad}).status().code(), StatusCode::kInvalidArgument);
  HostTensor mixed = tensorOf(DataType::kInt8, {}, {0});
  EXPECT_EQ(run("MatMulInteger", 10, {&a, &b, &mixed}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(Quantized, QLinearMatMulRequantizesAndSaturates) {
  HostTensor a = tensorOf(DataType::kUint8, {1, 2}, {200, 100});
  HostTensor b = tensorOf(DataType::kUint8, {2, 1}, {2, 1});
  HostTensor one = tensorOf(DataType::kFloat, {}, {1});
  HostTensor zero = tensorOf(DataType::kUint8, {}, {0});
  HostTensor y = run1("QLinearMatMul", 10, {&a, &one, &zero, &b, &one, &zero, &one, &zero});
  EXPECT_EQ(y.get<uint8_t>(0), 255);  // 500 saturates
  HostTensor bad_scale = tensorOf(DataType::kFloat, {3}, {1, 1, 1});
  EXPECT_EQ(run("QLinearMatMul", 10, {&a, &bad_scale, &zero, &b, &one, &zero, &one, &zero})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(Quantized, DynamicQuantizeLinearRefusesNaN) {
  HostTensor x = tensorOf(DataType::kFloat, {2}, {1, NAN});
  EXPECT_EQ(run("DynamicQuantizeLinear", 11, {&x}, {}, 3).status().code(),
            StatusCode::kInvalidArgument);
  HostTensor zeros = tensorOf(DataType::kFloat, {2}, {0, 0});
  auto r = run("DynamicQuantizeLinear", 11, {&zeros}, {}, 3);
  ASSERT_TRUE(r.isOk());
  EXPECT_FLOAT_EQ((*r)[1].get<float>(0), 1.0f / 255.0f);  // max == min: scale 1/255
}

TEST(Signal, DftRoundTripsAndRefusesBadShapes) {
  HostTensor x = tensorOf(DataType::kDouble, {1, 3, 1}, {1, 2, 3});
  HostTensor y = run1("DFT", 17, {&x});
  EXPECT_DOUBLE_EQ(y.get<double>(0), 6.0);  // DC
  KernelAttrs inv = ints({{"inverse", 1}});
  HostTensor back = run1("DFT", 17, {&y}, inv);
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(back.get<double>(2 * i), 1.0 + i, 1e-12);
  HostTensor three = tensorOf(DataType::kDouble, {1, 3, 3}, std::vector<double>(9, 0));
  EXPECT_EQ(run("DFT", 17, {&three}).status().code(), StatusCode::kInvalidArgument);
  HostTensor zero_len = tensorOf(DataType::kInt64, {}, {0});
  EXPECT_EQ(run("DFT", 17, {&x, &zero_len}).status().code(), StatusCode::kInvalidArgument);
  HostTensor last_axis = tensorOf(DataType::kInt64, {}, {-1});
  EXPECT_EQ(run("DFT", 20, {&x, nullptr, &last_axis}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(Signal, WindowsAndStftEdges) {
  HostTensor four = tensorOf(DataType::kInt64, {}, {4});
  HostTensor hann = run1("HannWindow", 17, {&four});
  EXPECT_NEAR(hann.get<float>(2), 1.0f, 1e-6);
  HostTensor neg = tensorOf(DataType::kInt64, {}, {-1});
  EXPECT_EQ(run("HannWindow", 17, {&neg}).status().code(), StatusCode::kInvalidArgument);
  HostTensor sig = tensorOf(DataType::kFloat, {1, 4, 1}, {1, 1, 1, 1});
  HostTensor step = tensorOf(DataType::kInt64, {}, {0});
  EXPECT_EQ(run("STFT", 17, {&sig, &step}).status().code(), StatusCode::kInvalidArgument);
  HostTensor long_len = tensorOf(DataType::kInt64, {}, {8});
  HostTensor one = tensorOf(DataType::kInt64, {}, {1});
  EXPECT_EQ(run("STFT", 17, {&sig, &one, nullptr, &long_len}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onnxopt::kernels
