// Device code of RoiAlign (roi_align.h): one thread per output element (roi, c, ph, pw), looping
// over its bin's sampling grid. Coordinates, weights and sums are in double with the reference
// kernel's operations in its order (kernels/reference/sampling.cc; __dmul_rn and friends, which
// are never fused into a multiply-add), rounded once to float and then to the element type as
// its storeRounded does, so results are the reference's bit for bit.
#include <cstdint>

#include "kernels/cuda/conv/roi_align_device.h"
#include "kernels/cuda/element_types.cuh"

namespace onnxopt::kernels::cuda {

namespace {

/// std::max's rule: b when a < b, else a (so a NaN first operand is kept).
__device__ __forceinline__ double maxOf(double a, double b) {
  return a < b ? b : a;
}

/// One region's bins and sampling grid, as the reference computes them.
struct RoiBins {
  double start_w, start_h, bin_w, bin_h;
  int64_t grid_h, grid_w;
  double count;  ///< samples per bin, at least 1 (avg mode's divisor)
  bool valid;    ///< false where the reference kernel fails: the output is NaN
};

template <typename T>
__device__ RoiBins roiBins(const RoiAlignDeviceArgs& a, int64_t roi) {
  const T* rois = static_cast<const T*>(a.rois);
  RoiBins g{};
  const double off = a.half_pixel ? 0.5 : 0.0;
  double r[4];
  for (int k = 0; k < 4; ++k) r[k] = static_cast<double>(load(rois, roi * 4 + k));
  g.start_w = __dsub_rn(__dmul_rn(r[0], a.scale), off);
  g.start_h = __dsub_rn(__dmul_rn(r[1], a.scale), off);
  double rw = __dsub_rn(__dsub_rn(__dmul_rn(r[2], a.scale), off), g.start_w);
  double rh = __dsub_rn(__dsub_rn(__dmul_rn(r[3], a.scale), off), g.start_h);
  if (!a.half_pixel) {
    rw = maxOf(rw, 1.0);
    rh = maxOf(rh, 1.0);
  }
  const double oh = static_cast<double>(a.out_h), ow = static_cast<double>(a.out_w);
  g.bin_h = __ddiv_rn(rh, oh);
  g.bin_w = __ddiv_rn(rw, ow);
  const double gh = a.sampling > 0 ? static_cast<double>(a.sampling) : ceil(__ddiv_rn(rh, oh));
  const double gw = a.sampling > 0 ? static_cast<double>(a.sampling) : ceil(__ddiv_rn(rw, ow));
  const int64_t b = a.batch[roi];
  g.valid = gh <= 1e6 && gw <= 1e6 && b >= 0 && b < a.n;
  if (!g.valid) return g;
  g.grid_h = static_cast<int64_t>(maxOf(gh, 0.0));
  g.grid_w = static_cast<int64_t>(maxOf(gw, 0.0));
  const int64_t samples = g.grid_h * g.grid_w > 1 ? g.grid_h * g.grid_w : 1;
  g.valid = samples <= a.max_samples;
  g.count = static_cast<double>(samples);
  return g;
}

/// The four bilinear-weighted corners of the sample at (y, x) of channel plane `plane` (zeros
/// outside [-1, H] x [-1, W], NaN at a NaN coordinate), the reference's clamping included.
template <typename T>
__device__ void weightedCorners(const RoiAlignDeviceArgs& a, const T* plane, double y, double x,
                                double (&v)[4]) {
  v[0] = v[1] = v[2] = v[3] = 0.0;
  const double hd = static_cast<double>(a.h), wd = static_cast<double>(a.w);
  if (isnan(y) || isnan(x)) {
    v[0] = v[1] = v[2] = v[3] = __longlong_as_double(0x7ff8000000000000LL);
    return;
  }
  if (y < -1.0 || y > hd || x < -1.0 || x > wd || a.h <= 0 || a.w <= 0) return;
  double yy = maxOf(y, 0.0), xc = maxOf(x, 0.0);
  int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xc), yh, xh;
  if (yl >= a.h - 1) {
    yh = yl = a.h - 1;
    yy = static_cast<double>(yl);
  } else {
    yh = yl + 1;
  }
  if (xl >= a.w - 1) {
    xh = xl = a.w - 1;
    xc = static_cast<double>(xl);
  } else {
    xh = xl + 1;
  }
  const double ly = yy - static_cast<double>(yl), lx = xc - static_cast<double>(xl);
  const double hy = 1 - ly, hx = 1 - lx;
  v[0] = __dmul_rn(__dmul_rn(hy, hx), static_cast<double>(load(plane, yl * a.w + xl)));
  v[1] = __dmul_rn(__dmul_rn(hy, lx), static_cast<double>(load(plane, yl * a.w + xh)));
  v[2] = __dmul_rn(__dmul_rn(ly, hx), static_cast<double>(load(plane, yh * a.w + xl)));
  v[3] = __dmul_rn(__dmul_rn(ly, lx), static_cast<double>(load(plane, yh * a.w + xh)));
}

/// Output (roi, ch, py, px): the average or the max over its bin's samples.
template <typename T>
__device__ double roiAlignValue(const RoiAlignDeviceArgs& a, const RoiBins& g, int64_t roi,
                                int64_t ch, int64_t py, int64_t px) {
  const T* plane = static_cast<const T*>(a.x) + (a.batch[roi] * a.c + ch) * a.h * a.w;
  const double gh = static_cast<double>(g.grid_h), gw = static_cast<double>(g.grid_w);
  double acc = 0;
  bool have = false;
  for (int64_t iy = 0; iy < g.grid_h; ++iy) {
    const double y = __dadd_rn(__dadd_rn(g.start_h, __dmul_rn(static_cast<double>(py), g.bin_h)),
                               __ddiv_rn(__dmul_rn(static_cast<double>(iy) + 0.5, g.bin_h), gh));
    for (int64_t ix = 0; ix < g.grid_w; ++ix) {
      const double x = __dadd_rn(__dadd_rn(g.start_w, __dmul_rn(static_cast<double>(px), g.bin_w)),
                                 __ddiv_rn(__dmul_rn(static_cast<double>(ix) + 0.5, g.bin_w), gw));
      double v[4];
      weightedCorners(a, plane, y, x, v);
      if (!a.max_mode) {
        acc = __dadd_rn(acc, __dadd_rn(__dadd_rn(__dadd_rn(v[0], v[1]), v[2]), v[3]));
      } else {
        const double m = maxOf(maxOf(v[0], v[1]), maxOf(v[2], v[3]));
        acc = have ? maxOf(acc, m) : m;
        have = true;
      }
    }
  }
  return a.max_mode ? acc : __ddiv_rn(acc, g.count);
}

template <typename T>
__global__ void roiAlignKernel(RoiAlignDeviceArgs a) {
  T* y = static_cast<T*>(a.y);
  const int64_t count = a.num_rois * a.c * a.out_h * a.out_w;
  ONNXOPT_GRID_STRIDE(i, count) {
    const int64_t px = i % a.out_w, py = (i / a.out_w) % a.out_h;
    const int64_t ch = (i / a.out_w / a.out_h) % a.c, roi = i / a.out_w / a.out_h / a.c;
    const RoiBins g = roiBins<T>(a, roi);
    const double v = g.valid ? roiAlignValue<T>(a, g, roi, ch, py, px)
                             : __longlong_as_double(0x7ff8000000000000LL);
    store(y, i, static_cast<Compute<T>>(v));
  }
}

}  // namespace

cudaError_t launchRoiAlign(const RoiAlignDeviceArgs& args, cudaStream_t stream) {
  const int64_t count = args.num_rois * args.c * args.out_h * args.out_w;
  if (count == 0) return cudaSuccess;
  switch (args.dtype) {
    case DataType::kFloat:
      roiAlignKernel<float><<<blocksFor(count), kThreads, 0, stream>>>(args);
      break;
    case DataType::kFloat16:
      roiAlignKernel<__half><<<blocksFor(count), kThreads, 0, stream>>>(args);
      break;
    case DataType::kBfloat16:
      roiAlignKernel<__nv_bfloat16><<<blocksFor(count), kThreads, 0, stream>>>(args);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
