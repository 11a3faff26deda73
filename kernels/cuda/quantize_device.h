// The device entry points of QuantizeLinear and DequantizeLinear (quantize.h): plain types and
// cudaError_t only (rnn.cu-style: the .cu holds kernels alone).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

/// y = x quantized or dequantized with a per-tensor (axis_dim 1) or per-axis scale and zero
/// point: element i uses scale[(i / inner) % axis_dim].
struct QuantizeDeviceArgs {
  bool dequantize = false;
  DataType x_type = DataType::kFloat;
  DataType scale_type = DataType::kFloat;
  DataType y_type = DataType::kUint8;
  DataType zero_type = DataType::kUndefined;  ///< kUndefined: no zero point
  int64_t count = 0;
  int64_t inner = 1;     ///< elements per step of the axis
  int64_t axis_dim = 1;  ///< 1: per tensor
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* zero = nullptr;
  void* y = nullptr;
};

/// Whether quantize.cu instantiates the kernel for these types.
bool quantizeKernelExists(bool dequantize, DataType x, DataType scale, DataType y);

cudaError_t launchQuantize(const QuantizeDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
