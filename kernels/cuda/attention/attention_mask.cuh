// The mask's additive bias as every Attention kernel reads it (attention.cu's fused kernel and
// scores softmax, attention_flash.cu's tensor-core kernel): bool false is -inf, a float mask of
// any float type its value.
#pragma once

#include <cmath>

#include "kernels/cuda/attention/attention_device.h"
#include "kernels/cuda/element_types.cuh"

namespace onnxopt::kernels::cuda {

/// `f(read)` with `read(off)` the bias of element `off` of args.mask, for the mask's element type
/// (switched on here once, so a caller reading many elements puts its loop inside `f`).
template <typename F>
__device__ __forceinline__ auto withMaskReader(const AttentionDeviceArgs& a, F&& f) {
  switch (a.mask_dtype) {
    case DataType::kBool:
      return f([&](int64_t off) {
        return static_cast<const uint8_t*>(a.mask)[off] != 0 ? 0.0f : -INFINITY;
      });
    case DataType::kFloat16:
      return f([&](int64_t off) { return load(static_cast<const __half*>(a.mask), off); });
    case DataType::kBfloat16:
      return f([&](int64_t off) { return load(static_cast<const __nv_bfloat16*>(a.mask), off); });
    default:
      return f([&](int64_t off) { return static_cast<const float*>(a.mask)[off]; });
  }
}

/// The bias of element `off` of args.mask.
__device__ __forceinline__ float maskBias(const AttentionDeviceArgs& a, int64_t off) {
  return withMaskReader(a, [&](auto read) { return read(off); });
}

}  // namespace onnxopt::kernels::cuda
