// The CUDA data-movement kernels (Transpose, Concat, Split, Slice, Expand, Tile, Pad,
// DepthToSpace/SpaceToDepth) against the CPU reference kernels: every claimed element type (each
// size class and bool), ranks 1 to 6, negative axes, empty tensors, strided input views; exact
// comparison (elements are moved, not computed). Label gpu: skipped without a device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "movement_case_lists.h"

namespace onnxopt::kernels {
namespace {

using test::MoveCase;

class MovementTest : public test::CudaTest, public ::testing::WithParamInterface<MoveCase> {};

TEST_P(MovementTest, MatchesReference) {
  test::expectMatchesReference(GetParam());
}

auto caseName = [](const ::testing::TestParamInfo<MoveCase>& p) { return p.param.name; };

INSTANTIATE_TEST_SUITE_P(Transpose, MovementTest, ::testing::ValuesIn(test::transposeCases()),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Concat, MovementTest, ::testing::ValuesIn(test::concatCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Slice, MovementTest, ::testing::ValuesIn(test::sliceCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Expand, MovementTest, ::testing::ValuesIn(test::expandCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Split, MovementTest, ::testing::ValuesIn(test::splitCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Pad, MovementTest, ::testing::ValuesIn(test::padCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Tile, MovementTest, ::testing::ValuesIn(test::tileCases()), caseName);
INSTANTIATE_TEST_SUITE_P(DepthSpace, MovementTest, ::testing::ValuesIn(test::depthSpaceCases()),
                         caseName);

/// Every case's node runs on the reference kernels and passes the CUDA kernel's canImplement (host
/// only: a case list or a canImplement that is wrong shows without a device).
TEST(MovementCases, ReferenceRunsAndCudaAcceptsEveryCase) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  for (const auto& cases :
       {test::transposeCases(), test::concatCases(), test::sliceCases(), test::expandCases(),
        test::splitCases(), test::padCases(), test::tileCases()}) {
    for (const MoveCase& c : cases) test::expectReferenceAndCanImplement(c);
  }
}

class MovementLaunchTest : public test::CudaTest {};

/// A non-contiguous input view (a transposed base) read by Transpose: the strides compose.
TEST_F(MovementLaunchTest, TransposeOfAStridedView) {
  auto stream = DeviceStream::create();
  ASSERT_TRUE(stream.isOk()) << stream.status().toString();
  HostTensor base = test::randomTensor(DataType::kFloat, {6, 5, 4}, 11);  // viewed as [4, 5, 6]
  HostTensor logical = HostTensor::zeros(DataType::kFloat, {4, 5, 6});
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      for (int64_t k = 0; k < 6; ++k) {
        logical.set<float>((i * 5 + j) * 6 + k, base.get<float>((k * 5 + j) * 4 + i));
      }
    }
  }
  KernelAttrs attrs;
  attrs.int_lists["perm"] = {1, 2, 0};
  auto expected = runReferenceKernel("Transpose", 13, {&logical}, attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  auto in = test::upload(base, stream->get());
  ASSERT_TRUE(in.isOk()) << in.status().toString();
  const std::vector<int64_t> out_dims = {5, 6, 4};
  auto out = DeviceBuffer::allocate(base.bytes.size());
  ASSERT_TRUE(out.isOk());
  ASSERT_TRUE(fillDevice(out->data(), 0xA5, out->size(), stream->get()).isOk());
  CudaKernelCall call;
  call.op = "Transpose";
  call.opset = 13;
  call.attrs = &attrs;
  call.inputs = {ConstTensorView(DataType::kFloat, {4, 5, 6}, {1, 4, 20}, in->buffer.data(),
                                 MemoryKind::kDevice)};
  call.outputs = {TensorView(DataType::kFloat, out_dims, contiguousStrides(out_dims), out->data(),
                             MemoryKind::kDevice)};
  Status launched = launchCudaKernel(call, stream->get());
  ASSERT_TRUE(launched.isOk()) << launched.toString();
  HostTensor got = HostTensor::zeros(DataType::kFloat, out_dims);
  ASSERT_TRUE(copyToHost(got.bytes.data(), out->data(), got.bytes.size(), stream->get()).isOk());
  ASSERT_TRUE(stream->synchronize().isOk());
  test::expectClose(expected->at(0), got, test::Tolerance{0, 0});
}

}  // namespace
}  // namespace onnxopt::kernels
