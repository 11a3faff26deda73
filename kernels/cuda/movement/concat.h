// Concat (opsets 4+) on CUDA: each input copied by the strided copy (copy.h) into its place along
// the axis of the output (negative axes from 11). Every element type of 1, 2, 4 or 8 bytes; rank
// 1 to 8; any input strides.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

struct ConcatArgs {
  std::string op = "Concat";
  std::vector<ConstTensorView> inputs;
  TensorView out;
  int64_t axis = 0;  ///< normalized
};

template <>
StatusOr<ConcatArgs> argsFromCall<ConcatArgs>(const CudaKernelCall& call);

/// The copies launch runs (copy.h), or why the node is not one.
StatusOr<std::vector<CopyJob>> copyJobs(const ConcatArgs& args);

Support canImplement(const ConcatArgs& args);
size_t workspaceBytes(const ConcatArgs& args);
Status launch(const ConcatArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
