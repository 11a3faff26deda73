// Device half of the strided copy (copy.h): one grid-stride kernel per element size and index
// width, moving raw bits.
#include <cstdint>

#include "copy.h"
#include "element_types.cuh"
#include "movement_device.cuh"

namespace onnxopt::kernels::cuda {

namespace {

template <typename Word, typename Index>
__global__ void stridedCopyKernel(StridedCopy copy) {
  const Word* src = static_cast<const Word*>(copy.src);
  Word* dst = static_cast<Word*>(copy.dst);
  const Index count = static_cast<Index>(copy.count);
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    Index rest = i;
    Index s = 0, d = 0;
    for (int k = copy.rank - 1; k >= 0; --k) {
      Index dim = static_cast<Index>(copy.dims[k]);
      Index c = rest % dim;
      rest /= dim;
      s += c * static_cast<Index>(copy.src_strides[k]);
      d += c * static_cast<Index>(copy.dst_strides[k]);
    }
    dst[d] = src[s];
  }
}

}  // namespace

cudaError_t launchStridedCopy(const StridedCopy& copy, cudaStream_t stream) {
  if (copy.count == 0) return cudaSuccess;
  if (copy.rank == 0 || (copy.rank == 1 && copy.src_strides[0] == 1 && copy.dst_strides[0] == 1)) {
    return cudaMemcpyAsync(
        copy.dst, copy.src,
        static_cast<size_t>(copy.count) * static_cast<size_t>(copy.element_bytes),
        cudaMemcpyDeviceToDevice, stream);
  }
  unsigned blocks = blocksFor(copy.count);
  auto launch = [&](auto tag) {
    using Word = typename decltype(tag)::type;
    if (copy.wide_index) {
      stridedCopyKernel<Word, int64_t><<<blocks, kThreads, 0, stream>>>(copy);
    } else {
      stridedCopyKernel<Word, int32_t><<<blocks, kThreads, 0, stream>>>(copy);
    }
  };
  if (copy.element_bytes == kMaxWordBytes) {  // planStridedCopy's widened words
    launch(TypeTag<uint4>{});
    return cudaGetLastError();
  }
  return dispatchWord(copy.element_bytes, launch);
}

}  // namespace onnxopt::kernels::cuda
