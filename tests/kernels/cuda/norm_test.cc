// The normalizations on CUDA (kernels/cuda/norm/norm.cu) against the reference kernels, for float,
// float16 and bfloat16 (float statistics): LayerNormalization and RMSNormalization over rows of
// 1 to 4097 elements, a non-last axis, broadcast Scale/B shapes, no B and another epsilon;
// InstanceNormalization; GroupNormalization 18 (per-group parameters) and 21 (per-channel);
// BatchNormalization in inference mode at opsets 7 (spatial 0 and 1), 9, 14 and 15 (there also
// with parameters of other float types than X's); LRN. Label gpu; the host-only tests at the end
// (canImplement's refusals and their reasons) run without a device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "norm_test_util.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;

struct NormShape {
  std::string op;
  int64_t opset;
  std::vector<Dims> shapes;  ///< X and the parameters (an empty list entry: omitted)
  KernelAttrs attrs;
  std::string variant;
};

KernelAttrs ints(std::initializer_list<std::pair<const std::string, int64_t>> values) {
  KernelAttrs a;
  a.ints = values;
  return a;
}

std::vector<NormShape> normShapes() {
  std::vector<NormShape> out;
  // 32, 768, 1024 and 2048 take the register-cached 16-byte kernel where the type allows (2048
  // floats are past it); the others the three-pass one.
  for (int64_t n : {1, 7, 32, 33, 768, 1024, 2048, 4097}) {
    out.push_back({"LayerNormalization", 17, {{3, n}, {n}, {n}}, {}, ""});
    out.push_back({"RMSNormalization", 23, {{3, n}, {n}}, {}, ""});
  }
  KernelAttrs axis1 = ints({{"axis", 1}});
  KernelAttrs eps = axis1;
  eps.floats["epsilon"] = 0.5f;
  out.push_back({"LayerNormalization", 17, {{2, 3, 5}, {3, 5}, {3, 5}}, axis1, "axis1"});
  out.push_back({"LayerNormalization", 17, {{2, 3, 5}, {5}, {1}}, axis1, "axis1"});
  out.push_back({"LayerNormalization", 17, {{2, 3, 5}, {3, 1}, {}}, eps, "axis1_eps05_noB"});
  out.push_back({"LayerNormalization", 17, {{4, 6}, {4, 6}, {6}}, ints({{"axis", 0}}), "axis0"});
  out.push_back({"LayerNormalization", 17, {{1000, 7}, {7}, {7}}, ints({{"axis", -1}}), ""});
  out.push_back(
      {"LayerNormalization", 17, {{2, 2, 40, 40}, {40, 40}, {40}}, ints({{"axis", -2}}), "axism2"});
  out.push_back({"RMSNormalization", 23, {{2, 3, 5}, {3, 5}}, axis1, "axis1"});
  out.push_back({"RMSNormalization", 23, {{2, 3, 5}, {1}}, eps, "axis1_eps05"});
  for (int64_t opset : {6, 22}) {
    out.push_back({"InstanceNormalization", opset, {{2, 3, 5}, {3}, {3}}, {}, ""});
    out.push_back({"InstanceNormalization", opset, {{2, 4, 33, 33}, {4}, {4}}, {}, ""});
  }
  out.push_back({"InstanceNormalization", 6, {{1, 2, 7, 1, 3}, {2}, {2}}, {}, ""});
  for (int64_t opset : {18, 21}) {
    for (int64_t groups : {1, 2, 4}) {
      int64_t params = opset >= 21 ? 8 : groups;
      out.push_back({"GroupNormalization",
                     opset,
                     {{2, 8, 16, 16}, {params}, {params}},
                     ints({{"num_groups", groups}}),
                     fmt::format("groups{}", groups)});
    }
    KernelAttrs g3 = ints({{"num_groups", 3}});
    g3.floats["epsilon"] = 0.25f;
    int64_t params = opset >= 21 ? 6 : 3;
    out.push_back(
        {"GroupNormalization", opset, {{3, 6, 5}, {params}, {params}}, g3, "groups3_eps025"});
  }
  for (int64_t opset : {7, 9, 14, 15}) {
    out.push_back({"BatchNormalization", opset, {{2, 3, 5, 4}, {3}, {3}, {3}, {3}}, {}, ""});
    out.push_back({"BatchNormalization", opset, {{4, 16, 33}, {16}, {16}, {16}, {16}}, {}, ""});
    out.push_back({"BatchNormalization", opset, {{5, 3}, {3}, {3}, {3}, {3}}, {}, ""});
  }
  // LRN: windows of 1 to 6 channels (even sizes reach one further after the channel), and
  // windows wider than the channels.
  for (int64_t size : {1, 2, 3, 5, 6}) {
    KernelAttrs lrn = ints({{"size", size}});
    out.push_back({"LRN", 13, {{2, 5, 4, 3}}, lrn, fmt::format("size{}", size)});
  }
  KernelAttrs lrn_attrs = ints({{"size", 3}});
  lrn_attrs.floats = {{"alpha", 0.02f}, {"beta", 0.5f}, {"bias", 2.0f}};
  out.push_back({"LRN", 1, {{1, 16, 7, 7}}, lrn_attrs, "size3_alpha002_beta05_bias2"});
  out.push_back({"LRN", 13, {{3, 2}}, ints({{"size", 7}}), "size7"});
  KernelAttrs not_spatial = ints({{"spatial", 0}});
  not_spatial.floats["epsilon"] = 0.01f;
  out.push_back({"BatchNormalization",
                 7,
                 {{2, 3, 5, 4}, {3, 5, 4}, {3, 5, 4}, {3, 5, 4}, {3, 5, 4}},
                 not_spatial,
                 "spatial0_eps001"});
  return out;
}

std::vector<test::NodeCase> normCases() {
  std::vector<test::NodeCase> out;
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    for (const NormShape& s : normShapes()) {
      test::NodeCase c;
      c.op = s.op;
      c.opset = s.opset;
      c.attrs = s.attrs;
      c.name = fmt::format("{}_{}", s.op, dataTypeName(t));
      for (const Dims& d : s.shapes) c.name += "_" + (d.empty() ? "none" : test::dimsName(d));
      if (!s.variant.empty()) c.name += "_" + s.variant;
      c.name += fmt::format("_opset{}", s.opset);
      uint32_t seed = test::seedOf(c.name);
      for (size_t i = 0; i < s.shapes.size(); ++i) {
        if (s.shapes[i].empty()) {
          c.inputs.emplace_back();  // omitted
          continue;
        }
        // X off zero (the mean matters); BatchNormalization's variance positive.
        bool variance = s.op == "BatchNormalization" && i == 4;
        double lo = i == 0 ? -2.0 : variance ? 0.25 : -1.5;
        double hi = i == 0 ? 6.0 : variance ? 2.0 : 1.5;
        c.inputs.push_back(
            test::randomTensor(t, s.shapes[i], lo, hi, seed + static_cast<uint32_t>(i)));
      }
      // BatchNormalization's mean/var have a type of their own from opset 14, scale/B from 15.
      if (s.op == "BatchNormalization" && s.opset >= 14 && s.shapes[0].size() == 4) {
        test::NodeCase mixed = c;
        DataType scale_type = s.opset >= 15 ? DataType::kFloat : t;
        mixed.name += fmt::format("_params_{}_stats_float16", dataTypeName(scale_type));
        for (size_t i = 1; i < mixed.inputs.size(); ++i) {
          const HostTensor& p = mixed.inputs[i];
          std::vector<double> v;
          for (int64_t k = 0; k < p.numElements(); ++k) v.push_back(test::valueAt(p, k));
          mixed.inputs[i] = test::tensorOf(i <= 2 ? scale_type : DataType::kFloat16, p.dims, v);
        }
        out.push_back(std::move(mixed));
      }
      // A trailing omitted input is no input at all.
      while (!c.inputs.empty() && c.inputs.back().dtype == DataType::kUndefined)
        c.inputs.pop_back();
      out.push_back(std::move(c));
    }
  }
  return out;
}

/// Float statistics against the reference's double ones: a little above one float rounding.
test::Tolerance normTolerance(DataType t) {
  if (t == DataType::kFloat) return {5e-5, 5e-6};
  return test::toleranceFor(t);
}

class NormTest : public test::CudaTest, public ::testing::WithParamInterface<test::NodeCase> {};

TEST_P(NormTest, MatchesReference) {
  const test::NodeCase& c = GetParam();
  test::expectMatchesReference(c, normTolerance(c.inputs[0].dtype));
}

INSTANTIATE_TEST_SUITE_P(Claimed, NormTest, ::testing::ValuesIn(normCases()),
                         [](const ::testing::TestParamInfo<test::NodeCase>& p) {
                           return p.param.name;
                         });

/// LayerNormalization's Mean and InvStdDev outputs (float statistics of any X type).
class NormStatisticsTest : public test::CudaTest,
                           public ::testing::WithParamInterface<test::NodeCase> {};

TEST_P(NormStatisticsTest, MatchesReference) {
  const test::NodeCase& c = GetParam();
  test::expectMatchesReference(c, normTolerance(c.inputs[0].dtype), 3,
                               normTolerance(DataType::kFloat));
}

std::vector<test::NodeCase> layerNormCases() {
  std::vector<test::NodeCase> out;
  for (test::NodeCase& c : normCases()) {
    if (c.op == "LayerNormalization") out.push_back(std::move(c));
  }
  return out;
}

/// ai.onnxopt.SkipLayerNormalization and SkipRMSNormalization: the residual sum normalized in the
/// same kernel, with and without B (LayerNormalization's), over the last axis and axis 1, and
/// its optional Sum output (the sum rounded to the element type, as the decomposition's Add stores
/// it).
std::vector<test::NodeCase> skipNormCases() {
  std::vector<test::NodeCase> out;
  const std::vector<std::pair<std::vector<Dims>, KernelAttrs>> shapes = {
      {{{3, 7}, {3, 7}, {7}, {7}}, {}},
      {{{3, 33}, {3, 33}, {33}, {33}}, {}},
      {{{2, 3, 1024}, {2, 3, 1024}, {1024}, {1024}}, {}},
      {{{2, 9, 768}, {2, 9, 768}, {768}, {768}}, {}},
      {{{5, 2048}, {5, 2048}, {2048}}, {}},
      {{{3, 4097}, {3, 4097}, {4097}}, {}},
      {{{2, 3, 5}, {2, 3, 5}, {3, 5}, {3, 5}}, ints({{"axis", 1}})}};
  for (const char* op : {"SkipLayerNormalization", "SkipRMSNormalization"}) {
    const bool rms = std::string(op) == "SkipRMSNormalization";
    for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
      for (const auto& [all_dims, attrs] : shapes) {
        std::vector<Dims> dims = all_dims;
        if (rms) dims.resize(3);  // X, Skip, Scale
        test::NodeCase c;
        c.domain = "ai.onnxopt";
        c.op = op;
        c.opset = 1;
        c.attrs = attrs;
        c.name = fmt::format("{}_{}", op, dataTypeName(t));
        for (const Dims& d : dims) c.name += "_" + test::dimsName(d);
        if (attrs.ints.count("axis")) c.name += "_axis1";
        uint32_t seed = test::seedOf(c.name);
        for (size_t i = 0; i < dims.size(); ++i) {
          c.inputs.push_back(test::randomTensor(t, dims[i], i < 2 ? -2.0 : -1.5, i < 2 ? 4.0 : 1.5,
                                                seed + static_cast<uint32_t>(i)));
        }
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

class SkipNormTest : public test::CudaTest, public ::testing::WithParamInterface<test::NodeCase> {};

TEST_P(SkipNormTest, MatchesReference) {
  const test::NodeCase& c = GetParam();
  test::expectMatchesReference(c, normTolerance(c.inputs[0].dtype));
}

TEST_P(SkipNormTest, SumOutputMatchesReference) {
  const test::NodeCase& c = GetParam();
  // Y at the normalization's tolerance; the sum bit for bit (one rounding of x + skip).
  test::expectMatchesReference(c, normTolerance(c.inputs[0].dtype), 2, {0, 0});
}

INSTANTIATE_TEST_SUITE_P(Claimed, SkipNormTest, ::testing::ValuesIn(skipNormCases()),
                         [](const ::testing::TestParamInfo<test::NodeCase>& p) {
                           return p.param.name;
                         });

INSTANTIATE_TEST_SUITE_P(LayerNormalization, NormStatisticsTest,
                         ::testing::ValuesIn(layerNormCases()),
                         [](const ::testing::TestParamInfo<test::NodeCase>& p) {
                           return p.param.name;
                         });

// --- host-only: what canImplement refuses, and why ----------------------------------------------

using test::deviceView;

Support ask(const std::string& op, int64_t opset, const std::vector<ConstTensorView>& inputs,
            const KernelAttrs& attrs, size_t outputs = 1) {
  CudaKernelCall call = test::viewCall(op, opset, inputs, inputs[0], attrs);
  for (size_t i = 1; i < outputs; ++i) call.outputs.push_back(call.outputs[0]);
  return cudaCanImplement(call);
}

void expectRefused(const Support& s, const std::string& reason) {
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find(reason), std::string::npos) << s.reason;
}

TEST(NormCanImplement, AcceptsWhatItRuns) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  const DataType h = DataType::kFloat16;
  EXPECT_TRUE(ask("LayerNormalization", 17, {deviceView(h, {2, 8}), deviceView(h, {8})}, {}));
  EXPECT_TRUE(ask("RMSNormalization", 23, {deviceView(h, {2, 8}), deviceView(h, {1})}, {}));
  EXPECT_TRUE(ask("InstanceNormalization", 6,
                  {deviceView(h, {2, 3, 4}), deviceView(h, {3}), deviceView(h, {3})}, {}));
  KernelAttrs not_spatial;
  not_spatial.ints["spatial"] = 0;
  Support s = ask("BatchNormalization", 7,
                  {deviceView(h, {2, 3, 4}), deviceView(h, {3, 4}), deviceView(h, {3, 4}),
                   deviceView(h, {3, 4}), deviceView(h, {3, 4})},
                  not_spatial);
  EXPECT_TRUE(s) << s.reason;
}

TEST(NormCanImplement, LayerNormalizationRefusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  const DataType f = DataType::kFloat;
  std::vector<ConstTensorView> in = {deviceView(f, {2, 3}), deviceView(f, {3}), deviceView(f, {3})};
  KernelAttrs none;
  // Mean and InvStdDev: float, one element per row ([2, 1] here).
  CudaKernelCall stats = test::viewCall("LayerNormalization", 17, in, in[0], none);
  stats.outputs.emplace_back(f, Dims{2, 1}, Dims{1, 1}, nullptr, MemoryKind::kDevice);
  stats.outputs.emplace_back(f, Dims{2, 1}, Dims{1, 1}, nullptr, MemoryKind::kDevice);
  EXPECT_TRUE(cudaCanImplement(stats)) << cudaCanImplement(stats).reason;
  stats.outputs[2].dtype = DataType::kFloat16;
  expectRefused(cudaCanImplement(stats),
                "LayerNormalization: InvStdDev must be a contiguous float tensor of 2 elements");
  KernelAttrs stash;
  stash.ints["stash_type"] = 0;
  expectRefused(ask("LayerNormalization", 17, in, stash), "stash_type 0");
  in[1] = deviceView(DataType::kFloat16, {3});
  expectRefused(ask("LayerNormalization", 17, in, none),
                "Scale is float16, X float; the CUDA kernel takes one type");
  in[1] = deviceView(f, {4});
  expectRefused(ask("LayerNormalization", 17, in, none),
                "Scale [4] or B [3] does not broadcast to [3]");
  in[1] = deviceView(f, {3});
  KernelAttrs axis;
  axis.ints["axis"] = -3;
  expectRefused(ask("LayerNormalization", 17, in, axis), "axis -3 is out of range for rank 2");
  expectRefused(
      ask("LayerNormalization", 17,
          {deviceView(DataType::kDouble, {2, 3}), deviceView(DataType::kDouble, {3})}, none),
      "no CUDA kernel for double");
}

TEST(NormCanImplement, GroupAndInstanceRefusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  const DataType f = DataType::kFloat;
  auto x = deviceView(f, {2, 6, 4});
  KernelAttrs groups;
  groups.ints["num_groups"] = 3;
  // Opset 18 takes a parameter per group, 21 per channel.
  expectRefused(ask("GroupNormalization", 18, {x, deviceView(f, {6}), deviceView(f, {6})}, groups),
                "scale is [6]; the CUDA kernel takes a contiguous [3]");
  expectRefused(ask("GroupNormalization", 21, {x, deviceView(f, {3}), deviceView(f, {3})}, groups),
                "scale is [3]; the CUDA kernel takes a contiguous [6]");
  EXPECT_TRUE(ask("GroupNormalization", 21, {x, deviceView(f, {6}), deviceView(f, {6})}, groups));
  groups.ints["num_groups"] = 4;
  expectRefused(ask("GroupNormalization", 21, {x, deviceView(f, {6}), deviceView(f, {6})}, groups),
                "num_groups 4 does not divide 6 channels");
  expectRefused(ask("GroupNormalization", 21, {x, deviceView(f, {6}), deviceView(f, {6})}, {}),
                "num_groups is required");
  expectRefused(ask("InstanceNormalization", 6,
                    {deviceView(f, {2, 6}), deviceView(f, {6}), deviceView(f, {6})}, {}),
                "X must have rank 3 or more");
}

TEST(NormCanImplement, LrnRefusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  auto x = deviceView(DataType::kFloat16, {2, 6, 4});
  KernelAttrs size;
  size.ints["size"] = 3;
  EXPECT_TRUE(ask("LRN", 13, {x}, size));
  expectRefused(ask("LRN", 13, {x}, {}), "LRN: attribute 'size' is required");
  size.ints["size"] = 0;
  expectRefused(ask("LRN", 13, {x}, size), "LRN: size 0 must be positive");
  size.ints["size"] = 3;
  expectRefused(ask("LRN", 13, {deviceView(DataType::kFloat, {6})}, size),
                "LRN: input must be [N, C, ...]");
}

TEST(NormCanImplement, BatchNormalizationRefusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  const DataType f = DataType::kFloat;
  auto p = deviceView(f, {3});
  std::vector<ConstTensorView> in = {deviceView(f, {2, 3, 4}), p, p, p, p};
  KernelAttrs training;
  training.ints["training_mode"] = 1;
  expectRefused(ask("BatchNormalization", 15, in, training), "training_mode=1 stays on the CPU");
  expectRefused(ask("BatchNormalization", 9, in, {}, 5),
                "training mode (the statistics outputs) stays on the CPU");
  in[3] = deviceView(f, {4});
  expectRefused(ask("BatchNormalization", 15, in, {}),
                "input_mean is [4]; the CUDA kernel takes a contiguous [3]");
  in[3] = deviceView(DataType::kFloat16, {3});
  expectRefused(ask("BatchNormalization", 13, in, {}), "input_mean is float16, X float");
  // From 15: scale/B share a type, input_mean/input_var another.
  expectRefused(ask("BatchNormalization", 15, in, {}), "input_var is float, input_mean float16");
  in[4] = deviceView(DataType::kFloat16, {3});
  EXPECT_TRUE(ask("BatchNormalization", 15, in, {}));
  in[2] = deviceView(DataType::kBfloat16, {3});
  expectRefused(ask("BatchNormalization", 15, in, {}), "B is bfloat16, scale float");
  // At 14 scale and B are X's type; input_mean/input_var their own.
  expectRefused(ask("BatchNormalization", 14, in, {}), "B is bfloat16, X float");
  in[2] = p;
  EXPECT_TRUE(ask("BatchNormalization", 14, in, {}));
}

}  // namespace
}  // namespace onnxopt::kernels
