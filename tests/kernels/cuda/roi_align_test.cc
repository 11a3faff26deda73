// RoiAlign on CUDA (kernels/cuda/conv/roi_align.cu) against the reference kernel: every case of
// roi_align_cases.h compared exactly (the kernel computes the reference's double arithmetic in its
// order), and the documented result of what only the data shows: a region with a batch index
// outside [0, N), a NaN corner or an adaptive grid over 1e6 samples is NaN. Label gpu.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "roi_align_cases.h"

namespace onnxopt::kernels {
namespace {

using test::MoveCase;

class RoiAlignTest : public test::CudaTest, public ::testing::WithParamInterface<MoveCase> {};

TEST_P(RoiAlignTest, MatchesReference) {
  const MoveCase& c = GetParam();
  auto want = test::referenceOutputs(c);
  ASSERT_TRUE(want.isOk()) << "reference: " << want.status().toString();
  auto got = test::runCaseOnDevice(c, *want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want->at(0), got->at(0), test::Tolerance{0, 0});
}

INSTANTIATE_TEST_SUITE_P(Cases, RoiAlignTest, ::testing::ValuesIn(test::roiAlignCases()),
                         [](const ::testing::TestParamInfo<MoveCase>& p) { return p.param.name; });

class RoiAlignRuntimeTest : public test::CudaTest {};

/// Runs `bad` (its batch indices and rois read on the device only) and expects the reference's
/// output of `good` (the same node with valid regions) except for region `nan_roi`, which is NaN.
void expectNanRegion(MoveCase bad, const MoveCase& good, int64_t nan_roi) {
  auto want = test::referenceOutputs(good);
  ASSERT_TRUE(want.isOk()) << want.status().toString();
  HostTensor& y = want->at(0);
  const int64_t per_roi = y.numElements() / y.dims[0];
  for (int64_t i = nan_roi * per_roi; i < (nan_roi + 1) * per_roi; ++i) y.set<float>(i, NAN);
  bad.runtime_inputs = {1, 2};
  auto got = test::runCaseOnDevice(bad, *want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(y, got->at(0), test::Tolerance{0, 0});
  for (int64_t i = nan_roi * per_roi; i < (nan_roi + 1) * per_roi; ++i) {
    EXPECT_TRUE(std::isnan(got->at(0).get<float>(i))) << i;
  }
}

MoveCase smallCase(const std::string& mode, int64_t sampling) {
  return test::roiAlignCase(DataType::kFloat, {{2, 3, 10, 12}, 4, 3, 4, 0.5f}, 16, "", mode,
                            sampling, true);
}

TEST_F(RoiAlignRuntimeTest, BatchIndexOutOfRangeIsNan) {
  for (int64_t index : {2, -1}) {
    for (const char* mode : {"avg", "max"}) {
      MoveCase good = smallCase(mode, 0), bad = good;
      bad.inputs[2].set<int64_t>(1, index);
      expectNanRegion(bad, good, 1);
    }
  }
}

TEST_F(RoiAlignRuntimeTest, NanCornerIsNan) {
  for (int64_t sampling : {0, 2}) {
    for (const char* mode : {"avg", "max"}) {
      MoveCase good = smallCase(mode, sampling), bad = good;
      bad.inputs[1].set<float>(2 * 4 + 1, NAN);
      expectNanRegion(bad, good, 2);
    }
  }
}

/// The reference fails when an adaptive grid passes 1e6 samples along an axis ("too many samples
/// per bin"); the kernel writes NaN for that region instead of looping over it.
TEST_F(RoiAlignRuntimeTest, HugeAdaptiveGridIsNan) {
  MoveCase good = smallCase("avg", 0), bad = good;
  bad.inputs[1].set<float>(3 * 4 + 3, 1e9f);
  expectNanRegion(bad, good, 3);
}

}  // namespace
}  // namespace onnxopt::kernels
