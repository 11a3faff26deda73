// GridSample (16, 20, 22), AffineGrid (20), RoiAlign (10, 16), Col2Im (18) and MaxUnpool (9, 11).
//
// GridSample reads X [N, C, D1..Dr] at the points of grid [N, O1..Or, r] (normalized to [-1, 1],
// innermost spatial axis first); AffineGrid makes such a grid from affine matrices. RoiAlign
// averages (or takes the max of) bilinear samples over each bin of each region. Col2Im sums
// sliding-window columns back into an image; MaxUnpool scatters MaxPool's values to its indices.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops.h"
#include "resample.h"

namespace onnxopt::kernels::ref {

namespace {

enum class PadMode { kZeros, kBorder, kReflection };

/// Reflects x by the nearer border until it lies within [lo, hi].
double reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (!(range > 0)) return lo;
  if (x < lo) {
    double dx = lo - x;
    double n = std::trunc(dx / range);
    double r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    double n = std::trunc(dx / range);
    double r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

/// One spatial axis of GridSample: its extent and the borders reflection uses.
struct GridAxis {
  int64_t len;
  double lo, hi;
};

/// The input index read for integer coordinate i, or -1 for a zero (padding_mode zeros).
int64_t gridPixel(PadMode pad, const GridAxis& a, double i) {
  if (pad == PadMode::kZeros) {
    return i >= 0 && i < static_cast<double>(a.len) ? static_cast<int64_t>(i) : -1;
  }
  if (pad == PadMode::kBorder) {
    return static_cast<int64_t>(std::clamp(i, 0.0, static_cast<double>(a.len - 1)));
  }
  double r = std::trunc(reflect(i, a.lo, a.hi));
  return static_cast<int64_t>(std::clamp(r, 0.0, static_cast<double>(a.len - 1)));
}

double keysCubic(double d) {
  constexpr double A = -0.75;
  d = std::abs(d);
  if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0.0;
}

}  // namespace

StatusOr<Outputs> gridSampleKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* grid, requireInput(ctx, 1));
  const int64_t r = x->rank() - 2;
  if (r < 1 || (ctx.opset < 20 && r != 2)) {
    return invalidArgument("GridSample: X must be [N, C, spatial...]{}, got rank {}",
                           ctx.opset < 20 ? " with 2 spatial dims" : "", x->rank());
  }
  if (grid->rank() != r + 2 || grid->dims[0] != x->dims[0] || grid->dims.back() != r) {
    return invalidArgument("GridSample: grid must be [N, out spatial..., {}]", r);
  }
  std::string m = ctx.attrs.getString("mode", ctx.opset < 20 ? "bilinear" : "linear");
  int mode;  // 0 nearest, 1 linear, 2 cubic
  if (m == "nearest") {
    mode = 0;
  } else if (m == "linear" || m == "bilinear") {
    mode = 1;
  } else if (m == "cubic" || m == "bicubic") {
    mode = 2;
  } else {
    return invalidArgument("GridSample: unknown mode '{}'", m);
  }
  if (mode == 2 && r != 2) return invalidArgument("GridSample: cubic mode needs 2 spatial dims");
  std::string pm = ctx.attrs.getString("padding_mode", "zeros");
  PadMode pad;
  if (pm == "zeros") {
    pad = PadMode::kZeros;
  } else if (pm == "border") {
    pad = PadMode::kBorder;
  } else if (pm == "reflection") {
    pad = PadMode::kReflection;
  } else {
    return invalidArgument("GridSample: unknown padding_mode '{}'", pm);
  }
  const bool align = ctx.attrs.getInt("align_corners", 0) != 0;
  ASSIGN_OR_RETURN(std::vector<double> g, readFloats<double>(ctx, *grid));
  const int64_t n = x->dims[0], c = x->dims[1];
  Dims out_dims = {n, c};
  for (int64_t d = 1; d <= r; ++d) out_dims.push_back(grid->dims[static_cast<size_t>(d)]);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, out_dims));
  const int64_t points = dimProduct(grid->dims, 1, r + 1);
  const int64_t in_volume = dimProduct(x->dims, 2, r + 2);
  if (in_volume == 0 && points > 0 && n * c > 0) {
    return invalidArgument("GridSample: X has an empty spatial dim");
  }
  const int64_t per_axis = mode == 0 ? 1 : mode == 1 ? 2 : 4;
  int64_t taps = 1;
  for (int64_t d = 0; d < r; ++d) taps *= per_axis;
  RETURN_IF_ERROR(checkResampleWork(ctx, {n, c, points, taps}));
  std::vector<GridAxis> axes(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    int64_t len = x->dims[static_cast<size_t>(d + 2)];
    auto& a = axes[static_cast<size_t>(d)];
    a.len = len;
    a.lo = align ? 0.0 : -0.5;
    a.hi = align ? static_cast<double>(len) - 1 : static_cast<double>(len) - 0.5;
  }
  Dims in_strides = contiguousStrides(Dims(x->dims.begin() + 2, x->dims.end()));
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsBool<T>) {
      return unsupportedType(ctx, x->dtype);
    } else {
      std::vector<int64_t> first(static_cast<size_t>(r));
      std::vector<double> frac(static_cast<size_t>(r));
      std::vector<int64_t> tap(static_cast<size_t>(r));
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t p = 0; p < points; ++p) {
          const double* gp = &g[static_cast<size_t>((b * points + p) * r)];
          for (int64_t d = 0; d < r; ++d) {
            const GridAxis& a = axes[static_cast<size_t>(d)];
            double v = gp[r - 1 - d];  // the grid's last value is the innermost axis
            double len = static_cast<double>(a.len);
            double xc = align ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2;
            if (mode == 0) xc = std::nearbyint(xc);
            if (xc < a.lo || xc > a.hi) {
              if (pad == PadMode::kBorder) xc = std::clamp(xc, 0.0, len - 1);
              if (pad == PadMode::kReflection) xc = reflect(xc, a.lo, a.hi);
            }
            if (!std::isfinite(xc)) xc = -2;  // a NaN coordinate reads padding
            if (mode == 0) {
              first[static_cast<size_t>(d)] = 0;
              frac[static_cast<size_t>(d)] = std::trunc(xc);
            } else {
              double f = std::floor(xc);
              first[static_cast<size_t>(d)] = static_cast<int64_t>(f) - (mode == 2 ? 1 : 0);
              frac[static_cast<size_t>(d)] = xc - f;
            }
          }
          for (int64_t ch = 0; ch < c; ++ch) {
            int64_t base = (b * c + ch) * in_volume;
            double acc = 0;
            for (int64_t t = 0; t < taps; ++t) {
              int64_t rem = t;
              double w = 1;
              int64_t off = 0;
              bool zero = false;
              for (int64_t d = r; d-- > 0;) {
                int64_t k = rem % per_axis;
                rem /= per_axis;
                auto du = static_cast<size_t>(d);
                double coord;
                if (mode == 0) {
                  coord = frac[du];
                } else {
                  coord = static_cast<double>(first[du] + k);
                  double dist = static_cast<double>(k - (mode == 2 ? 1 : 0)) - frac[du];
                  w *= mode == 1 ? 1 - std::abs(dist) : keysCubic(dist);
                }
                int64_t idx = gridPixel(pad, axes[du], coord);
                if (idx < 0) {
                  zero = true;
                } else {
                  off += idx * in_strides[du];
                }
              }
              if (!zero && w != 0) acc += w * loadDouble<T>(*x, base + off);
            }
            storeRounded<T>(out, (b * c + ch) * points + p, acc);
          }
        }
      }
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> affineGridKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* theta, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* size_t_, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(Dims size, readInts(*size_t_, "size"));
  if (size.size() != 4 && size.size() != 5) {
    return invalidArgument("AffineGrid: size must have 4 or 5 values, got {}", size.size());
  }
  const auto r = static_cast<int64_t>(size.size()) - 2;
  const int64_t n = size[0];
  if (theta->dims != Dims{n, r, r + 1}) {
    return invalidArgument("AffineGrid: theta must be [{}, {}, {}]", n, r, r + 1);
  }
  for (int64_t v : size) {
    if (v < 0) return invalidArgument("AffineGrid: negative size");
  }
  const bool align = ctx.attrs.getInt("align_corners", 0) != 0;
  Dims out_dims = {n};
  for (int64_t d = 0; d < r; ++d) out_dims.push_back(size[static_cast<size_t>(d + 2)]);
  out_dims.push_back(r);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(theta->dtype, out_dims));
  const int64_t points = dimProduct(out_dims, 1, r + 1);
  RETURN_IF_ERROR(visitFloat(ctx, theta->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    std::vector<double> th(static_cast<size_t>(theta->numElements()));
    for (size_t i = 0; i < th.size(); ++i) th[i] = loadDouble<T>(*theta, static_cast<int64_t>(i));
    std::vector<double> base(static_cast<size_t>(r + 1));
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t p = 0; p < points; ++p) {
        // base = (x, y[, z], 1): x along the innermost axis.
        int64_t rem = p;
        for (int64_t d = r; d-- > 0;) {
          int64_t len = size[static_cast<size_t>(d + 2)];
          int64_t i = rem % len;
          rem /= len;
          double ld = static_cast<double>(len);
          double v = align ? (len > 1 ? -1 + 2.0 * static_cast<double>(i) / (ld - 1) : -1.0)
                           : -1 + (2.0 * static_cast<double>(i) + 1) / ld;
          base[static_cast<size_t>(r - 1 - d)] = v;
        }
        base[static_cast<size_t>(r)] = 1;
        for (int64_t k = 0; k < r; ++k) {
          double acc = 0;
          for (int64_t j = 0; j <= r; ++j) {
            acc +=
                th[static_cast<size_t>((b * r + k) * (r + 1) + j)] * base[static_cast<size_t>(j)];
          }
          storeRounded<T>(out, (b * points + p) * r + k, acc);
        }
      }
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

StatusOr<Outputs> roiAlignKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* rois_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* idx_t, requireInput(ctx, 2));
  if (x->rank() != 4) return invalidArgument("RoiAlign: X must be 4-D, got rank {}", x->rank());
  if (rois_t->rank() != 2 || rois_t->dims[1] != 4) {
    return invalidArgument("RoiAlign: rois must be [num_rois, 4]");
  }
  const int64_t num_rois = rois_t->dims[0];
  if (idx_t->dims != Dims{num_rois}) {
    return invalidArgument("RoiAlign: batch_indices must be [{}]", num_rois);
  }
  ASSIGN_OR_RETURN(Dims batch, readInts(*idx_t, "batch_indices"));
  ASSIGN_OR_RETURN(std::vector<double> rois, readFloats<double>(ctx, *rois_t));
  const int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
  for (int64_t b : batch) {
    if (b < 0 || b >= n) return invalidArgument("RoiAlign: batch index {} out of range", b);
  }
  const std::string mode = ctx.attrs.getString("mode", "avg");
  if (mode != "avg" && mode != "max") return invalidArgument("RoiAlign: unknown mode '{}'", mode);
  const int64_t oh = ctx.attrs.getInt("output_height", 1);
  const int64_t ow = ctx.attrs.getInt("output_width", 1);
  const int64_t sampling = ctx.attrs.getInt("sampling_ratio", 0);
  const double scale = ctx.attrs.getFloat("spatial_scale", 1.0f);
  if (oh <= 0 || ow <= 0 || oh > (int64_t{1} << 31) || ow > (int64_t{1} << 31)) {
    return invalidArgument("RoiAlign: output_height and output_width must be positive");
  }
  if (sampling < 0 || sampling > (int64_t{1} << 20)) {
    return invalidArgument("RoiAlign: bad sampling_ratio {}", sampling);
  }
  std::string coord = ctx.opset >= 16
                          ? ctx.attrs.getString("coordinate_transformation_mode", "half_pixel")
                          : std::string("output_half_pixel");
  if (coord != "half_pixel" && coord != "output_half_pixel") {
    return invalidArgument("RoiAlign: unknown coordinate_transformation_mode '{}'", coord);
  }
  const bool half_pixel = coord == "half_pixel";
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, {num_rois, c, oh, ow}));
  Status run = visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const double off = half_pixel ? 0.5 : 0.0;
    for (int64_t roi = 0; roi < num_rois; ++roi) {
      const double* rv = &rois[static_cast<size_t>(roi * 4)];
      double sw = rv[0] * scale - off, sh = rv[1] * scale - off;
      double rw = rv[2] * scale - off - sw, rh = rv[3] * scale - off - sh;
      if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
      double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
      double gh_d =
          sampling > 0 ? static_cast<double>(sampling) : std::ceil(rh / static_cast<double>(oh));
      double gw_d =
          sampling > 0 ? static_cast<double>(sampling) : std::ceil(rw / static_cast<double>(ow));
      if (!(gh_d <= 1e6) || !(gw_d <= 1e6)) {
        return makeError(StatusCode::kResourceExhausted, "RoiAlign: too many samples per bin");
      }
      auto gh = static_cast<int64_t>(std::max(gh_d, 0.0));
      auto gw = static_cast<int64_t>(std::max(gw_d, 0.0));
      RETURN_IF_ERROR(checkResampleWork(ctx, {c, oh, ow, std::max<int64_t>(gh * gw, 1), 4}));
      double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
      int64_t base_b = batch[static_cast<size_t>(roi)] * c * h * w;
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t base = base_b + ch * h * w;
        for (int64_t py = 0; py < oh; ++py) {
          for (int64_t px = 0; px < ow; ++px) {
            double acc = 0;
            bool have = false;
            for (int64_t iy = 0; iy < gh; ++iy) {
              double y = sh + static_cast<double>(py) * bh +
                         (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
              for (int64_t ix = 0; ix < gw; ++ix) {
                double xx = sw + static_cast<double>(px) * bw +
                            (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
                double v[4] = {0, 0, 0, 0};
                if (!(y < -1.0 || y > static_cast<double>(h) || xx < -1.0 ||
                      xx > static_cast<double>(w)) &&
                    h > 0 && w > 0) {
                  double yy = std::max(y, 0.0), xc = std::max(xx, 0.0);
                  auto yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xc);
                  int64_t yh, xh;
                  if (yl >= h - 1) {
                    yh = yl = h - 1;
                    yy = static_cast<double>(yl);
                  } else {
                    yh = yl + 1;
                  }
                  if (xl >= w - 1) {
                    xh = xl = w - 1;
                    xc = static_cast<double>(xl);
                  } else {
                    xh = xl + 1;
                  }
                  double ly = yy - static_cast<double>(yl), lx = xc - static_cast<double>(xl);
                  double hy = 1 - ly, hx = 1 - lx;
                  v[0] = hy * hx * loadDouble<T>(*x, base + yl * w + xl);
                  v[1] = hy * lx * loadDouble<T>(*x, base + yl * w + xh);
                  v[2] = ly * hx * loadDouble<T>(*x, base + yh * w + xl);
                  v[3] = ly * lx * loadDouble<T>(*x, base + yh * w + xh);
                }
                if (mode == "avg") {
                  acc += v[0] + v[1] + v[2] + v[3];
                } else {
                  // onnxruntime's max mode: the largest weighted corner of each sample.
                  double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                  acc = have ? std::max(acc, m) : m;
                  have = true;
                }
              }
            }
            if (mode == "avg") acc /= count;
            storeRounded<T>(out, ((roi * c + ch) * oh + py) * ow + px, acc);
          }
        }
      }
    }
    return Status::ok();
  });
  RETURN_IF_ERROR(run);
  return single(std::move(out));
}

namespace {

/// An int-list attribute of `count` values, or `fallback` repeated when absent.
StatusOr<Dims> listAttr(const KernelContext& ctx, const char* name, size_t count,
                        int64_t fallback) {
  auto v = ctx.attrs.getInts(name);
  if (!v) return Dims(count, fallback);
  if (v->size() != count) {
    return invalidArgument("{}: {} must have {} values, got {}", ctx.op, name, count, v->size());
  }
  for (int64_t e : *v) {
    if (e < 0 || e > (int64_t{1} << 31))
      return invalidArgument("{}: bad {} value {}", ctx.op, name, e);
  }
  return *v;
}

}  // namespace

StatusOr<Outputs> col2ImKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* image_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* block_t, requireInput(ctx, 2));
  ASSIGN_OR_RETURN(Dims image, readInts(*image_t, "image_shape"));
  ASSIGN_OR_RETURN(Dims block, readInts(*block_t, "block_shape"));
  const size_t r = image.size();
  if (r == 0 || block.size() != r) {
    return invalidArgument(
        "Col2Im: image_shape and block_shape must have the same non-zero length");
  }
  if (x->rank() != 3) return invalidArgument("Col2Im: input must be [N, C*prod(block), L]");
  for (size_t d = 0; d < r; ++d) {
    if (image[d] < 0 || block[d] <= 0 || image[d] > (int64_t{1} << 31) ||
        block[d] > (int64_t{1} << 31)) {
      return invalidArgument("Col2Im: bad image_shape or block_shape");
    }
  }
  ASSIGN_OR_RETURN(Dims dil, listAttr(ctx, "dilations", r, 1));
  ASSIGN_OR_RETURN(Dims pads, listAttr(ctx, "pads", 2 * r, 0));
  ASSIGN_OR_RETURN(Dims strides, listAttr(ctx, "strides", r, 1));
  for (size_t d = 0; d < r; ++d) {
    if (dil[d] == 0 || strides[d] == 0) {
      return invalidArgument("Col2Im: dilations and strides must be positive");
    }
  }
  int64_t block_volume = 1, windows = 1;
  Dims out_pos(r);
  for (size_t d = 0; d < r; ++d) {
    block_volume *= block[d];
    if (block_volume > (int64_t{1} << 40)) return invalidArgument("Col2Im: block too large");
    int64_t span = dil[d] * (block[d] - 1) + 1;
    int64_t padded = image[d] + pads[d] + pads[r + d];
    out_pos[d] = padded < span ? 0 : (padded - span) / strides[d] + 1;
    windows *= out_pos[d];
    if (windows > (int64_t{1} << 40)) return invalidArgument("Col2Im: too many windows");
  }
  const int64_t n = x->dims[0];
  if (x->dims[1] % block_volume != 0) {
    return invalidArgument("Col2Im: input dim 1 ({}) is not a multiple of prod(block_shape) {}",
                           x->dims[1], block_volume);
  }
  if (x->dims[2] != windows) {
    return invalidArgument("Col2Im: input dim 2 ({}) must be the number of blocks {}", x->dims[2],
                           windows);
  }
  const int64_t c = x->dims[1] / block_volume;
  Dims out_dims = {n, c};
  out_dims.insert(out_dims.end(), image.begin(), image.end());
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, out_dims));
  RETURN_IF_ERROR(checkResampleWork(ctx, {n, c, block_volume, windows}));
  const int64_t image_volume = dimProduct(image, 0, static_cast<int64_t>(r));
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsBool<T>) {
      return unsupportedType(ctx, x->dtype);
    } else {
      std::vector<double> acc(static_cast<size_t>(n * c * image_volume), 0.0);
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t ch = 0; ch < c; ++ch) {
          for (int64_t k = 0; k < block_volume; ++k) {
            for (int64_t l = 0; l < windows; ++l) {
              int64_t krem = k, lrem = l, off = 0, stride = 1;
              bool inside = true;
              for (size_t d = r; d-- > 0;) {
                int64_t kd = krem % block[d], ld = lrem % out_pos[d];
                krem /= block[d];
                lrem /= out_pos[d];
                int64_t pos = ld * strides[d] - pads[d] + kd * dil[d];
                if (pos < 0 || pos >= image[d]) inside = false;
                off += pos * stride;
                stride *= image[d];
              }
              if (!inside) continue;
              int64_t src = ((b * c + ch) * block_volume + k) * windows + l;
              acc[static_cast<size_t>((b * c + ch) * image_volume + off)] += loadDouble<T>(*x, src);
            }
          }
        }
      }
      for (size_t i = 0; i < acc.size(); ++i) storeRounded<T>(out, static_cast<int64_t>(i), acc[i]);
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> maxUnpoolKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* ind_t, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  if (x->rank() < 3) return invalidArgument("MaxUnpool: X must be [N, C, spatial...]");
  if (ind_t->dims != x->dims) return invalidArgument("MaxUnpool: I must have the shape of X");
  ASSIGN_OR_RETURN(Dims ind, readInts(*ind_t, "I"));
  const auto r = static_cast<size_t>(x->rank() - 2);
  auto ks = ctx.attrs.getInts("kernel_shape");
  if (!ks || ks->size() != r) {
    return invalidArgument("MaxUnpool: kernel_shape must have {} values", r);
  }
  for (int64_t k : *ks) {
    if (k <= 0 || k > (int64_t{1} << 31)) return invalidArgument("MaxUnpool: bad kernel_shape");
  }
  ASSIGN_OR_RETURN(Dims pads, listAttr(ctx, "pads", 2 * r, 0));
  ASSIGN_OR_RETURN(Dims strides, listAttr(ctx, "strides", r, 1));
  // The indices address the unpooled shape MaxPool saw; an output_shape (which may be larger, as
  // MaxPool floors) holds it in its leading corner.
  Dims unpooled = {x->dims[0], x->dims[1]};
  for (size_t d = 0; d < r; ++d) {
    if (strides[d] == 0) return invalidArgument("MaxUnpool: strides must be positive");
    int64_t v = (x->dims[d + 2] - 1) * strides[d] + (*ks)[d] - pads[d] - pads[r + d];
    if (v < 0) return invalidArgument("MaxUnpool: negative output extent");
    unpooled.push_back(v);
  }
  Dims out_dims = unpooled;
  const HostTensor* shape_t = ctx.input(2);
  if (shape_t != nullptr && shape_t->numElements() > 0) {
    ASSIGN_OR_RETURN(out_dims, readInts(*shape_t, "output_shape"));
    if (out_dims.size() != r + 2) {
      return invalidArgument("MaxUnpool: output_shape must have {} values", r + 2);
    }
    for (size_t d = 0; d < out_dims.size(); ++d) {
      if (out_dims[d] < unpooled[d]) {
        return invalidArgument("MaxUnpool: output_shape {} is smaller than the unpooled extent {}",
                               out_dims[d], unpooled[d]);
      }
    }
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, out_dims));
  ASSIGN_OR_RETURN(int64_t total, checkedNumElements(unpooled));
  Dims un_strides = contiguousStrides(unpooled);
  Dims out_strides = contiguousStrides(out_dims);
  size_t eb = elementBytes(x->dtype);
  for (size_t i = 0; i < ind.size(); ++i) {
    if (ind[i] < 0 || ind[i] >= total) {
      return invalidArgument("MaxUnpool: index {} out of range for {} elements", ind[i], total);
    }
    int64_t rem = ind[i], off = 0;
    for (size_t d = 0; d < unpooled.size(); ++d) {
      off += (rem / un_strides[d]) * out_strides[d];
      rem %= un_strides[d];
    }
    copyElement(out, off, *x, static_cast<int64_t>(i), eb);
  }
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
