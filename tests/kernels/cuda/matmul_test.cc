// MatMul and Gemm through cuBLASLt (kernels/cuda/gemm/matmul.cc) against the reference kernels, for
// float, float16 and bfloat16: 1-D promotion, a shared B folded into M, strided batches, broadcast
// batch dims (one call per batch), a shared A (batch stride 0), transA/transB, alpha, beta and
// every broadcast of C; ai.onnxopt.MatMulBias* (bias, ReLU and GELU epilogues). Label gpu.
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

struct ProductCase {
  std::string op;
  DataType dtype;
  std::vector<std::vector<int64_t>> shapes;
  KernelAttrs attrs;
  std::string name;
};

void PrintTo(const ProductCase& c, std::ostream* os) {
  *os << c.name;
}

std::string shapeText(const std::vector<int64_t>& dims) {
  return dims.empty() ? "scalar" : fmt::format("{}", fmt::join(dims, "x"));
}

std::vector<ProductCase> productCases() {
  std::vector<ProductCase> out;
  const std::vector<std::vector<std::vector<int64_t>>> matmul_shapes = {
      {{3, 4}, {4, 5}},    {{2, 3, 4}, {4, 5}},  {{2, 3, 4}, {2, 4, 5}},
      {{4}, {4, 5}},       {{2, 3, 4}, {4}},     {{2, 1, 3, 4}, {1, 3, 4, 5}},
      {{3, 4}, {5, 4, 6}}, {{33, 65}, {65, 17}}, {{4}, {4}}};
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    for (const auto& shapes : matmul_shapes) {
      ProductCase c{"MatMul", t, shapes, {}, ""};
      c.name = "MatMul_" + dataTypeName(t);
      for (const auto& s : shapes) c.name += "_" + shapeText(s);
      out.push_back(c);
    }
    // Gemm: M = 3, K = 4, N = 5.
    for (int trans = 0; trans < 4; ++trans) {
      bool ta = trans & 1, tb = trans & 2;
      std::vector<std::vector<int64_t>> c_shapes = {{3, 5}};
      if (trans == 0) c_shapes = {{3, 5}, {5}, {3, 1}, {}, {0}};  // {0}: no C
      for (const auto& cs : c_shapes) {
        ProductCase c{"Gemm",
                      t,
                      {ta ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4},
                       tb ? std::vector<int64_t>{5, 4} : std::vector<int64_t>{4, 5}},
                      {},
                      ""};
        bool no_c = cs == std::vector<int64_t>{0};
        if (!no_c) c.shapes.push_back(cs);
        c.attrs.ints["transA"] = ta;
        c.attrs.ints["transB"] = tb;
        c.attrs.floats["alpha"] = 0.5f;
        c.attrs.floats["beta"] = 2.0f;
        c.name = fmt::format("Gemm_{}_transA{}_transB{}_C_{}", dataTypeName(t), int(ta), int(tb),
                             no_c ? "none" : shapeText(cs));
        out.push_back(c);
      }
    }
    // ai.onnxopt.MatMulBias*: the bias epilogue, with ReLU and both forms of GELU; rows folded
    // from rank 3 and 4, a product past one tile, and K = 0 (the output is the activated bias).
    const std::vector<std::vector<std::vector<int64_t>>> bias_shapes = {{{3, 4}, {4, 5}, {5}},
                                                                        {{2, 3, 4}, {4, 5}, {5}},
                                                                        {{2, 2, 3, 4}, {4, 5}, {5}},
                                                                        {{33, 65}, {65, 17}, {17}},
                                                                        {{3, 0}, {0, 5}, {5}}};
    for (const char* op :
         {"MatMulBias", "MatMulBiasRelu", "MatMulBiasGelu", "MatMulBiasGeluTanh"}) {
      for (const auto& shapes : bias_shapes) {
        std::string name = op;
        ProductCase c{"MatMulBiasGelu", t, shapes, {}, ""};
        if (name == "MatMulBiasGeluTanh") {
          c.attrs.strings["approximate"] = "tanh";
        } else {
          c.op = op;
        }
        c.name = name + "_" + dataTypeName(t);
        for (const auto& s : shapes) c.name += "_" + shapeText(s);
        out.push_back(c);
      }
    }
  }
  return out;
}

test::Tolerance productTolerance(DataType t) {
  // Float accumulation in another order than the reference's.
  if (t == DataType::kFloat) return {1e-4, 1e-4};
  if (t == DataType::kFloat16) return {2e-3, 1e-3};
  return {1.6e-2, 1e-2};
}

class ProductTest : public test::CudaTest, public ::testing::WithParamInterface<ProductCase> {};

TEST_P(ProductTest, MatchesReference) {
  const ProductCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  std::vector<HostTensor> host;
  for (const auto& dims : c.shapes) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<double> values(static_cast<size_t>(n));
    for (double& v : values) v = std::uniform_real_distribution<>(-1, 1)(rng);
    host.push_back(test::tensorOf(c.dtype, dims, values));
  }
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : host) ptrs.push_back(&t);
  // Our own ops are ai.onnxopt 1 (their reference kernels run the function body).
  bool own = c.op.rfind("MatMulBias", 0) == 0;
  auto expected = own ? runReferenceKernel("ai.onnxopt." + c.op, 1, ptrs, c.attrs, 1)
                      : runReferenceKernel(c.op, 13, ptrs, c.attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  auto got = own ? test::runOnDevice(c.op, 1, host, c.attrs, want.dtype, want.dims, "ai.onnxopt")
                 : test::runOnDevice(c.op, 13, host, c.attrs, want.dtype, want.dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want, *got, productTolerance(c.dtype));
}

/// A float32 MatMul under each TF32 policy: only kAll lets matrix products use TF32, so kNone and
/// kConvolutions stay within float32's tolerance, kAll within float16's (TF32 keeps float16's
/// 10-bit mantissa), the absolute part scaled by the largest output.
class MatMulTf32Test : public test::CudaTest {};

TEST_F(MatMulTf32Test, EachPolicyWithinItsTolerance) {
  std::mt19937 rng(11);
  std::vector<HostTensor> host;
  for (std::vector<int64_t> dims : {std::vector<int64_t>{32, 512}, std::vector<int64_t>{512, 48}}) {
    std::vector<double> values(static_cast<size_t>(dims[0] * dims[1]));
    for (double& v : values) v = std::uniform_real_distribution<>(-1, 1)(rng);
    host.push_back(test::tensorOf(DataType::kFloat, dims, values));
  }
  std::vector<const HostTensor*> ptrs = {&host[0], &host[1]};
  KernelAttrs attrs;
  auto expected = runReferenceKernel("MatMul", 13, ptrs, attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  double scale = 1;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    scale = std::max(scale, std::fabs(test::valueAt(want, i)));
  }
  for (Tf32 policy : {Tf32::kNone, Tf32::kConvolutions, Tf32::kAll}) {
    SCOPED_TRACE(static_cast<int>(policy));
    auto got =
        test::runOnDevice("MatMul", 13, host, attrs, want.dtype, want.dims, "", 0xA5, policy);
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    test::Tolerance tol =
        productTolerance(policy == Tf32::kAll ? DataType::kFloat16 : DataType::kFloat);
    test::expectClose(want, *got, {tol.rtol, tol.atol * scale});
  }
}

INSTANTIATE_TEST_SUITE_P(Claimed, ProductTest, ::testing::ValuesIn(productCases()),
                         [](const ::testing::TestParamInfo<ProductCase>& p) {
                           return p.param.name;
                         });

}  // namespace
}  // namespace onnxopt::kernels
