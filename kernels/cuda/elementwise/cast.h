// Cast on CUDA: between float, float16, bfloat16, int8, uint8, int32, int64 and bool, with the
// reference kernels' conversion rules (float to integer truncates, NaN to 0, saturates to int64
// then wraps; 16-bit floats round to nearest even); and between those and float8 (E4M3FN,
// E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), float4 E2M1 and int4/uint4/int2/uint2 (packed, contiguous
// tensors only), with `saturate` and `round_mode` as ONNX defines them. Host half (this header,
// cast.cc); device half: cast.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/elementwise/broadcast.h"
#include "kernels/cuda/elementwise/elementwise_device.h"

namespace onnxopt::kernels::cuda {

struct CastArgs {
  std::string op = "Cast";
  ConstTensorView x;
  TensorView y;          ///< of the `to` type
  bool saturate = true;  ///< opset 19+
  int round_mode = 0;    ///< opset 24+, to float8e8m0: 0 up, 1 down, 2 nearest
};

/// CastLike: Cast to the type of its second input (read for its type only).
struct CastLikeArgs : CastArgs {};

template <>
StatusOr<CastArgs> argsFromCall<CastArgs>(const CudaKernelCall& call);
template <>
StatusOr<CastLikeArgs> argsFromCall<CastLikeArgs>(const CudaKernelCall& call);

Support canImplement(const CastArgs& args);
size_t workspaceBytes(const CastArgs& args);
Status launch(const CastArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
