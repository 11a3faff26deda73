// Softmax, LogSoftmax and Hardmax (1 at the first maximum, 0 elsewhere) on CUDA, and
// LpNormalization (x / ||x||_p, p 1 or 2, along one axis; 0 where the norm is 0), which
// normalizes the same rows. Softmax's opsets 1-12 read the input as the 2-D matrix
// [prod(dims[:axis]), prod(dims[axis:])] and normalize its rows (axis defaults to 1); from 13
// they normalize along the one axis (default -1, negative axes count from the end), any rank.
// Float, float16 and bfloat16, contiguous input and output. Host half (this header,
// softmax.cc); device half: softmax.cu.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/norm/norm_device.h"

namespace onnxopt::kernels::cuda {

struct SoftmaxArgs {
  std::string op;  ///< for messages
  SoftmaxKind kind = SoftmaxKind::kSoftmax;
  ConstTensorView x;
  TensorView y;
  /// The rows: element (o, j, i) at (o * n + j) * inner + i; opsets 1-12 have inner 1.
  int64_t outer = 0, n = 0, inner = 0;
};

template <>
StatusOr<SoftmaxArgs> argsFromCall<SoftmaxArgs>(const CudaKernelCall& call);

/// Host-only: types, shapes, contiguity, device memory.
Support canImplement(const SoftmaxArgs& args);
size_t workspaceBytes(const SoftmaxArgs& args);
Status launch(const SoftmaxArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
