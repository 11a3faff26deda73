// The pools on CUDA: MaxPool (with its optional Indices, storage_order, dilations, ceil_mode),
// AveragePool (count_include_pad, ceil_mode, dilations from opset 19), LpPool, GlobalMaxPool and
// GlobalAveragePool, over 1 to 3 spatial dims (the global pools any), every auto_pad and
// asymmetric pads. Own kernels (pool.cu) rather than cudnnPoolingForward: cuDNN's pooling has no
// dilation, no Indices, no ceil_mode and only symmetric pads, so one direct kernel (a thread per
// output, the reference kernels' tap order) covers every attribute with one code path. Host half
// (this header, pool.cc): arguments, canImplement, launch.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/conv/pool_device.h"
#include "onnxopt/kernels/window.h"

namespace onnxopt::kernels::cuda {

struct PoolArgs {
  std::string op;
  PoolKind kind = PoolKind::kMax;
  ConstTensorView x;
  TensorView y;
  TensorView indices;  ///< MaxPool's optional second output (dtype kUndefined: not asked for)
  Window window;       ///< the windowed pools
  bool count_include_pad = false;
  int64_t storage_order = 0;
  double p = 2;  ///< LpPool
  /// ai.onnxopt.NhwcMaxPool / NhwcAveragePool: X and Y stored [N, spatial..., C]; x and y are
  /// their channels-first views (channelsFirstView), so the window is the NCHW one.
  bool channels_last = false;
};

template <>
StatusOr<PoolArgs> argsFromCall<PoolArgs>(const CudaKernelCall& call);

/// Host-only: types (MaxPool: float, float16, bfloat16, int8, uint8; the others the float types),
/// 1 to 3 spatial dims for the windowed pools, contiguous device tensors, Y's (and Indices') shape
/// and type.
Support canImplement(const PoolArgs& args);
size_t workspaceBytes(const PoolArgs& args);
Status launch(const PoolArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
