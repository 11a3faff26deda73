// ArgMax and ArgMin on CUDA (opsets 1, 11, 12, 13: axis, keepdims, select_last_index), int64
// indices, any input strides, up to rank 8. Ties pick the first index (the last with
// select_last_index); a NaN first element wins, later NaNs never do, as in the reference kernels.
// Host half (this header, arg_reduce.cc); device half: arg_reduce.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

struct ArgReduceArgs {
  std::string op;  ///< "ArgMax" or "ArgMin", for messages
  bool is_max = true;
  bool select_last = false;
  ConstTensorView x;
  TensorView y;
  int64_t axis = 0;  ///< normalized
  bool keepdims = true;
};

template <>
StatusOr<ArgReduceArgs> argsFromCall<ArgReduceArgs>(const CudaKernelCall& call);

/// Host-only: types, device memory, rank, the output's shape and type, a non-empty axis.
Support canImplement(const ArgReduceArgs& args);
size_t workspaceBytes(const ArgReduceArgs& args);
Status launch(const ArgReduceArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
