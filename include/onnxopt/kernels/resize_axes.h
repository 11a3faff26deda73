// The resized axes of Resize and Upsample, one implementation for the reference kernel and the CUDA
// kernel's host code: from the node's axes, roi, scales or sizes and the input's dims, each axis's
// input and output extent and scale.
//   scales: out = floor(in * scale)
//   sizes:  scale = out / in; from opset 18 keep_aspect_ratio_policy not_larger (not_smaller)
//           takes the smallest (largest) of those scales for every axis, out = floor(scale*in + 0.5)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels {

struct ResizeAxis {
  int64_t axis = 0;
  int64_t in = 0;
  int64_t out = 0;
  double scale = 1.0;
  double roi_start = 0.0;  ///< tf_crop_and_resize's region, from roi when it has 2 values per axis
  double roi_end = 1.0;
};

/// One ResizeAxis per entry of `axes` (normalized, no repeats). kInvalidArgument naming `op` when
/// both or neither of scales and sizes are given, their count is not the number of axes, a scale is
/// not positive and finite, a size is negative, the policy is unknown, or tf_crop_and_resize
/// (`crop_and_resize`) has no roi of two values per axis; kResourceExhausted for an extent past
/// 9e15.
StatusOr<std::vector<ResizeAxis>> resizeAxes(
    const std::string& op, int64_t opset, const KernelAttrs& attrs,
    const std::vector<int64_t>& dims, const std::vector<int64_t>& axes,
    const std::vector<double>& roi, const std::vector<double>& scales,
    const std::vector<int64_t>& sizes, bool crop_and_resize);

}  // namespace onnxopt::kernels
