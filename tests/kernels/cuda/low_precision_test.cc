// Cast, CastLike, QuantizeLinear and DequantizeLinear on CUDA with the low-precision types
// (kernels/cuda/quant/low_precision.cuh) against the reference kernels: float8 (E4M3FN, E4M3FNUZ,
// E5M2, E5M2FNUZ, E8M0), float4 E2M1 and the packed int4/uint4/int2/uint2. Casts from every CUDA
// element type to each of them (saturate 1 and 0; E8M0's three round modes) over edge values
// (zeros of both signs, halfway values, each format's largest finite value and just past it,
// subnormals, infinities, NaN) and an odd element count (a packed output's partial last byte);
// from each of them to every CUDA element type over every code; and between pairs of them.
// QuantizeLinear and DequantizeLinear per tensor, per axis and blocked, with and without a zero
// point, float/float16/bfloat16 scales. Low-precision outputs must match the reference byte for
// byte (padding bits included), float outputs exactly. Label gpu; the claims and refusals run
// without a device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels {
namespace {

constexpr int64_t kOpset = 25;

const std::vector<DataType>& lowTypes() {
  static const std::vector<DataType> types = {DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ,
                                              DataType::kFloat8E5M2,   DataType::kFloat8E5M2FNUZ,
                                              DataType::kFloat8E8M0,   DataType::kFloat4E2M1,
                                              DataType::kInt4,         DataType::kUint4,
                                              DataType::kInt2,         DataType::kUint2};
  return types;
}

const std::vector<DataType>& nativeTypes() {
  static const std::vector<DataType> types = {
      DataType::kFloat, DataType::kFloat16, DataType::kBfloat16, DataType::kInt8,
      DataType::kUint8, DataType::kInt32,   DataType::kInt64,    DataType::kBool};
  return types;
}

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

bool isLowFloat(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ ||
         t == DataType::kFloat8E5M2 || t == DataType::kFloat8E5M2FNUZ ||
         t == DataType::kFloat4E2M1 || t == DataType::kFloat8E8M0;
}

/// Values that probe the float formats' rounding, saturation and specials, then random ones:
/// `count` in all (odd: a packed output ends in a partial byte).
std::vector<double> edgeFloats(int64_t count, uint32_t seed) {
  std::vector<double> v = {0.0,     -0.0,     0.5,      -1.5,     1.0625,   1.1875,    3.0,
                           448.0,   449.0,    464.0,    480.0,    -464.0,   240.0,     248.0,
                           57344.0, 61440.0,  65504.0,  -61440.0, 6.0,      7.0,       -7.0,
                           5.5,     0.25,     0.75,     0x1p-9,   0x1p-10,  0x3p-11,   0x1p-16,
                           0x1p-17, 1e-8,     1e6,      -1e6,     INFINITY, -INFINITY, NAN,
                           3e38,    0x1p-126, 0x1.8p-2, 0x1.4p1,  -0x1.2p3, 2.5,       -3.5};
  std::mt19937 rng(seed);
  while (static_cast<int64_t>(v.size()) < count) {
    v.push_back(std::uniform_real_distribution<>(-600, 600)(rng));
  }
  v.resize(static_cast<size_t>(count));
  return v;
}

/// Integers of t's range around the packed types' bounds and past the float formats' largest
/// values, then random ones of the range.
std::vector<double> edgeInts(DataType t, int64_t count, uint32_t seed) {
  int64_t lo = -128, hi = 127;
  std::vector<double> v = {0, 1, -1, 7, 8, -8, -9, 15, 16, 2, -2, 3, 4, 127, -128};
  if (t == DataType::kBool) {
    lo = 0, hi = 1;
    v = {0, 1, 1, 0};
  } else if (t == DataType::kUint8) {
    lo = 0, hi = 255;
    v = {0, 1, 7, 8, 15, 16, 3, 4, 127, 128, 255};
  } else if (t == DataType::kInt32 || t == DataType::kInt64) {
    lo = -100000, hi = 100000;
    v.insert(v.end(), {448, 449, 464, 57344, 61440, 65536, -100000, 2147483647.0});
  }
  std::mt19937 rng(seed);
  while (static_cast<int64_t>(v.size()) < count) {
    v.push_back(static_cast<double>(std::uniform_int_distribution<int64_t>(lo, hi)(rng)));
  }
  v.resize(static_cast<size_t>(count));
  return v;
}

bool isPacked(DataType t) {
  return t == DataType::kInt4 || t == DataType::kUint4 || t == DataType::kInt2 ||
         t == DataType::kUint2 || t == DataType::kFloat4E2M1;
}

/// A tensor of low-precision type t holding every code: byte k is (37 k + 11) mod 256.
HostTensor allCodes(DataType t, std::vector<int64_t> dims) {
  HostTensor x = HostTensor::zeros(t, std::move(dims));
  for (size_t k = 0; k < x.bytes.size(); ++k) x.bytes[k] = static_cast<char>((37 * k + 11) & 0xff);
  return x;
}

/// `values` as a tensor of any type: through the reference Cast (saturating) for the
/// low-precision ones.
HostTensor tensorOfAny(DataType t, const std::vector<int64_t>& dims,
                       const std::vector<double>& values) {
  if (!isLowFloat(t) && !isPacked(t)) {
    return test::tensorOf(t, dims, values);
  }
  HostTensor f = test::tensorOf(DataType::kFloat, dims, values);
  KernelAttrs attrs;
  attrs.ints["to"] = static_cast<int64_t>(t);
  auto out = runReferenceKernel("Cast", kOpset, {&f}, attrs, 1);
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return out.isOk() ? out->at(0) : HostTensor::zeros(t, dims);
}

/// Runs op on the device and on the reference; low-precision outputs compare byte for byte.
void expectSameAsReference(const std::string& op, int64_t opset, const std::vector<HostTensor>& in,
                           const KernelAttrs& attrs) {
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : in) ptrs.push_back(&t);
  auto expected = runReferenceKernel(op, opset, ptrs, attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  auto got = test::runOnDevice(op, opset, in, attrs, want.dtype, want.dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  if (!isFloatType(want.dtype) && want.dtype != DataType::kInt8 && want.dtype != DataType::kUint8 &&
      want.dtype != DataType::kInt32 && want.dtype != DataType::kInt64 &&
      want.dtype != DataType::kBool) {
    ASSERT_EQ(want.bytes.size(), got->bytes.size());
    for (size_t k = 0; k < want.bytes.size(); ++k) {
      ASSERT_EQ(static_cast<int>(static_cast<uint8_t>(want.bytes[k])),
                static_cast<int>(static_cast<uint8_t>(got->bytes[k])))
          << "byte " << k << " of " << want.bytes.size();
    }
    return;
  }
  test::expectClose(want, *got, {0, 0});
}

struct CastCase {
  DataType from, to;
  bool saturate;
  std::string round_mode;  ///< E8M0 targets
  bool like;               ///< CastLike
  std::string name;
};

void PrintTo(const CastCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<CastCase> castCases() {
  std::vector<CastCase> out;
  auto add = [&](DataType from, DataType to, bool saturate, const std::string& mode, bool like) {
    std::string name =
        fmt::format("{}{}_to_{}{}{}", like ? "like_" : "", dataTypeName(from), dataTypeName(to),
                    saturate ? "" : "_nosat", mode.empty() ? "" : "_" + mode);
    out.push_back({from, to, saturate, mode, like, name});
  };
  for (DataType low : lowTypes()) {
    for (DataType n : nativeTypes()) {
      for (bool sat : {true, false}) {
        if (low == DataType::kFloat8E8M0) {
          for (const char* mode : {"up", "down", "nearest"}) add(n, low, sat, mode, false);
        } else {
          add(n, low, sat, "", false);
        }
      }
      add(low, n, true, "", false);
    }
  }
  const std::pair<DataType, DataType> pairs[] = {{DataType::kFloat8E4M3FN, DataType::kFloat8E5M2},
                                                 {DataType::kFloat8E5M2, DataType::kFloat8E4M3FNUZ},
                                                 {DataType::kFloat8E5M2FNUZ, DataType::kFloat4E2M1},
                                                 {DataType::kFloat4E2M1, DataType::kFloat8E4M3FN},
                                                 {DataType::kFloat8E8M0, DataType::kFloat8E5M2},
                                                 {DataType::kInt4, DataType::kUint4},
                                                 {DataType::kUint2, DataType::kInt4},
                                                 {DataType::kUint4, DataType::kFloat4E2M1},
                                                 {DataType::kFloat8E4M3FN, DataType::kInt2}};
  for (const auto& [from, to] : pairs) add(from, to, false, "", false);
  add(DataType::kFloat16, DataType::kFloat8E4M3FN, false, "", true);
  add(DataType::kInt4, DataType::kFloat, true, "", true);
  return out;
}

class LowPrecisionCastTest : public test::CudaTest,
                             public ::testing::WithParamInterface<CastCase> {};

TEST_P(LowPrecisionCastTest, MatchesReference) {
  const CastCase& c = GetParam();
  const std::vector<int64_t> dims = {3, 43};  // 129 elements: odd
  auto seed = static_cast<uint32_t>(std::hash<std::string>{}(c.name));
  HostTensor x = isFloatType(c.from) ? test::tensorOf(c.from, dims, edgeFloats(129, seed))
                 : isLowFloat(c.from) || isPacked(c.from)
                     ? allCodes(c.from, dims)
                     : test::tensorOf(c.from, dims, edgeInts(c.from, 129, seed));
  KernelAttrs attrs;
  attrs.ints["saturate"] = c.saturate ? 1 : 0;
  if (!c.round_mode.empty()) attrs.strings["round_mode"] = c.round_mode;
  if (c.like) {
    expectSameAsReference("CastLike", kOpset, {x, HostTensor::zeros(c.to, {1})}, attrs);
  } else {
    attrs.ints["to"] = static_cast<int64_t>(c.to);
    expectSameAsReference("Cast", kOpset, {x}, attrs);
  }
}

INSTANTIATE_TEST_SUITE_P(Claimed, LowPrecisionCastTest, ::testing::ValuesIn(castCases()),
                         [](const ::testing::TestParamInfo<CastCase>& p) { return p.param.name; });

struct QdqCase {
  std::string op;
  DataType float_type, low_type;
  std::string scale;  ///< "scalar", "axis1", "block2axis1", "block3axislast"
  bool zero, saturate;
  std::string name;
};

void PrintTo(const QdqCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<QdqCase> qdqCases() {
  std::vector<QdqCase> out;
  for (const char* op : {"QuantizeLinear", "DequantizeLinear"}) {
    for (DataType f : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
      for (DataType low : lowTypes()) {
        if (low == DataType::kFloat8E8M0) continue;  // not a quantized type
        for (const char* scale : {"scalar", "axis1", "block2axis1", "block3axislast"}) {
          for (bool zero : {false, true}) {
            for (bool sat : {true, false}) {
              if (!sat && (std::string(op) == "DequantizeLinear" || !isLowFloat(low))) continue;
              out.push_back({op, f, low, scale, zero, sat,
                             fmt::format("{}_{}_{}_{}_{}{}", op, dataTypeName(f), dataTypeName(low),
                                         scale, zero ? "zero" : "nozero", sat ? "" : "_nosat")});
            }
          }
        }
      }
    }
  }
  return out;
}

class LowPrecisionQdqTest : public test::CudaTest, public ::testing::WithParamInterface<QdqCase> {};

TEST_P(LowPrecisionQdqTest, MatchesReference) {
  const QdqCase& c = GetParam();
  const std::vector<int64_t> shape = {3, 5, 7};  // 105 elements: odd
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  KernelAttrs attrs;
  std::vector<int64_t> scale_dims;
  if (c.scale == "axis1") {
    scale_dims = {5};
    attrs.ints["axis"] = 1;
  } else if (c.scale == "block2axis1") {
    scale_dims = {3, 3, 7};
    attrs.ints["axis"] = 1;
    attrs.ints["block_size"] = 2;
  } else if (c.scale == "block3axislast") {
    scale_dims = {3, 5, 3};
    attrs.ints["axis"] = -1;
    attrs.ints["block_size"] = 3;
  }
  if (c.op == "QuantizeLinear") attrs.ints["saturate"] = c.saturate ? 1 : 0;
  int64_t ns = 1;
  for (int64_t d : scale_dims) ns *= d;
  std::vector<double> scales(static_cast<size_t>(ns)), zeros(static_cast<size_t>(ns));
  const double small_zeros[] = {0, 1, -1, 2, 3, -2};
  for (size_t k = 0; k < scales.size(); ++k) {
    scales[k] = k % 3 == 0 ? 0.5 : std::uniform_real_distribution<>(0.05, 2.0)(rng);
    zeros[k] = small_zeros[k % 6];
    if (c.low_type == DataType::kUint4 || c.low_type == DataType::kUint2) zeros[k] = k % 3;
  }
  std::vector<HostTensor> in;
  if (c.op == "QuantizeLinear") {
    std::vector<double> x = edgeFloats(105, static_cast<uint32_t>(rng()));
    for (double& v : x) v = std::isfinite(v) && std::fabs(v) > 1000 ? v : v / 40;
    in.push_back(test::tensorOf(c.float_type, shape, x));
  } else {
    in.push_back(allCodes(c.low_type, shape));
  }
  in.push_back(test::tensorOf(c.float_type, scale_dims, scales));
  if (c.zero) in.push_back(tensorOfAny(c.low_type, scale_dims, zeros));
  expectSameAsReference(c.op, kOpset, in, attrs);
}

INSTANTIATE_TEST_SUITE_P(Claimed, LowPrecisionQdqTest, ::testing::ValuesIn(qdqCases()),
                         [](const ::testing::TestParamInfo<QdqCase>& p) { return p.param.name; });

Support askCast(const std::string& op, int64_t opset, DataType from, DataType to,
                const std::vector<int64_t>& strides = {}) {
  std::vector<int64_t> dims = {2, 3};
  KernelAttrs attrs;
  attrs.ints["to"] = static_cast<int64_t>(to);
  CudaKernelCall call;
  call.op = op;
  call.opset = opset;
  call.attrs = &attrs;
  call.inputs.emplace_back(from, dims, strides.empty() ? contiguousStrides(dims) : strides, nullptr,
                           MemoryKind::kDevice);
  if (op == "CastLike") {
    call.inputs.emplace_back(to, std::vector<int64_t>{1}, std::vector<int64_t>{1}, nullptr,
                             MemoryKind::kDevice);
  }
  call.outputs.emplace_back(to, dims, contiguousStrides(dims), nullptr, MemoryKind::kDevice);
  OpQuery q{"", op, opset, {from}, {to}};
  if (op == "CastLike") q.inputs.push_back(to);
  if (Support s = cudaCapabilities().supports(q); !s) return s;
  return cudaCanImplement(call);
}

TEST(LowPrecisionCanImplement, ClaimsPerOpsetAndRefusesStridedViews) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  EXPECT_TRUE(askCast("Cast", 19, DataType::kFloat, DataType::kFloat8E4M3FN));
  EXPECT_TRUE(askCast("Cast", 19, DataType::kFloat8E5M2FNUZ, DataType::kFloat16));
  EXPECT_TRUE(askCast("CastLike", 21, DataType::kFloat16, DataType::kInt4));
  EXPECT_TRUE(askCast("Cast", 23, DataType::kFloat4E2M1, DataType::kBfloat16));
  EXPECT_TRUE(askCast("Cast", 24, DataType::kFloat, DataType::kFloat8E8M0));
  EXPECT_TRUE(askCast("Cast", 25, DataType::kUint2, DataType::kInt8));
  // Each type from the opset that brought it.
  Support s = askCast("Cast", 13, DataType::kFloat, DataType::kFloat8E4M3FN);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("output 0 is float8e4m3fn"), std::string::npos) << s.reason;
  EXPECT_FALSE(askCast("Cast", 20, DataType::kInt4, DataType::kFloat));
  EXPECT_FALSE(askCast("CastLike", 24, DataType::kInt2, DataType::kFloat));
  // Packed and float8 casts read contiguous tensors only (a transposed view is refused).
  s = askCast("Cast", 21, DataType::kFloat, DataType::kInt4, {1, 2});
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("contiguous"), std::string::npos) << s.reason;
  EXPECT_TRUE(askCast("Cast", 21, DataType::kFloat, DataType::kInt32, {1, 2}));
  // Double stays on the CPU.
  EXPECT_FALSE(askCast("Cast", 21, DataType::kDouble, DataType::kFloat8E4M3FN));
}

}  // namespace
}  // namespace onnxopt::kernels
