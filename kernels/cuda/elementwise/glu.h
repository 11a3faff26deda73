// The gated activations of our own domain on CUDA (ai.onnxopt 1, -O3 --target cuda's
// fuse-gated-mlp): a gated MLP's gate and up products packed into one A = [gate | up] of
// [..., 2N], and one kernel for
//
//   SwiGlu(A)              = Silu(A[..., :N]) * A[..., N:]        Silu(x) = x * Sigmoid(x)
//   GeGlu<approximate>(A)  = Gelu<approximate>(A[..., :N]) * A[..., N:]
//
// for float, float16 and bfloat16, computed in float and rounded once. Host half (this header,
// glu.cc); device half: glu.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/elementwise/elementwise_device.h"

namespace onnxopt::kernels::cuda {

struct GluArgs {
  std::string op;  ///< SwiGlu or GeGlu
  ConstTensorView a;
  TensorView y;
  GluActivation activation = GluActivation::kSilu;
  int64_t rows = 0;   ///< A's elements over its last dim
  int64_t width = 0;  ///< N: Y's last dim, half of A's
};

/// kInvalidArgument for an A of rank 0 or of an odd last dim, and an unknown approximate.
template <>
StatusOr<GluArgs> argsFromCall<GluArgs>(const CudaKernelCall& call);

/// Host-only: float types, Y of A's shape with its last dim halved, contiguous, on the device.
Support canImplement(const GluArgs& args);
size_t workspaceBytes(const GluArgs& args);
Status launch(const GluArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
