// CumSum on CUDA (opsets 11, 14), and CumProd (26) the same way with * from 1: the axis as a
// constant int32/int64 scalar input (read when planning; a non-constant axis keeps the node on
// the CPU unless the input is a vector), exclusive, reverse; float, float16, bfloat16 (float
// accumulation), int32, int64 (wrapping); any input strides, up to rank 8. Host half (this
// header, scan.cc); device half: scan.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

struct CumSumArgs {
  std::string op = "CumSum";
  bool prod = false;  ///< CumProd (opset 26)
  ConstTensorView x;
  TensorView y;
  int64_t axis = 0;  ///< normalized
  bool exclusive = false;
  bool reverse = false;
};

/// kUnimplemented when the axis is not a constant known when planning (and the input not 1-D).
template <>
StatusOr<CumSumArgs> argsFromCall<CumSumArgs>(const CudaKernelCall& call);

/// Host-only: types, device memory, rank, the output's shape and type.
Support canImplement(const CumSumArgs& args);
size_t workspaceBytes(const CumSumArgs& args);
Status launch(const CumSumArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
