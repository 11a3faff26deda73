// The gated activations of our own domain on CUDA (kernels/cuda/elementwise/glu.cu: ai.onnxopt
// SwiGlu, GeGlu with approximate none and tanh) against the reference kernels (their function
// bodies), for float, float16 and bfloat16, over halves of 1 to 2049 elements and ranks 2 to 4.
// Label gpu; the host-only tests at the end (canImplement's refusals and their reasons) run
// without a device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "norm_test_util.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;

std::vector<test::NodeCase> gluCases() {
  std::vector<test::NodeCase> out;
  const std::vector<Dims> shapes = {{3, 2}, {2, 3, 8}, {5, 4098}, {2, 2, 3, 130}};
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"SwiGlu", ""}, {"GeGlu", "none"}, {"GeGlu", "tanh"}};
  for (const auto& [op, approximate] : ops) {
    for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
      for (const Dims& dims : shapes) {
        test::NodeCase c;
        c.domain = "ai.onnxopt";
        c.op = op;
        c.opset = 1;
        if (!approximate.empty()) c.attrs.strings["approximate"] = approximate;
        c.name = fmt::format("{}{}_{}_{}", op, approximate.empty() ? "" : "_" + approximate,
                             dataTypeName(t), test::dimsName(dims));
        c.inputs.push_back(test::randomTensor(t, dims, -6.0, 6.0, test::seedOf(c.name)));
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

class GluTest : public test::CudaTest, public ::testing::WithParamInterface<test::NodeCase> {};

TEST_P(GluTest, MatchesReference) {
  const test::NodeCase& c = GetParam();
  // The kernel rounds once, the body after each op: the 16-bit types at their tolerance.
  const DataType t = c.inputs[0].dtype;
  test::expectMatchesReference(
      c, t == DataType::kFloat ? test::Tolerance{5e-5, 5e-6} : test::toleranceFor(t));
}

INSTANTIATE_TEST_SUITE_P(Claimed, GluTest, ::testing::ValuesIn(gluCases()),
                         [](const ::testing::TestParamInfo<test::NodeCase>& p) {
                           return p.param.name;
                         });

// --- host-only: what canImplement refuses, and why ----------------------------------------------

using test::deviceView;

Support ask(const std::string& op, const ConstTensorView& a, const ConstTensorView& y,
            const KernelAttrs& attrs = {}) {
  CudaKernelCall call = test::viewCall(op, 1, {a}, y, attrs);
  call.domain = "ai.onnxopt";
  return cudaCanImplement(call);
}

void expectRefused(const Support& s, const std::string& reason) {
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find(reason), std::string::npos) << s.reason;
}

TEST(GluCanImplement, AcceptsHalvesAndRefusesTheRest) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  const DataType h = DataType::kFloat16;
  EXPECT_TRUE(ask("SwiGlu", deviceView(h, {2, 3, 8}), deviceView(h, {2, 3, 4})));
  KernelAttrs tanh;
  tanh.strings["approximate"] = "tanh";
  EXPECT_TRUE(ask("GeGlu", deviceView(h, {4, 6}), deviceView(h, {4, 3}), tanh));
  expectRefused(ask("SwiGlu", deviceView(h, {2, 7}), deviceView(h, {2, 3})), "even last dim");
  expectRefused(ask("SwiGlu", deviceView(h, {2, 8}), deviceView(h, {2, 8})),
                "not A's type and [2, 4]");
  expectRefused(
      ask("SwiGlu", deviceView(DataType::kDouble, {2, 8}), deviceView(DataType::kDouble, {2, 4})),
      "no CUDA kernel for double");
  KernelAttrs other;
  other.strings["approximate"] = "erf";
  expectRefused(ask("GeGlu", deviceView(h, {2, 8}), deviceView(h, {2, 4}), other),
                "approximate is 'erf'");
}

}  // namespace
}  // namespace onnxopt::kernels
