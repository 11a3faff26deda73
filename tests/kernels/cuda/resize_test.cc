// Resize and Upsample on CUDA (kernels/cuda/movement/resize.cu) against the reference kernel, nearest and
// linear for every element type the kernels handle (float, float16, bfloat16, int8, uint8, int32,
// int64, bool): every nearest_mode and the legacy rounding of Upsample and Resize-10; linear 2-D,
// 3-D, 5-D trilinear and 4 resized axes; every coordinate_transformation_mode, scales and sizes,
// roi with extrapolation, exclude_outside, and at 18+ axes and keep_aspect_ratio_policy. Both
// modes must match exactly (the device repeats the reference's double arithmetic). Label gpu; the
// host-only tests at the end (canImplement's refusals and reasons) run without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "norm_test_util.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;

struct ResizeConfig {
  std::string name;
  int64_t opset;
  Dims x;
  std::vector<double> scales;  ///< empty: none
  Dims sizes;                  ///< empty: none
  std::vector<double> roi;     ///< empty: an omitted roi (or an empty one, see below)
  KernelAttrs attrs;
  std::string op = "Resize";
};

KernelAttrs modes(const std::string& coord, const std::string& extra_key = "",
                  const std::string& extra = "") {
  KernelAttrs a;
  a.strings["coordinate_transformation_mode"] = coord;
  if (!extra_key.empty()) a.strings[extra_key] = extra;
  return a;
}

std::vector<ResizeConfig> nearestConfigs() {
  const Dims x = {1, 2, 4, 5};
  std::vector<ResizeConfig> out = {
      {"half_pixel_up2", 19, x, {1, 1, 2, 2}, {}, {}, modes("half_pixel")},
      {"asymmetric_floor_down",
       19,
       x,
       {1, 1, 0.5, 0.6},
       {},
       {},
       modes("asymmetric", "nearest_mode", "floor")},
      {"align_corners_ceil",
       19,
       x,
       {1, 1, 1.5, 2.5},
       {},
       {},
       modes("align_corners", "nearest_mode", "round_prefer_ceil")},
      {"pytorch_half_pixel_ceil",
       13,
       x,
       {1, 1, 3, 3},
       {},
       {},
       modes("pytorch_half_pixel", "nearest_mode", "ceil")},
      {"half_pixel_symmetric_sizes", 19, x, {}, {1, 2, 7, 3}, {}, modes("half_pixel_symmetric")},
      {"tf_crop_and_resize_extrapolate",
       19,
       x,
       {},
       {1, 2, 5, 6},
       {0, 0, -0.2, 0.1, 1, 1, 1.3, 0.9},
       modes("tf_crop_and_resize")},
      {"tf_half_pixel_for_nn", 11, x, {1, 1, 1.7, 2}, {}, {}, modes("tf_half_pixel_for_nn")},
      {"sizes_empty_scales", 11, x, {}, {1, 2, 3, 7}, {}, modes("asymmetric")},
      {"sizes_identity_axes", 13, {2, 3, 4}, {}, {2, 3, 9}, {}, modes("asymmetric")},
      {"rank1", 13, {7}, {2.5}, {}, {}, modes("half_pixel")},
      {"opset10", 10, x, {1, 1, 2, 1.5}, {}, {}, {}},
  };
  ResizeConfig axes{"axes23", 18, x, {2, 0.5}, {}, {}, modes("half_pixel")};
  axes.attrs.int_lists["axes"] = {2, 3};
  out.push_back(axes);
  ResizeConfig policy{"not_larger_axes", 18, x, {}, {7, 9}, {}, modes("asymmetric")};
  policy.attrs.int_lists["axes"] = {-2, -1};
  policy.attrs.strings["keep_aspect_ratio_policy"] = "not_larger";
  out.push_back(policy);
  ResizeConfig smaller{"not_smaller", 18, x, {}, {1, 2, 7, 9}, {}, modes("half_pixel")};
  smaller.attrs.strings["keep_aspect_ratio_policy"] = "not_smaller";
  out.push_back(smaller);
  ResizeConfig up7{"upsample7", 7, x, {}, {}, {}, {}, "Upsample"};
  up7.attrs.float_lists["scales"] = {1, 1, 2, 2};
  out.push_back(up7);
  out.push_back({"upsample9", 9, x, {1, 1, 2, 3}, {}, {}, {}, "Upsample"});
  out.push_back({"upsample10", 10, x, {1, 1, 0.5, 3}, {}, {}, {}, "Upsample"});
  // Antialias matters to linear downsampling only.
  ResizeConfig anti{"antialias", 18, x, {1, 1, 0.5, 0.5}, {}, {}, modes("half_pixel")};
  anti.attrs.ints["antialias"] = 1;
  out.push_back(anti);
  for (ResizeConfig& c : out) c.attrs.strings["mode"] = "nearest";
  return out;
}

std::vector<ResizeConfig> linearConfigs() {
  const Dims x = {1, 2, 4, 5};
  KernelAttrs exclude = modes("half_pixel");
  exclude.ints["exclude_outside"] = 1;
  KernelAttrs crop = modes("tf_crop_and_resize");
  crop.floats["extrapolation_value"] = -3.25f;
  KernelAttrs anti = modes("half_pixel");
  anti.ints["antialias"] = 1;
  std::vector<ResizeConfig> out = {
      {"half_pixel_up2", 19, x, {1, 1, 2, 2}, {}, {}, modes("half_pixel")},
      {"align_corners_down", 19, x, {1, 1, 0.6, 0.7}, {}, {}, modes("align_corners")},
      {"asymmetric", 13, x, {1, 1, 1.5, 2.5}, {}, {}, modes("asymmetric")},
      {"pytorch_half_pixel_width1", 13, x, {}, {1, 2, 1, 3}, {}, modes("pytorch_half_pixel")},
      {"half_pixel_symmetric", 19, x, {}, {1, 2, 7, 3}, {}, modes("half_pixel_symmetric")},
      {"tf_crop_and_resize", 19, x, {}, {1, 2, 5, 6}, {0, 0, -0.2, 0.1, 1, 1, 1.3, 0.9}, crop},
      {"exclude_outside", 19, x, {1, 1, 2.5, 1.5}, {}, {}, exclude},
      {"trilinear_5d", 19, {1, 1, 3, 4, 5}, {1, 1, 2, 1.5, 0.5}, {}, {}, modes("half_pixel")},
      {"last_axis_3d", 13, {2, 3, 7}, {}, {2, 3, 11}, {}, modes("align_corners")},
      {"four_axes", 19, {2, 3, 4, 5}, {1.5, 2, 0.75, 1.25}, {}, {}, modes("half_pixel")},
      {"antialias_upsampling", 18, x, {1, 1, 2, 1.5}, {}, {}, anti},
      {"opset10", 10, x, {1, 1, 2, 1.5}, {}, {}, {}},
      {"upsample9", 9, x, {1, 1, 2, 3}, {}, {}, {}, "Upsample"},
  };
  // Passes in the order of `axes` (3 before 2), cropping past the input's edge.
  ResizeConfig crop_axes{"tf_crop_and_resize_axes32", 18,  {1, 1, 4, 4}, {}, {3, 3},
                         {0.4, 0.6, 1.2, 0.8},        crop};
  crop_axes.attrs.int_lists["axes"] = {3, 2};
  out.push_back(crop_axes);
  ResizeConfig down_up{"down_then_up_axes32", 18, {2, 3, 6, 5}, {1.5, 0.5}, {}, {},
                       modes("asymmetric")};
  down_up.attrs.int_lists["axes"] = {3, 2};
  out.push_back(down_up);
  for (ResizeConfig& c : out) c.attrs.strings["mode"] = "linear";
  return out;
}

HostTensor resizeInput(DataType t, const Dims& dims, uint32_t seed) {
  if (t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16) {
    return test::randomTensor(t, dims, -4, 4, seed);
  }
  // Integers (bool: 0 and 1) drawn whole.
  HostTensor r = test::randomTensor(DataType::kDouble, dims, 0, 1, seed);
  std::vector<double> v;
  for (int64_t i = 0; i < r.numElements(); ++i) {
    double u = r.get<double>(i);
    v.push_back(t == DataType::kBool    ? std::floor(u * 2)
                : t == DataType::kUint8 ? std::floor(u * 256)
                                        : std::floor(u * 200) - 100);
  }
  return test::tensorOf(t, dims, v);
}

test::NodeCase makeCase(const ResizeConfig& r, DataType t, const std::string& mode) {
  test::NodeCase c;
  c.op = r.op;
  c.opset = r.opset;
  c.attrs = r.attrs;
  c.name = fmt::format("{}_{}_{}_{}_opset{}", r.op, mode, r.name, dataTypeName(t), r.opset);
  c.inputs.push_back(resizeInput(t, r.x, test::seedOf(c.name)));
  auto floats = [](const std::vector<double>& v) {
    return test::tensorOf(DataType::kFloat, {static_cast<int64_t>(v.size())}, v);
  };
  if (r.op == "Upsample" ? r.opset >= 9 : r.opset < 11) {
    c.inputs.push_back(floats(r.scales));
    return c;
  }
  if (r.op == "Upsample") return c;
  // roi: given for tf_crop_and_resize; otherwise omitted, or empty from opset 13 (as exporters
  // write it), and from 13 an unused scales is omitted.
  if (!r.roi.empty()) {
    c.inputs.push_back(floats(r.roi));
  } else if (r.opset >= 13) {
    c.inputs.push_back(HostTensor::zeros(DataType::kFloat, {0}));
  } else {
    c.inputs.emplace_back();
  }
  if (!r.scales.empty()) {
    c.inputs.push_back(floats(r.scales));
    return c;
  }
  c.inputs.push_back(r.opset >= 13 ? HostTensor() : HostTensor::zeros(DataType::kFloat, {0}));
  std::vector<double> sizes(r.sizes.begin(), r.sizes.end());
  c.inputs.push_back(test::tensorOf(DataType::kInt64, {static_cast<int64_t>(sizes.size())}, sizes));
  return c;
}

std::vector<test::NodeCase> resizeCases() {
  std::vector<test::NodeCase> out;
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16, DataType::kInt8,
                     DataType::kUint8, DataType::kInt32, DataType::kInt64, DataType::kBool}) {
    for (const ResizeConfig& r : nearestConfigs()) out.push_back(makeCase(r, t, "nearest"));
    for (const ResizeConfig& r : linearConfigs()) out.push_back(makeCase(r, t, "linear"));
  }
  return out;
}

class ResizeTest : public test::CudaTest, public ::testing::WithParamInterface<test::NodeCase> {};

TEST_P(ResizeTest, MatchesReference) {
  const test::NodeCase& c = GetParam();
  // Nearest moves elements and linear repeats the reference's double arithmetic operation for
  // operation, rounding once: both exact (integers and bool exactly so: a last-bit difference
  // could round a tie the other way).
  test::expectMatchesReference(c, test::Tolerance{0, 0});
}

INSTANTIATE_TEST_SUITE_P(Modes, ResizeTest, ::testing::ValuesIn(resizeCases()),
                         [](const ::testing::TestParamInfo<test::NodeCase>& p) {
                           return p.param.name;
                         });

// --- host-only: what canImplement refuses, and why ----------------------------------------------

/// canImplement of Resize-19 on X [1, 2, 4, 5] with constant scales (output from them unless
/// `out` is given); `constant` false leaves the scales off the constants.
Support askResize(const KernelAttrs& attrs, const std::vector<double>& scales,
                  DataType t = DataType::kFloat, bool constant = true, Dims out = {}) {
  HostTensor s = test::tensorOf(DataType::kFloat, {static_cast<int64_t>(scales.size())}, scales);
  if (out.empty()) {
    Dims x = {1, 2, 4, 5};
    for (size_t i = 0; i < x.size(); ++i) {
      out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x[i]) * scales[i])));
    }
  }
  CudaKernelCall call = test::viewCall(
      "Resize", 19,
      {test::deviceView(t, {1, 2, 4, 5}), ConstTensorView{}, test::deviceView(s.dtype, s.dims)},
      test::deviceView(t, out), attrs);
  call.constant_inputs = {nullptr, nullptr, constant ? &s : nullptr};
  return cudaCanImplement(call);
}

void expectRefused(const Support& s, const std::string& reason) {
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find(reason), std::string::npos) << s.reason;
}

TEST(ResizeCanImplement, AcceptsNearestAndLinear) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs attrs;
  EXPECT_TRUE(askResize(attrs, {1, 1, 2, 2}, DataType::kInt64));
  attrs.strings["mode"] = "linear";
  EXPECT_TRUE(askResize(attrs, {1, 1, 2, 0.5}, DataType::kBfloat16));
  EXPECT_TRUE(askResize(attrs, {1, 1, 2, 0.5}, DataType::kUint8));
  // antialias changes nothing when upsampling.
  attrs.ints["antialias"] = 1;
  EXPECT_TRUE(askResize(attrs, {1, 1, 2, 3}));
}

TEST(ResizeCanImplement, RefusesWithAReason) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs cubic;
  cubic.strings["mode"] = "cubic";
  expectRefused(askResize(cubic, {1, 1, 2, 2}), "Resize: cubic mode stays on the CPU");
  KernelAttrs linear;
  linear.strings["mode"] = "linear";
  expectRefused(askResize(linear, {1, 1, 2, 2}, DataType::kDouble),
                "Resize: no CUDA kernel for double in linear mode");
  KernelAttrs anti = linear;
  anti.ints["antialias"] = 1;
  expectRefused(askResize(anti, {1, 1, 2, 0.5}),
                "Resize: antialias=1 when downsampling stays on the CPU");
  expectRefused(askResize(linear, {1, 1, 2, 2}, DataType::kFloat, false),
                "Resize: scales is not a constant");
  expectRefused(askResize(linear, {1, 1, 2, 2}, DataType::kFloat, true, {1, 2, 8, 9}),
                "Resize: the output is [1, 2, 8, 9]; the resize gives [1, 2, 8, 10]");
  expectRefused(askResize(linear, {1, 1, 2}), "Resize: 3 scales or sizes for 4 axes");
  KernelAttrs crop;
  crop.strings["coordinate_transformation_mode"] = "tf_crop_and_resize";
  expectRefused(askResize(crop, {1, 1, 2, 2}), "tf_crop_and_resize needs a roi of 8 values");
  KernelAttrs unknown;
  unknown.strings["coordinate_transformation_mode"] = "tf_half_pixel_for_nn";
  expectRefused(askResize(unknown, {1, 1, 2, 2}),
                "unknown coordinate_transformation_mode 'tf_half_pixel_for_nn'");
}

}  // namespace
}  // namespace onnxopt::kernels
