// Slice on CUDA (opsets 1-9: starts/ends/axes attributes; 10+: starts, ends, axes and steps as
// int32/int64 inputs, read when planning: constants only, else the node stays on the CPU): the
// input seen through an offset and step-scaled strides (negative steps too), copied by the
// strided copy (copy.h). Every element type of 1, 2, 4 or 8 bytes; rank up to 8.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

struct SliceArgs {
  std::string op = "Slice";
  ConstTensorView x;
  TensorView y;
  std::vector<int64_t> starts;  ///< per input dim, clamped as ONNX says
  std::vector<int64_t> steps;   ///< per input dim (1 where not sliced)
  std::vector<int64_t> dims;    ///< the slice's dims, as the reference computes them
};

template <>
StatusOr<SliceArgs> argsFromCall<SliceArgs>(const CudaKernelCall& call);

/// The copies launch runs (copy.h), or why the node is not one.
StatusOr<std::vector<CopyJob>> copyJobs(const SliceArgs& args);

Support canImplement(const SliceArgs& args);
size_t workspaceBytes(const SliceArgs& args);
Status launch(const SliceArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
