// Transpose (opsets 1+) and DepthToSpace/SpaceToDepth (1+) on CUDA: views of the input with
// permuted strides (DepthToSpace and SpaceToDepth reshape to rank 6 first), copied by the strided
// copy (copy.h). Every element type of 1, 2, 4 or 8 bytes; rank up to 8.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

struct TransposeArgs {
  std::string op = "Transpose";
  ConstTensorView x;
  TensorView y;
  std::vector<int64_t> perm;  ///< output dim i is input dim perm[i] (checked: a permutation)
};

/// DepthToSpace (DCR or CRD, opset 11+; DCR before) and SpaceToDepth on a 4-D input: a rank-6
/// split of both views, one of them permuted.
struct DepthSpaceArgs {
  std::string op;
  ConstTensorView x;
  TensorView y;
  int64_t blocksize = 0;
  bool crd = false;       ///< DepthToSpace's CRD mode
  bool to_space = false;  ///< DepthToSpace (else SpaceToDepth)
};

template <>
StatusOr<TransposeArgs> argsFromCall<TransposeArgs>(const CudaKernelCall& call);
template <>
StatusOr<DepthSpaceArgs> argsFromCall<DepthSpaceArgs>(const CudaKernelCall& call);

/// The copies launch runs (copy.h), or why the node is not one.
StatusOr<std::vector<CopyJob>> copyJobs(const TransposeArgs& args);
StatusOr<std::vector<CopyJob>> copyJobs(const DepthSpaceArgs& args);

Support canImplement(const TransposeArgs& args);
size_t workspaceBytes(const TransposeArgs& args);
Status launch(const TransposeArgs& args, CudaStream stream);
Support canImplement(const DepthSpaceArgs& args);
size_t workspaceBytes(const DepthSpaceArgs& args);
Status launch(const DepthSpaceArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
