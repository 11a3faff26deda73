// The device entry point of RotaryEmbedding (rotary.cu): plain types and cudaError_t only (the
// host half, rotary.cc, parses and checks the node).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

struct RotaryDeviceArgs {
  DataType dtype;                  ///< of X, the caches and Y
  int64_t count;                   ///< elements of X
  int64_t heads, seq, head, half;  ///< half: rotary_embedding_dim / 2
  bool four_d;                     ///< X is [B, heads, S, head]; else [B, S, heads * head]
  bool interleaved;
  const void* x;
  const void* cos;  ///< [rows, half]
  const void* sin;
  const int64_t* positions;  ///< position_ids [B, S] (clamped to the cache's rows), or nullptr
  int64_t cache_rows;
  void* y;
};

cudaError_t launchRotary(const RotaryDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
