// Device code of Resize and Upsample (resize.h): a thread per output element maps its index on
// every resized dim to an input coordinate, in double with the reference kernel's operations in
// its order (__dmul_rn and friends, which are never fused into a multiply-add), so that nearest's
// ties and linear's weights and sums come out as the reference computes them. Nearest copies one
// element; linear evaluates the reference's per-axis passes as nested sums over the 2^k taps of
// the k resized dims.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/norm/norm_device.h"

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

/// Element i of x as a double (bool: 0 or 1).
template <typename T>
__device__ __forceinline__ double loadDouble(const T* x, int64_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    return x[i] ? 1.0 : 0.0;
  } else {
    return static_cast<double>(load(x, i));
  }
}

/// The reference's storeRounded: floats round once (through float), integers round half to even
/// and saturate (NaN is 0), bool is v != 0.
template <typename T>
__device__ __forceinline__ void storeRounded(T* y, int64_t i, double v) {
  if constexpr (kIsFloating<T>) {
    store(y, i, static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    y[i] = v != 0.0;
  } else {
    double r = rint(v);
    if (isnan(r)) r = 0;
    // std::numeric_limits is host code: the limits of the integer types, by hand.
    T lowest = T(0);
    if constexpr (std::is_signed_v<T>) {
      lowest = static_cast<T>(std::make_unsigned_t<T>(1) << (sizeof(T) * 8 - 1));
    }
    const T highest = std::is_signed_v<T> ? static_cast<T>(~lowest) : static_cast<T>(~T(0));
    const double lo = static_cast<double>(lowest);
    const double hi = static_cast<double>(highest);
    y[i] = r <= lo ? lowest : r >= hi ? highest : static_cast<T>(r);
  }
}

/// Linear: the reference interpolates one resized axis at a time (a.order), each pass
/// dst += w * src over its two taps from 0, skipping a tap of weight 0, and fills an output
/// coordinate outside the input (tf_crop_and_resize) with the extrapolation value. Here one
/// thread evaluates those passes' nested sums for its element: level L is pass L's sum, carried
/// into level L + 1 when its second tap is done, so every operation is the reference's.
template <typename T>
__global__ void resizeLinearKernel(ResizeDeviceArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t coord[kMaxResizeRank], stride[kMaxResizeRank];
    int64_t rem = i, s = 1, base = 0;
    for (int d = a.rank - 1; d >= 0; --d) {
      coord[d] = rem % a.out_dims[d];
      rem /= a.out_dims[d];
      stride[d] = s;
      s *= a.in_dims[d];
      if (!a.resized[d]) base += coord[d] * stride[d];
    }
    int64_t tap_off[kMaxResizeRank][2];
    double tap_w[kMaxResizeRank][2];
    bool outside[kMaxResizeRank];
    const int k = a.levels;
    for (int level = 0; level < k; ++level) {
      const int d = a.order[level];
      bool o = false;
      const double xc = sourceCoordinate(a, d, coord[d], &o);
      outside[level] = o;
      double f = floor(xc);
      double r = xc - f;
      if (!isfinite(f) || fabs(f) > 1e15) f = 0, r = 0;
      const int64_t first = static_cast<int64_t>(f);
      const int64_t in = a.in_dims[d];
      double sum = 0;
      for (int j = 0; j < 2; ++j) {
        const double dist = static_cast<double>(j) - r;  // neighbour - x
        double v = fmax(0.0, 1 - fabs(dist));
        const int64_t idx = first + j;
        if (a.exclude_outside && (idx < 0 || idx >= in)) v = 0;
        tap_w[level][j] = v;
        sum = __dadd_rn(sum, v);
      }
      for (int j = 0; j < 2; ++j) {
        if (a.exclude_outside && sum != 0) tap_w[level][j] = __ddiv_rn(tap_w[level][j], sum);
        int64_t idx = first + j;
        idx = idx < 0 ? 0 : idx >= in ? in - 1 : idx;
        tap_off[level][j] = idx * stride[d];
      }
    }
    if (k == 0) {
      storeRounded(y, i, loadDouble(x, base));
      continue;
    }
    double acc[kMaxResizeRank + 1] = {};
    for (int mask = 0; mask < (1 << k); ++mask) {
      int64_t off = base;
      for (int level = 0; level < k; ++level) off += tap_off[level][(mask >> level) & 1];
      const double w0 = tap_w[0][mask & 1];
      if (w0 != 0.0) acc[0] = __dadd_rn(acc[0], __dmul_rn(w0, loadDouble(x, off)));
      // A level whose second tap this was is complete: into the next level, with its weight.
      for (int level = 0; level < k && ((mask >> level) & 1); ++level) {
        const double done = outside[level] ? a.extrapolation : acc[level];
        acc[level] = 0;
        if (level + 1 == k) {
          acc[k] = done;
          break;
        }
        const double w = tap_w[level + 1][(mask >> (level + 1)) & 1];
        if (w != 0.0) acc[level + 1] = __dadd_rn(acc[level + 1], __dmul_rn(w, done));
      }
    }
    storeRounded(y, i, acc[k]);
  }
}

}  // namespace

cudaError_t launchResize(const ResizeDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  const unsigned blocks = blocksFor(args.count);
  if (args.linear) {
    visitCudaType(args.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      resizeLinearKernel<T><<<blocks, kThreads, 0, stream>>>(args);
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
