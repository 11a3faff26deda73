// The variadic Sum, Mean, Max and Min on CUDA (opset 8+: multidirectional broadcasting of 1 to
// kMaxVariadicInputs inputs, any strides, up to rank 8): Sum for float/float16/bfloat16 (float
// accumulation) and int32/int64 (wrapping), Mean for the floating types, Max and Min for those and
// int8/uint8 (NaN propagated as the reference does). More inputs are refused (the CPU runs them). Host half (this header,
// variadic.cc); device half: variadic.cu.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

struct VariadicArgs {
  std::string op;  ///< "Sum", "Mean", "Max" or "Min"
  VariadicOp kind = VariadicOp::kSum;
  std::vector<ConstTensorView> x;
  TensorView y;
};

template <>
StatusOr<VariadicArgs> argsFromCall<VariadicArgs>(const CudaKernelCall& call);

/// Host-only: types, the input count, device memory, the broadcast shape.
Support canImplement(const VariadicArgs& args);
size_t workspaceBytes(const VariadicArgs& args);
Status launch(const VariadicArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
