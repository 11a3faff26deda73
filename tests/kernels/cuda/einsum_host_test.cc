// The CUDA Einsum lowering's host half (kernels/cuda/gemm/einsum.cc) without a device: it accepts the
// equations the reference runs at the reference's output shapes (and asks for workspace only where
// an operand or the product needs a copy), and refuses what it does not lower, with the reason.
// The direct kernel takes what the lowering does not (double and integers, diagonals, up to 8
// operands). Runs in CI.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;

struct Node {
  KernelAttrs attrs;
  std::vector<HostTensor> inputs;
  std::vector<Dims> out;  ///< the output's dims (empty: the reference's)
  DataType out_type = DataType::kUndefined;

  CudaKernelCall call() const {
    CudaKernelCall c;
    c.op = "Einsum";
    c.opset = 12;
    c.attrs = &attrs;
    for (const HostTensor& t : inputs) {
      c.inputs.emplace_back(t.dtype, t.dims, contiguousStrides(t.dims), nullptr,
                            MemoryKind::kDevice);
    }
    c.outputs.emplace_back(out_type, out.at(0), contiguousStrides(out.at(0)), nullptr,
                           MemoryKind::kDevice);
    return c;
  }
};

Node einsum(const std::string& equation, const std::vector<Dims>& shapes,
            DataType t = DataType::kFloat) {
  Node n;
  n.attrs.strings["equation"] = equation;
  for (const Dims& d : shapes) n.inputs.push_back(HostTensor::zeros(t, d));
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& x : n.inputs) ptrs.push_back(&x);
  auto ref = runReferenceKernel("Einsum", 12, ptrs, n.attrs, 1);
  n.out = {ref.isOk() ? ref->at(0).dims : Dims{1}};
  n.out_type = t;
  return n;
}

TEST(CudaEinsum, AcceptsAtTheReferenceShapes) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  const std::vector<std::pair<std::string, std::vector<Dims>>> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {{3, 4}, {4, 5}}},
      {"bhqd,bhkd->bhqk", {{2, 3, 7, 8}, {2, 3, 9, 8}}},
      {"...ij,...jk->...ik", {{2, 1, 4, 5}, {3, 5, 6}}},
      {"i,i->", {{33}, {33}}},
      {"ij,ij->i", {{5, 7}, {5, 7}}},
      {"ij->ji", {{3, 5}}},
      {"ij->", {{3, 5}}},
      {"Ab,bA", {{3, 4}, {4, 3}}},  // implicit output of nothing: a scalar
      // The direct kernel: diagonals, three operands, 13 to 16 labels.
      {"ii->i", {{3, 3}}},
      {"...ii->...i", {{2, 3, 3}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"abcdefghijklmnop->a", {Dims(16, 1)}},
      // The ONNX node tests' equations, spaces included (their inputs are double).
      {"...ii ->...i", {{3, 5, 5}}},
      {"bij, bjk -> bik", {{5, 2, 3}, {5, 3, 4}}},
      {"i,i", {{5}, {5}}},
      {"->", {{}}},
  };
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16, DataType::kDouble,
                     DataType::kInt32, DataType::kInt64}) {
    for (const auto& [eq, shapes] : cases) {
      Node n = einsum(eq, shapes, t);
      Support s = cudaCanImplement(n.call());
      EXPECT_TRUE(s) << eq << ": " << s.reason;
    }
  }
}

TEST(CudaEinsum, WorkspaceOnlyForCopies) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  // P V of attention reads both operands and writes the output in place: no copy.
  auto direct = cudaWorkspaceBytes(einsum("bhqk,bhkd->bhqd", {{2, 3, 7, 9}, {2, 3, 9, 8}}).call());
  // Q K^T needs K as [b, h, d, k]: one copy of 2 * 3 * 9 * 8 floats (aligned to 256 bytes).
  auto copied = cudaWorkspaceBytes(einsum("bhqd,bhkd->bhqk", {{2, 3, 7, 8}, {2, 3, 9, 8}}).call());
  ASSERT_TRUE(direct.isOk() && copied.isOk());
  EXPECT_EQ(*copied - *direct, 1792u);
  // A transpose writes the output directly; a sum over a contiguous trailing label reads in place.
  auto transpose = cudaWorkspaceBytes(einsum("ij->ji", {{3, 5}}).call());
  auto rows = cudaWorkspaceBytes(einsum("ij->i", {{3, 5}}).call());
  ASSERT_TRUE(transpose.isOk() && rows.isOk());
  EXPECT_EQ(*transpose, 0u);
  EXPECT_EQ(*rows, 0u);
}

TEST(CudaEinsum, RefusesWhatItDoesNotLower) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  struct Bad {
    Node node;
    std::string reason;
  };
  std::vector<Bad> bad = {
      {einsum("a,a,a,a,a,a,a,a,a->", std::vector<Dims>(9, Dims{2})), "9 operands"},
      {einsum("abcdefghijklmnopq->a", {Dims(17, 1)}), "17 distinct labels"},
      {einsum("ij,jk->ik", {{3, 4}, {4, 5}}, DataType::kUint8), "no CUDA kernel for uint8"},
      {einsum("ij,jk->ik", {{3, 4}, {5, 6}}), "label extents differ"},
      {einsum("ij->i", {{3, 4, 5}}), "rank 3 for 2 labels"},
  };
  Node wrong = einsum("ij,jk->ik", {{3, 4}, {4, 5}});
  wrong.out = {{3, 4}};
  bad.push_back({wrong, "the equation gives float [3, 5]"});
  Node no_equation = einsum("ij->ji", {{3, 5}});
  no_equation.attrs.strings.clear();
  bad.push_back({no_equation, "equation attribute is required"});
  for (const Bad& b : bad) {
    Support s = cudaCanImplement(b.node.call());
    EXPECT_FALSE(s) << b.reason;
    EXPECT_NE(s.reason.find(b.reason), std::string::npos) << s.reason;
    EXPECT_EQ(s.reason.rfind("Einsum: ", 0), 0u) << s.reason;
  }
}

}  // namespace
}  // namespace onnxopt::kernels
