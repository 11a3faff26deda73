// Trilu (opset 14+) and EyeLike (9+) on CUDA: the upper (j - i >= k) or lower (j - i <= k) triangle of each of the
// last two dims' matrices kept, the rest zero; k from the optional int64 scalar input, read when
// planning if it is a constant and on the device otherwise. Every element type of 1, 2, 4 or 8
// bytes; contiguous input and output. Host half (this header, trilu.cc); device half: trilu.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/indexing_device.h"

namespace onnxopt::kernels::cuda {

struct TriluArgs {
  std::string op = "Trilu";
  ConstTensorView x;
  ConstTensorView k;  ///< absent (dtype kUndefined) when the node has no k
  TensorView y;
  TriluDeviceArgs device;  ///< planned by argsFromCall
};

/// EyeLike (opset 9+): ones on the k-th diagonal of a 2-D output of the `dtype` attribute's type
/// (default: the input's), zeros elsewhere.
struct EyeLikeArgs {
  std::string op = "EyeLike";
  ConstTensorView x;
  TensorView y;
  TriluDeviceArgs device;
};

template <>
StatusOr<TriluArgs> argsFromCall<TriluArgs>(const CudaKernelCall& call);
template <>
StatusOr<EyeLikeArgs> argsFromCall<EyeLikeArgs>(const CudaKernelCall& call);

Support canImplement(const TriluArgs& args);
size_t workspaceBytes(const TriluArgs& args);
Status launch(const TriluArgs& args, CudaStream stream);
Support canImplement(const EyeLikeArgs& args);
size_t workspaceBytes(const EyeLikeArgs& args);
Status launch(const EyeLikeArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
