// Device code of Resize and Upsample (resize.h): a thread per output element maps its index on
// every resized dim to an input coordinate, in double with the reference kernel's operations in
// its order (__dmul_rn and friends, which are never fused into a multiply-add, so that nearest's
// ties and linear's weights come out as the reference computes them). Nearest copies one element;
// linear weighs the 2^k taps of the k resized dims (a tap of weight 0 is skipped, as the
// reference skips it) and accumulates in double.
#include <cstdint>

#include "element_types.cuh"
#include "norm_device.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The input coordinate of output index y along dim d (kernels/reference/resize.cc's
/// sourceCoordinate), and whether it lies outside the input (tf_crop_and_resize).
__device__ double sourceCoordinate(const ResizeDeviceArgs& a, int d, int64_t y, bool* outside) {
  const double yd = static_cast<double>(y);
  const double in = static_cast<double>(a.in_dims[d]);
  const double scale = a.scale[d];
  const double out_width = __dmul_rn(scale, in);  // the unrounded output length
  *outside = false;
  switch (a.coord) {
    case ResizeCoord::kAlignCorners:
      return out_width == 1.0 ? 0.0 : __ddiv_rn(__dmul_rn(yd, in - 1), out_width - 1);
    case ResizeCoord::kAsymmetric:
      return __ddiv_rn(yd, scale);
    case ResizeCoord::kTfCropAndResize: {
      const double span = a.roi_end[d] - a.roi_start[d];
      double x = out_width == 1.0
                     ? __ddiv_rn(__dmul_rn(span, in - 1), 2.0)
                     : __ddiv_rn(__dmul_rn(__dmul_rn(yd, span), in - 1), out_width - 1);
      x = __dadd_rn(x, __dmul_rn(a.roi_start[d], in - 1));
      *outside = x < 0 || x > in - 1;
      return x;
    }
    case ResizeCoord::kPytorchHalfPixel:
      return out_width == 1.0 ? -0.5 : __ddiv_rn(yd + 0.5, scale) - 0.5;
    case ResizeCoord::kHalfPixelSymmetric: {
      const double adjustment = __ddiv_rn(static_cast<double>(a.out_dims[d]), out_width);
      const double offset = __dmul_rn(__ddiv_rn(in, 2.0), 1 - adjustment);
      return __dadd_rn(offset, __ddiv_rn(yd + 0.5, scale)) - 0.5;
    }
    case ResizeCoord::kTfHalfPixelForNn:
      return __ddiv_rn(yd + 0.5, scale);
    case ResizeCoord::kHalfPixel:
      break;
  }
  return __ddiv_rn(yd + 0.5, scale) - 0.5;
}

/// The nearest input index of coordinate x along dim d under the nearest mode.
__device__ int64_t nearestIndex(const ResizeDeviceArgs& a, int d, double x) {
  const double f = floor(x);
  const double r = x - f;
  double pick;
  if (r == 0.0) {
    pick = f;
  } else {
    switch (a.nearest) {
      case ResizeNearest::kRoundPreferCeil:
        pick = r < 0.5 ? f : f + 1;
        break;
      case ResizeNearest::kFloor:
        pick = f;
        break;
      case ResizeNearest::kCeil:
        pick = f + 1;
        break;
      case ResizeNearest::kSimple:
        pick = a.scale[d] < 1.0 ? f + 1 : f;
        break;
      default:
        pick = r <= 0.5 ? f : f + 1;
        break;
    }
  }
  const double hi = static_cast<double>(a.in_dims[d] - 1);
  pick = pick < 0.0 ? 0.0 : pick > hi ? hi : pick;
  return static_cast<int64_t>(pick);
}

template <typename E>
__global__ void resizeNearestKernel(ResizeDeviceArgs a) {
  const E* x = static_cast<const E*>(a.x);
  E* y = static_cast<E*>(a.y);
  E extrapolated;
  memcpy(&extrapolated, &a.extrapolation_bits, sizeof(E));
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t rem = i, off = 0, stride = 1;
    bool outside = false;
    for (int d = a.rank - 1; d >= 0; --d) {
      int64_t c = rem % a.out_dims[d];
      rem /= a.out_dims[d];
      if (a.resized[d]) {
        bool o = false;
        const double xc = sourceCoordinate(a, d, c, &o);
        outside = outside || o;
        c = o ? 0 : nearestIndex(a, d, xc);
      }
      off += c * stride;
      stride *= a.in_dims[d];
    }
    y[i] = outside ? extrapolated : x[off];
  }
}

template <typename T>
__global__ void resizeLinearKernel(ResizeDeviceArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    // Per resized dim: its two taps' input offsets (in elements of x) and weights.
    int64_t tap_off[kMaxResizeRank][2];
    double tap_w[kMaxResizeRank][2];
    int taps = 0;
    int64_t rem = i, base = 0, stride = 1;
    bool outside = false;
    for (int d = a.rank - 1; d >= 0; --d) {
      const int64_t c = rem % a.out_dims[d];
      rem /= a.out_dims[d];
      if (!a.resized[d]) {
        base += c * stride;
      } else {
        bool o = false;
        const double xc = sourceCoordinate(a, d, c, &o);
        outside = outside || o;
        double f = floor(xc);
        double r = xc - f;
        if (!isfinite(f) || fabs(f) > 1e15) f = 0, r = 0;
        const int64_t first = static_cast<int64_t>(f);
        const int64_t in = a.in_dims[d];
        double w[2];
        double sum = 0;
        for (int j = 0; j < 2; ++j) {
          const double dist = static_cast<double>(j) - r;  // neighbour - x
          double v = fmax(0.0, 1 - fabs(dist));
          const int64_t idx = first + j;
          if (a.exclude_outside && (idx < 0 || idx >= in)) v = 0;
          w[j] = v;
          sum += v;
        }
        for (int j = 0; j < 2; ++j) {
          if (a.exclude_outside && sum != 0) w[j] = __ddiv_rn(w[j], sum);
          int64_t idx = first + j;
          idx = idx < 0 ? 0 : idx >= in ? in - 1 : idx;
          tap_off[taps][j] = idx * stride;
          tap_w[taps][j] = w[j];
        }
        ++taps;
      }
      stride *= a.in_dims[d];
    }
    if (outside) {
      store(y, i, static_cast<Compute<T>>(a.extrapolation));
      continue;
    }
    double acc = 0;
    for (int mask = 0; mask < (1 << taps); ++mask) {
      double w = 1;
      int64_t off = base;
      for (int k = 0; k < taps; ++k) {
        const int j = (mask >> k) & 1;
        w = __dmul_rn(w, tap_w[k][j]);
        off += tap_off[k][j];
      }
      if (w == 0.0) continue;
      acc = __fma_rn(w, static_cast<double>(load(x, off)), acc);
    }
    store(y, i, static_cast<Compute<T>>(acc));
  }
}

}  // namespace

cudaError_t launchResize(const ResizeDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  const unsigned blocks = blocksFor(args.count);
  if (args.linear) {
    visitCudaType(args.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kIsFloating<T>) resizeLinearKernel<T><<<blocks, kThreads, 0, stream>>>(args);
    });
  } else {
    switch (args.element_bytes) {
      case 1:
        resizeNearestKernel<uint8_t><<<blocks, kThreads, 0, stream>>>(args);
        break;
      case 2:
        resizeNearestKernel<uint16_t><<<blocks, kThreads, 0, stream>>>(args);
        break;
      case 4:
        resizeNearestKernel<uint32_t><<<blocks, kThreads, 0, stream>>>(args);
        break;
      default:
        resizeNearestKernel<uint64_t><<<blocks, kThreads, 0, stream>>>(args);
        break;
    }
  }
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
