// Device code of the Einsum lowering (einsum_device.h): the strided copy (one thread per output
// element, grid-stride, the input offset from the output index through per-dim strides) and the
// row sum (one warp per row, float accumulation).
#include "einsum_device.h"
#include "element_types.cuh"

namespace onnxopt::kernels::cuda {

namespace {

template <typename Bits>
__global__ void stridedCopyKernel(StridedCopyArgs a) {
  const Bits* in = static_cast<const Bits*>(a.in);
  Bits* out = static_cast<Bits*>(a.out);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t rest = i, off = 0;
    for (int d = a.rank - 1; d >= 0; --d) {
      off += (rest % a.dims[d]) * a.in_strides[d];
      rest /= a.dims[d];
    }
    out[i] = in[off];
  }
}

template <typename T>
__global__ void rowSumKernel(RowSumArgs a) {
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < a.rows;
       r += warps) {
    float sum = 0.0f;
    for (int64_t c = lane; c < a.cols; c += 32) sum += load(in, r * a.cols + c);
#pragma unroll
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) store(out, r, sum);
  }
}

}  // namespace

cudaError_t launchStridedCopy(const StridedCopyArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  if (args.element_bytes == 2) {
    stridedCopyKernel<uint16_t><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  } else {
    stridedCopyKernel<uint32_t><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  }
  return cudaGetLastError();
}

cudaError_t launchRowSum(const RowSumArgs& args, cudaStream_t stream) {
  if (args.rows == 0) return cudaSuccess;
  unsigned blocks = blocksFor(args.rows * 32);
  switch (args.dtype) {
    case DataType::kFloat16:
      rowSumKernel<__half><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case DataType::kBfloat16:
      rowSumKernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(args);
      break;
    default:
      rowSumKernel<float><<<blocks, kThreads, 0, stream>>>(args);
      break;
  }
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
