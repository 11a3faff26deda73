// Device code of Where (where.h): out = cond ? x : y with three-way broadcasting. It only moves
// elements, so it is instantiated per element size, not per type.
#include <cstdint>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/elementwise/elementwise_device.h"

namespace onnxopt::kernels::cuda {

namespace {

template <typename Word>
__global__ void whereKernel(WhereDeviceArgs args) {
  const bool* cond = static_cast<const bool*>(args.cond);
  const Word* x = static_cast<const Word*>(args.x);
  const Word* y = static_cast<const Word*>(args.y);
  Word* out = static_cast<Word*>(args.out);
  ONNXOPT_GRID_STRIDE(i, args.plan.count) {
    int64_t off[3];
    broadcastOffsets<3>(args.plan, i, off);
    out[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
  }
}

}  // namespace

cudaError_t launchWhere(const WhereDeviceArgs& args, cudaStream_t stream) {
  if (args.plan.count == 0) return cudaSuccess;
  unsigned blocks = blocksFor(args.plan.count);
  switch (args.element_bytes) {
    case 1:
      whereKernel<uint8_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case 2:
      whereKernel<uint16_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case 4:
      whereKernel<uint32_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case 8:
      whereKernel<uint64_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
