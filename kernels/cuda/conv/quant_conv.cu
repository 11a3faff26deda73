// Device half of ConvInteger and QLinearConv (quant_conv_device.h): one thread per output
// element, the centered products (x - zx) * (w - zw) summed exactly in int64 over the group's
// channels and the kernel taps (taps in padding add nothing, as in the reference), then int32
// (ConvInteger) or saturate(rint((acc + B) * (sx * sw / sy) + zy)) in double, the scale product
// in float as the reference computes it (QLinearConv).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/conv/quant_conv_device.h"
#include "kernels/cuda/element_types.cuh"

namespace onnxopt::kernels::cuda {

namespace {

__device__ __forceinline__ int64_t byteAt(const void* p, int64_t i, bool is_signed) {
  const auto* b = static_cast<const uint8_t*>(p);
  return is_signed ? static_cast<int64_t>(static_cast<int8_t>(b[i])) : static_cast<int64_t>(b[i]);
}

__global__ void quantConv(QuantConvDeviceArgs a, int64_t total) {
  int64_t cg = a.c / a.group, mg = a.m / a.group;
  int64_t in_volume = a.in[0] * a.in[1] * a.in[2];
  int64_t k_volume = a.kernel[0] * a.kernel[1] * a.kernel[2];
  ONNXOPT_GRID_STRIDE(i, total) {
    int64_t rest = i;
    int64_t o2 = rest % a.out[2];
    rest /= a.out[2];
    int64_t o1 = rest % a.out[1];
    rest /= a.out[1];
    int64_t o0 = rest % a.out[0];
    rest /= a.out[0];
    int64_t mi = rest % a.m;
    int64_t ni = rest / a.m;
    int64_t g = mi / mg;
    int64_t zx = a.x_zero != nullptr ? byteAt(a.x_zero, 0, a.x_signed) : 0;
    int64_t zw =
        a.w_zero != nullptr ? byteAt(a.w_zero, a.w_zero_count == 1 ? 0 : mi, a.w_signed) : 0;
    int64_t acc = 0;
    for (int64_t ci = 0; ci < cg; ++ci) {
      int64_t x_base = (ni * a.c + g * cg + ci) * in_volume;
      int64_t w_base = (mi * cg + ci) * k_volume;
      for (int64_t k0 = 0; k0 < a.kernel[0]; ++k0) {
        int64_t p0 = o0 * a.strides[0] - a.pad_begin[0] + k0 * a.dilations[0];
        if (p0 < 0 || p0 >= a.in[0]) continue;
        for (int64_t k1 = 0; k1 < a.kernel[1]; ++k1) {
          int64_t p1 = o1 * a.strides[1] - a.pad_begin[1] + k1 * a.dilations[1];
          if (p1 < 0 || p1 >= a.in[1]) continue;
          for (int64_t k2 = 0; k2 < a.kernel[2]; ++k2) {
            int64_t p2 = o2 * a.strides[2] - a.pad_begin[2] + k2 * a.dilations[2];
            if (p2 < 0 || p2 >= a.in[2]) continue;
            int64_t xv = byteAt(a.x, x_base + (p0 * a.in[1] + p1) * a.in[2] + p2, a.x_signed);
            int64_t wv =
                byteAt(a.w, w_base + (k0 * a.kernel[1] + k1) * a.kernel[2] + k2, a.w_signed);
            acc += (xv - zx) * (wv - zw);
          }
        }
      }
    }
    if (!a.requantize) {
      static_cast<int32_t*>(a.y)[i] = static_cast<int32_t>(acc);
      continue;
    }
    if (a.bias != nullptr) acc += a.bias[mi];
    float sw = a.w_scale[a.w_scale_count == 1 ? 0 : mi];
    float mult = __fdiv_rn(__fmul_rn(a.x_scale[0], sw), a.y_scale[0]);
    double lo = a.y_signed ? -128.0 : 0.0, hi = a.y_signed ? 127.0 : 255.0;
    // Rounded multiply and add (no fused multiply-add), as the reference's host code computes.
    double v = __dadd_rn(__dmul_rn(static_cast<double>(acc), static_cast<double>(mult)),
                         static_cast<double>(byteAt(a.y_zero, 0, a.y_signed)));
    v = isnan(v) ? 0.0 : rint(v < lo ? lo : (v > hi ? hi : v));  // as std::clamp, then rint
    auto* y = static_cast<uint8_t*>(a.y);
    y[i] = a.y_signed ? static_cast<uint8_t>(static_cast<int8_t>(v)) : static_cast<uint8_t>(v);
  }
}

}  // namespace

cudaError_t launchQuantConv(const QuantConvDeviceArgs& args, cudaStream_t stream) {
  int64_t total = args.n * args.m * args.out[0] * args.out[1] * args.out[2];
  if (total == 0) return cudaSuccess;
  quantConv<<<blocksFor(total), kThreads, 0, stream>>>(args, total);
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
