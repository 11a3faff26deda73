// The swiglu plugin's CUDA kernel: y[r, j] = Silu(sum_i x[r, i] W1[i, j]) * sum_i x[r, i] W3[i, j],
// both products from the same 16x16 tiles of x in shared memory, fp32 accumulation. A plain tiled
// kernel: the example shows how a plugin brings its own kernel into the CUDA runtime (capture in
// CUDA graphs included), not how to write a fast GEMM.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "swiglu_kernel.h"

namespace swiglu {

namespace {

constexpr int kTile = 16;

__device__ float load(const float* p, int64_t i) {
  return p[i];
}
__device__ float load(const __half* p, int64_t i) {
  return __half2float(p[i]);
}
__device__ float load(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ void store(float* p, int64_t i, float v) {
  p[i] = v;
}
__device__ void store(__half* p, int64_t i, float v) {
  p[i] = __float2half(v);
}
__device__ void store(__nv_bfloat16* p, int64_t i, float v) {
  p[i] = __float2bfloat16(v);
}

template <typename T>
__global__ void swigluKernel(const T* x, const T* w1, const T* w3, T* y, int64_t rows, int64_t k,
                             int64_t n) {
  __shared__ float xs[kTile][kTile];
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  const int64_t r = static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.y;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
  float a = 0.f, b = 0.f;
  for (int64_t t = 0; t < k; t += kTile) {
    const int64_t xi = t + threadIdx.x, wi = t + threadIdx.y;
    xs[threadIdx.y][threadIdx.x] = r < rows && xi < k ? load(x, r * k + xi) : 0.f;
    as[threadIdx.y][threadIdx.x] = wi < k && j < n ? load(w1, wi * n + j) : 0.f;
    bs[threadIdx.y][threadIdx.x] = wi < k && j < n ? load(w3, wi * n + j) : 0.f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile; ++i) {
      a += xs[threadIdx.y][i] * as[i][threadIdx.x];
      b += xs[threadIdx.y][i] * bs[i][threadIdx.x];
    }
    __syncthreads();
  }
  if (r < rows && j < n) store(y, r * n + j, a / (1.f + __expf(-a)) * b);
}

template <typename T>
cudaError_t launchTyped(const void* x, const void* w1, const void* w3, void* y, int64_t rows,
                        int64_t k, int64_t n, cudaStream_t stream) {
  dim3 block(kTile, kTile);
  dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
            static_cast<unsigned>((rows + kTile - 1) / kTile));
  swigluKernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(w1),
                                              static_cast<const T*>(w3), static_cast<T*>(y), rows,
                                              k, n);
  return cudaGetLastError();
}

}  // namespace

const char* launchSwiGluKernel(ElemType type, const void* x, const void* w1, const void* w3,
                               void* y, int64_t rows, int64_t k, int64_t n, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  cudaError_t err = type == ElemType::kFloat16 ? launchTyped<__half>(x, w1, w3, y, rows, k, n, s)
                    : type == ElemType::kBfloat16
                        ? launchTyped<__nv_bfloat16>(x, w1, w3, y, rows, k, n, s)
                        : launchTyped<float>(x, w1, w3, y, rows, k, n, s);
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace swiglu
