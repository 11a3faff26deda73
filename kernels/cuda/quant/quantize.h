// QuantizeLinear and DequantizeLinear on CUDA (opsets 10+), and DynamicQuantizeLinear (11+):
// int8, uint8, int16, uint16 (and int32 input for DequantizeLinear), float8 (E4M3FN, E4M3FNUZ,
// E5M2, E5M2FNUZ; `saturate`), float4 E2M1 and packed int4/uint4/int2/uint2, with float, float16
// or bfloat16 scales, per tensor, per axis or blocked (block_size, 21+); the scale and zero point
// are read from device memory. QuantizeLinear's double precision stays on the CPU. Host half
// (this header, quantize.cc); device half: quantize.cu behind quantize_device.h.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/quant/quantize_device.h"

namespace onnxopt::kernels::cuda {

struct QuantizeArgs {
  std::string op;  ///< "QuantizeLinear" or "DequantizeLinear"
  bool dequantize = false;
  ConstTensorView x, scale, zero;  ///< zero: dtype kUndefined when absent
  TensorView y;
  int64_t axis = 1;  ///< as given (normalized by canImplement)
  int64_t block_size = 0;
  int64_t output_dtype = 0;  ///< the attribute, 0 when absent
  int64_t precision = 0;     ///< QuantizeLinear 23+
  bool saturate = true;      ///< QuantizeLinear 19+, float8 outputs
};

template <>
StatusOr<QuantizeArgs> argsFromCall<QuantizeArgs>(const CudaKernelCall& call);

/// Host-only: the types quantize.cu instantiates, per-tensor or per-axis scales and zero points of
/// the scale's shape, the output's type and shape, device memory, contiguous tensors.
Support canImplement(const QuantizeArgs& args);
size_t workspaceBytes(const QuantizeArgs& args);
Status launch(const QuantizeArgs& args, CudaStream stream);

/// DynamicQuantizeLinear (11+): float x to uint8 y, with its y_scale and y_zero_point outputs.
/// Where the reference fails (x holds NaN or an infinity), the kernel writes saturated values.
struct DynamicQuantizeArgs {
  std::string op = "DynamicQuantizeLinear";
  ConstTensorView x;
  TensorView y, y_scale, y_zero;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

template <>
StatusOr<DynamicQuantizeArgs> argsFromCall<DynamicQuantizeArgs>(const CudaKernelCall& call);
/// Host-only: float x, uint8 y of x's shape, a float and a uint8 scalar, device memory.
Support canImplement(const DynamicQuantizeArgs& args);
/// The range reduction's partial results.
size_t workspaceBytes(const DynamicQuantizeArgs& args);
Status launch(const DynamicQuantizeArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
