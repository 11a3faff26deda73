// The device's peaks for `opt bench --profile`'s roofline table, measured on the device with the
// runtime's own kernels: what a step can reach there, not a data-sheet figure.
#pragma once

#include "bench_stats.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::tools {

/// Memory: the best of a few runs of Neg over 2^25 floats (128 MiB read, 128 MiB written: past
/// any L2). Compute: the best of a few runs of a 4096^3 MatMul in float16 and in float32, under
/// `options`' TF32 policy. Each model runs on a CUDA executor of its own with `options`.
StatusOr<DevicePeaks> measurePeaks(const runtime::CudaOptions& options);

}  // namespace onnxopt::tools
