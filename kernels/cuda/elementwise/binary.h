// The binary elementwise family on CUDA: Add Sub Mul Div Pow Mod PRelu (two inputs; Pow's exponent
// may have another type than its base), the comparisons (bool output), And Or Xor and the Bitwise
// ops, with ONNX multidirectional broadcasting up to rank 8 (strides planned on the host,
// broadcast.h). Host half (this header, binary.cc); device half:
// binary.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/elementwise/broadcast.h"
#include "kernels/cuda/elementwise/elementwise_device.h"

namespace onnxopt::kernels::cuda {

struct BinaryArgs {
  std::string op;  ///< the ONNX op, for messages
  BinaryOp kind = BinaryOp::kAdd;
  ConstTensorView a;
  ConstTensorView b;
  TensorView y;
};

/// Mod: the binary kernel with the op chosen by the `fmod` attribute (Python's remainder for
/// integers at fmod = 0, C's at fmod = 1; floats need fmod = 1). Its own type selects the parser.
struct ModArgs : BinaryArgs {};

template <>
StatusOr<BinaryArgs> argsFromCall<BinaryArgs>(const CudaKernelCall& call);
template <>
StatusOr<ModArgs> argsFromCall<ModArgs>(const CudaKernelCall& call);

/// Host-only: one input type that binary.cu instantiates for the op (for Pow, a base and exponent
/// pair mixedPowKernelExists takes), the output type (bool for
/// comparisons), broadcastable shapes, rank at most 8, device memory.
Support canImplement(const BinaryArgs& args);
size_t workspaceBytes(const BinaryArgs& args);
/// Runs on `ctx`'s stream; its SM count sizes the vectorized grid.
Status launch(const BinaryArgs& args, CudaDeviceContext& ctx);

}  // namespace onnxopt::kernels::cuda
