// Host-only tests of the data-movement and indexing kernels (no device needed): the strided-copy
// planner (dims merged, index width); the copy families' copy jobs run on host memory by a host
// rendition of the copy kernel, against the reference kernels, over the GPU test's cases; and
// what canImplement refuses and why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/movement/concat.h"
#include "kernels/cuda/movement/copy.h"
#include "kernels/cuda/movement/expand.h"
#include "kernels/cuda/movement/slice.h"
#include "kernels/cuda/movement/split.h"
#include "kernels/cuda/movement/tile.h"
#include "kernels/cuda/movement/transpose.h"
#include "movement_case_lists.h"
#include "onnxopt/kernels/cuda.h"

namespace onnxopt::kernels {
namespace {

using cuda::planStridedCopy;
using cuda::StridedCopy;

TEST(StridedCopyPlan, MergesContiguousDims) {
  // A contiguous [2, 3, 4] copy is one run of 24 floats: 6 words of 16 bytes.
  auto c = planStridedCopy(4, {2, 3, 4}, {12, 4, 1}, nullptr, {12, 4, 1}, nullptr);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rank, 1);
  EXPECT_EQ(c->element_bytes, 16);
  EXPECT_EQ(c->count, 6);
  EXPECT_EQ(c->dims[0], 6);
  EXPECT_FALSE(c->wide_index);
}

TEST(StridedCopyPlan, WidensAContiguousInnerDim) {
  // The [0, 2, 1, 3] head split of fp16 [2, 128, 12, 64]: rows of 64 halves move as 8 words of
  // 16 bytes, the other strides counted in words.
  auto c = planStridedCopy(2, {2, 12, 128, 64}, {98304, 64, 768, 1}, nullptr, {98304, 8192, 64, 1},
                           nullptr);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->element_bytes, 16);
  ASSERT_EQ(c->rank, 4);
  EXPECT_EQ(c->dims[3], 8);
  EXPECT_EQ(c->src_strides[2], 96);
  EXPECT_EQ(c->dst_strides[1], 1024);
  EXPECT_EQ(c->count, 2 * 12 * 128 * 8);
  // An inner extent of 6 halves (12 bytes) takes 4-byte words; a pointer 2 bytes off takes none.
  auto six = planStridedCopy(2, {4, 6}, {12, 1}, nullptr, {6, 1}, nullptr);
  ASSERT_TRUE(six.has_value());
  EXPECT_EQ(six->element_bytes, 4);
  EXPECT_EQ(six->dims[1], 3);
  auto* odd = reinterpret_cast<const void*>(uintptr_t{2});
  auto off = planStridedCopy(2, {4, 8}, {16, 1}, odd, {8, 1}, nullptr);
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(off->element_bytes, 2);
  // A strided inner dim (a true transpose) is never widened.
  auto t = planStridedCopy(2, {64, 64}, {1, 64}, nullptr, {64, 1}, nullptr);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->element_bytes, 2);
}

TEST(StridedCopyPlan, KeepsPermutedDimsAndDropsOnes) {
  // [2, 1, 3, 4] read through the strides of a [2, 4, 3] transpose: the 1 goes, nothing merges.
  auto c = planStridedCopy(2, {2, 1, 3, 4}, {12, 99, 1, 3}, nullptr, {12, 12, 4, 1}, nullptr);
  ASSERT_TRUE(c.has_value());
  ASSERT_EQ(c->rank, 3);
  EXPECT_EQ(c->dims[0], 2);
  EXPECT_EQ(c->dims[1], 3);
  EXPECT_EQ(c->dims[2], 4);
  EXPECT_EQ(c->src_strides[1], 1);
  EXPECT_EQ(c->src_strides[2], 3);
  EXPECT_EQ(c->dst_strides[2], 1);
}

TEST(StridedCopyPlan, OuterDimsMergeWhenOnlyTheInnerAreStrided) {
  // The [0, 2, 1, 3] head transpose of [2, 8, 16, 32]: dim 3 stays a run of 32.
  auto c =
      planStridedCopy(4, {2, 16, 8, 32}, {4096, 32, 512, 1}, nullptr, {4096, 256, 32, 1}, nullptr);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rank, 4);
  EXPECT_EQ(c->count, 2 * 16 * 8 * 32 / 4);  // rows of 32 floats as 8 words of 16 bytes
}

TEST(StridedCopyPlan, EmptyAndScalar) {
  auto empty = planStridedCopy(8, {3, 0, 2}, {0, 2, 1}, nullptr, {0, 2, 1}, nullptr);
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->count, 0);
  auto scalar = planStridedCopy(8, {}, {}, nullptr, {}, nullptr);
  ASSERT_TRUE(scalar.has_value());
  EXPECT_EQ(scalar->count, 1);
  EXPECT_EQ(scalar->rank, 0);
}

TEST(StridedCopyPlan, WideIndexForLargeReach) {
  // 4 elements 2^31 apart on the source: 64-bit offsets.
  auto c = planStridedCopy(1, {4, 2}, {int64_t{1} << 31, 1}, nullptr, {2, 1}, nullptr);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->wide_index);
  // A negative stride (a reversed Slice) counts by its magnitude.
  auto r = planStridedCopy(4, {5}, {-3}, nullptr, {1}, nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->wide_index);
  EXPECT_EQ(r->src_strides[0], -3);
}

TEST(StridedCopyPlan, TooManyDims) {
  std::vector<int64_t> dims(17, 2), src(17), dst(17);
  for (size_t i = 0; i < 17; ++i) {
    dst[16 - i] = int64_t{1} << i;
    src[i] = int64_t{1} << i;  // reversed: nothing merges
  }
  EXPECT_FALSE(planStridedCopy(4, dims, src, nullptr, dst, nullptr).has_value());
}

TEST(MovableTypes, ElementBytes) {
  EXPECT_EQ(cuda::movableElementBytes(DataType::kBool), 1);
  EXPECT_EQ(cuda::movableElementBytes(DataType::kFloat16), 2);
  EXPECT_EQ(cuda::movableElementBytes(DataType::kFloat), 4);
  EXPECT_EQ(cuda::movableElementBytes(DataType::kInt64), 8);
  EXPECT_EQ(cuda::movableElementBytes(DataType::kDouble), 8);
  EXPECT_EQ(cuda::movableElementBytes(DataType::kString), 0);
  EXPECT_EQ(cuda::movableElementBytes(DataType::kInt4), 0);
}

// --- the copy families on host memory -------------------------------------------------------------

/// What copy.cu's kernel does, on the host: element i of the merged dims, offsets by strides.
void runOnHost(const StridedCopy& c) {
  const char* src = static_cast<const char*>(c.src);
  char* dst = static_cast<char*>(c.dst);
  for (int64_t i = 0; i < c.count; ++i) {
    int64_t rest = i, s = 0, d = 0;
    for (int k = c.rank - 1; k >= 0; --k) {
      int64_t coord = rest % c.dims[k];
      rest /= c.dims[k];
      s += coord * c.src_strides[k];
      d += coord * c.dst_strides[k];
    }
    std::memcpy(dst + d * c.element_bytes, src + s * c.element_bytes,
                static_cast<size_t>(c.element_bytes));
  }
}

template <typename Args>
Status runJobsOnHost(const CudaKernelCall& call) {
  ASSIGN_OR_RETURN(Args args, cuda::argsFromCall<Args>(call));
  ASSIGN_OR_RETURN(std::vector<cuda::CopyJob> jobs, cuda::copyJobs(args));
  for (const cuda::CopyJob& job : jobs) {
    int bytes = cuda::movableElementBytes(job.src.dtype);
    auto copy = planStridedCopy(bytes, job.src.dims, job.src.strides, job.src.data, job.dst.strides,
                                job.dst.data);
    if (!copy) return Status(StatusCode::kUnimplemented, "more than kMaxCopyRank dims");
    runOnHost(*copy);
  }
  return Status::ok();
}

/// The case's node run by its family's copy jobs on host views, into outputs of `want`'s dims
/// poisoned with 0xA5 bytes.
StatusOr<std::vector<HostTensor>> runCopyFamilyOnHost(const test::MoveCase& c,
                                                      const std::vector<HostTensor>& want) {
  std::vector<HostTensor> got;
  for (const HostTensor& w : want) {
    HostTensor g = HostTensor::zeros(w.dtype, w.dims);
    std::fill(g.bytes.begin(), g.bytes.end(), '\xA5');
    got.push_back(std::move(g));
  }
  CudaKernelCall call;
  call.op = c.op;
  call.opset = c.opset;
  call.attrs = &c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const HostTensor& t = c.inputs[i];
    call.inputs.push_back(t.dtype == DataType::kUndefined ? ConstTensorView() : viewOf(t));
    bool runtime =
        std::find(c.runtime_inputs.begin(), c.runtime_inputs.end(), i) != c.runtime_inputs.end();
    call.constant_inputs.push_back(t.dtype == DataType::kUndefined || runtime ? nullptr : &t);
  }
  for (HostTensor& g : got) call.outputs.push_back(viewOf(g));
  Status s = Status(StatusCode::kInternal, "not a copy family: " + c.op);
  if (c.op == "Transpose") s = runJobsOnHost<cuda::TransposeArgs>(call);
  if (c.op == "DepthToSpace" || c.op == "SpaceToDepth") {
    s = runJobsOnHost<cuda::DepthSpaceArgs>(call);
  }
  if (c.op == "Concat") s = runJobsOnHost<cuda::ConcatArgs>(call);
  if (c.op == "Slice") s = runJobsOnHost<cuda::SliceArgs>(call);
  if (c.op == "Expand") s = runJobsOnHost<cuda::ExpandArgs>(call);
  if (c.op == "Split") s = runJobsOnHost<cuda::SplitArgs>(call);
  if (c.op == "Tile") s = runJobsOnHost<cuda::TileArgs>(call);
  RETURN_IF_ERROR(s);
  return got;
}

/// Every GPU case of the copy families, its copy jobs run on the host: the reference's bytes.
TEST(CopyFamiliesOnHost, MatchTheReference) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  int checked = 0;
  for (const auto& cases :
       {test::transposeCases(), test::concatCases(), test::sliceCases(), test::expandCases(),
        test::splitCases(), test::tileCases(), test::depthSpaceCases()}) {
    for (const test::MoveCase& c : cases) {
      SCOPED_TRACE(c.name);
      auto want = test::referenceOutputs(c);
      ASSERT_TRUE(want.isOk()) << want.status().toString();
      auto got = runCopyFamilyOnHost(c, *want);
      ASSERT_TRUE(got.isOk()) << got.status().toString();
      for (size_t i = 0; i < want->size(); ++i) {
        EXPECT_TRUE(want->at(i).bytes == got->at(i).bytes) << "output " << i << " differs";
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 300);
}

/// A strided (transposed) input view composes with Transpose's permutation.
TEST(CopyFamiliesOnHost, TransposeOfAStridedView) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  HostTensor base = test::randomTensor(DataType::kInt32, {6, 5, 4}, 3);  // viewed as [4, 5, 6]
  HostTensor logical = HostTensor::zeros(DataType::kInt32, {4, 5, 6});
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      for (int64_t k = 0; k < 6; ++k) {
        logical.set<int32_t>((i * 5 + j) * 6 + k, base.get<int32_t>((k * 5 + j) * 4 + i));
      }
    }
  }
  KernelAttrs attrs;
  attrs.int_lists["perm"] = {1, 2, 0};
  auto want = runReferenceKernel("Transpose", 13, {&logical}, attrs, 1);
  ASSERT_TRUE(want.isOk()) << want.status().toString();
  HostTensor got = HostTensor::zeros(DataType::kInt32, {5, 6, 4});
  CudaKernelCall call;
  call.op = "Transpose";
  call.opset = 13;
  call.attrs = &attrs;
  call.inputs = {ConstTensorView(DataType::kInt32, {4, 5, 6}, {1, 4, 20}, base.bytes.data())};
  call.outputs = {viewOf(got)};
  Status s = runJobsOnHost<cuda::TransposeArgs>(call);
  ASSERT_TRUE(s.isOk()) << s.toString();
  EXPECT_TRUE(want->at(0).bytes == got.bytes);
}

// --- canImplement ---------------------------------------------------------------------------------

ConstTensorView deviceIn(DataType t, const std::vector<int64_t>& dims) {
  return ConstTensorView(t, dims, contiguousStrides(dims), nullptr, MemoryKind::kDevice);
}

TensorView deviceOut(DataType t, const std::vector<int64_t>& dims) {
  return TensorView(t, dims, contiguousStrides(dims), nullptr, MemoryKind::kDevice);
}

Support check(const std::string& op, int64_t opset, std::vector<ConstTensorView> inputs,
              std::vector<TensorView> outputs, const KernelAttrs& attrs,
              std::vector<const HostTensor*> constants = {}) {
  CudaKernelCall call;
  call.op = op;
  call.opset = opset;
  call.inputs = std::move(inputs);
  call.outputs = std::move(outputs);
  call.attrs = &attrs;
  call.constant_inputs = std::move(constants);
  return cudaCanImplement(call);
}

void expectRefused(const Support& s, const std::string& reason) {
  EXPECT_FALSE(s) << "expected a refusal containing: " << reason;
  EXPECT_NE(s.reason.find(reason), std::string::npos) << s.reason;
}

TEST(TransposeCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs perm;
  perm.int_lists["perm"] = {1, 0, 2};
  auto in = deviceIn(DataType::kFloat, {2, 3, 4});
  EXPECT_TRUE(check("Transpose", 13, {in}, {deviceOut(DataType::kFloat, {3, 2, 4})}, perm));
  expectRefused(check("Transpose", 13, {in}, {deviceOut(DataType::kFloat, {2, 3, 4})}, perm),
                "Transpose: the output is [2, 3, 4]; the transpose is [3, 2, 4]");
  KernelAttrs bad;
  bad.int_lists["perm"] = {0, 0, 1};
  expectRefused(check("Transpose", 13, {in}, {deviceOut(DataType::kFloat, {2, 2, 3})}, bad),
                "Transpose: perm [0, 0, 1] is not a permutation");
  bad.int_lists["perm"] = {0, 1};
  expectRefused(check("Transpose", 13, {in}, {deviceOut(DataType::kFloat, {2, 3})}, bad),
                "Transpose: perm has 2 entries for rank 3");
  expectRefused(check("Transpose", 13, {deviceIn(DataType::kString, {2, 3, 4})},
                      {deviceOut(DataType::kString, {3, 2, 4})}, perm),
                "Transpose: no CUDA kernel for string");
  expectRefused(check("Transpose", 13, {in}, {deviceOut(DataType::kInt32, {3, 2, 4})}, perm),
                "Transpose: the input is float but the output int32");
  auto host = in;
  host.memory = MemoryKind::kHost;
  expectRefused(check("Transpose", 13, {host}, {deviceOut(DataType::kFloat, {3, 2, 4})}, perm),
                "host memory");
  std::vector<int64_t> nine(9, 1);
  KernelAttrs none;
  expectRefused(check("Transpose", 13, {deviceIn(DataType::kFloat, nine)},
                      {deviceOut(DataType::kFloat, nine)}, none),
                "Transpose: rank 9; the CUDA kernel takes at most 8");
}

HostTensor int64s(const std::vector<int64_t>& v) {
  HostTensor t = HostTensor::zeros(DataType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.set<int64_t>(static_cast<int64_t>(i), v[i]);
  return t;
}

TEST(ConcatCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs axis;
  axis.ints["axis"] = 1;
  auto a = deviceIn(DataType::kFloat16, {2, 3});
  auto b = deviceIn(DataType::kFloat16, {2, 4});
  EXPECT_TRUE(check("Concat", 13, {a, b}, {deviceOut(DataType::kFloat16, {2, 7})}, axis));
  expectRefused(check("Concat", 13, {a, b}, {deviceOut(DataType::kFloat16, {2, 8})}, axis),
                "Concat: the inputs have 7 entries along axis 1, the output 8");
  expectRefused(check("Concat", 13, {a, deviceIn(DataType::kFloat16, {3, 4})},
                      {deviceOut(DataType::kFloat16, {2, 7})}, axis),
                "Concat: input 1 is [3, 4]; it does not fit the output [2, 7] along axis 1");
  expectRefused(check("Concat", 13, {a, b}, {deviceOut(DataType::kFloat16, {2, 7})}, {}),
                "Concat: axis is required");
  KernelAttrs far;
  far.ints["axis"] = 2;
  expectRefused(check("Concat", 13, {a, b}, {deviceOut(DataType::kFloat16, {2, 7})}, far),
                "Concat: axis 2 is out of range for rank 2");
}

TEST(SliceCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  HostTensor starts = int64s({1}), ends = int64s({3}), zero = int64s({0});
  auto x = deviceIn(DataType::kInt32, {5, 4});
  auto s_in = deviceIn(DataType::kInt64, {1});
  KernelAttrs none;
  EXPECT_TRUE(check("Slice", 13, {x, s_in, s_in}, {deviceOut(DataType::kInt32, {2, 4})}, none,
                    {nullptr, &starts, &ends}));
  // A runtime start: the kernel would need it on the host.
  expectRefused(check("Slice", 13, {x, s_in, s_in}, {deviceOut(DataType::kInt32, {2, 4})}, none,
                      {nullptr, nullptr, &ends}),
                "Slice: starts is not a constant");
  expectRefused(check("Slice", 13, {x, s_in, s_in}, {deviceOut(DataType::kInt32, {3, 4})}, none,
                      {nullptr, &starts, &ends}),
                "Slice: the output is [3, 4]; the slice is [2, 4]");
  expectRefused(
      check("Slice", 13, {x, s_in, s_in, s_in, s_in}, {deviceOut(DataType::kInt32, {2, 4})}, none,
            {nullptr, &starts, &ends, &zero, &zero}),
      "Slice: step is 0");
}

TEST(ExpandCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  HostTensor shape = int64s({2, 3});
  auto x = deviceIn(DataType::kBool, {3});
  auto shape_in = deviceIn(DataType::kInt64, {2});
  KernelAttrs none;
  EXPECT_TRUE(check("Expand", 13, {x, shape_in}, {deviceOut(DataType::kBool, {2, 3})}, none,
                    {nullptr, &shape}));
  EXPECT_TRUE(check("Expand", 13, {x, shape_in}, {deviceOut(DataType::kBool, {2, 3})}, none));
  expectRefused(check("Expand", 13, {x, shape_in}, {deviceOut(DataType::kBool, {2, 4})}, none),
                "Expand: the input [3] does not broadcast to the output [2, 4]");
  expectRefused(check("Expand", 13, {x, shape_in}, {deviceOut(DataType::kBool, {4, 3})}, none,
                      {nullptr, &shape}),
                "Expand: the output is [4, 3]; [3] expanded to [2, 3] is [2, 3]");
}

TEST(SplitCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  HostTensor split = int64s({1, 3});
  auto x = deviceIn(DataType::kInt8, {4, 2});
  auto split_in = deviceIn(DataType::kInt64, {2});
  KernelAttrs none;
  auto out1 = deviceOut(DataType::kInt8, {1, 2}), out3 = deviceOut(DataType::kInt8, {3, 2});
  EXPECT_TRUE(check("Split", 13, {x, split_in}, {out1, out3}, none, {nullptr, &split}));
  // A runtime split: the outputs' dims say the sizes.
  EXPECT_TRUE(check("Split", 13, {x, split_in}, {out1, out3}, none));
  expectRefused(check("Split", 13, {x, split_in}, {out3, out1}, none, {nullptr, &split}),
                "Split: output 0 has 3 entries along axis 0; the split is [1, 3]");
  // No split: equal parts.
  auto half = deviceOut(DataType::kInt8, {2, 2});
  EXPECT_TRUE(check("Split", 13, {x}, {half, half}, none));
  expectRefused(check("Split", 13, {x}, {out1, out3}, none),
                "Split: output 0 has 1 entries along axis 0; the split is [2, 2]");
  expectRefused(check("Split", 13, {deviceIn(DataType::kInt8, {5, 2})},
                      {half, deviceOut(DataType::kInt8, {3, 2})}, none),
                "Split: 5 entries do not split into 2 outputs");
  KernelAttrs three;
  three.ints["num_outputs"] = 3;
  expectRefused(check("Split", 18, {x}, {half, half}, three),
                "Split: num_outputs is 3 but the node has 2 outputs");
}

TEST(PadCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  HostTensor pads = int64s({1, 0, 1, 2});
  auto x = deviceIn(DataType::kFloat, {2, 3});
  auto pads_in = deviceIn(DataType::kInt64, {4});
  auto out = deviceOut(DataType::kFloat, {4, 5});
  KernelAttrs reflect;
  reflect.strings["mode"] = "reflect";
  EXPECT_TRUE(check("Pad", 18, {x, pads_in}, {out}, reflect, {nullptr, &pads}));
  expectRefused(check("Pad", 18, {x, pads_in}, {out}, reflect), "Pad: pads is not a constant");
  expectRefused(check("Pad", 18, {x, pads_in}, {deviceOut(DataType::kFloat, {4, 4})}, reflect,
                      {nullptr, &pads}),
                "Pad: the output is [4, 4]; the padding gives [4, 5]");
  KernelAttrs wrap;
  wrap.strings["mode"] = "wrap";
  expectRefused(check("Pad", 18, {x, pads_in}, {out}, wrap, {nullptr, &pads}),
                "Pad: unknown mode 'wrap' at opset 18");
  EXPECT_TRUE(check("Pad", 19, {x, pads_in}, {out}, wrap, {nullptr, &pads}));
  HostTensor crop = int64s({0, -3, 0, 2});
  expectRefused(check("Pad", 18, {x, pads_in}, {deviceOut(DataType::kFloat, {2, 2})}, reflect,
                      {nullptr, &crop}),
                "Pad: reflect mode needs a non-empty input along axis 1");
}

TEST(TileCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  HostTensor repeats = int64s({2, 1});
  auto x = deviceIn(DataType::kUint8, {2, 3});
  auto rep_in = deviceIn(DataType::kInt64, {2});
  KernelAttrs none;
  EXPECT_TRUE(check("Tile", 13, {x, rep_in}, {deviceOut(DataType::kUint8, {4, 3})}, none,
                    {nullptr, &repeats}));
  EXPECT_TRUE(check("Tile", 13, {x, rep_in}, {deviceOut(DataType::kUint8, {4, 6})}, none));
  expectRefused(check("Tile", 13, {x, rep_in}, {deviceOut(DataType::kUint8, {4, 6})}, none,
                      {nullptr, &repeats}),
                "Tile: the output [4, 6] is not the input [2, 3] tiled [2, 1]");
  expectRefused(check("Tile", 13, {x, rep_in}, {deviceOut(DataType::kUint8, {5, 3})}, none),
                "Tile: output dim 0 is 5, not a multiple of the input's 2");
}

TEST(TriluCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs none;
  auto x = deviceIn(DataType::kFloat, {3, 4});
  auto out = deviceOut(DataType::kFloat, {3, 4});
  EXPECT_TRUE(check("Trilu", 14, {x}, {out}, none));
  EXPECT_TRUE(check("Trilu", 14, {x, deviceIn(DataType::kInt64, {})}, {out}, none));  // runtime k
  expectRefused(check("Trilu", 14, {x, deviceIn(DataType::kInt64, {2})}, {out}, none),
                "Trilu: k must be an int64 scalar");
  expectRefused(check("Trilu", 14, {deviceIn(DataType::kFloat, {4})},
                      {deviceOut(DataType::kFloat, {4})}, none),
                "Trilu: the input must have rank >= 2");
  auto host_k = deviceIn(DataType::kInt64, {});
  host_k.memory = MemoryKind::kHost;
  expectRefused(check("Trilu", 14, {x, host_k}, {out}, none), "k is in host memory");
}

TEST(EyeLikeCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs to_float;
  to_float.ints["dtype"] = static_cast<int64_t>(DataType::kFloat);
  auto x = deviceIn(DataType::kInt32, {3, 4});
  EXPECT_TRUE(check("EyeLike", 9, {x}, {deviceOut(DataType::kFloat, {3, 4})}, to_float));
  expectRefused(check("EyeLike", 9, {x}, {deviceOut(DataType::kInt32, {3, 4})}, to_float),
                "EyeLike: dtype is float but the output is int32");
  expectRefused(check("EyeLike", 9, {deviceIn(DataType::kInt32, {3})},
                      {deviceOut(DataType::kInt32, {3})}, {}),
                "EyeLike: the input must be 2-D");
}

TEST(GatherCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  HostTensor ok = int64s({0, -4, 3}), bad = int64s({0, 4, 1});
  auto data = deviceIn(DataType::kFloat, {4, 5});
  auto idx = deviceIn(DataType::kInt64, {3});
  KernelAttrs none;
  auto out = deviceOut(DataType::kFloat, {3, 5});
  EXPECT_TRUE(check("Gather", 13, {data, idx}, {out}, none, {nullptr, &ok}));
  EXPECT_TRUE(check("Gather", 13, {data, idx}, {out}, none));  // runtime indices
  // A constant index out of range: the CPU kernel reports it.
  expectRefused(check("Gather", 13, {data, idx}, {out}, none, {nullptr, &bad}),
                "Gather: index 4 is out of range [-4, 4)");
  expectRefused(check("Gather", 13, {data, idx}, {deviceOut(DataType::kFloat, {5, 3})}, none),
                "Gather: the output is [5, 3]; the gather is [3, 5]");
  expectRefused(check("Gather", 13, {data, deviceIn(DataType::kFloat, {3})}, {out}, none),
                "Gather: the indices are float, not int32 or int64");
  auto strided = data;
  strided.strides = {1, 4};
  expectRefused(check("Gather", 13, {strided, idx}, {out}, none),
                "Gather: the data view is not contiguous");
  KernelAttrs axis;
  axis.ints["axis"] = -3;
  expectRefused(check("Gather", 13, {data, idx}, {out}, axis),
                "Gather: axis -3 is out of range for rank 2");
}

TEST(GatherElementsCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs none;
  auto data = deviceIn(DataType::kInt32, {2, 3});
  expectRefused(check("GatherElements", 13, {data, deviceIn(DataType::kInt64, {2, 4})},
                      {deviceOut(DataType::kInt32, {2, 4})}, none),
                "GatherElements: the indices [2, 4] exceed the data [2, 3] in dim 1");
  HostTensor bad = HostTensor::zeros(DataType::kInt64, {1, 3});
  bad.set<int64_t>(2, -3);
  expectRefused(check("GatherElements", 13, {data, deviceIn(DataType::kInt64, {1, 3})},
                      {deviceOut(DataType::kInt32, {1, 3})}, none, {nullptr, &bad}),
                "GatherElements: index -3 is out of range [-2, 2)");
}

TEST(GatherNDCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs none;
  auto data = deviceIn(DataType::kFloat, {2, 3});
  expectRefused(check("GatherND", 13, {data, deviceIn(DataType::kInt64, {4, 3})},
                      {deviceOut(DataType::kFloat, {4})}, none),
                "GatherND: index depth 3 is out of range for data of rank 2");
  HostTensor bad = int64s({1, 3});
  expectRefused(check("GatherND", 13, {data, deviceIn(DataType::kInt64, {2})},
                      {deviceOut(DataType::kFloat, {})}, none, {nullptr, &bad}),
                "GatherND: index 3 is out of range [-3, 3)");
}

TEST(ScatterCanImplement, Refusals) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  KernelAttrs add;
  add.strings["reduction"] = "add";
  auto idx = deviceIn(DataType::kInt64, {2, 1});
  auto data = deviceIn(DataType::kFloat, {4, 3});
  auto upd = deviceIn(DataType::kFloat, {2, 3});
  auto out = deviceOut(DataType::kFloat, {4, 3});
  EXPECT_TRUE(check("ScatterND", 16, {data, idx, upd}, {out}, add));
  expectRefused(check("ScatterND", 16, {data, idx, deviceIn(DataType::kFloat, {2, 4})}, {out}, add),
                "ScatterND: the updates are [2, 4]; the indices and data need [2, 3]");
  KernelAttrs max;
  max.strings["reduction"] = "max";
  expectRefused(check("ScatterND", 16, {data, idx, upd}, {out}, max),
                "ScatterND: reduction 'max' is not defined at opset 16");
  expectRefused(check("ScatterND", 18,
                      {deviceIn(DataType::kBool, {4, 3}), idx, deviceIn(DataType::kBool, {2, 3})},
                      {deviceOut(DataType::kBool, {4, 3})}, max),
                "ScatterND: no CUDA reduction for bool");
  // 1-byte elements reduce through their 4-byte word: the output must own it.
  expectRefused(check("ScatterND", 18,
                      {deviceIn(DataType::kInt8, {3, 3}), idx, deviceIn(DataType::kInt8, {2, 3})},
                      {deviceOut(DataType::kInt8, {3, 3})}, max),
                "ScatterND: a int8 reduction needs an output of whole 4-byte words");
  HostTensor bad = HostTensor::zeros(DataType::kInt64, {2, 1});
  bad.set<int64_t>(1, 4);
  expectRefused(check("ScatterND", 16, {data, idx, upd}, {out}, add, {nullptr, &bad}),
                "ScatterND: index 4 is out of range [-4, 4)");
  KernelAttrs axis;
  axis.ints["axis"] = 0;
  expectRefused(
      check("ScatterElements", 13,
            {data, deviceIn(DataType::kInt32, {2, 4}), deviceIn(DataType::kFloat, {2, 4})}, {out},
            axis),
      "ScatterElements: the indices [2, 4] exceed the data [4, 3] in dim 1");
}

}  // namespace
}  // namespace onnxopt::kernels
