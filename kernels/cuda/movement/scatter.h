// ScatterND (opsets 11+; reduction add/mul from 16, max/min from 18) and ScatterElements (11+,
// the same reductions; and the deprecated Scatter, 9-10) on CUDA: the data copied to the output
// by the strided copy (copy.h), then one thread per update (scatter.cu), atomic for the
// reductions. int32/int64 indices (ScatterND: int64), negative ones from the end. Constant
// indices out of range refuse the node (the CPU reports them); runtime ones skip their update.
// Repeated indices without a reduction: which update wins is not defined (as in ONNX). Every
// numeric element type (bool without a reduction); 1-byte types reduce only into an output whose
// 4-byte words it owns (a 4-aligned output of a multiple of 4 elements).
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/gather.h"
#include "kernels/cuda/movement/indexing_device.h"

namespace onnxopt::kernels::cuda {

struct ScatterNDArgs : IndexingArgs {
  ConstTensorView updates;
  ScatterReduction reduction = ScatterReduction::kNone;
};

struct ScatterElementsArgs : IndexingArgs {
  ConstTensorView updates;
  ScatterReduction reduction = ScatterReduction::kNone;
};

template <>
StatusOr<ScatterNDArgs> argsFromCall<ScatterNDArgs>(const CudaKernelCall& call);
template <>
StatusOr<ScatterElementsArgs> argsFromCall<ScatterElementsArgs>(const CudaKernelCall& call);

Support canImplement(const ScatterNDArgs& args);
Support canImplement(const ScatterElementsArgs& args);
size_t workspaceBytes(const ScatterNDArgs& args);
size_t workspaceBytes(const ScatterElementsArgs& args);
Status launch(const ScatterNDArgs& args, CudaStream stream);
Status launch(const ScatterElementsArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
