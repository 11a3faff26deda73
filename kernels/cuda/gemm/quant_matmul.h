// MatMulInteger (10+) and QLinearMatMul (10+; float16/bfloat16 scales from 21) on CUDA: int8/uint8
// A and B (each its own type), zero points per tensor or per row of A / column of B, MatMul's
// 1-D promotion and broadcast batch dims (up to 6). Own direct kernel (quant_matmul.cu, int32
// sums as the reference's), so results equal the reference kernels' bit for bit; cuBLASLt's IMMA
// path is a later optimisation. Host half (this header, quant_matmul.cc).
#pragma once

#include <string>

#include "kernels/cuda/args.h"

namespace onnxopt::kernels::cuda {

struct QuantMatMulArgs {
  std::string op;
  bool requantize = false;         ///< QLinearMatMul
  ConstTensorView a, b;            ///< int8 or uint8
  ConstTensorView a_zero, b_zero;  ///< dtype kUndefined when absent (MatMulInteger)
  ConstTensorView a_scale, b_scale, y_scale, y_zero;  ///< QLinearMatMul
  TensorView y;
};

template <>
StatusOr<QuantMatMulArgs> argsFromCall<QuantMatMulArgs>(const CudaKernelCall& call);

/// Host-only: the types and sizes above, Y's type and MatMul's shape, contiguous device tensors.
Support canImplement(const QuantMatMulArgs& args);
size_t workspaceBytes(const QuantMatMulArgs& args);
Status launch(const QuantMatMulArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
