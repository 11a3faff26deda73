// Tests of the resampling reference kernels (kernels/reference/resize.cc, sampling.cc) where ONNX's
// node cases leave gaps: integer rounding and saturation, exact copies of wide integers and strings,
// Resize-10's rounding, extrapolation, the other ops' geometry, and bad inputs refused with
// kInvalidArgument (or kResourceExhausted for outputs past the size cap).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/reference.h"
#include "test_tensors.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;
using test::tensorOf;

constexpr DataType kF = DataType::kFloat;
constexpr DataType kI64 = DataType::kInt64;

StatusOr<std::vector<HostTensor>> run(const std::string& op, int64_t opset,
                                      const std::vector<const HostTensor*>& ins,
                                      const KernelAttrs& attrs = {}) {
  return runReferenceKernel(op, opset, ins, attrs, 1);
}

std::vector<double> floats(const HostTensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numElements(); ++i) v.push_back(t.get<float>(i));
  return v;
}

KernelAttrs strAttr(const std::string& k, const std::string& v) {
  KernelAttrs a;
  a.strings[k] = v;
  return a;
}

StatusCode codeOf(const StatusOr<std::vector<HostTensor>>& r) {
  return r.isOk() ? StatusCode::kOk : r.status().code();
}

TEST(Resize, LinearOnUint8RoundsHalfToEvenAndSaturates) {
  HostTensor x = tensorOf(DataType::kUint8, {1, 2}, {0, 255});
  HostTensor s = tensorOf(kF, {2}, {1, 2});
  auto r = run("Resize", 19, {&x, nullptr, &s}, strAttr("mode", "linear"));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const HostTensor& y = r.value()[0];
  ASSERT_EQ(y.dims, (Dims{1, 4}));
  // half_pixel: x = -0.25, 0.25, 0.75, 1.25 -> 0, 63.75, 191.25, 255.
  EXPECT_EQ(y.get<uint8_t>(0), 0);
  EXPECT_EQ(y.get<uint8_t>(1), 64);
  EXPECT_EQ(y.get<uint8_t>(2), 191);
  EXPECT_EQ(y.get<uint8_t>(3), 255);
  // Cubic overshoots past 255 and below 0 on a step; the result saturates.
  HostTensor step = tensorOf(DataType::kUint8, {1, 4}, {0, 0, 255, 255});
  auto c = run("Resize", 19, {&step, nullptr, &s}, strAttr("mode", "cubic"));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  const HostTensor& cy = c.value()[0];
  std::vector<int> got;
  for (int64_t i = 0; i < cy.numElements(); ++i) got.push_back(cy.get<uint8_t>(i));
  EXPECT_EQ(got, (std::vector<int>{0, 0, 0, 58, 197, 255, 255, 255}));  // ONNX's reference
}

TEST(Resize, NearestCopiesWideIntegersAndStringsExactly) {
  const int64_t big = (int64_t{1} << 60) + 1;
  HostTensor x = HostTensor::zeros(kI64, {2});
  x.set<int64_t>(0, big);
  x.set<int64_t>(1, -big);
  HostTensor s = tensorOf(kF, {1}, {2});
  auto r = run("Resize", 19, {&x, nullptr, &s});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value()[0].get<int64_t>(0), big);
  EXPECT_EQ(r.value()[0].get<int64_t>(3), -big);
  HostTensor str = HostTensor::zeros(DataType::kString, {2});
  str.strings = {"a", "b"};
  auto rs = run("Resize", 19, {&str, nullptr, &s});
  ASSERT_TRUE(rs.isOk()) << rs.status().toString();
  EXPECT_EQ(rs.value()[0].strings, (std::vector<std::string>{"a", "a", "b", "b"}));
  // Linear interpolation of strings is not defined.
  EXPECT_EQ(codeOf(run("Resize", 19, {&str, nullptr, &s}, strAttr("mode", "linear"))),
            StatusCode::kUnimplemented);
}

TEST(Resize, Opset10AndUpsampleRoundLikeOnnxruntime) {
  HostTensor x = tensorOf(kF, {1, 1, 1, 4}, {1, 2, 3, 4});
  // Downsampling by 0.6: asymmetric x = 0, 1.67; rounded up -> inputs 0 and 2.
  HostTensor down = tensorOf(kF, {4}, {1, 1, 1, 0.6});
  auto r = run("Resize", 10, {&x, &down});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(floats(r.value()[0]), (std::vector<double>{1, 3}));
  // Upsampling by 1.5: x = 0, 0.67, 1.33, 2, 2.67, 3.33 rounded down.
  HostTensor up = tensorOf(kF, {4}, {1, 1, 1, 1.5});
  auto u = run("Upsample", 9, {&x, &up});
  ASSERT_TRUE(u.isOk()) << u.status().toString();
  EXPECT_EQ(floats(u.value()[0]), (std::vector<double>{1, 1, 2, 3, 3, 4}));
  KernelAttrs a = strAttr("mode", "linear");
  a.float_lists["scales"] = {1, 1, 1, 2};
  auto l = run("Upsample", 7, {&x}, a);
  ASSERT_TRUE(l.isOk()) << l.status().toString();
  EXPECT_EQ(floats(l.value()[0]), (std::vector<double>{1, 1.5, 2, 2.5, 3, 3.5, 4, 4}));
}

TEST(Resize, CropAndResizeExtrapolates) {
  HostTensor x = tensorOf(kF, {1, 3}, {1, 2, 3});
  HostTensor roi = tensorOf(kF, {4}, {0, 0.5, 1, 1.5});  // axis 1 from 0.5 to 1.5
  HostTensor sizes = tensorOf(kI64, {2}, {1, 3});
  KernelAttrs a = strAttr("coordinate_transformation_mode", "tf_crop_and_resize");
  a.strings["mode"] = "linear";
  a.floats["extrapolation_value"] = -7;
  auto r = run("Resize", 19, {&x, &roi, nullptr, &sizes}, a);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  // x = 1, 2, 3: the last lies past the input.
  EXPECT_EQ(floats(r.value()[0]), (std::vector<double>{2, 3, -7}));
}

TEST(Resize, RefusesBadInputs) {
  HostTensor x = tensorOf(kF, {1, 2}, {1, 2});
  HostTensor s = tensorOf(kF, {2}, {1, 2});
  HostTensor sizes = tensorOf(kI64, {2}, {1, 4});
  HostTensor zero = tensorOf(kF, {2}, {1, 0});
  HostTensor three = tensorOf(kF, {3}, {1, 1, 1});
  HostTensor neg = tensorOf(kI64, {2}, {1, -1});
  HostTensor huge = tensorOf(kI64, {2}, {1, double(int64_t{1} << 40)});
  auto bad = StatusCode::kInvalidArgument;
  EXPECT_EQ(codeOf(run("Resize", 19, {&x, nullptr, &s, &sizes})), bad);
  EXPECT_EQ(codeOf(run("Resize", 19, {&x})), bad);
  EXPECT_EQ(codeOf(run("Resize", 19, {&x, nullptr, &zero})), bad);
  EXPECT_EQ(codeOf(run("Resize", 19, {&x, nullptr, &three})), bad);
  EXPECT_EQ(codeOf(run("Resize", 19, {&x, nullptr, nullptr, &neg})), bad);
  EXPECT_EQ(codeOf(run("Resize", 19, {&x, nullptr, &s}, strAttr("mode", "area"))), bad);
  EXPECT_EQ(codeOf(run("Resize", 19, {&x, nullptr, &s},
                       strAttr("coordinate_transformation_mode", "tf_crop_and_resize"))),
            bad);
  EXPECT_EQ(codeOf(run("Resize", 18, {&x, nullptr, &s},
                       strAttr("coordinate_transformation_mode", "half_pixel_symmetric"))),
            bad);
  EXPECT_EQ(codeOf(run("Resize", 19, {&x, nullptr, &s}, strAttr("nearest_mode", "up"))), bad);
  KernelAttrs axes;
  axes.int_lists["axes"] = {1, 1};
  EXPECT_EQ(codeOf(run("Resize", 19, {&x, nullptr, &s}, axes)), bad);
  EXPECT_EQ(codeOf(run("Resize", 19, {&x, nullptr, nullptr, &huge})),
            StatusCode::kResourceExhausted);
  HostTensor empty = HostTensor::zeros(kF, {1, 0});
  EXPECT_EQ(codeOf(run("Resize", 19, {&empty, nullptr, nullptr, &sizes})), bad);
}

TEST(DepthSpace, RefusesBadGeometry) {
  HostTensor x = tensorOf(kF, {1, 3, 2, 2}, std::vector<double>(12, 1));
  KernelAttrs b2;
  b2.ints["blocksize"] = 2;
  KernelAttrs b0;
  b0.ints["blocksize"] = 0;
  auto bad = StatusCode::kInvalidArgument;
  EXPECT_EQ(codeOf(run("DepthToSpace", 13, {&x}, b2)), bad);  // 3 channels, 4 per block
  EXPECT_EQ(codeOf(run("DepthToSpace", 13, {&x}, b0)), bad);
  EXPECT_EQ(codeOf(run("DepthToSpace", 13, {&x})), bad);
  HostTensor odd = tensorOf(kF, {1, 1, 3, 2}, std::vector<double>(6, 1));
  EXPECT_EQ(codeOf(run("SpaceToDepth", 13, {&odd}, b2)), bad);
  HostTensor flat = tensorOf(kF, {4}, {1, 2, 3, 4});
  EXPECT_EQ(codeOf(run("SpaceToDepth", 13, {&flat}, b2)), bad);
}

TEST(CenterCropPad, CropsAndPadsAroundTheCentre) {
  HostTensor x = tensorOf(kF, {3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor shape = tensorOf(kI64, {2}, {2, 3});  // crop rows from 0, pad one column after
  auto r = run("CenterCropPad", 18, {&x, &shape});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(floats(r.value()[0]), (std::vector<double>{1, 2, 0, 3, 4, 0}));
  HostTensor wrong = tensorOf(kI64, {1}, {2});
  EXPECT_EQ(codeOf(run("CenterCropPad", 18, {&x, &wrong})), StatusCode::kInvalidArgument);
}

TEST(GridSample, PaddingModesAtAPointOutside) {
  HostTensor x = tensorOf(kF, {1, 1, 1, 2}, {10, 20});
  // x = 1.5 (normalized), y = 0: past the right edge.
  HostTensor grid = tensorOf(kF, {1, 1, 1, 2}, {1.5, 0});
  auto with = [&](const std::string& pad) {
    KernelAttrs a = strAttr("padding_mode", pad);
    a.ints["align_corners"] = 1;
    auto r = run("GridSample", 20, {&x, &grid}, a);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? r.value()[0].get<float>(0) : 0.0f;
  };
  // align_corners: x = 1.25 pixels; zeros reads 20 * 0.75; border clamps to 1; reflection to 0.75.
  EXPECT_FLOAT_EQ(with("zeros"), 15);
  EXPECT_FLOAT_EQ(with("border"), 20);
  EXPECT_FLOAT_EQ(with("reflection"), 17.5);
  HostTensor bad_grid = tensorOf(kF, {1, 1, 1, 3}, {0, 0, 0});
  EXPECT_EQ(codeOf(run("GridSample", 20, {&x, &bad_grid})), StatusCode::kInvalidArgument);
  HostTensor x3 = tensorOf(kF, {1, 1, 1, 1, 2}, {1, 2});
  HostTensor g3 = tensorOf(kF, {1, 1, 1, 1, 3}, {0, 0, 0});
  EXPECT_EQ(codeOf(run("GridSample", 16, {&x3, &g3})), StatusCode::kInvalidArgument);
  EXPECT_TRUE(run("GridSample", 20, {&x3, &g3}).isOk());
}

TEST(Sampling, RefusesBadInputs) {
  auto bad = StatusCode::kInvalidArgument;
  HostTensor theta = tensorOf(kF, {1, 2, 2}, {1, 0, 0, 1});
  HostTensor size = tensorOf(kI64, {4}, {1, 1, 2, 2});
  EXPECT_EQ(codeOf(run("AffineGrid", 20, {&theta, &size})), bad);
  HostTensor x = tensorOf(kF, {1, 1, 2, 2}, {1, 2, 3, 4});
  HostTensor rois = tensorOf(kF, {1, 4}, {0, 0, 1, 1});
  HostTensor batch = tensorOf(kI64, {1}, {1});
  EXPECT_EQ(codeOf(run("RoiAlign", 16, {&x, &rois, &batch})), bad);
  HostTensor cols = tensorOf(kF, {1, 2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor image = tensorOf(kI64, {2}, {1, 3});
  HostTensor block = tensorOf(kI64, {2}, {1, 2});
  EXPECT_EQ(codeOf(run("Col2Im", 18, {&cols, &image, &block})), bad);  // 2 windows, not 3
  HostTensor m = tensorOf(kF, {1, 1, 1, 1}, {7});
  HostTensor mi = tensorOf(kI64, {1, 1, 1, 1}, {4});
  KernelAttrs k;
  k.int_lists["kernel_shape"] = {2, 2};
  EXPECT_EQ(codeOf(run("MaxUnpool", 11, {&m, &mi}, k)), bad);  // index 4 of 4 elements
  HostTensor small = tensorOf(kI64, {4}, {1, 1, 1, 1});
  HostTensor mi0 = tensorOf(kI64, {1, 1, 1, 1}, {0});
  EXPECT_EQ(codeOf(run("MaxUnpool", 11, {&m, &mi0, &small}, k)), bad);
  HostTensor larger = tensorOf(kI64, {4}, {1, 1, 3, 3});
  HostTensor mi3 = tensorOf(kI64, {1, 1, 1, 1}, {3});
  auto r = run("MaxUnpool", 11, {&m, &mi3, &larger}, k);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  // Index 3 of the 2x2 unpooled shape is (1, 1), which the 3x3 output holds at 4.
  EXPECT_EQ(floats(r.value()[0]), (std::vector<double>{0, 0, 0, 0, 7, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace onnxopt::kernels
