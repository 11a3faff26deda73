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

#include "kernels/cuda/movement/copy.h"
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
INSTANTIATE_TEST_SUITE_P(Trilu, MovementTest, ::testing::ValuesIn(test::triluCases()), caseName);
INSTANTIATE_TEST_SUITE_P(EyeLike, MovementTest, ::testing::ValuesIn(test::eyeLikeCases()),
                         caseName);
INSTANTIATE_TEST_SUITE_P(DepthSpace, MovementTest, ::testing::ValuesIn(test::depthSpaceCases()),
                         caseName);

/// Every case's node runs on the reference kernels and passes the CUDA kernel's canImplement (host
/// only: a case list or a canImplement that is wrong shows without a device).
TEST(MovementCases, ReferenceRunsAndCudaAcceptsEveryCase) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  for (const auto& cases : {test::transposeCases(), test::concatCases(), test::sliceCases(),
                            test::expandCases(), test::splitCases(), test::padCases(),
                            test::tileCases(), test::depthSpaceCases(), test::triluCases()}) {
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

/// The copy kernel's 64-bit index path (taken past 2^30 elements or offsets) gives what the
/// 32-bit path gives, on a small transposed copy forced onto it.
TEST_F(MovementLaunchTest, WideIndexPathMatches) {
  auto stream = DeviceStream::create();
  ASSERT_TRUE(stream.isOk()) << stream.status().toString();
  HostTensor in = test::randomTensor(DataType::kInt64, {7, 9, 5}, 21);
  auto src = test::upload(in, stream->get());
  ASSERT_TRUE(src.isOk()) << src.status().toString();
  std::vector<HostTensor> got;
  for (bool wide : {false, true}) {
    auto out = DeviceBuffer::allocate(in.bytes.size());
    ASSERT_TRUE(out.isOk());
    ASSERT_TRUE(fillDevice(out->data(), 0xA5, out->size(), stream->get()).isOk());
    // [5, 9, 7] read from the [7, 9, 5] input (dims reversed): nothing merges.
    auto copy = cuda::planStridedCopy(8, {5, 9, 7}, {1, 5, 45}, src->buffer.data(), {63, 7, 1},
                                      out->data());
    ASSERT_TRUE(copy.has_value());
    ASSERT_EQ(copy->rank, 3);
    copy->wide_index = wide;
    ASSERT_EQ(cuda::launchStridedCopy(*copy, static_cast<cudaStream_t>(stream->get())),
              cudaSuccess);
    HostTensor g = HostTensor::zeros(DataType::kInt64, {5, 9, 7});
    ASSERT_TRUE(copyToHost(g.bytes.data(), out->data(), g.bytes.size(), stream->get()).isOk());
    ASSERT_TRUE(stream->synchronize().isOk());
    got.push_back(std::move(g));
  }
  KernelAttrs perm;
  perm.int_lists["perm"] = {2, 1, 0};
  auto want = runReferenceKernel("Transpose", 13, {&in}, perm, 1);
  ASSERT_TRUE(want.isOk()) << want.status().toString();
  EXPECT_TRUE(got[0].bytes == want->at(0).bytes);
  EXPECT_TRUE(got[1].bytes == want->at(0).bytes);
}

}  // namespace
}  // namespace onnxopt::kernels
