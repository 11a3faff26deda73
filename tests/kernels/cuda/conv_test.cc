// Conv and ConvTranspose through cuDNN (kernels/cuda/conv/conv.cc) against the reference kernels, for
// float, float16 and bfloat16: 1-D, 2-D and 3-D, bias, strides, dilations, groups (depthwise),
// explicit symmetric and asymmetric pads (X staged), every auto_pad, 1x1 kernels; ConvTranspose
// with output_padding, output_shape and the pads that crop the adjoint's output; ai.onnxopt's
// channels-last NhwcConv, NhwcConvRelu and NhwcConvAddRelu. Label gpu.
// canImplement's refusals are host tests: conv_host_test.cc.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
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

struct ConvCase {
  std::string op;
  DataType dtype;
  std::vector<int64_t> x, w;
  bool bias = false;
  KernelAttrs attrs;
  std::string name;
};

void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << c.name;
}

std::string dimsName(const std::vector<int64_t>& d) {
  return fmt::format("{}", fmt::join(d, "x"));
}

/// One geometry: the op, X and W, bias, attributes, and a short name of what it exercises.
struct Geometry {
  std::string op, what;
  std::vector<int64_t> x, w;
  bool bias;
  KernelAttrs attrs;
};

KernelAttrs attrsOf(std::initializer_list<std::pair<const char*, std::vector<int64_t>>> lists,
                    int64_t group = 1, const char* auto_pad = nullptr) {
  KernelAttrs a;
  for (const auto& [name, v] : lists) a.int_lists[name] = v;
  if (group != 1) a.ints["group"] = group;
  if (auto_pad != nullptr) a.strings["auto_pad"] = auto_pad;
  return a;
}

std::vector<Geometry> geometries() {
  return {
      {"Conv", "basic", {2, 3, 7, 9}, {4, 3, 3, 3}, false, {}},
      {"Conv", "pads1_bias", {2, 3, 7, 9}, {4, 3, 3, 3}, true, attrsOf({{"pads", {1, 1, 1, 1}}})},
      {"Conv",
       "stride2_pads1_bias",
       {2, 3, 7, 9},
       {4, 3, 3, 3},
       true,
       attrsOf({{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}})},
      {"Conv", "dilation2", {2, 3, 7, 9}, {5, 3, 3, 3}, true, attrsOf({{"dilations", {2, 2}}})},
      {"Conv", "group2_bias", {2, 4, 7, 9}, {6, 2, 3, 3}, true, attrsOf({}, 2)},
      {"Conv",
       "depthwise8_pads1",
       {2, 8, 7, 9},
       {8, 1, 3, 3},
       true,
       attrsOf({{"pads", {1, 1, 1, 1}}}, 8)},
      {"Conv", "asympads", {2, 3, 7, 9}, {4, 3, 3, 2}, true, attrsOf({{"pads", {0, 1, 2, 0}}})},
      {"Conv",
       "same_upper_stride2_k4",
       {2, 3, 7, 9},
       {4, 3, 4, 4},
       true,
       attrsOf({{"strides", {2, 2}}}, 1, "SAME_UPPER")},
      {"Conv",
       "same_lower_stride2_k4",
       {2, 3, 7, 9},
       {4, 3, 4, 4},
       false,
       attrsOf({{"strides", {2, 2}}}, 1, "SAME_LOWER")},
      {"Conv", "same_upper_k3", {2, 3, 7, 9}, {4, 3, 3, 3}, true, attrsOf({}, 1, "SAME_UPPER")},
      {"Conv",
       "valid_stride2",
       {2, 3, 7, 9},
       {4, 3, 3, 3},
       true,
       attrsOf({{"strides", {2, 2}}}, 1, "VALID")},
      {"Conv", "1x1", {2, 5, 7, 9}, {8, 5, 1, 1}, true, {}},
      {"Conv",
       "c16_k5_pads2",
       {1, 16, 32, 32},
       {16, 16, 5, 5},
       true,
       attrsOf({{"pads", {2, 2, 2, 2}}})},
      {"Conv",
       "c16_m32_pads1",
       {1, 16, 15, 17},
       {32, 16, 3, 3},
       true,
       attrsOf({{"pads", {1, 1, 1, 1}}})},
      {"Conv",
       "1d_stride2_dilation2",
       {2, 3, 17},
       {4, 3, 3},
       true,
       attrsOf({{"strides", {2}}, {"dilations", {2}}, {"pads", {1, 1}}})},
      {"Conv", "1d_asympads", {2, 3, 11}, {4, 3, 3}, false, attrsOf({{"pads", {1, 2}}})},
      {"Conv",
       "3d_stride_pads1",
       {2, 3, 5, 6, 7},
       {4, 3, 3, 3, 3},
       true,
       attrsOf({{"strides", {1, 2, 1}}, {"pads", {1, 1, 1, 1, 1, 1}}})},
      {"Conv",
       "3d_group3_asympads",
       {1, 6, 4, 5, 6},
       {3, 2, 2, 3, 3},
       true,
       attrsOf({{"pads", {1, 0, 1, 0, 2, 1}}}, 3)},
      {"ConvTranspose", "basic", {2, 3, 5, 6}, {3, 4, 3, 3}, false, {}},
      {"ConvTranspose",
       "stride2_pads1_outpad1_bias",
       {2, 3, 5, 6},
       {3, 4, 3, 3},
       true,
       attrsOf({{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}, {"output_padding", {1, 1}}})},
      {"ConvTranspose",
       "same_upper_stride2",
       {2, 3, 5, 6},
       {3, 4, 3, 3},
       true,
       attrsOf({{"strides", {2, 2}}}, 1, "SAME_UPPER")},
      {"ConvTranspose",
       "same_lower_stride2",
       {2, 3, 5, 6},
       {3, 4, 3, 3},
       true,
       attrsOf({{"strides", {2, 2}}}, 1, "SAME_LOWER")},
      {"ConvTranspose",
       "output_shape",
       {2, 3, 5, 6},
       {3, 4, 3, 3},
       true,
       attrsOf({{"strides", {2, 2}}, {"output_shape", {10, 12}}})},
      {"ConvTranspose",
       "output_shape_far",
       {1, 2, 3, 3},
       {2, 2, 3, 3},
       true,
       attrsOf({{"output_shape", {9, 9}}})},
      {"ConvTranspose",
       "bias_only_outpad3",
       {1, 2, 2, 2},
       {2, 3, 1, 1},
       true,
       attrsOf({{"pads", {2, 2, 1, 1}}, {"output_padding", {3, 3}}})},
      {"ConvTranspose",
       "outpad_at_stride",
       {2, 2, 3, 4},
       {2, 3, 3, 3},
       true,
       attrsOf({{"output_padding", {1, 1}}})},
      {"ConvTranspose",
       "output_shape_past_full",
       {1, 1, 3, 3},
       {1, 2, 3, 3},
       true,
       attrsOf({{"strides", {3, 2}}, {"output_shape", {10, 8}}})},
      {"ConvTranspose",
       "asympads",
       {2, 3, 5, 6},
       {3, 4, 3, 3},
       true,
       attrsOf({{"pads", {2, 0, 0, 1}}})},
      {"ConvTranspose", "group2", {2, 4, 5, 6}, {4, 3, 3, 3}, true, attrsOf({}, 2)},
      {"ConvTranspose", "group2_image3", {3, 2, 3, 3}, {2, 1, 3, 3}, false, attrsOf({}, 2)},
      {"ConvTranspose",
       "c16_k5_pads2",
       {1, 16, 32, 32},
       {16, 16, 5, 5},
       false,
       attrsOf({{"pads", {2, 2, 2, 2}}})},
      {"ConvTranspose",
       "dilation2_stride2",
       {2, 3, 5, 6},
       {3, 2, 3, 3},
       false,
       attrsOf({{"dilations", {2, 2}}, {"strides", {2, 2}}})},
      {"ConvTranspose",
       "1d_stride3_asympads",
       {2, 3, 7},
       {3, 2, 4},
       true,
       attrsOf({{"strides", {3}}, {"pads", {1, 2}}})},
      {"ConvTranspose",
       "3d_stride2_pads1_outpad1",
       {1, 2, 3, 4, 5},
       {2, 3, 3, 3, 3},
       true,
       attrsOf(
           {{"strides", {2, 2, 2}}, {"pads", {1, 1, 1, 1, 1, 1}}, {"output_padding", {1, 1, 1}}})},
  };
}

std::vector<ConvCase> convCases() {
  std::vector<ConvCase> out;
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    for (const Geometry& g : geometries()) {
      ConvCase c{g.op, t, g.x, g.w, g.bias, g.attrs, ""};
      c.name = fmt::format("{}_{}_{}_x{}_w{}", g.op, dataTypeName(t), g.what, dimsName(g.x),
                           dimsName(g.w));
      out.push_back(std::move(c));
    }
  }
  return out;
}

/// Float accumulation in another order than the reference's (and, for float16/bfloat16, maybe on
/// tensor cores): relative to the largest output, as the error of a sum scales with its terms.
test::Tolerance convTolerance(DataType t) {
  if (t == DataType::kFloat) return {1e-4, 1e-5};
  if (t == DataType::kFloat16) return {4e-3, 2e-3};
  return {3e-2, 1.6e-2};
}

/// A tensor of `dims` uniform in [-scale, scale).
HostTensor uniformTensor(DataType t, const std::vector<int64_t>& dims, double scale,
                         std::mt19937& rng) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = scale * std::uniform_real_distribution<>(-1, 1)(rng);
  return test::tensorOf(t, dims, v);
}

/// convTolerance of `as` (by default the output's type), the absolute part scaled by the largest
/// output (at least 1).
void expectConvClose(const HostTensor& want, const HostTensor& got,
                     DataType as = DataType::kUndefined) {
  double scale = 1;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    scale = std::max(scale, std::fabs(test::valueAt(want, i)));
  }
  test::Tolerance tol = convTolerance(as == DataType::kUndefined ? want.dtype : as);
  test::expectClose(want, got, {tol.rtol, tol.atol * scale});
}

class ConvTest : public test::CudaTest, public ::testing::WithParamInterface<ConvCase> {};

/// The case's inputs X, W and (with bias) B, each made by `make(dims, role)`, run through the
/// reference kernel and the CUDA kernel; `check(want, got)` compares their outputs.
template <typename Make, typename Check>
void runConvCase(const ConvCase& c, Make make, Check check) {
  int64_t m = c.op == "Conv" ? c.w[0] : c.w[1] * c.attrs.getInt("group", 1);
  std::vector<HostTensor> host = {make(c.x, 'x'), make(c.w, 'w')};
  if (c.bias) host.push_back(make({m}, 'b'));
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : host) ptrs.push_back(&t);
  auto expected = runReferenceKernel(c.op, 11, ptrs, c.attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  auto got = test::runOnDevice(c.op, 11, host, c.attrs, want.dtype, want.dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  check(want, *got);
}

TEST_P(ConvTest, MatchesReference) {
  const ConvCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  int64_t fan_in = 1;
  for (size_t i = 1; i < c.w.size(); ++i) fan_in *= c.w[i];
  auto random = [&](const std::vector<int64_t>& dims, char role) {
    double scale = role == 'x' ? 1.0 : role == 'w' ? 1.0 / std::sqrt(fan_in) : 0.5;
    return uniformTensor(c.dtype, dims, scale, rng);
  };
  runConvCase(c, random, [](const HostTensor& w, const HostTensor& g) { expectConvClose(w, g); });
}

INSTANTIATE_TEST_SUITE_P(Claimed, ConvTest, ::testing::ValuesIn(convCases()),
                         [](const ::testing::TestParamInfo<ConvCase>& p) { return p.param.name; });

/// A float32 convolution under each TF32 policy of the device context: without TF32 within
/// float32's tolerance of the reference; with TF32 for convolutions (the runtime's default, as
/// torch's) within float16's, since TF32 keeps float16's 10-bit mantissa. A wide reduction
/// (576 terms) so that cuDNN has tensor-core algorithms to choose.
class ConvTf32Test : public test::CudaTest {};

TEST_F(ConvTf32Test, EachPolicyWithinItsTolerance) {
  std::mt19937 rng(7);
  const std::vector<int64_t> x = {2, 64, 14, 14}, w = {64, 64, 3, 3};
  KernelAttrs attrs = attrsOf({{"pads", {1, 1, 1, 1}}});
  std::vector<HostTensor> host = {uniformTensor(DataType::kFloat, x, 1.0, rng),
                                  uniformTensor(DataType::kFloat, w, 1.0 / 24, rng)};
  std::vector<const HostTensor*> ptrs = {&host[0], &host[1]};
  auto expected = runReferenceKernel("Conv", 11, ptrs, attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  for (Tf32 policy : {Tf32::kNone, Tf32::kConvolutions, Tf32::kAll}) {
    SCOPED_TRACE(static_cast<int>(policy));
    auto got = test::runOnDevice("Conv", 11, host, attrs, want.dtype, want.dims, "", 0xA5, policy);
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    expectConvClose(want, *got, policy == Tf32::kNone ? DataType::kFloat : DataType::kFloat16);
  }
}

/// Float convolutions of small integers are exact in every algorithm the runtime may choose for
/// float (each output's terms and their sums are integers below 2^24): the transform-domain
/// algorithms, which spread rounding over a tile (kernels/cuda/conv/conv.cc, algoAllowed), would not
/// be. ONNX's node tests use such data with an absolute tolerance of 1e-7.
class ConvExactTest : public test::CudaTest, public ::testing::WithParamInterface<ConvCase> {};

TEST_P(ConvExactTest, FloatIntegersExactly) {
  const ConvCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  auto integers = [&](const std::vector<int64_t>& dims, char role) {
    int bound = role == 'x' ? 3 : role == 'w' ? 2 : 4;
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<double> v(static_cast<size_t>(n));
    for (double& e : v) e = std::uniform_int_distribution<>(-bound, bound)(rng);
    return test::tensorOf(c.dtype, dims, v);
  };
  runConvCase(c, integers, [](const HostTensor& want, const HostTensor& got) {
    test::expectClose(want, got, {0.0, 0.0});
  });
}

std::vector<ConvCase> floatCases() {
  std::vector<ConvCase> out;
  for (ConvCase& c : convCases()) {
    if (c.dtype == DataType::kFloat) out.push_back(std::move(c));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Claimed, ConvExactTest, ::testing::ValuesIn(floatCases()),
                         [](const ::testing::TestParamInfo<ConvCase>& p) { return p.param.name; });

/// ai.onnxopt's channels-last convolutions (convert-nhwc, fuse-conv-activation): X [N, H, W, C],
/// W [M, kH, kW, C / group], Z and Y [N, oH, oW, M], against their reference kernels (the NCHW
/// Conv between Transposes). The output is poisoned with NaN first: the ReLU forms without Z
/// must not read it (cuDNN's alpha2 = 0).
struct NhwcCase {
  std::string op;
  DataType dtype;
  std::vector<int64_t> x, w;  ///< channels-last
  KernelAttrs attrs;
  std::string name;
  bool bias = true;
};

void PrintTo(const NhwcCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<NhwcCase> nhwcCases() {
  struct Shape {
    const char* what;
    std::vector<int64_t> x, w;
    KernelAttrs attrs;
  };
  std::vector<Shape> shapes = {
      {"3x3_pads1", {2, 9, 7, 16}, {32, 3, 3, 16}, attrsOf({{"pads", {1, 1, 1, 1}}})},
      {"7x7_stride2_pads3",
       {1, 20, 18, 3},
       {16, 7, 7, 3},
       attrsOf({{"pads", {3, 3, 3, 3}}, {"strides", {2, 2}}})},
      {"1x1", {3, 5, 6, 24}, {8, 1, 1, 24}, {}},
      {"depthwise", {2, 8, 8, 16}, {16, 3, 3, 1}, attrsOf({{"pads", {1, 1, 1, 1}}}, 16)},
  };
  std::vector<NhwcCase> out;
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    for (const char* op : {"NhwcConv", "NhwcConvRelu", "NhwcConvAddRelu"}) {
      for (const Shape& s : shapes) {
        NhwcCase c{op, t, s.x, s.w, s.attrs, ""};
        c.name = fmt::format("{}_{}_{}", op, dataTypeName(t), s.what);
        out.push_back(std::move(c));
      }
    }
    // Without B: the 1x1 product path's ReLU then runs in the epilogue kernel, not cuBLASLt's.
    for (const char* op : {"NhwcConv", "NhwcConvRelu"}) {
      NhwcCase c{op, t, {3, 5, 6, 24}, {8, 1, 1, 24}, {}, "", false};
      c.name = fmt::format("{}_{}_1x1_no_bias", op, dataTypeName(t));
      out.push_back(std::move(c));
    }
  }
  return out;
}

class NhwcConvTest : public test::CudaTest, public ::testing::WithParamInterface<NhwcCase> {};

TEST_P(NhwcConvTest, MatchesReference) {
  const NhwcCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  auto random = [&](const std::vector<int64_t>& dims, double scale) {
    return uniformTensor(c.dtype, dims, scale, rng);
  };
  int64_t fan_in = c.w[1] * c.w[2] * c.w[3];
  std::vector<HostTensor> host = {random(c.x, 1.0), random(c.w, 1.0 / std::sqrt(fan_in))};
  if (c.bias) host.push_back(random({c.w[0]}, 0.5));
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& h : host) ptrs.push_back(&h);
  auto conv = runReferenceKernel("ai.onnxopt.NhwcConv", 1, ptrs, c.attrs, 1);
  ASSERT_TRUE(conv.isOk()) << conv.status().toString();
  if (c.op == "NhwcConvAddRelu") {
    host.push_back(random(conv->at(0).dims, 1.0));
    ptrs = {&host[0], &host[1], &host[2], &host[3]};
  }
  auto expected = runReferenceKernel("ai.onnxopt." + c.op, 1, ptrs, c.attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  auto got = test::runOnDevice(c.op, 1, host, c.attrs, want.dtype, want.dims, "ai.onnxopt", 0xFF);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  expectConvClose(want, *got);
}

INSTANTIATE_TEST_SUITE_P(Claimed, NhwcConvTest, ::testing::ValuesIn(nhwcCases()),
                         [](const ::testing::TestParamInfo<NhwcCase>& p) { return p.param.name; });

/// ConvInteger and QLinearConv (kernels/cuda/conv/quant_conv.cu): exact against the reference.
struct QuantCase {
  std::string op;
  DataType x_type, w_type, y_type;  ///< y_type: QLinearConv's output
  std::vector<int64_t> x, w;
  bool per_channel = false;  ///< W's zero point and scale per output channel
  bool bias = false;
  KernelAttrs attrs;
  std::string name;
};

void PrintTo(const QuantCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<QuantCase> quantCases() {
  struct Shape {
    std::string what;
    std::vector<int64_t> x, w;
    KernelAttrs attrs;
  };
  const std::vector<Shape> shapes = {
      {"pads1", {2, 3, 7, 9}, {4, 3, 3, 3}, attrsOf({{"pads", {1, 1, 1, 1}}})},
      {"stride2_asympads_group2",
       {2, 4, 7, 9},
       {6, 2, 3, 3},
       attrsOf({{"strides", {2, 2}}, {"pads", {0, 1, 1, 0}}}, 2)},
      {"1d_dilation2", {2, 3, 11}, {4, 3, 3}, attrsOf({{"dilations", {2}}})},
      {"3d_same_upper", {1, 2, 4, 5, 6}, {3, 2, 2, 3, 3}, attrsOf({}, 1, "SAME_UPPER")},
  };
  std::vector<QuantCase> out;
  const DataType i8 = DataType::kInt8, u8 = DataType::kUint8;
  for (const Shape& s : shapes) {
    for (auto [xt, wt] : {std::pair{u8, u8}, std::pair{i8, i8}, std::pair{u8, i8}}) {
      for (bool per_channel : {false, true}) {
        QuantCase c{"ConvInteger", xt,          wt,    DataType::kInt32, s.x,
                    s.w,           per_channel, false, s.attrs,          ""};
        c.name = fmt::format("ConvInteger_x{}_w{}_{}_{}", dataTypeName(xt), dataTypeName(wt),
                             per_channel ? "perchannel" : "pertensor", s.what);
        out.push_back(c);
        for (DataType yt : {u8, i8}) {
          QuantCase q{"QLinearConv", xt, wt, yt, s.x, s.w, per_channel, true, s.attrs, ""};
          q.name =
              fmt::format("QLinearConv_x{}_w{}_y{}_{}_bias_{}", dataTypeName(xt), dataTypeName(wt),
                          dataTypeName(yt), per_channel ? "perchannel" : "pertensor", s.what);
          out.push_back(q);
        }
      }
    }
  }
  return out;
}

class QuantConvTest : public test::CudaTest, public ::testing::WithParamInterface<QuantCase> {};

TEST_P(QuantConvTest, MatchesReferenceExactly) {
  const QuantCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  auto ints = [&](DataType t, const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<double> v(static_cast<size_t>(n));
    int lo = t == DataType::kInt8 ? -128 : 0, hi = t == DataType::kInt8 ? 127 : 255;
    for (double& e : v) e = std::uniform_int_distribution<int>(lo, hi)(rng);
    return test::tensorOf(t, dims, v);
  };
  auto floats = [&](std::vector<int64_t> dims, double lo, double hi) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<double> v(static_cast<size_t>(n));
    for (double& e : v) e = std::uniform_real_distribution<>(lo, hi)(rng);
    return test::tensorOf(DataType::kFloat, dims, v);
  };
  int64_t m = c.w[0];
  std::vector<int64_t> w_q = c.per_channel ? std::vector<int64_t>{m} : std::vector<int64_t>{};
  HostTensor x = ints(c.x_type, c.x), w = ints(c.w_type, c.w);
  HostTensor xz = ints(c.x_type, {}), wz = ints(c.w_type, w_q);
  std::vector<HostTensor> host;
  if (c.op == "ConvInteger") {
    host = {x, w, xz, wz};
  } else {
    // Scales that put the sums (thousands to a million) near Y's range.
    int64_t fan_in = 1;
    for (size_t i = 1; i < c.w.size(); ++i) fan_in *= c.w[i];
    host = {x,
            floats({}, 0.01, 0.02),
            xz,
            w,
            floats(w_q, 0.01, 0.02),
            wz,
            floats({}, 0.05 * static_cast<double>(fan_in) / 27.0,
                   0.1 * static_cast<double>(fan_in) / 27.0),
            ints(c.y_type, {}),
            test::tensorOf(DataType::kInt32, {m}, {})};
    for (int64_t i = 0; i < m; ++i)
      host[8].set<int32_t>(i, static_cast<int32_t>(i * 97 % 2001) - 1000);
  }
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : host) ptrs.push_back(&t);
  auto expected = runReferenceKernel(c.op, 10, ptrs, c.attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  auto got = test::runOnDevice(c.op, 10, host, c.attrs, want.dtype, want.dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want, *got, {0, 0});
}

INSTANTIATE_TEST_SUITE_P(Claimed, QuantConvTest, ::testing::ValuesIn(quantCases()),
                         [](const ::testing::TestParamInfo<QuantCase>& p) { return p.param.name; });

}  // namespace
}  // namespace onnxopt::kernels
