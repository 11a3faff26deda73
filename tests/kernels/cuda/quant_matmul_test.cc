// MatMulInteger and QLinearMatMul on CUDA (kernels/cuda/gemm/quant_matmul.cc) against the
// reference kernels: int8/uint8 A and B in every combination; 2-D, 1-D (either side promoted),
// batched with broadcast batch dims; zero points absent, per tensor or per row of A / column of
// B; QLinearMatMul's scales per tensor or per row/column, float at opset 10, float, float16 and
// bfloat16 at 21, y zero points and scales that saturate both ends. Results must match exactly.
// Label gpu; the claims and refusals run without a device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels {
namespace {

struct ProductShape {
  std::vector<int64_t> a, b;
  std::string name;
};

const std::vector<ProductShape>& shapes() {
  static const std::vector<ProductShape> s = {{{2, 3}, {3, 4}, "2x3_3x4"},
                                              {{5, 16}, {16, 7}, "5x16_16x7"},
                                              {{3}, {3, 4}, "3_3x4"},
                                              {{2, 3}, {3}, "2x3_3"},
                                              {{2, 1, 3, 5}, {4, 5, 6}, "2x1x3x5_4x5x6"},
                                              {{3, 4, 9}, {9, 2}, "3x4x9_9x2"}};
  return s;
}

struct QmmCase {
  std::string op;
  int64_t opset;
  DataType a_type, b_type, scale_type;
  ProductShape shape;
  std::string zero;  ///< "none" (MatMulInteger only), "tensor", "rowcol"
  std::string name;
};

void PrintTo(const QmmCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<QmmCase> qmmCases() {
  std::vector<QmmCase> out;
  const DataType bytes[] = {DataType::kInt8, DataType::kUint8};
  for (const ProductShape& shape : shapes()) {
    for (DataType a : bytes) {
      for (DataType b : bytes) {
        for (const char* zero : {"none", "tensor", "rowcol"}) {
          out.push_back({"MatMulInteger", 10, a, b, DataType::kUndefined, shape, zero,
                         fmt::format("MatMulInteger_{}_{}_{}_{}", dataTypeName(a), dataTypeName(b),
                                     shape.name, zero)});
        }
        for (auto [opset, st] :
             {std::pair{10, DataType::kFloat}, std::pair{21, DataType::kFloat},
              std::pair{21, DataType::kFloat16}, std::pair{21, DataType::kBfloat16}}) {
          for (const char* zero : {"tensor", "rowcol"}) {
            out.push_back({"QLinearMatMul", opset, a, b, st, shape, zero,
                           fmt::format("QLinearMatMul{}_{}_{}_{}_{}_{}", opset, dataTypeName(a),
                                       dataTypeName(b), dataTypeName(st), shape.name, zero)});
          }
        }
      }
    }
  }
  return out;
}

std::vector<double> bytesOf(DataType t, int64_t n, std::mt19937& rng) {
  std::vector<double> v(static_cast<size_t>(n));
  int lo = t == DataType::kInt8 ? -128 : 0, hi = t == DataType::kInt8 ? 127 : 255;
  for (size_t k = 0; k < v.size(); ++k) {
    v[k] = k % 7 == 0 ? (k % 2 ? lo : hi) : std::uniform_int_distribution<>(lo, hi)(rng);
  }
  return v;
}

int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// One per tensor ([]), or one per row of A / column of B ([len]) where the operand is a matrix.
std::vector<int64_t> perDims(const std::string& zero, int64_t len, bool matrix) {
  return zero == "rowcol" && matrix ? std::vector<int64_t>{len} : std::vector<int64_t>{};
}

class QuantMatMulTest : public test::CudaTest, public ::testing::WithParamInterface<QmmCase> {};

TEST_P(QuantMatMulTest, MatchesReference) {
  const QmmCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  const auto& ad = c.shape.a;
  const auto& bd = c.shape.b;
  int64_t m = ad.size() >= 2 ? ad[ad.size() - 2] : 1, n = bd.size() >= 2 ? bd.back() : 1;
  std::vector<int64_t> za_dims = perDims(c.zero, m, ad.size() >= 2);
  std::vector<int64_t> zb_dims = perDims(c.zero, n, bd.size() >= 2);
  HostTensor a = test::tensorOf(c.a_type, ad, bytesOf(c.a_type, count(ad), rng));
  HostTensor b = test::tensorOf(c.b_type, bd, bytesOf(c.b_type, count(bd), rng));
  HostTensor za = test::tensorOf(c.a_type, za_dims, bytesOf(c.a_type, count(za_dims), rng));
  HostTensor zb = test::tensorOf(c.b_type, zb_dims, bytesOf(c.b_type, count(zb_dims), rng));
  std::vector<HostTensor> in;
  if (c.op == "MatMulInteger") {
    in = {a, b};
    if (c.zero != "none") in.insert(in.end(), {za, zb});
  } else {
    auto scales = [&](const std::vector<int64_t>& dims, double lo, double hi) {
      std::vector<double> v(static_cast<size_t>(count(dims)));
      for (double& s : v) s = std::uniform_real_distribution<>(lo, hi)(rng);
      return test::tensorOf(c.scale_type, dims, v);
    };
    // y_scale small enough that some outputs saturate at both ends.
    DataType y_type = (rng() & 1) != 0 ? DataType::kInt8 : DataType::kUint8;
    HostTensor yz = test::tensorOf(y_type, {}, {y_type == DataType::kInt8 ? -3.0 : 120.0});
    in = {a,  scales(za_dims, 0.01, 0.1), za, b, scales(zb_dims, 0.01, 0.1),
          zb, scales({}, 0.5, 2.0),       yz};
  }
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : in) ptrs.push_back(&t);
  KernelAttrs none;
  auto expected = runReferenceKernel(c.op, c.opset, ptrs, none, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  auto got = test::runOnDevice(c.op, c.opset, in, none, want.dtype, want.dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want, *got, {0, 0});
}

INSTANTIATE_TEST_SUITE_P(Claimed, QuantMatMulTest, ::testing::ValuesIn(qmmCases()),
                         [](const ::testing::TestParamInfo<QmmCase>& p) { return p.param.name; });

/// A QLinearMatMul call over device views (no memory): A [2, 3] x B [3, 4], scales of
/// `scale_type` and `a_scale_len` elements.
Support askQLinear(int64_t opset, DataType scale_type, int64_t a_scale_len,
                   DataType b_type = DataType::kUint8) {
  auto view = [](DataType t, std::vector<int64_t> dims) {
    auto strides = contiguousStrides(dims);
    return ConstTensorView(t, std::move(dims), std::move(strides), nullptr, MemoryKind::kDevice);
  };
  KernelAttrs none;
  CudaKernelCall call{"", "QLinearMatMul", opset, {}, {}, &none, {}};
  call.inputs = {view(DataType::kUint8, {2, 3}), view(scale_type, {a_scale_len}),
                 view(DataType::kUint8, {}),     view(b_type, {3, 4}),
                 view(scale_type, {}),           view(b_type, {}),
                 view(scale_type, {}),           view(DataType::kUint8, {})};
  call.outputs = {TensorView(DataType::kUint8, {2, 4}, {4, 1}, nullptr, MemoryKind::kDevice)};
  OpQuery q{"", "QLinearMatMul", opset, {}, {DataType::kUint8}};
  for (const ConstTensorView& v : call.inputs) q.inputs.push_back(v.dtype);
  if (Support s = cudaCapabilities().supports(q); !s) return s;
  return cudaCanImplement(call);
}

TEST(QuantMatMulCanImplement, ClaimsAndRefusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  EXPECT_TRUE(askQLinear(10, DataType::kFloat, 1));
  EXPECT_TRUE(askQLinear(10, DataType::kFloat, 2));  // per row of A
  EXPECT_TRUE(askQLinear(21, DataType::kFloat16, 1));
  EXPECT_TRUE(askQLinear(21, DataType::kBfloat16, 2));
  // float16 scales from opset 21 only.
  Support s = askQLinear(10, DataType::kFloat16, 1);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("input 1 is float16"), std::string::npos) << s.reason;
  // a_scale neither one element nor one per row.
  s = askQLinear(21, DataType::kFloat, 3);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("a_scale must hold 1 or 2 elements"), std::string::npos) << s.reason;
  // float8 operands (opset 21) stay on the CPU.
  s = askQLinear(21, DataType::kFloat, 1, DataType::kFloat8E4M3FN);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("input 3 is float8e4m3fn"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace onnxopt::kernels
