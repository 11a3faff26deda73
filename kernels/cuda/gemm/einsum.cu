// Device code of the Einsum lowering (einsum_device.h): the strided copy (one thread per output
// element, grid-stride, the input offset from the output index through per-dim strides) and the
// row sum (one warp per row, float accumulation), the direct kernel (one thread per output
// element walking the summed labels).
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/gemm/einsum_device.h"

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

/// What the direct kernel accumulates in: float for the 16-bit floats, the unsigned type of an
/// integer (so products and sums wrap, as the reference's do), else the type itself.
template <typename T, bool kIntegral = std::is_integral_v<T>>
struct DirectAccOf {
  using type = Compute<T>;
};
template <typename T>
struct DirectAccOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using DirectAcc = typename DirectAccOf<T>::type;

template <typename T>
__global__ void einsumDirectKernel(EinsumDirectArgs a) {
  using Acc = DirectAcc<T>;
  const int total_rank = a.out_rank + a.sum_rank;
  ONNXOPT_GRID_STRIDE(i, a.out_count) {
    int64_t base[kEinsumDirectMaxOperands];
    for (int k = 0; k < a.operands; ++k) base[k] = 0;
    int64_t rest = i;
    for (int d = a.out_rank - 1; d >= 0; --d) {
      int64_t c = rest % a.dims[d];
      rest /= a.dims[d];
      for (int k = 0; k < a.operands; ++k) base[k] += c * a.strides[k][d];
    }
    Acc sum = Acc(0);
    for (int64_t s = 0; s < a.sum_count; ++s) {
      int64_t off[kEinsumDirectMaxOperands];
      for (int k = 0; k < a.operands; ++k) off[k] = base[k];
      int64_t r = s;
      for (int d = total_rank - 1; d >= a.out_rank; --d) {
        int64_t c = r % a.dims[d];
        r /= a.dims[d];
        for (int k = 0; k < a.operands; ++k) off[k] += c * a.strides[k][d];
      }
      Acc p = Acc(1);
      for (int k = 0; k < a.operands; ++k) {
        p = p * static_cast<Acc>(load(static_cast<const T*>(a.inputs[k]), off[k]));
      }
      sum = sum + p;
    }
    if constexpr (std::is_integral_v<T>) {
      static_cast<T*>(a.out)[i] = static_cast<T>(sum);
    } else {
      store(static_cast<T*>(a.out), i, sum);
    }
  }
}

}  // namespace

bool einsumDirectTypeExists(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
    case DataType::kFloat16:
    case DataType::kBfloat16:
    case DataType::kDouble:
    case DataType::kInt32:
    case DataType::kInt64:
      return true;
    default:
      return false;
  }
}

cudaError_t launchEinsumDirect(const EinsumDirectArgs& args, cudaStream_t stream) {
  if (args.out_count == 0) return cudaSuccess;
  unsigned blocks = blocksFor(args.out_count);
  switch (args.dtype) {
    case DataType::kFloat16:
      einsumDirectKernel<__half><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case DataType::kBfloat16:
      einsumDirectKernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case DataType::kDouble:
      einsumDirectKernel<double><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case DataType::kInt32:
      einsumDirectKernel<int32_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case DataType::kInt64:
      einsumDirectKernel<int64_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    default:
      einsumDirectKernel<float><<<blocks, kThreads, 0, stream>>>(args);
      break;
  }
  return cudaGetLastError();
}

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
