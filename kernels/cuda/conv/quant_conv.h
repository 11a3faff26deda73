// ConvInteger and QLinearConv on CUDA: int8/uint8 X and W (each its own type), a scalar X zero
// point, W's zero point and scale per tensor or per output channel, float scales, QLinearConv's
// int32 bias; 1 to 3 spatial dims with Conv's geometry (groups, dilations, strides, pads,
// auto_pad). Own direct kernel (quant_conv.cu): the products are summed exactly, so the result
// equals the reference kernels' bit for bit. Host half (this header, quant_conv.cc).
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "onnxopt/kernels/window.h"

namespace onnxopt::kernels::cuda {

struct QuantConvArgs {
  std::string op;
  bool requantize = false;               ///< QLinearConv
  ConstTensorView x, w, x_zero, w_zero;  ///< zero points: dtype kUndefined when absent
  ConstTensorView x_scale, w_scale, y_scale, y_zero, bias;  ///< QLinearConv
  TensorView y;
  int64_t group = 1;
  int64_t out_channels = 0;
  Window window;
};

template <>
StatusOr<QuantConvArgs> argsFromCall<QuantConvArgs>(const CudaKernelCall& call);

/// Host-only: the types and sizes above, Y's type and shape, contiguous device tensors.
Support canImplement(const QuantConvArgs& args);
size_t workspaceBytes(const QuantConvArgs& args);
Status launch(const QuantConvArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
