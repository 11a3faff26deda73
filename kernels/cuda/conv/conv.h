// Conv and ConvTranspose on CUDA through cuDNN 9's legacy convolution API, for float, float16 and
// bfloat16 (float compute: cuDNN's pseudo-half and pseudo-bfloat16 configurations; CUDNN_FMA_MATH
// for float, so no TF32), 1-D (as 2-D with a unit dim), 2-D and 3-D, groups (depthwise included),
// dilations, strides, explicit pads and every auto_pad, an optional bias B. Conv is
// cudnnConvolutionForward; pads cuDNN cannot express (begin != end) pad X explicitly into the
// workspace first. ConvTranspose is cudnnConvolutionBackwardData (the adjoint of the Conv from Y
// to X); when output_padding, asymmetric pads or an output_shape beyond the full output make Y
// differ from the adjoint's output, that is computed into the workspace and Y's block copied out
// (the rest of Y, outside the full output, is the bias). The bias is written into the output first
// (cudnnAddTensor) and the convolution accumulates into it (beta 1), so the result is rounded once.
// The algorithm is chosen once per distinct geometry by our timing (cached process-wide).
// ai.onnxopt.NhwcConv, NhwcConvRelu and NhwcConvAddRelu (the CUDA target's layout pass,
// passes/target/cuda/convert_nhwc.cc) are the same Conv on channels-last memory (tensor cores'
// layout: no transposes inside cuDNN), 2 spatial dims and pads cuDNN expresses:
// Y = ReLU(conv(X, W) + B (+ Z)). Three forms, by geometry:
//   - 1x1, unit strides, no pads, one group: a cuBLASLt GEMM [N*H*W, C] x [M, C]^T with B and the
//     ReLU in its epilogue and Z as its C (one call);
//   - otherwise, fp16/bf16 with one group: the fastest by our timing of cuDNN's graph plans
//     (conv_graph.h: conv + B (+ Z) (+ ReLU) as one operation graph, or conv + B with our
//     epilogue kernel after) and its legacy algorithms;
//   - the legacy algorithm alone (the convolution, beta 0), then our epilogue kernel
//     (conv_epilogue.cu) adding B and Z and applying the ReLU in one pass.
// (docs/gpu_benchmarks.md, "Kernel measurements": what these forms bought on resnet50.)
// Host code only.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "onnxopt/kernels/window.h"

namespace onnxopt::kernels::cuda {

struct ConvArgs {
  std::string op = "Conv";
  ConstTensorView x;
  ConstTensorView w;
  ConstTensorView b;  ///< optional (dtype kUndefined: none)
  TensorView y;
  int64_t group = 1;
  int64_t out_channels = 0;  ///< M
  /// Spatial geometry. ConvTranspose: `in` is X's spatial dims, `out` Y's, pad_begin/pad_end the
  /// pads removed from the full scatter (negative when output_shape asks for more).
  Window window;
  std::vector<int64_t> output_padding;  ///< ConvTranspose
  /// ai.onnxopt.NhwcConv*: X, W, Y (and Z) are stored channels-last ([N, H, W, C], W as
  /// [M, kH, kW, C / group]); the views above are their channels-first ([N, C, H, W]) views of
  /// that memory (permuted dims and strides), so the geometry is the NCHW one.
  bool channels_last = false;
  bool relu = false;  ///< NhwcConvRelu, NhwcConvAddRelu: Y = max(Y, 0), NaN kept
  ConstTensorView z;  ///< NhwcConvAddRelu: added before the ReLU; Y's shape and layout
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

/// ConvTranspose's arguments: Conv's, parsed by its own rules.
struct ConvTransposeArgs : ConvArgs {};

template <>
StatusOr<ConvArgs> argsFromCall<ConvArgs>(const CudaKernelCall& call);
template <>
StatusOr<ConvTransposeArgs> argsFromCall<ConvTransposeArgs>(const CudaKernelCall& call);

/// Host-only: one float type for X, W, B and Y, 1 to 3 spatial dims, contiguous device tensors,
/// Y's shape, sizes that fit cuDNN's int dims.
Support canImplement(const ConvArgs& args);
Support canImplement(const ConvTransposeArgs& args);
/// The chosen algorithm's workspace plus the padded X (Conv) or uncropped Y (ConvTranspose); it
/// chooses the algorithm on `ctx` (its cuDNN handle; the choice is kept in its conv cache).
StatusOr<size_t> workspaceBytes(const ConvArgs& args, CudaDeviceContext& ctx);
StatusOr<size_t> workspaceBytes(const ConvTransposeArgs& args, CudaDeviceContext& ctx);
/// Runs on `ctx`: its stream, cuDNN handle, conv cache and SM count (the epilogue kernel).
Status launch(const ConvArgs& args, CudaDeviceContext& ctx);
Status launch(const ConvTransposeArgs& args, CudaDeviceContext& ctx);

}  // namespace onnxopt::kernels::cuda
