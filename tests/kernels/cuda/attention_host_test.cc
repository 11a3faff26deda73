// The fused CUDA Attention kernel's host half (kernels/cuda/attention.cc) without a device: what
// canImplement accepts (every shape and attribute combination the reference takes, output shapes
// as the reference computes them) and what it refuses, with the reason (qk_matmul_output, head
// sizes above 128, mixed types, broken contracts). Runs in CI.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;

/// A node with device views (no data) of `inputs` (dims empty and dtype kUndefined: omitted) and
/// outputs of the shapes the reference kernel computes for zero-filled inputs.
struct FakeNode {
  std::vector<HostTensor> host;
  KernelAttrs attrs;
  int64_t opset = 23;
  size_t outputs = 1;

  CudaKernelCall call(const std::vector<HostTensor>& outs) const {
    CudaKernelCall c;
    c.op = "Attention";
    c.opset = opset;
    c.attrs = &attrs;
    for (const HostTensor& t : host) {
      c.inputs.push_back(t.dtype == DataType::kUndefined
                             ? ConstTensorView{}
                             : ConstTensorView(t.dtype, t.dims, contiguousStrides(t.dims), nullptr,
                                               MemoryKind::kDevice));
      c.constant_inputs.push_back(t.dtype == DataType::kUndefined ? nullptr : &t);
    }
    for (const HostTensor& t : outs) {
      c.outputs.emplace_back(t.dtype, t.dims, contiguousStrides(t.dims), nullptr,
                             MemoryKind::kDevice);
    }
    return c;
  }

  StatusOr<std::vector<HostTensor>> reference() const {
    std::vector<const HostTensor*> ptrs;
    for (const HostTensor& t : host) ptrs.push_back(t.dtype == DataType::kUndefined ? nullptr : &t);
    return runReferenceKernel("Attention", opset, ptrs, attrs, outputs);
  }
};

HostTensor zeros(DataType t, const Dims& dims) {
  return HostTensor::zeros(t, dims);
}

FakeNode basic4d(DataType t = DataType::kFloat, int64_t d = 8) {
  FakeNode n;
  n.host = {zeros(t, {2, 4, 3, d}), zeros(t, {2, 2, 5, d}), zeros(t, {2, 2, 5, d})};
  return n;
}

/// The kernel takes the node at the reference's output shapes; the reason otherwise.
Support askAtReferenceShapes(const FakeNode& n) {
  auto ref = n.reference();
  EXPECT_TRUE(ref.isOk()) << ref.status().toString();
  if (!ref.isOk()) return Support::no("the reference fails");
  return cudaCanImplement(n.call(*ref));
}

TEST(CudaAttention, AcceptsWhatTheReferenceRuns) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    FakeNode n = basic4d(t);
    EXPECT_TRUE(askAtReferenceShapes(n)) << askAtReferenceShapes(n).reason;
    // 3-D with heads, GQA, V head size differing, past and presents, a short bool mask.
    FakeNode m;
    m.host = {zeros(t, {2, 3, 4 * 8}),        zeros(t, {2, 5, 2 * 8}), zeros(t, {2, 5, 2 * 16}),
              zeros(DataType::kBool, {3, 6}), zeros(t, {2, 2, 4, 8}),  zeros(t, {2, 2, 4, 16})};
    m.attrs.ints["q_num_heads"] = 4;
    m.attrs.ints["kv_num_heads"] = 2;
    m.attrs.ints["is_causal"] = 1;
    m.attrs.floats["softcap"] = 3.0f;
    m.outputs = 3;
    EXPECT_TRUE(askAtReferenceShapes(m)) << askAtReferenceShapes(m).reason;
  }
}

TEST(CudaAttention, RefusesQkMatmulOutput) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  FakeNode n = basic4d();
  n.outputs = 4;
  n.attrs.ints["qk_matmul_output_mode"] = 1;
  Support s = askAtReferenceShapes(n);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("qk_matmul_output"), std::string::npos) << s.reason;
  // The mode alone (no fourth output) changes nothing the kernel writes.
  n.outputs = 1;
  EXPECT_TRUE(askAtReferenceShapes(n)) << askAtReferenceShapes(n).reason;
}

TEST(CudaAttention, RefusesLargeHeadSizes) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  FakeNode n = basic4d(DataType::kFloat, 128);
  EXPECT_TRUE(askAtReferenceShapes(n)) << askAtReferenceShapes(n).reason;
  n = basic4d(DataType::kFloat, 160);
  Support s = askAtReferenceShapes(n);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("at most 128"), std::string::npos) << s.reason;
  // A V head size above 128 with a small Q/K head size too.
  n = basic4d();
  n.host[2] = zeros(DataType::kFloat, {2, 2, 5, 256});
  s = askAtReferenceShapes(n);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("at most 128"), std::string::npos) << s.reason;
}

TEST(CudaAttention, RefusesBrokenContracts) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  struct Bad {
    FakeNode node;
    std::vector<HostTensor> outputs;
    std::string reason;
  };
  std::vector<Bad> bad;
  FakeNode n = basic4d();
  auto good = n.reference();
  ASSERT_TRUE(good.isOk());
  {
    FakeNode m = n;  // mixed types
    m.host[1] = zeros(DataType::kFloat16, {2, 2, 5, 8});
    bad.push_back({m, *good, "Q, K and V of one type"});
  }
  {
    FakeNode m;  // 3-D without head counts
    m.host = {zeros(DataType::kFloat, {2, 3, 32}), zeros(DataType::kFloat, {2, 5, 16}),
              zeros(DataType::kFloat, {2, 5, 16})};
    bad.push_back({m, {zeros(DataType::kFloat, {2, 3, 32})}, "need q_num_heads"});
  }
  {
    FakeNode m = n;  // 3 query heads over 2 kv heads
    m.host[0] = zeros(DataType::kFloat, {2, 3, 3, 8});
    bad.push_back({m, {zeros(DataType::kFloat, {2, 3, 3, 8})}, "not a multiple"});
  }
  {
    FakeNode m = n;  // a mask that does not broadcast
    m.host.push_back(zeros(DataType::kBool, {2, 3, 5}));
    bad.push_back({m, *good, "cannot be broadcast"});
  }
  {
    FakeNode m = n;  // a mask longer than the keys
    m.host.push_back(zeros(DataType::kFloat, {3, 6}));
    bad.push_back({m, *good, "6 columns for 5 keys"});
  }
  {
    FakeNode m = n;  // an int32 mask
    m.host.push_back(zeros(DataType::kInt32, {3, 5}));
    bad.push_back({m, *good, "a mask of int32"});
  }
  {
    FakeNode m = n;  // past_key without past_value
    m.host.push_back({});
    m.host.push_back(zeros(DataType::kFloat, {2, 2, 4, 8}));
    bad.push_back({m, *good, "go together"});
  }
  {
    FakeNode m = n;  // nonpad_kv_seqlen before opset 24
    m.host.push_back({});
    m.host.push_back({});
    m.host.push_back({});
    m.host.push_back(zeros(DataType::kInt64, {2}));
    bad.push_back({m, *good, "needs opset 24"});
    m.opset = 24;  // a constant length beyond the keys
    m.host[6].set<int64_t>(1, 6);
    bad.push_back({m, *good, "nonpad_kv_seqlen 6 is outside [0, 5]"});
  }
  {
    FakeNode m = n;  // a wrong output shape
    bad.push_back({m, {zeros(DataType::kFloat, {2, 4, 3, 9})}, "the op writes float [2, 4, 3, 8]"});
  }
  {
    FakeNode m = n;  // a present output without the right length
    m.outputs = 2;
    bad.push_back({m,
                   {zeros(DataType::kFloat, {2, 4, 3, 8}), zeros(DataType::kFloat, {2, 2, 4, 8})},
                   "present output"});
  }
  {
    FakeNode m = n;  // negative softcap
    m.attrs.floats["softcap"] = -1.0f;
    bad.push_back({m, *good, "softcap must not be negative"});
  }
  for (const Bad& b : bad) {
    Support s = cudaCanImplement(b.node.call(b.outputs));
    EXPECT_FALSE(s) << b.reason;
    EXPECT_NE(s.reason.find(b.reason), std::string::npos) << s.reason;
    EXPECT_EQ(s.reason.rfind("Attention: ", 0), 0u) << s.reason;
  }
}

TEST(CudaAttention, RefusesHostMemory) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  FakeNode n = basic4d();
  auto ref = n.reference();
  ASSERT_TRUE(ref.isOk());
  CudaKernelCall call = n.call(*ref);
  call.inputs[2].memory = MemoryKind::kHost;
  Support s = cudaCanImplement(call);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("V is in host memory"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace onnxopt::kernels
