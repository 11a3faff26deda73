// Device half of MatMulInteger and QLinearMatMul (quant_matmul_device.h): one thread per output
// element, the centered products (a - za) (b - zb) summed exactly and wrapped to int32 as the
// reference's int32 MatMul wraps; QLinearMatMul then requantizes as the reference does: the scale
// product a_scale * b_scale / y_scale in float, rounded to the scale type after the product and
// after the quotient, then saturate(rint(acc * mult + zy)) in double without fused multiply-add.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/gemm/quant_matmul_device.h"

namespace onnxopt::kernels::cuda {

namespace {

__device__ __forceinline__ int64_t byteAt(const void* p, int64_t i, bool is_signed) {
  const auto* b = static_cast<const uint8_t*>(p);
  return is_signed ? static_cast<int64_t>(static_cast<int8_t>(b[i])) : static_cast<int64_t>(b[i]);
}

__device__ __forceinline__ float scaleAt(const QuantMatMulDeviceArgs& a, const void* p, int64_t i) {
  switch (a.scale_type) {
    case DataType::kFloat16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case DataType::kBfloat16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

/// v rounded to the scale type (float: unchanged).
__device__ __forceinline__ float roundToScale(const QuantMatMulDeviceArgs& a, float v) {
  switch (a.scale_type) {
    case DataType::kFloat16:
      return __half2float(__float2half_rn(v));
    case DataType::kBfloat16:
      return __bfloat162float(__float2bfloat16_rn(v));
    default:
      return v;
  }
}

/// saturate(rint(acc * mult + zy)) as the reference's requantize: std::clamp before the rounding
/// (a NaN passes through it and becomes 0).
__device__ __forceinline__ int64_t requantize(const QuantMatMulDeviceArgs& a, int32_t acc,
                                              float mult) {
  double lo = a.y_signed ? -128.0 : 0.0, hi = a.y_signed ? 127.0 : 255.0;
  double zy = static_cast<double>(byteAt(a.y_zero, 0, a.y_signed));
  double v = __dadd_rn(__dmul_rn(static_cast<double>(acc), static_cast<double>(mult)), zy);
  v = v < lo ? lo : (hi < v ? hi : v);
  v = rint(v);
  if (isnan(v)) v = 0;
  return static_cast<int64_t>(v);
}

__global__ void quantMatMul(QuantMatMulDeviceArgs a) {
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t col = i % a.n;
    int64_t row = (i / a.n) % a.m;
    int64_t rest = i / (a.n * a.m);
    int64_t a_off = 0, b_off = 0;
    for (int d = a.batch_rank - 1; d >= 0; --d) {
      int64_t c = rest % a.batch_dims[d];
      rest /= a.batch_dims[d];
      a_off += c * a.a_batch_strides[d];
      b_off += c * a.b_batch_strides[d];
    }
    int64_t za =
        a.a_zero != nullptr ? byteAt(a.a_zero, a.a_zero_count == 1 ? 0 : row, a.a_signed) : 0;
    int64_t zb =
        a.b_zero != nullptr ? byteAt(a.b_zero, a.b_zero_count == 1 ? 0 : col, a.b_signed) : 0;
    int64_t acc = 0;
    for (int64_t kk = 0; kk < a.k; ++kk) {
      int64_t av = byteAt(a.a, a_off + row * a.k + kk, a.a_signed) - za;
      int64_t bv = byteAt(a.b, b_off + kk * a.n + col, a.b_signed) - zb;
      acc += av * bv;
    }
    auto acc32 = static_cast<int32_t>(acc);  // the reference's int32 sum wraps
    if (!a.requantize) {
      static_cast<int32_t*>(a.y)[i] = acc32;
      continue;
    }
    float sa = scaleAt(a, a.a_scale, a.a_scale_count == 1 ? 0 : row);
    float sb = scaleAt(a, a.b_scale, a.b_scale_count == 1 ? 0 : col);
    float mult =
        roundToScale(a, __fdiv_rn(roundToScale(a, __fmul_rn(sa, sb)), scaleAt(a, a.y_scale, 0)));
    int64_t q = requantize(a, acc32, mult);
    if (a.y_signed) {
      static_cast<int8_t*>(a.y)[i] = static_cast<int8_t>(q);
    } else {
      static_cast<uint8_t*>(a.y)[i] = static_cast<uint8_t>(q);
    }
  }
}

}  // namespace

cudaError_t launchQuantMatMul(const QuantMatMulDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  quantMatMul<<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
