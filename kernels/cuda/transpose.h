// Transpose (opsets 1+) and DepthToSpace/SpaceToDepth (1+) on CUDA: views of the input with
// permuted strides (DepthToSpace and SpaceToDepth reshape to rank 6 first), copied by the strided
// copy (copy.h). Every element type of 1, 2, 4 or 8 bytes; rank up to 8.
#pragma once

#include <string>
#include <vector>

#include "args.h"

namespace onnxopt::kernels::cuda {

struct TransposeArgs {
  std::string op = "Transpose";
  ConstTensorView x;
  TensorView y;
  std::vector<int64_t> perm;  ///< output dim i is input dim perm[i] (checked: a permutation)
};

template <>
StatusOr<TransposeArgs> argsFromCall<TransposeArgs>(const CudaKernelCall& call);

Support canImplement(const TransposeArgs& args);
size_t workspaceBytes(const TransposeArgs& args);
Status launch(const TransposeArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
