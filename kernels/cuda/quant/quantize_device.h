// The device entry points of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear
// (quantize.h): plain types and
// cudaError_t only (rnn.cu-style: the .cu holds kernels alone).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

/// y = x quantized or dequantized with a per-tensor, per-axis or blocked scale and zero point. x
/// is seen as [outer, axis_dim, inner]; element (o, c, j) uses scale[0] per tensor, scale[c] per
/// axis, scale[(o * ceil(axis_dim / block) + c / block) * inner + j] with blocks. The quantized
/// side is int8, uint8, int16, uint16 (int32 for DequantizeLinear's input), a float8 type other
/// than E8M0, float4 E2M1, or int4/uint4/int2/uint2 packed from the low bits of each byte.
struct QuantizeDeviceArgs {
  bool dequantize = false;
  DataType x_type = DataType::kFloat;
  DataType scale_type = DataType::kFloat;
  DataType y_type = DataType::kUint8;
  DataType zero_type = DataType::kUndefined;  ///< kUndefined: no zero point
  int64_t count = 0;
  int64_t inner = 1;     ///< elements per step of the axis
  int64_t axis_dim = 1;  ///< 1 with block 0: per tensor
  int64_t block = 0;     ///< 0: per tensor or per axis
  bool saturate = true;  ///< QuantizeLinear 19+ to float8
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* zero = nullptr;
  void* y = nullptr;
};

/// Whether quantize.cu instantiates the kernel for these types.
bool quantizeKernelExists(bool dequantize, DataType x, DataType scale, DataType y);

cudaError_t launchQuantize(const QuantizeDeviceArgs& args, cudaStream_t stream);

/// DynamicQuantizeLinear of `count` floats: the range [min(0, min x), max(0, max x)] reduced in
/// `partials` (2 * kDynamicQuantizeBlocks floats of workspace), then y_scale, y_zero_point and y.
inline constexpr int kDynamicQuantizeBlocks = 256;
struct DynamicQuantizeDeviceArgs {
  int64_t count = 0;
  const float* x = nullptr;
  float* partials = nullptr;
  uint8_t* y = nullptr;
  float* y_scale = nullptr;
  uint8_t* y_zero = nullptr;
};

cudaError_t launchDynamicQuantize(const DynamicQuantizeDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
