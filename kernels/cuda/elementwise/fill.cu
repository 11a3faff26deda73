// Device code of the fills (fill.h): Range (start + i * delta, rounded as the reference: float
// multiply then add, no fused multiply-add, then to the 16-bit type; integers wrap) and ConstantOfShape (one value's bits
// repeated).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

namespace {

template <typename T>
__device__ __forceinline__ T fromBits(uint64_t bits) {
  T v;
  memcpy(&v, &bits, sizeof(T));  // little-endian: the low bytes
  return v;
}

template <typename T>
__global__ void rangeKernel(RangeDeviceArgs args) {
  const T start_bits =
      args.by_value ? fromBits<T>(args.start_bits) : *static_cast<const T*>(args.start);
  const T delta_bits =
      args.by_value ? fromBits<T>(args.delta_bits) : *static_cast<const T*>(args.delta);
  const Compute<T> start = load(&start_bits, 0), delta = load(&delta_bits, 0);
  T* y = static_cast<T*>(args.y);
  ONNXOPT_GRID_STRIDE(i, args.count) {
    if constexpr (kIsFloating<T>) {
      store(y, i, __fadd_rn(start, __fmul_rn(static_cast<float>(i), delta)));
    } else {
      uint64_t v = static_cast<uint64_t>(static_cast<int64_t>(start)) +
                   static_cast<uint64_t>(i) * static_cast<uint64_t>(static_cast<int64_t>(delta));
      y[i] = static_cast<T>(v);
    }
  }
}

template <typename Word>
__global__ void fillKernel(FillDeviceArgs args) {
  const Word v = fromBits<Word>(args.bits);
  Word* y = static_cast<Word*>(args.y);
  ONNXOPT_GRID_STRIDE(i, args.count) {
    y[i] = v;
  }
}

}  // namespace

bool rangeKernelExists(DataType dtype) {
  return dtype == DataType::kFloat || dtype == DataType::kFloat16 || dtype == DataType::kBfloat16 ||
         dtype == DataType::kInt32 || dtype == DataType::kInt64;
}

cudaError_t launchRange(const RangeDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  switch (args.dtype) {
    case DataType::kFloat:
      rangeKernel<float><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
      break;
    case DataType::kFloat16:
      rangeKernel<__half><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
      break;
    case DataType::kBfloat16:
      rangeKernel<__nv_bfloat16><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
      break;
    case DataType::kInt32:
      rangeKernel<int32_t><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
      break;
    case DataType::kInt64:
      rangeKernel<int64_t><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launchFill(const FillDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  unsigned blocks = blocksFor(args.count);
  switch (args.element_bytes) {
    case 1:
      fillKernel<uint8_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case 2:
      fillKernel<uint16_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case 4:
      fillKernel<uint32_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    case 8:
      fillKernel<uint64_t><<<blocks, kThreads, 0, stream>>>(args);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
