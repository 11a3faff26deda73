// The unary elementwise family on CUDA: Abs Neg Relu Sign Sigmoid Tanh Exp Log Sqrt Reciprocal
// Erf Floor Ceil Round Sin Cos Not Gelu LeakyRelu Elu Selu HardSigmoid HardSwish Softplus
// Softsign Clip IsNaN IsInf (bool outputs), the inverse trigonometric and hyperbolic functions
// (Acos Acosh Asin Asinh Atan Atanh Cosh Sinh Tan), Swish Celu Mish ThresholdedRelu Shrink, over
// any input strides (the output is contiguous). Host half (this header, unary.cc): arguments,
// canImplement, launch; device half: unary.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/elementwise/broadcast.h"
#include "kernels/cuda/elementwise/elementwise_device.h"

namespace onnxopt::kernels::cuda {

struct UnaryArgs {
  std::string op;  ///< the ONNX op, for messages
  UnaryOp kind = UnaryOp::kAbs;
  ConstTensorView x;
  TensorView y;
  float alpha = 0, beta = 0, gamma = 0;  ///< activation attributes; Clip < 11: min, max
  ConstTensorView min, max;  ///< Clip >= 11: optional scalar inputs (dtype kUndefined: absent)
};

template <>
StatusOr<UnaryArgs> argsFromCall<UnaryArgs>(const CudaKernelCall& call);

/// Host-only: types (what unary.cu instantiates), shapes, device memory, Clip's bounds.
Support canImplement(const UnaryArgs& args);
size_t workspaceBytes(const UnaryArgs& args);
/// Runs on `ctx`'s stream; its SM count sizes the vectorized grid.
Status launch(const UnaryArgs& args, CudaDeviceContext& ctx);

}  // namespace onnxopt::kernels::cuda
