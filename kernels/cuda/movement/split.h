// Split (opsets 2+: the split attribute before 13, the split input from 13, num_outputs from 18)
// on CUDA: each output copied by the strided copy (copy.h) from its place along the axis of the
// input. The outputs' dims (from shape inference) give the sizes; a split attribute or constant
// split input is checked against them, so a runtime split input needs no host read. Every element
// type of 1, 2, 4 or 8 bytes; rank 1 to 8.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

struct SplitArgs {
  std::string op = "Split";
  ConstTensorView x;
  std::vector<TensorView> outputs;
  int64_t axis = 0;            ///< normalized
  std::vector<int64_t> split;  ///< the given sizes (attribute or constant input), or empty
  bool runtime_split = false;  ///< a split input that is not a constant (sizes: the outputs')
  int64_t num_outputs = 0;     ///< the opset-18 attribute, or 0
  int64_t opset = 0;
};

template <>
StatusOr<SplitArgs> argsFromCall<SplitArgs>(const CudaKernelCall& call);

/// The copies launch runs (copy.h), or why the node is not one.
StatusOr<std::vector<CopyJob>> copyJobs(const SplitArgs& args);

Support canImplement(const SplitArgs& args);
size_t workspaceBytes(const SplitArgs& args);
Status launch(const SplitArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
