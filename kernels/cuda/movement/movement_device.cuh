// Device helpers of the movement and indexing kernels (copy.cu, gather.cu, pad.cu, scatter.cu):
// the element-size dispatch of the kernels that move raw bits (the unsigned word of 1, 2, 4 or 8
// bytes a launch is instantiated for) and the reading of one index or index tuple.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/movement/indexing_device.h"

namespace onnxopt::kernels::cuda {

/// Calls launch(TypeTag<Word>{}) with the word of `element_bytes` bytes and returns the launch
/// status (cudaGetLastError); cudaErrorInvalidValue for another size.
template <typename F>
cudaError_t dispatchWord(int element_bytes, F&& launch) {
  switch (element_bytes) {
    case 1:
      launch(TypeTag<uint8_t>{});
      break;
    case 2:
      launch(TypeTag<uint16_t>{});
      break;
    case 4:
      launch(TypeTag<uint32_t>{});
      break;
    case 8:
      launch(TypeTag<uint64_t>{});
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

/// Index `i` of `index` (int32 or int64), negative values counting from the end of `dim`; -1
/// when out of range.
__device__ __forceinline__ int64_t wrappedIndex(const void* index, bool int64_indices, int64_t i,
                                                int64_t dim) {
  int64_t v =
      int64_indices ? static_cast<const int64_t*>(index)[i] : static_cast<const int32_t*>(index)[i];
  if (v < 0) v += dim;
  return v >= 0 && v < dim ? v : -1;
}

/// The element offset index tuple `t` addresses (GatherND, ScatterND), or -1 when one of its
/// indices is out of range.
__device__ __forceinline__ int64_t tupleOffset(const IndexTuples& tp, const void* index,
                                               int64_t t) {
  int64_t base = (t / tp.per_batch) * tp.batch_stride;
  for (int d = 0; d < tp.depth; ++d) {
    int64_t v = wrappedIndex(index, tp.int64_indices, t * tp.depth + d, tp.dims[d]);
    if (v < 0) return -1;
    base += v * tp.strides[d];
  }
  return base;
}

}  // namespace onnxopt::kernels::cuda
