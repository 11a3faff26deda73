// Expand (opsets 8+) on CUDA: the input seen with stride 0 on every broadcast dim, copied by the
// strided copy (copy.h). The output's dims (from shape inference) say the result; the shape input,
// when it is a constant, is checked against them, and when it is not the node still runs (the
// input must broadcast to the output). Every element type of 1, 2, 4 or 8 bytes; rank up to 8.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

struct ExpandArgs {
  std::string op = "Expand";
  ConstTensorView x;
  TensorView y;
  std::optional<std::vector<int64_t>> shape;  ///< the shape input when it is a constant
};

template <>
StatusOr<ExpandArgs> argsFromCall<ExpandArgs>(const CudaKernelCall& call);

/// The copies launch runs (copy.h), or why the node is not one.
StatusOr<std::vector<CopyJob>> copyJobs(const ExpandArgs& args);

Support canImplement(const ExpandArgs& args);
size_t workspaceBytes(const ExpandArgs& args);
Status launch(const ExpandArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
