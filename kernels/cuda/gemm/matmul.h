// MatMul and Gemm on CUDA through cuBLASLt, for float, float16 and bfloat16 (float accumulation,
// no TF32): MatMul with ONNX's 1-D promotion and broadcast batch dims (one strided-batched call
// where the batch offsets allow it, a batch folded into M when B is shared, else one call per
// batch), Gemm with transA/transB, alpha, beta and a C broadcast to [M, N] (read by cuBLASLt as
// its C where it has the output's shape, else copied into the output first and accumulated into).
// A C with a bias epilogue gives Y = act(alpha A B + beta C + bias) in one call (the conv family's
// residual). Host code only (cuBLASLt is a host API).
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/elementwise/broadcast.h"

namespace onnxopt::kernels::cuda {

/// What the product's output gets before it is stored (ai.onnxopt.MatMulBias*): a bias per output
/// column, then an activation. cuBLASLt's epilogues do the bias, ReLU and GELU's tanh form; the
/// erf form of GELU (and any epilogue cuBLASLt has no algorithm for) runs as our kernels after.
enum class Epilogue { kNone, kBias, kBiasRelu, kBiasGelu, kBiasGeluTanh };

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
  Epilogue epilogue = Epilogue::kNone;
  ConstTensorView bias;  ///< with an epilogue: [N], the output's type
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

/// Gemm's arguments are MatMul's with the attributes set; its own type only selects the parser.
struct GemmArgs : MatMulArgs {};
/// ai.onnxopt.MatMulBias, MatMulBiasRelu, MatMulBiasGelu (A, B, bias): MatMul's with an epilogue.
struct MatMulBiasArgs : MatMulArgs {};

template <>
StatusOr<MatMulArgs> argsFromCall<MatMulArgs>(const CudaKernelCall& call);
template <>
StatusOr<GemmArgs> argsFromCall<GemmArgs>(const CudaKernelCall& call);
template <>
StatusOr<MatMulBiasArgs> argsFromCall<MatMulBiasArgs>(const CudaKernelCall& call);

/// Host-only: one float type for A, B, C (the bias) and the output, contiguous A and B, shapes
/// that multiply and broadcast, the output's shape; a bias of [N], contiguous.
Support canImplement(const MatMulArgs& args);
/// cuBLASLt's workspace (its algorithms run without one too, slower).
size_t workspaceBytes(const MatMulArgs& args);
/// Runs on `ctx`: its stream, its cuBLASLt handle, its SM count (the epilogue's kernels).
Status launch(const MatMulArgs& args, CudaDeviceContext& ctx);

}  // namespace onnxopt::kernels::cuda
