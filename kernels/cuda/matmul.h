// MatMul and Gemm on CUDA through cuBLASLt, for float, float16 and bfloat16 (float accumulation,
// no TF32): MatMul with ONNX's 1-D promotion and broadcast batch dims (one strided-batched call
// where the batch offsets allow it, a batch folded into M when B is shared, else one call per
// batch), Gemm with transA/transB, alpha, beta and a C broadcast to [M, N] (copied into the output
// first, then accumulated into by cuBLASLt). Host code only (cuBLASLt is a host API).
#pragma once

#include <string>

#include "args.h"
#include "broadcast.h"

namespace onnxopt::kernels::cuda {

struct MatMulArgs {
  std::string op = "MatMul";
  ConstTensorView a;
  ConstTensorView b;
  TensorView y;
  bool trans_a = false;  ///< Gemm
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;
  ConstTensorView c;  ///< Gemm's optional C (dtype kUndefined: none)
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

/// Gemm's arguments are MatMul's with the attributes set; its own type only selects the parser.
struct GemmArgs : MatMulArgs {};

template <>
StatusOr<MatMulArgs> argsFromCall<MatMulArgs>(const CudaKernelCall& call);
template <>
StatusOr<GemmArgs> argsFromCall<GemmArgs>(const CudaKernelCall& call);

/// Host-only: one float type for A, B, C and the output, contiguous A and B, shapes that multiply
/// and broadcast, the output's shape.
Support canImplement(const MatMulArgs& args);
/// cuBLASLt's workspace (its algorithms run without one too, slower).
size_t workspaceBytes(const MatMulArgs& args);
Status launch(const MatMulArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
