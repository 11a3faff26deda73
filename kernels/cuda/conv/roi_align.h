// RoiAlign (opsets 10 and 16) on CUDA for float, float16 and bfloat16 (roi_align.cu): Y[r, c, ph,
// pw] is the average (mode avg) or the max (mode max) of bilinear samples of X[batch_indices[r],
// c] on a sampling grid over bin (ph, pw) of region rois[r] scaled by spatial_scale; opset 16's
// coordinate_transformation_mode (half_pixel, the default, or output_half_pixel, which opset 10
// always uses). The oracle is the reference kernel (kernels/reference/sampling.cc): the same
// double arithmetic in its order, its clamping of sampling points, and its max mode (the largest
// bilinear-weighted corner of each sample, as onnxruntime computes it). Host half (this header,
// roi_align.cc).
//
// canImplement refuses what the reference refuses when planning (ranks, shapes, attributes, a
// fixed grid beyond its caps, constant batch_indices out of range) and X, rois and Y of different
// types. What only the data shows is decided on the device: a region whose batch index is outside
// [0, N), whose adaptive grid is NaN or wider than 1e6 samples, or whose grid passes the
// reference's work cap (where the reference kernel fails) is written as NaN; no element outside X
// is read.
#pragma once

#include <string>

#include "kernels/cuda/args.h"

namespace onnxopt::kernels::cuda {

struct RoiAlignArgs {
  std::string op = "RoiAlign";
  int64_t opset = 16;
  ConstTensorView x, rois, batch;
  const HostTensor* batch_values = nullptr;  ///< batch_indices' host data when constant
  TensorView y;
  std::string mode = "avg";
  std::string coord = "half_pixel";  ///< output_half_pixel at opset 10
  int64_t out_h = 1, out_w = 1, sampling = 0;
  double scale = 1;
};

template <>
StatusOr<RoiAlignArgs> argsFromCall<RoiAlignArgs>(const CudaKernelCall& call);

Support canImplement(const RoiAlignArgs& args);
size_t workspaceBytes(const RoiAlignArgs& args);
Status launch(const RoiAlignArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
