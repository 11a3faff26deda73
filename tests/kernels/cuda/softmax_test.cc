// Softmax, LogSoftmax, Hardmax and LpNormalization on CUDA (kernels/cuda/reduce/softmax.cu) against the
// reference kernels, for float, float16 and bfloat16 (Hardmax also with ties and NaN,
// LpNormalization with a zero row): rows along the last axis of 1, 7, 32, 33, 1024 and 4097
// elements (a warp per row up to 1024, a block beyond),
// non-last and negative axes (opset 13), and the 2-D coercion of opsets 1-12 at several axes.
// Label gpu. The host-only tests at the end
// (canImplement's refusals and their reasons) run without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "norm_test_util.h"

namespace onnxopt::kernels {
namespace {

struct Shape {
  std::vector<int64_t> dims;
  int64_t axis;
  int64_t opset;
};

std::vector<test::NodeCase> softmaxCases() {
  const std::vector<Shape> shapes = {
      {{3, 1}, -1, 13},
      {{3, 7}, -1, 13},
      {{5, 32}, -1, 13},
      {{5, 33}, -1, 13},
      {{4, 1024}, -1, 13},
      {{3, 4097}, -1, 13},
      {{1000, 33}, 1, 13},
      {{2000}, 0, 13},
      {{2, 5, 7}, 1, 13},
      {{4, 33, 3}, 0, 13},
      {{2, 3, 4, 5}, -3, 13},
      {{2, 1030, 2}, 1, 13},
      {{2, 3, 4}, 1, 11},
      {{2, 3, 4}, 0, 11},
      {{2, 3, 4}, -1, 11},
      {{2, 3, 1500}, 1, 1},
      {{3, 4097}, 1, 12},
      // Register-cached rows (16-byte vectors, up to 8 a lane): some lanes idle, a partial last
      // chunk, 8 vectors a lane.
      {{7, 96}, -1, 13},
      {{3, 520}, -1, 13},
      {{6, 2048}, -1, 13},
  };
  std::vector<test::NodeCase> out;
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
      for (const Shape& s : shapes) {
        test::NodeCase c;
        c.op = op;
        c.opset = s.opset;
        c.attrs.ints["axis"] = s.axis;
        c.name = fmt::format("{}_{}_{}_axis{}_opset{}", op, dataTypeName(t), test::dimsName(s.dims),
                             s.axis < 0 ? "m" + std::to_string(-s.axis) : std::to_string(s.axis),
                             s.opset);
        c.inputs.push_back(test::randomTensor(t, s.dims, -8, 8, test::seedOf(c.name)));
        out.push_back(c);
        if (c.op != "Hardmax") continue;
        // Ties (the first maximum wins) and NaN (never larger; a NaN first element stays).
        c.name += "_ties_nan";
        HostTensor& x = c.inputs[0];
        x = test::randomTensor(t, s.dims, 0, 3, test::seedOf(c.name));
        std::vector<double> v;
        for (int64_t i = 0; i < x.numElements(); ++i) {
          double e = std::floor(test::valueAt(x, i));
          v.push_back(i % 11 == 3 ? NAN : e);
        }
        if (!v.empty()) v[0] = s.dims.back() % 2 ? NAN : v[0];
        x = test::tensorOf(t, s.dims, v);
        out.push_back(c);
      }
    }
  }
  // LpNormalization: p 1 and 2 along every axis kind; a zero row (norm 0) gives zeros.
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    for (int64_t p : {1, 2}) {
      for (const Shape& s : std::vector<Shape>{
               {{3, 7}, -1, 1}, {{4, 1030}, 1, 22}, {{2, 5, 7}, 1, 22}, {{1000, 33}, -1, 1}}) {
        test::NodeCase c;
        c.op = "LpNormalization";
        c.opset = s.opset;
        c.attrs.ints["axis"] = s.axis;
        c.attrs.ints["p"] = p;
        c.name = fmt::format(
            "LpNormalization_p{}_{}_{}_axis{}_opset{}", p, dataTypeName(t), test::dimsName(s.dims),
            s.axis < 0 ? "m" + std::to_string(-s.axis) : std::to_string(s.axis), s.opset);
        HostTensor x = test::randomTensor(t, s.dims, -8, 8, test::seedOf(c.name));
        if (s.axis == -1) {  // the first row all zeros
          std::vector<double> v;
          for (int64_t i = 0; i < x.numElements(); ++i) {
            v.push_back(i < s.dims.back() ? 0.0 : test::valueAt(x, i));
          }
          x = test::tensorOf(t, s.dims, v);
        }
        c.inputs.push_back(x);
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

class SoftmaxTest : public test::CudaTest, public ::testing::WithParamInterface<test::NodeCase> {};

TEST_P(SoftmaxTest, MatchesReference) {
  const test::NodeCase& c = GetParam();
  test::expectMatchesReference(c, test::toleranceFor(c.inputs[0].dtype));
}

INSTANTIATE_TEST_SUITE_P(Rows, SoftmaxTest, ::testing::ValuesIn(softmaxCases()),
                         [](const ::testing::TestParamInfo<test::NodeCase>& p) {
                           return p.param.name;
                         });

// --- host-only: what canImplement refuses, and why ----------------------------------------------

Support askSoftmax(const ConstTensorView& x, const ConstTensorView& y, const KernelAttrs& attrs,
                   int64_t opset = 13) {
  return cudaCanImplement(test::viewCall("Softmax", opset, {x}, y, attrs));
}

TEST(SoftmaxCanImplement, AcceptsFloatTypesAtAnyAxis) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs attrs;
  attrs.ints["axis"] = -2;
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    auto x = test::deviceView(t, {2, 3, 4});
    Support s = askSoftmax(x, x, attrs);
    EXPECT_TRUE(s) << s.reason;
  }
}

TEST(SoftmaxCanImplement, RefusesWithAReason) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs none;
  auto x = test::deviceView(DataType::kFloat, {2, 3});
  Support s = askSoftmax(test::deviceView(DataType::kDouble, {2, 3}),
                         test::deviceView(DataType::kDouble, {2, 3}), none);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.reason, "Softmax: no CUDA kernel for double");
  s = askSoftmax(x, test::deviceView(DataType::kFloat, {3, 2}), none);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.reason, "Softmax: the output is [3, 2], the input [2, 3]");
  s = askSoftmax(x, test::deviceView(DataType::kFloat16, {2, 3}), none);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.reason, "Softmax: the output is float16, the input float");
  ConstTensorView transposed(DataType::kFloat, {2, 3}, {1, 2}, nullptr, MemoryKind::kDevice);
  s = askSoftmax(transposed, x, none);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("contiguous"), std::string::npos) << s.reason;
  ConstTensorView host(DataType::kFloat, {2, 3}, {3, 1}, nullptr, MemoryKind::kHost);
  s = askSoftmax(host, x, none);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("host memory"), std::string::npos) << s.reason;
  KernelAttrs axis;
  axis.ints["axis"] = 2;
  s = askSoftmax(x, x, axis);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.reason, "Softmax: axis 2 is out of range for rank 2");
  KernelAttrs p3;
  p3.ints["p"] = 3;
  s = cudaCanImplement(test::viewCall("LpNormalization", 22, {x}, x, p3));
  EXPECT_FALSE(s);
  EXPECT_EQ(s.reason, "LpNormalization: p must be 1 or 2, got 3");
  s = cudaCanImplement(test::viewCall("LogSoftmax", 11, {x, x}, x, none));
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("2 inputs"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace onnxopt::kernels
