// RoiAlign's CUDA kernel on the host (kernels/cuda/conv/roi_align.cc): the capability table claims
// opsets 10 and 16 for the float types, canImplement takes every GPU case (roi_align_cases.h) and
// the ONNX node test cases, and refuses what the reference kernel refuses when planning, so that
// such a node runs on the CPU (which reports it).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "roi_align_cases.h"

namespace onnxopt::kernels {
namespace {

using test::MoveCase;

TEST(CudaRoiAlign, CapabilityTableClaimsTheFloatTypes) {
  for (int64_t opset : {10, 16, 22}) {
    for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
      Support s = cudaCapabilities().supports(
          OpQuery{"", "RoiAlign", opset, {t, t, DataType::kInt64}, {t}});
      EXPECT_TRUE(s) << opset << " " << dataTypeName(t) << ": " << s.reason;
    }
    EXPECT_FALSE(cudaCapabilities().supports(OpQuery{
        "", "RoiAlign", opset, {DataType::kDouble, DataType::kDouble, DataType::kInt64}, {}}));
    EXPECT_FALSE(cudaCapabilities().supports(OpQuery{
        "", "RoiAlign", opset, {DataType::kFloat, DataType::kFloat, DataType::kInt32}, {}}));
  }
  EXPECT_FALSE(cudaCapabilities().supports(
      OpQuery{"", "RoiAlign", 9, {DataType::kFloat, DataType::kFloat, DataType::kInt64}, {}}));
}

TEST(CudaRoiAlign, TakesEveryCase) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  for (const MoveCase& c : test::roiAlignCases()) test::expectReferenceAndCanImplement(c);
}

/// test_roialign_aligned_false, _aligned_true and _mode_max (opset 22): X [1, 1, 10, 10], three
/// regions, 5x5 bins, sampling_ratio 2.
TEST(CudaRoiAlign, TakesTheOnnxNodeTestCases) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  const test::RoiAlignShape shape{{1, 1, 10, 10}, 3, 5, 5, 1.0f};
  test::expectReferenceAndCanImplement(
      test::roiAlignCase(DataType::kFloat, shape, 22, "output_half_pixel", "avg", 2, false));
  test::expectReferenceAndCanImplement(
      test::roiAlignCase(DataType::kFloat, shape, 22, "half_pixel", "avg", 2, false));
  test::expectReferenceAndCanImplement(
      test::roiAlignCase(DataType::kFloat, shape, 22, "output_half_pixel", "max", 2, false));
}

/// The node of `c` with Y of the reference's shape unless `y` says otherwise.
Support ask(const MoveCase& c, std::vector<int64_t> y = {}, DataType y_type = DataType::kFloat) {
  HostTensor out = HostTensor::zeros(y_type, y.empty() ? std::vector<int64_t>{4, 3, 3, 4} : y);
  return cudaCanImplement(test::hostOnlyCall(c, {out}));
}

MoveCase base() {
  return test::roiAlignCase(DataType::kFloat, {{2, 3, 10, 12}, 4, 3, 4, 0.5f}, 16, "", "avg", 0,
                            false);
}

void expectRefused(const Support& s, const std::string& why) {
  EXPECT_FALSE(s) << why;
  EXPECT_NE(s.reason.find(why), std::string::npos) << s.reason;
}

TEST(CudaRoiAlign, RefusesWhatTheReferenceRefuses) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  EXPECT_TRUE(ask(base())) << ask(base()).reason;
  MoveCase c = base();
  c.inputs[2].set<int64_t>(1, 2);  // N is 2
  expectRefused(ask(c), "RoiAlign: batch index 2 out of range");
  c.runtime_inputs = {2};  // read on the device only: the kernel writes that region as NaN
  EXPECT_TRUE(ask(c)) << ask(c).reason;
  c = base();
  c.inputs[2] = test::intTensor({0, 1, 0});
  expectRefused(ask(c), "batch_indices must be [4]");
  c = base();
  c.inputs[1] = test::tensorOf(DataType::kFloat, {4, 5}, {});
  expectRefused(ask(c), "rois must be [num_rois, 4]");
  c = base();
  c.inputs[0] = test::tensorOf(DataType::kFloat, {2, 3, 10}, {});
  expectRefused(ask(c), "X must be 4-D");
  c = base();
  c.attrs.strings["mode"] = "sum";
  expectRefused(ask(c), "unknown mode 'sum'");
  c = base();
  c.attrs.strings["coordinate_transformation_mode"] = "align_corners";
  expectRefused(ask(c), "unknown coordinate_transformation_mode");
  c.opset = 10;  // opset 10 has no such attribute: output_half_pixel
  EXPECT_TRUE(ask(c)) << ask(c).reason;
  c = base();
  c.attrs.ints["output_height"] = 0;
  expectRefused(ask(c, {4, 3, 1, 4}), "must be positive");
  c = base();
  c.attrs.ints["sampling_ratio"] = -1;
  expectRefused(ask(c), "bad sampling_ratio -1");
  c.attrs.ints["sampling_ratio"] = 1000001;
  expectRefused(ask(c), "too many samples per bin");
  expectRefused(ask(base(), {4, 3, 4, 3}), "the output must be [4, 3, 3, 4]");
}

TEST(CudaRoiAlign, RefusesMixedTypesAndHostMemory) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  MoveCase c = base();
  c.inputs[1] = test::tensorOf(DataType::kFloat16, {4, 4}, {});
  expectRefused(ask(c), "X, rois and Y of one type");
  expectRefused(ask(base(), {}, DataType::kFloat16), "X, rois and Y of one type");
  c = base();
  auto want = test::referenceOutputs(c);
  ASSERT_TRUE(want.isOk()) << want.status().toString();
  CudaKernelCall call = test::hostOnlyCall(c, *want);
  call.inputs[1].memory = MemoryKind::kHost;
  expectRefused(cudaCanImplement(call), "host memory");
}

}  // namespace
}  // namespace onnxopt::kernels
