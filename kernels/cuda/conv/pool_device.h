// The pool family's device entry point (kernels/cuda/conv/pool.cu), in plain types so that both the
// host half (pool.cc, which uses Status and fmt) and nvcc include it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

enum class PoolKind { kMax, kAverage, kLp, kGlobalMax, kGlobalAverage };

/// The most spatial dims the windowed kernel takes (the global pools take any).
inline constexpr int kMaxPoolSpatialDims = 3;

/// One pooling over contiguous NC... tensors. The windowed kinds read the geometry arrays, whose
/// leading unused dims (rank < 3) are size 1 with unit kernel, stride and dilation and no pads.
struct PoolDeviceArgs {
  PoolKind kind = PoolKind::kMax;
  DataType dtype = DataType::kFloat;
  int64_t nc = 0;         ///< N * C
  int64_t in_volume = 0;  ///< elements of one input channel (the spatial volume)
  int64_t in[kMaxPoolSpatialDims] = {1, 1, 1};
  int64_t out[kMaxPoolSpatialDims] = {1, 1, 1};
  int64_t kernel[kMaxPoolSpatialDims] = {1, 1, 1};
  int64_t strides[kMaxPoolSpatialDims] = {1, 1, 1};
  int64_t dilations[kMaxPoolSpatialDims] = {1, 1, 1};
  int64_t pad_begin[kMaxPoolSpatialDims] = {0, 0, 0};
  int64_t pad_end[kMaxPoolSpatialDims] = {0, 0, 0};
  bool count_include_pad = false;  ///< AveragePool: divide by the taps inside the padded input
  bool column_major = false;       ///< MaxPool's Indices with storage_order 1
  /// The windowed pools on channels-last memory ([N, spatial..., C]; ai.onnxopt.NhwcMaxPool and
  /// NhwcAveragePool): C, the fastest dim. 0: channels-first ([N, C, spatial...]).
  int64_t channels_last = 0;
  double p = 2;  ///< LpPool
  const void* x = nullptr;
  void* y = nullptr;
  int64_t* indices = nullptr;  ///< MaxPool's optional Indices (flat into X), nullptr: none
};

/// Launches the pooling on `stream`: MaxPool for float, float16, bfloat16, int8 and uint8; the
/// others for the three float types (cudaErrorInvalidValue for another type).
cudaError_t launchPool(const PoolDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
