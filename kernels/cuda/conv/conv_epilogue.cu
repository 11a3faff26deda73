// Device half of the convolution epilogue (conv_device.h): the bias, the residual and the ReLU of
// a convolution in one pass over its output, float arithmetic, one rounding. 16 bytes a thread
// where the channel pattern allows (channels-last with C a multiple of the vector: the bias is a
// vector load too; channels-first with a spatial volume that is: one bias value per vector),
// element by element otherwise.
#include "kernels/cuda/conv/conv_device.h"
#include "kernels/cuda/element_types.cuh"

namespace onnxopt::kernels::cuda {

namespace {

template <typename T>
__device__ __forceinline__ float epilogueValue(const ConvEpilogueArgs& a, float v, float bias,
                                               int64_t i) {
  v += bias;
  if (a.z != nullptr) v += static_cast<float>(load(static_cast<const T*>(a.z), i));
  return a.relu && v < 0.0f ? 0.0f : v;  // NaN < 0 is false: NaN stays
}

template <typename T>
__global__ void epilogueKernel(ConvEpilogueArgs a) {
  const T* bias = static_cast<const T*>(a.bias);
  T* y = static_cast<T*>(a.y);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    float b = bias != nullptr ? static_cast<float>(load(bias, (i / a.inner) % a.channels)) : 0.0f;
    store(y, i, epilogueValue<T>(a, static_cast<float>(load(y, i)), b, i));
  }
}

template <typename T>
__global__ void epilogueVecKernel(ConvEpilogueArgs a) {
  constexpr int kV = kVecElements<T>;
  const T* bias = static_cast<const T*>(a.bias);
  auto* y = static_cast<Vec16<T>*>(a.y);
  const auto* z = static_cast<const Vec16<T>*>(a.z);
  ONNXOPT_GRID_STRIDE(v, a.count / kV) {
    const int64_t i0 = v * kV;
    Vec16<T> out = y[v];
    Vec16<T> res{};
    if (z != nullptr) res = z[v];
    Vec16<T> bv{};
    if (bias != nullptr) {
      if (a.inner == 1) {
        bv = *reinterpret_cast<const Vec16<T>*>(bias + i0 % a.channels);
      } else {
        T e = bias[(i0 / a.inner) % a.channels];
#pragma unroll
        for (int k = 0; k < kV; ++k) bv.v[k] = e;
      }
    }
#pragma unroll
    for (int k = 0; k < kV; ++k) {
      float x = static_cast<float>(load(out.v, k));
      if (bias != nullptr) x += static_cast<float>(load(bv.v, k));
      if (z != nullptr) x += static_cast<float>(load(res.v, k));
      store(out.v, k, a.relu && x < 0.0f ? 0.0f : x);
    }
    y[v] = out;
  }
}

template <typename T>
cudaError_t launchTyped(const ConvEpilogueArgs& a, int sm_count, cudaStream_t stream) {
  constexpr int kV = kVecElements<T>;
  bool vec = a.count % kV == 0 && aligned16(a.y) && (a.z == nullptr || aligned16(a.z)) &&
             (a.bias == nullptr ||
              (a.inner == 1 ? a.channels % kV == 0 && aligned16(a.bias) : a.inner % kV == 0));
  if (vec) {
    epilogueVecKernel<T><<<residentBlocksFor(a.count / kV, sm_count), kThreads, 0, stream>>>(a);
  } else {
    epilogueKernel<T><<<blocksFor(a.count), kThreads, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchConvEpilogue(const ConvEpilogueArgs& args, int sm_count, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  if (args.channels <= 0 || args.inner <= 0) return cudaErrorInvalidValue;
  switch (args.dtype) {
    case DataType::kFloat16:
      return launchTyped<__half>(args, sm_count, stream);
    case DataType::kBfloat16:
      return launchTyped<__nv_bfloat16>(args, sm_count, stream);
    case DataType::kFloat:
      return launchTyped<float>(args, sm_count, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace onnxopt::kernels::cuda
