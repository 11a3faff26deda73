// Device code of RotaryEmbedding (rotary.h): one thread per element of X (grid-stride), reading
// its rotation partner and the cos/sin of its token's cache row; features past
// rotary_embedding_dim pass through. Float arithmetic, one rounding to the element type.
#include "kernels/cuda/attention/rotary_device.h"
#include "kernels/cuda/element_types.cuh"

namespace onnxopt::kernels::cuda {

namespace {

template <typename T>
__global__ void rotaryKernel(RotaryDeviceArgs a) {
  const T* x = static_cast<const T*>(a.x);
  const T* cos_cache = static_cast<const T*>(a.cos);
  const T* sin_cache = static_cast<const T*>(a.sin);
  T* y = static_cast<T*>(a.y);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    const int64_t d = i % a.head, rest = i / a.head;
    int64_t s, b;
    if (a.four_d) {
      s = rest % a.seq;
      b = rest / a.seq / a.heads;
    } else {
      s = (rest / a.heads) % a.seq;
      b = rest / a.heads / a.seq;
    }
    if (d >= 2 * a.half) {
      y[i] = x[i];
      continue;
    }
    const int64_t base = i - d;
    const int64_t k = a.interleaved ? d / 2 : (d < a.half ? d : d - a.half);
    const bool first = a.interleaved ? d % 2 == 0 : d < a.half;
    const int64_t i1 = base + (a.interleaved ? 2 * k : k);
    const int64_t i2 = base + (a.interleaved ? 2 * k + 1 : k + a.half);
    int64_t row = b * a.seq + s;
    if (a.positions != nullptr) {
      row = a.positions[row];
      row = row < 0 ? 0 : row >= a.cache_rows ? a.cache_rows - 1 : row;
    }
    const float c = load(cos_cache, row * a.half + k), sn = load(sin_cache, row * a.half + k);
    const float x1 = load(x, i1), x2 = load(x, i2);
    store(y, i, first ? c * x1 - sn * x2 : sn * x1 + c * x2);
  }
}

}  // namespace

cudaError_t launchRotary(const RotaryDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  switch (args.dtype) {
    case DataType::kFloat16:
      rotaryKernel<__half><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
      break;
    case DataType::kBfloat16:
      rotaryKernel<__nv_bfloat16><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
      break;
    default:
      rotaryKernel<float><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
      break;
  }
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
