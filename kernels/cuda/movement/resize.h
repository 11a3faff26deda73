// Resize (10, 11, 13, 18, 19) and Upsample (7, 9, 10) on CUDA: modes nearest (every nearest_mode;
// Upsample and Resize-10 round the legacy way) and linear (N-D: bilinear, trilinear and more),
// every coordinate_transformation_mode, scales or sizes, roi (tf_crop_and_resize),
// exclude_outside, extrapolation_value, and from 18 axes and keep_aspect_ratio_policy, for every
// element type the kernels handle (float, float16, bfloat16, int8, uint8, int32, int64, bool).
// Linear computes in double as the reference kernel does, one nested sum per resized axis in its
// pass order, and rounds once (integers half to even, saturating). Refused: cubic, antialias=1
// on a downsampled axis of a linear resize, and a scales, sizes or (tf_crop_and_resize) roi
// input that is not a constant known when planning (the node then runs on the CPU). Host half
// (this header, resize.cc); device half: resize.cu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/norm/norm_device.h"

namespace onnxopt::kernels::cuda {

struct ResizeArgs {
  std::string op;  ///< for messages
  ConstTensorView x;
  TensorView y;
  std::vector<int64_t> out_dims;  ///< what the attributes and operands give
  /// The device arguments, all but the x and y pointers (set at launch).
  ResizeDeviceArgs plan{};
};

template <>
StatusOr<ResizeArgs> argsFromCall<ResizeArgs>(const CudaKernelCall& call);

/// Host-only: the element type for the mode, rank, output shape, contiguity, device memory.
Support canImplement(const ResizeArgs& args);
size_t workspaceBytes(const ResizeArgs& args);
Status launch(const ResizeArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
