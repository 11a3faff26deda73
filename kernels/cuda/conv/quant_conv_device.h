// The device entry point of ConvInteger and QLinearConv (kernels/cuda/conv/quant_conv.cu), in plain
// types for both the host half (quant_conv.cc) and nvcc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace onnxopt::kernels::cuda {

/// One integer convolution over contiguous NCHW-like int8/uint8 tensors. The geometry arrays hold
/// up to 3 spatial dims, the leading unused ones size 1 (unit kernel, stride and dilation).
struct QuantConvDeviceArgs {
  bool requantize = false;  ///< QLinearConv (int8/uint8 Y); else ConvInteger (int32 Y)
  bool x_signed = false, w_signed = false, y_signed = false;  ///< int8 (true) or uint8
  int64_t n = 0, c = 0, m = 0, group = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t strides[3] = {1, 1, 1}, dilations[3] = {1, 1, 1}, pad_begin[3] = {0, 0, 0};
  const void* x = nullptr;
  const void* w = nullptr;
  const void* x_zero = nullptr;  ///< one element of X's type, or nullptr (0)
  const void* w_zero = nullptr;  ///< one or m elements of W's type, or nullptr (0)
  int64_t w_zero_count = 0;
  const float* x_scale = nullptr;  ///< QLinearConv: one element
  const float* w_scale = nullptr;  ///< one or m
  int64_t w_scale_count = 0;
  const float* y_scale = nullptr;  ///< one
  const void* y_zero = nullptr;    ///< one element of Y's type
  const int32_t* bias = nullptr;   ///< m elements, or nullptr
  void* y = nullptr;
};

cudaError_t launchQuantConv(const QuantConvDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
