// TopK on CUDA (opsets 1, 10, 11): k as an attribute (1) or an int64 input (10+: a constant, or
// the outputs' size along the axis, which the plan computed from it), axis, largest and sorted (11+); the
// Values and int64 Indices outputs, ties broken by the lower index as ONNX says; any row length,
// with k of at most kTopKMaxSelect for rows longer than kTopKMaxRow (more is refused: the CPU
// runs it). sorted=0 leaves the order open, so the sorted order is written. Host half (this
// header, topk.cc); device half: topk.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

struct TopKArgs {
  std::string op = "TopK";
  int64_t opset = 11;
  ConstTensorView x;
  TensorView values;
  TensorView indices;
  int64_t axis = -1;  ///< normalized
  int64_t k = 0;
  bool largest = true;
};

/// k not known when planning is the outputs' size along the axis; kInvalidArgument for k outside
/// [0, the axis's size].
template <>
StatusOr<TopKArgs> argsFromCall<TopKArgs>(const CudaKernelCall& call);

/// Host-only: types, device memory, rank, the row length, the outputs' shapes and types.
Support canImplement(const TopKArgs& args);
size_t workspaceBytes(const TopKArgs& args);
Status launch(const TopKArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
