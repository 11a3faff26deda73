// The conv family's own device code (conv_epilogue.cu): what cuDNN's convolution leaves to do, in
// plain types so that the host half (conv.cc, which uses Status and fmt) and nvcc include it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

/// Y = act(Y + B[c] + Z) in place on a convolution's output, c the channel of each element:
/// (i / inner) % channels, so inner is 1 for channels-last memory and the spatial volume for
/// channels-first.
struct ConvEpilogueArgs {
  DataType dtype = DataType::kFloat;  ///< of Y, B and Z: float, float16 or bfloat16
  int64_t count = 0;                  ///< elements of Y
  int64_t channels = 0;
  int64_t inner = 1;
  const void* bias = nullptr;  ///< [channels], or nullptr
  const void* z = nullptr;     ///< Y's shape and layout, or nullptr
  void* y = nullptr;
  bool relu = false;  ///< max(v, 0) with NaN kept
};

/// Launches the epilogue on `stream` (cudaErrorInvalidValue for another type); `sm_count` (the
/// device context's) sizes the vectorized grid.
cudaError_t launchConvEpilogue(const ConvEpilogueArgs& args, int sm_count, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
