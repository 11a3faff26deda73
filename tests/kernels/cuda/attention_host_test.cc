// The fused CUDA Attention kernel's host half (kernels/cuda/attention/attention.cc) without a device: what
// canImplement accepts (every shape and attribute combination the reference takes, output shapes
// as the reference computes them, qk_matmul_output included; the 64 ONNX node test cases) and what
// it refuses, with the reason (head sizes above 256, mixed types, broken contracts). Runs in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
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

TEST(CudaAttention, WritesQkMatmulOutput) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  for (int64_t mode = 0; mode < 4; ++mode) {
    FakeNode n = basic4d();
    n.outputs = 4;
    n.attrs.ints["qk_matmul_output_mode"] = mode;
    EXPECT_TRUE(askAtReferenceShapes(n)) << askAtReferenceShapes(n).reason;
  }
  // Of the wrong shape: refused, naming the one the op writes.
  FakeNode n = basic4d();
  n.outputs = 4;
  auto ref = n.reference();
  ASSERT_TRUE(ref.isOk());
  (*ref)[3] = zeros(DataType::kFloat, {2, 4, 3, 6});
  Support s = cudaCanImplement(n.call(*ref));
  EXPECT_FALSE(s);
  EXPECT_NE(
      s.reason.find("qk_matmul_output is float [2, 4, 3, 6]; the op writes float [2, 4, 3, 5]"),
      std::string::npos)
      << s.reason;
}

TEST(CudaAttention, RefusesLargeHeadSizes) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  FakeNode n = basic4d(DataType::kFloat, 256);
  EXPECT_TRUE(askAtReferenceShapes(n)) << askAtReferenceShapes(n).reason;
  n = basic4d(DataType::kFloat, 264);
  Support s = askAtReferenceShapes(n);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("at most 256"), std::string::npos) << s.reason;
  // A V head size above 256 with a small Q/K head size too.
  n = basic4d();
  n.host[2] = zeros(DataType::kFloat, {2, 2, 5, 320});
  s = askAtReferenceShapes(n);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("at most 256"), std::string::npos) << s.reason;
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

/// One ONNX node test case (onnx/backend/test/data/node/test_attention_*, not the _expanded
/// ones): its inputs (dtype kUndefined: omitted), attributes ("name=value,..."; scale and softcap
/// are floats) and which outputs it asks for ('1' per output position, '0' for an omitted one).
struct NodeTestCase {
  const char* name;
  int64_t opset;
  std::vector<std::pair<DataType, Dims>> inputs;
  const char* attrs;
  const char* outputs;
};

// Listed from the cases' models (onnx 1.23): every attribute combination they exercise.
const std::vector<NodeTestCase>& nodeTestCases() {
  constexpr DataType F = DataType::kFloat, H = DataType::kFloat16, B = DataType::kBool,
                     I = DataType::kInt64;
  static const std::vector<NodeTestCase> cases = {
      {"3d",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}},
       "kv_num_heads=3,q_num_heads=3",
       "1"},
      {"3d_attn_mask",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}, {F, {4, 6}}},
       "kv_num_heads=3,q_num_heads=3",
       "1"},
      {"3d_causal",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}},
       "is_causal=1,kv_num_heads=3,q_num_heads=3",
       "1"},
      {"3d_diff_heads_sizes",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 30}}},
       "kv_num_heads=3,q_num_heads=3",
       "1"},
      {"3d_diff_heads_sizes_attn_mask",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 30}}, {F, {4, 6}}},
       "kv_num_heads=3,q_num_heads=3",
       "1"},
      {"3d_diff_heads_sizes_causal",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 30}}},
       "is_causal=1,kv_num_heads=3,q_num_heads=3",
       "1"},
      {"3d_diff_heads_sizes_scaled",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 30}}},
       "kv_num_heads=3,q_num_heads=3,scale=0.01",
       "1"},
      {"3d_diff_heads_sizes_softcap",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 30}}},
       "kv_num_heads=3,q_num_heads=3,softcap=3",
       "1"},
      {"3d_diff_heads_with_past_and_present",
       23,
       {{F, {2, 4, 24}},
        {F, {2, 6, 24}},
        {F, {2, 6, 30}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 10}}},
       "kv_num_heads=3,q_num_heads=3",
       "111"},
      {"3d_gqa",
       23,
       {{F, {2, 4, 72}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}},
       "kv_num_heads=3,q_num_heads=9",
       "1"},
      {"3d_gqa_attn_mask",
       23,
       {{F, {2, 4, 72}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}, {F, {4, 6}}},
       "kv_num_heads=3,q_num_heads=9",
       "1"},
      {"3d_gqa_causal",
       23,
       {{F, {2, 4, 72}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}},
       "is_causal=1,kv_num_heads=3,q_num_heads=9",
       "1"},
      {"3d_gqa_scaled",
       23,
       {{F, {2, 4, 72}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}},
       "kv_num_heads=3,q_num_heads=9,scale=0.01",
       "1"},
      {"3d_gqa_softcap",
       23,
       {{F, {2, 4, 72}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}},
       "kv_num_heads=3,q_num_heads=9,softcap=3",
       "1"},
      {"3d_gqa_with_past_and_present",
       23,
       {{F, {2, 4, 72}},
        {F, {2, 6, 24}},
        {F, {2, 6, 24}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "kv_num_heads=3,q_num_heads=9",
       "111"},
      {"3d_scaled",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}},
       "kv_num_heads=3,q_num_heads=3,scale=0.01",
       "1"},
      {"3d_softcap",
       23,
       {{F, {2, 4, 24}}, {F, {2, 6, 24}}, {F, {2, 6, 24}}},
       "kv_num_heads=3,q_num_heads=3,softcap=3",
       "1"},
      {"3d_transpose_verification",
       23,
       {{F, {1, 2, 12}}, {F, {1, 2, 12}}, {F, {1, 2, 12}}},
       "kv_num_heads=3,q_num_heads=3",
       "1"},
      {"3d_with_past_and_present",
       23,
       {{F, {2, 4, 24}},
        {F, {2, 6, 24}},
        {F, {2, 6, 24}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "kv_num_heads=3,q_num_heads=3",
       "111"},
      {"3d_with_past_and_present_qk_matmul",
       23,
       {{F, {2, 4, 24}},
        {F, {2, 6, 24}},
        {F, {2, 6, 24}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "kv_num_heads=3,q_num_heads=3",
       "1111"},
      {"3d_with_past_and_present_qk_matmul_bias",
       23,
       {{F, {2, 4, 24}},
        {F, {2, 6, 24}},
        {F, {2, 6, 24}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "kv_num_heads=3,q_num_heads=3,qk_matmul_output_mode=2",
       "1111"},
      {"3d_with_past_and_present_qk_matmul_softcap",
       23,
       {{F, {2, 4, 24}},
        {F, {2, 6, 24}},
        {F, {2, 6, 24}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "kv_num_heads=3,q_num_heads=3,qk_matmul_output_mode=1,softcap=2",
       "1111"},
      {"3d_with_past_and_present_qk_matmul_softmax",
       23,
       {{F, {2, 4, 24}},
        {F, {2, 6, 24}},
        {F, {2, 6, 24}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "kv_num_heads=3,q_num_heads=3,qk_matmul_output_mode=3",
       "1111"},
      {"4d", 23, {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}}, "", "1"},
      {"4d_attn_mask",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {F, {4, 6}}},
       "",
       "1"},
      {"4d_attn_mask_3d",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 1, 4, 6}}},
       "",
       "1"},
      {"4d_attn_mask_3d_causal",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 1, 4, 6}}},
       "is_causal=1",
       "1"},
      {"4d_attn_mask_4d",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 4, 6}}},
       "",
       "1"},
      {"4d_attn_mask_4d_causal",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 4, 6}}},
       "is_causal=1",
       "1"},
      {"4d_attn_mask_bool",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {B, {4, 6}}},
       "",
       "1"},
      {"4d_attn_mask_bool_4d",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {B, {2, 3, 4, 6}}},
       "",
       "1"},
      {"4d_causal",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}},
       "is_causal=1",
       "1"},
      {"4d_diff_heads_mask4d_padded_kv",
       24,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 10}},
        {F, {2, 3, 4, 4}},
        {},
        {},
        {I, {2}}},
       "",
       "1"},
      {"4d_diff_heads_sizes",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 10}}},
       "",
       "1"},
      {"4d_diff_heads_sizes_attn_mask",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 10}}, {F, {4, 6}}},
       "",
       "1"},
      {"4d_diff_heads_sizes_causal",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 10}}},
       "is_causal=1",
       "1"},
      {"4d_diff_heads_sizes_scaled",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 10}}},
       "scale=0.01",
       "1"},
      {"4d_diff_heads_sizes_softcap",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 10}}},
       "softcap=2",
       "1"},
      {"4d_diff_heads_with_past_and_present",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 10}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 10}}},
       "",
       "111"},
      {"4d_diff_heads_with_past_and_present_mask3d",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 10}},
        {F, {2, 1, 4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 10}}},
       "",
       "111"},
      {"4d_diff_heads_with_past_and_present_mask4d",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 10}},
        {F, {2, 3, 4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 10}}},
       "",
       "111"},
      {"4d_fp16", 23, {{H, {2, 3, 4, 8}}, {H, {2, 3, 6, 8}}, {H, {2, 3, 6, 8}}}, "", "1"},
      {"4d_gqa", 23, {{F, {2, 9, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}}, "", "1"},
      {"4d_gqa_attn_mask",
       23,
       {{F, {2, 9, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {F, {4, 6}}},
       "",
       "1"},
      {"4d_gqa_causal",
       23,
       {{F, {2, 9, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}},
       "is_causal=1",
       "1"},
      {"4d_gqa_scaled",
       23,
       {{F, {2, 9, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}},
       "scale=0.01",
       "1"},
      {"4d_gqa_softcap",
       23,
       {{F, {2, 9, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}},
       "softcap=2",
       "1"},
      {"4d_gqa_with_past_and_present",
       23,
       {{F, {2, 9, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 8}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "",
       "111"},
      {"4d_gqa_with_past_and_present_fp16",
       23,
       {{H, {2, 9, 4, 8}},
        {H, {2, 3, 6, 8}},
        {H, {2, 3, 6, 8}},
        {H, {4, 18}},
        {H, {2, 3, 12, 8}},
        {H, {2, 3, 12, 8}}},
       "",
       "111"},
      {"4d_scaled",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}},
       "scale=0.01",
       "1"},
      {"4d_softcap",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}},
       "softcap=2",
       "1"},
      {"4d_softcap_neginf_mask",
       23,
       {{F, {1, 1, 4, 8}}, {F, {1, 1, 6, 8}}, {F, {1, 1, 6, 8}}, {F, {4, 6}}},
       "softcap=0.5",
       "1"},
      {"4d_softcap_neginf_mask_poison",
       23,
       {{F, {1, 1, 4, 8}}, {F, {1, 1, 6, 8}}, {F, {1, 1, 6, 8}}, {F, {4, 6}}},
       "softcap=0.5",
       "1"},
      {"4d_with_past_and_present",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 8}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "",
       "111"},
      {"4d_with_past_and_present_qk_matmul",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 8}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "",
       "1111"},
      {"4d_with_past_and_present_qk_matmul_bias",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 8}},
        {F, {4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "qk_matmul_output_mode=2",
       "1111"},
      {"4d_with_past_and_present_qk_matmul_bias_3d_mask",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 1, 4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "qk_matmul_output_mode=2",
       "1111"},
      {"4d_with_past_and_present_qk_matmul_bias_3d_mask_causal",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 1, 4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "is_causal=1,qk_matmul_output_mode=2",
       "1111"},
      {"4d_with_past_and_present_qk_matmul_bias_4d_mask",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "qk_matmul_output_mode=2",
       "1111"},
      {"4d_with_past_and_present_qk_matmul_bias_4d_mask_causal",
       23,
       {{F, {2, 3, 4, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 6, 8}},
        {F, {2, 3, 4, 18}},
        {F, {2, 3, 12, 8}},
        {F, {2, 3, 12, 8}}},
       "is_causal=1,qk_matmul_output_mode=2",
       "1111"},
      {"4d_with_qk_matmul",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}},
       "",
       "1001"},
      {"4d_with_qk_matmul_bias",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {F, {4, 6}}},
       "qk_matmul_output_mode=2",
       "1001"},
      {"4d_with_qk_matmul_softcap",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {F, {4, 6}}},
       "qk_matmul_output_mode=1,softcap=2",
       "1001"},
      {"4d_with_qk_matmul_softmax",
       23,
       {{F, {2, 3, 4, 8}}, {F, {2, 3, 6, 8}}, {F, {2, 3, 6, 8}}, {F, {4, 6}}},
       "qk_matmul_output_mode=3",
       "1001"},
  };
  return cases;
}

/// The kernel takes every opset 23/24 node test case at the reference's output shapes.
TEST(CudaAttention, TakesTheOnnxNodeTestCases) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  int taken = 0;
  for (const NodeTestCase& c : nodeTestCases()) {
    SCOPED_TRACE(c.name);
    FakeNode n;
    n.opset = c.opset;
    for (const auto& [type, dims] : c.inputs) {
      n.host.push_back(type == DataType::kUndefined ? HostTensor{} : zeros(type, dims));
    }
    std::string attrs = c.attrs;
    for (size_t start = 0; start < attrs.size();) {
      size_t comma = std::min(attrs.find(',', start), attrs.size());
      std::string item = attrs.substr(start, comma - start);
      size_t eq = item.find('=');
      std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      if (key == "scale" || key == "softcap") {
        n.attrs.floats[key] = std::stof(value);
      } else {
        n.attrs.ints[key] = std::stoll(value);
      }
      start = comma + 1;
    }
    std::string outputs = c.outputs;
    n.outputs = outputs.size();
    auto ref = n.reference();
    ASSERT_TRUE(ref.isOk()) << ref.status().toString();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i] == '0') (*ref)[i] = HostTensor{};
    }
    Support s = cudaCanImplement(n.call(*ref));
    EXPECT_TRUE(s) << s.reason;
    taken += s ? 1 : 0;
  }
  EXPECT_EQ(taken, 64);
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
