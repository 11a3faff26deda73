// The device entry point of RoiAlign (roi_align.cu): plain types and cudaError_t only (the host
// half, roi_align.cc, parses and checks the node).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

struct RoiAlignDeviceArgs {
  DataType dtype = DataType::kFloat;  ///< of X, rois and Y
  int64_t num_rois = 0;
  int64_t n = 0, c = 0, h = 0, w = 0;  ///< X [N, C, H, W]
  int64_t out_h = 1, out_w = 1;        ///< Y [num_rois, C, out_h, out_w]
  int64_t sampling = 0;                ///< sampling_ratio; 0: ceil(roi size / output size)
  double scale = 1;                    ///< spatial_scale
  bool half_pixel = false;             ///< coordinate_transformation_mode half_pixel
  bool max_mode = false;               ///< mode max (else avg)
  /// The most samples per bin (grid height x width) the reference kernel's work cap allows for
  /// this node (kernels/reference/resample.h); a region asking for more is written as NaN.
  int64_t max_samples = 0;
  const void* x = nullptr;
  const void* rois = nullptr;      ///< [num_rois, 4]: x1, y1, x2, y2
  const int64_t* batch = nullptr;  ///< batch_indices [num_rois]
  void* y = nullptr;
};

/// Launches RoiAlign on `stream` for float, float16 and bfloat16 (cudaErrorInvalidValue for
/// another type).
cudaError_t launchRoiAlign(const RoiAlignDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
