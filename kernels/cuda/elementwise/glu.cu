// Device code of the gated activations (glu.h): y[r, j] = act(a[r, j]) * a[r, N + j], in float,
// rounded once to the element type.
#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/elementwise/elementwise_device.h"

namespace onnxopt::kernels::cuda {

namespace {

__device__ __forceinline__ float gate(GluActivation act, float x) {
  switch (act) {
    case GluActivation::kSilu:
      // x * Sigmoid(x), the sigmoid without overflow for large |x|.
      return x >= 0 ? x / (1.0f + expf(-x)) : x * expf(x) / (1.0f + expf(x));
    case GluActivation::kGelu:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case GluActivation::kGeluTanh: {
      const float k = sqrtf(2.0f / 3.14159265358979323846f);
      return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
    }
  }
  return x;
}

template <typename T>
__global__ void gluKernel(GluDeviceArgs args) {
  const T* a = static_cast<const T*>(args.a);
  T* y = static_cast<T*>(args.y);
  const int64_t n = args.width;
  ONNXOPT_GRID_STRIDE(i, args.rows * n) {
    const int64_t r = i / n, j = i - r * n;
    const float g = static_cast<float>(load(a, r * 2 * n + j));
    const float u = static_cast<float>(load(a, r * 2 * n + n + j));
    store(y, i, static_cast<Compute<T>>(gate(args.activation, g) * u));
  }
}

}  // namespace

cudaError_t launchGlu(const GluDeviceArgs& args, cudaStream_t stream) {
  const int64_t count = args.rows * args.width;
  if (count == 0) return cudaSuccess;
  switch (args.dtype) {
    case DataType::kFloat:
      gluKernel<float><<<blocksFor(count), kThreads, 0, stream>>>(args);
      break;
    case DataType::kFloat16:
      gluKernel<__half><<<blocksFor(count), kThreads, 0, stream>>>(args);
      break;
    case DataType::kBfloat16:
      gluKernel<__nv_bfloat16><<<blocksFor(count), kThreads, 0, stream>>>(args);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
