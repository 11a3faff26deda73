// Einsum (opset 12+) on CUDA. For one or two float, float16 or bfloat16 operands without a
// repeated label it is lowered to one cuBLASLt batched GEMM (matmul.h): the equation's labels (with '...' broadcast batch dims and the implicit output)
// are classified as batch (both operands, kept), M (the first operand's own kept labels), N (the
// second's) and K (summed; a label only one operand has is summed with the other broadcast along
// it); each operand is laid out as [batch, M, K] / [batch, K, N] in the workspace by a strided copy
// unless it already is, the product is [batch, M, N], and a last copy puts it in the output's
// order unless it already is. One operand: a permutation (Transpose-like) is one copy, a sum over
// labels a copy and a row sum. The rest (double, int32, int64; diagonals such as 'ii->i'; three
// to eight operands; 13 to 16 labels) runs on a direct kernel: one thread per output element
// walks the summed labels (correct, not fast). Host half (this header, einsum.cc); device half
// einsum.cu.
//
// canImplement refuses (the node runs on the CPU): more than 8 operands, more than 16 distinct
// labels, other types.
#pragma once

#include <string>

#include "kernels/cuda/args.h"

namespace onnxopt::kernels::cuda {

struct EinsumArgs {
  std::string op = "Einsum";
  std::string equation;
  std::vector<ConstTensorView> inputs;
  TensorView y;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

template <>
StatusOr<EinsumArgs> argsFromCall<EinsumArgs>(const CudaKernelCall& call);

/// Host-only: the equation parses and matches the inputs, the output's shape and type, what the
/// lowering takes (see the file comment), device memory.
Support canImplement(const EinsumArgs& args);
/// The operand and product layouts the lowering writes, and cuBLASLt's workspace.
size_t workspaceBytes(const EinsumArgs& args);
/// Runs on `ctx` (its stream; the product through MatMul's launch).
Status launch(const EinsumArgs& args, CudaDeviceContext& ctx);

}  // namespace onnxopt::kernels::cuda
