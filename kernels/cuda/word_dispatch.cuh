// The element-size dispatch of the kernels that move raw bits (copy.cu, gather.cu, pad.cu): the
// unsigned word of 1, 2, 4 or 8 bytes a launch is instantiated for.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "element_types.cuh"

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

}  // namespace onnxopt::kernels::cuda
