// The Reduce* family on CUDA: ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1
// ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp, every opset: axes as an attribute
// (before 13 for ReduceSum, before 18 for the others) or as an int64 input (a constant, or what
// the output's shape tells: reduce_plan.h axesFromShapes), keepdims,
// noop_with_empty_axes, empty axes = every axis; any input strides, up to rank 8. Host half (this
// header, reduce.cc); device half: reduce.cu.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

struct ReduceArgs {
  std::string op;  ///< the ONNX op, for messages
  ReduceOp kind = ReduceOp::kSum;
  ConstTensorView x;
  TensorView y;
  std::vector<bool> reduced;  ///< per input dim
  bool keepdims = true;
  /// noop_with_empty_axes with no axes: the output is the input (ReduceMax over nothing).
  bool identity = false;
  void* workspace = nullptr;  ///< the call's (a split reduction's partial results)
  size_t workspace_bytes = 0;
};

/// Axes not known when planning are read from the output's shape (the plan's, made with them);
/// kUnimplemented when that shape does not tell them (the node then runs on the CPU);
/// kInvalidArgument for axes out of range or repeated.
template <>
StatusOr<ReduceArgs> argsFromCall<ReduceArgs>(const CudaKernelCall& call);

/// Host-only: types (what reduce.cu instantiates), device memory, rank, the output's shape.
Support canImplement(const ReduceArgs& args);
/// A few long groups are split across blocks, their partial results in the workspace (without it
/// the kernel runs in one pass, slower).
size_t workspaceBytes(const ReduceArgs& args);
Status launch(const ReduceArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
