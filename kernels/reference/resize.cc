// Resize (opsets 10 to 19) and Upsample (7, 9); DepthToSpace, SpaceToDepth and CenterCropPad.
//
// Resize maps every output coordinate y of a resized axis to an input coordinate
// x = transform(y) (coordinate_transformation_mode) and interpolates there: nearest takes one
// input element, linear and cubic weigh the taps around x (per axis: the op is separable, so the
// interpolating modes run one axis at a time over a double buffer, downsampling axes first).
#include <algorithm>
#include <cmath>
#include <string>

#include "onnxopt/kernels/resize_axes.h"
#include "ops.h"
#include "resample.h"

namespace onnxopt::kernels::ref {

namespace {

/// At most this many taps per output coordinate (antialiased downsampling by a tiny scale).
constexpr int64_t kMaxTaps = int64_t{1} << 24;

enum class Mode { kNearest, kLinear, kCubic };

struct ResizeParams {
  Mode mode = Mode::kNearest;
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;
};

/// One resized axis: its input and output extents, the scale, and the roi (tf_crop_and_resize).
using AxisPlan = ResizeAxis;

/// The input coordinate of output coordinate y, and whether it lies outside the input
/// (tf_crop_and_resize extrapolates there).
double sourceCoordinate(const ResizeParams& p, const AxisPlan& a, int64_t y, bool* outside) {
  const double yd = static_cast<double>(y);
  const double in = static_cast<double>(a.in);
  const double out_width = a.scale * in;  // the unrounded output length
  *outside = false;
  const std::string& m = p.coord;
  if (m == "align_corners") {
    return out_width == 1.0 ? 0.0 : yd * (in - 1) / (out_width - 1);
  }
  if (m == "asymmetric") return yd / a.scale;
  if (m == "tf_crop_and_resize") {
    double x = out_width == 1.0 ? (a.roi_end - a.roi_start) * (in - 1) / 2
                                : yd * (a.roi_end - a.roi_start) * (in - 1) / (out_width - 1);
    x += a.roi_start * (in - 1);
    *outside = x < 0 || x > in - 1;
    return x;
  }
  if (m == "pytorch_half_pixel") return out_width == 1.0 ? -0.5 : (yd + 0.5) / a.scale - 0.5;
  if (m == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(a.out) / out_width;
    double offset = in / 2 * (1 - adjustment);
    return offset + (yd + 0.5) / a.scale - 0.5;
  }
  if (m == "tf_half_pixel_for_nn") return (yd + 0.5) / a.scale;
  return (yd + 0.5) / a.scale - 0.5;  // half_pixel
}

/// The nearest input index of coordinate x under nearest_mode ("simple": Upsample and
/// Resize-10, which round down when upsampling and up when downsampling).
int64_t nearestIndex(const ResizeParams& p, const AxisPlan& a, double x) {
  double f = std::floor(x);
  double r = x - f;
  double pick;
  if (r == 0.0) {
    pick = f;
  } else if (p.nearest == "round_prefer_ceil") {
    pick = r < 0.5 ? f : f + 1;
  } else if (p.nearest == "floor") {
    pick = f;
  } else if (p.nearest == "ceil") {
    pick = f + 1;
  } else if (p.nearest == "simple") {
    pick = a.scale < 1.0 ? f + 1 : f;
  } else {
    pick = r <= 0.5 ? f : f + 1;  // round_prefer_floor
  }
  pick = std::clamp(pick, 0.0, static_cast<double>(a.in - 1));
  return static_cast<int64_t>(pick);
}

/// The cubic convolution kernel with parameter A at distance d.
double cubicWeight(double d, double A) {
  d = std::abs(d);
  if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0.0;
}

/// Taps of one output coordinate along one axis: weights of inputs first .. first+n-1 (clamped
/// to the edge when read), or extrapolated.
struct Taps {
  int64_t half = 1;  ///< taps on each side of x: n = 2 * half
  std::vector<int64_t> first;
  std::vector<double> weights;  ///< out * n
  std::vector<uint8_t> outside;
};

StatusOr<Taps> computeTaps(const KernelContext& ctx, const ResizeParams& p, const AxisPlan& a) {
  Taps t;
  int64_t base_half = p.mode == Mode::kCubic ? 2 : 1;
  double s = std::min(a.scale, 1.0);
  bool stretch = p.antialias && a.scale < 1.0;
  if (stretch) {
    double start = std::floor(-static_cast<double>(base_half) / s) + 1;
    if (!(1 - start <= static_cast<double>(kMaxTaps))) {
      return makeError(StatusCode::kResourceExhausted, "{}: the antialias filter is too wide",
                       ctx.op);
    }
    t.half = static_cast<int64_t>(1 - start);
  } else {
    t.half = base_half;
  }
  int64_t n = 2 * t.half;
  RETURN_IF_ERROR(checkResampleWork(ctx, {a.out, n}));
  t.first.resize(static_cast<size_t>(a.out));
  t.weights.assign(static_cast<size_t>(a.out * n), 0.0);
  t.outside.assign(static_cast<size_t>(a.out), 0);
  for (int64_t y = 0; y < a.out; ++y) {
    bool outside = false;
    double x = sourceCoordinate(p, a, y, &outside);
    t.outside[static_cast<size_t>(y)] = outside ? 1 : 0;
    double f = std::floor(x);
    double r = x - f;
    if (!std::isfinite(f) || std::abs(f) > 1e15) f = 0, r = 0;
    int64_t first = static_cast<int64_t>(f) - t.half + 1;
    t.first[static_cast<size_t>(y)] = first;
    double* w = &t.weights[static_cast<size_t>(y * n)];
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      double d = static_cast<double>(j - t.half + 1) - r;  // neighbour - x
      double v;
      if (p.mode == Mode::kLinear) {
        v = std::max(0.0, 1 - std::abs(d * (stretch ? s : 1.0)));
      } else {
        v = cubicWeight(d * (stretch ? s : 1.0), p.cubic_a);
      }
      int64_t idx = first + j;
      if (p.exclude_outside && (idx < 0 || idx >= a.in)) v = 0;
      w[j] = v;
      sum += v;
    }
    if ((stretch || p.exclude_outside) && sum != 0) {
      for (int64_t j = 0; j < n; ++j) w[j] /= sum;
    }
  }
  return t;
}

/// One interpolation pass along a.axis: data of shape dims becomes the same with a.out there.
StatusOr<std::vector<double>> resizeAxis(const KernelContext& ctx, const ResizeParams& p,
                                         const std::vector<double>& data, Dims& dims,
                                         const AxisPlan& a) {
  ASSIGN_OR_RETURN(Taps taps, computeTaps(ctx, p, a));
  auto ax = static_cast<int64_t>(a.axis);
  int64_t outer = dimProduct(dims, 0, ax);
  int64_t inner = dimProduct(dims, ax + 1, static_cast<int64_t>(dims.size()));
  int64_t n = 2 * taps.half;
  RETURN_IF_ERROR(checkResampleWork(ctx, {outer, inner, a.out, n}));
  Dims out_dims = dims;
  out_dims[static_cast<size_t>(ax)] = a.out;
  ASSIGN_OR_RETURN(int64_t count, checkedNumElements(out_dims));
  if (static_cast<uint64_t>(count) > kMaxOutputBytes / sizeof(double)) {
    return makeError(StatusCode::kResourceExhausted, "{}: intermediate result too large", ctx.op);
  }
  std::vector<double> out(static_cast<size_t>(count), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t y = 0; y < a.out; ++y) {
      double* dst = &out[static_cast<size_t>((o * a.out + y) * inner)];
      if (taps.outside[static_cast<size_t>(y)]) {
        std::fill(dst, dst + inner, p.extrapolation);
        continue;
      }
      const double* w = &taps.weights[static_cast<size_t>(y * n)];
      int64_t first = taps.first[static_cast<size_t>(y)];
      for (int64_t j = 0; j < n; ++j) {
        if (w[j] == 0.0) continue;
        int64_t idx = std::clamp<int64_t>(first + j, 0, a.in - 1);
        const double* src = &data[static_cast<size_t>((o * a.in + idx) * inner)];
        for (int64_t k = 0; k < inner; ++k) dst[k] += w[j] * src[k];
      }
    }
  }
  dims = out_dims;
  return out;
}

bool isIdentityAxis(const ResizeParams& p, const AxisPlan& a) {
  if (a.in != a.out || std::abs(a.scale - 1.0) > 1e-9) return false;
  if (p.coord == "tf_crop_and_resize") {
    return std::abs(a.roi_start) < 1e-9 && std::abs(a.roi_end - 1.0) < 1e-9;
  }
  return p.coord != "tf_half_pixel_for_nn";  // which shifts by half a pixel even at scale 1
}

StatusOr<HostTensor> runResize(const KernelContext& ctx, const ResizeParams& p, const HostTensor& x,
                               std::vector<AxisPlan> plans) {
  Dims out_dims = x.dims;
  for (const AxisPlan& a : plans) {
    if (a.in == 0 && a.out > 0) {
      return invalidArgument("{}: cannot resize an empty axis {} to {}", ctx.op, a.axis, a.out);
    }
    out_dims[static_cast<size_t>(a.axis)] = a.out;
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x.dtype, out_dims));
  int64_t total = out.numElements();
  if (total == 0) return out;
  plans.erase(std::remove_if(plans.begin(), plans.end(),
                             [&](const AxisPlan& a) { return isIdentityAxis(p, a); }),
              plans.end());
  const int64_t rank = x.rank();
  if (p.mode == Mode::kNearest) {
    // Per axis, the input index of every output index (-1: extrapolated).
    std::vector<std::vector<int64_t>> src(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      auto& s = src[static_cast<size_t>(d)];
      s.resize(static_cast<size_t>(out_dims[static_cast<size_t>(d)]));
      for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) s[static_cast<size_t>(i)] = i;
    }
    for (const AxisPlan& a : plans) {
      auto& s = src[static_cast<size_t>(a.axis)];
      for (int64_t y = 0; y < a.out; ++y) {
        bool outside = false;
        double xc = sourceCoordinate(p, a, y, &outside);
        s[static_cast<size_t>(y)] = outside ? -1 : nearestIndex(p, a, xc);
      }
    }
    Dims in_strides = contiguousStrides(x.dims);
    size_t eb = elementBytes(x.dtype);
    std::vector<int64_t> counter(static_cast<size_t>(rank), 0);
    std::vector<int64_t> extrapolated;
    for (int64_t i = 0; i < total; ++i) {
      int64_t off = 0;
      bool outside = false;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t s =
            src[static_cast<size_t>(d)][static_cast<size_t>(counter[static_cast<size_t>(d)])];
        if (s < 0) outside = true;
        off += s * in_strides[static_cast<size_t>(d)];
      }
      if (outside) {
        extrapolated.push_back(i);
      } else {
        copyElement(out, i, x, off, eb);
      }
      for (int64_t d = rank; d-- > 0;) {
        if (++counter[static_cast<size_t>(d)] < out_dims[static_cast<size_t>(d)]) break;
        counter[static_cast<size_t>(d)] = 0;
      }
    }
    if (!extrapolated.empty() && x.dtype != DataType::kString) {
      RETURN_IF_ERROR(visitType(ctx, x.dtype, [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        for (int64_t i : extrapolated) storeRounded<T>(out, i, p.extrapolation);
        return Status::ok();
      }));
    }
    return out;
  }
  // Downsampling axes first keeps the intermediate buffers no larger than input or output.
  std::stable_sort(plans.begin(), plans.end(), [](const AxisPlan& a, const AxisPlan& b) {
    return (a.out < a.in) > (b.out < b.in);
  });
  RETURN_IF_ERROR(visitType(ctx, x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    std::vector<double> data(static_cast<size_t>(x.numElements()));
    for (size_t i = 0; i < data.size(); ++i) data[i] = loadDouble<T>(x, static_cast<int64_t>(i));
    Dims dims = x.dims;
    for (const AxisPlan& a : plans) {
      ASSIGN_OR_RETURN(data, resizeAxis(ctx, p, data, dims, a));
    }
    for (int64_t i = 0; i < total; ++i) storeRounded<T>(out, i, data[static_cast<size_t>(i)]);
    return Status::ok();
  }));
  return out;
}

/// A float input (scales, roi) as doubles; an omitted or empty one is empty.
StatusOr<std::vector<double>> optionalFloats(const KernelContext& ctx, size_t i) {
  const HostTensor* t = ctx.input(i);
  if (t == nullptr || t->numElements() == 0) return std::vector<double>{};
  return readFloats<double>(ctx, *t);
}

StatusOr<Mode> parseMode(const KernelContext& ctx, const std::string& m) {
  if (m == "nearest") return Mode::kNearest;
  if (m == "linear" || m == "bilinear" || m == "trilinear") return Mode::kLinear;
  if (m == "cubic" || m == "bicubic") return Mode::kCubic;
  return invalidArgument("{}: unknown mode '{}'", ctx.op, m);
}

}  // namespace

StatusOr<Outputs> resizeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  const KernelAttrs& at = ctx.attrs;
  const bool upsample = ctx.op == "Upsample";
  const bool legacy = upsample || ctx.opset < 11;  // Upsample and Resize-10
  ResizeParams p;
  ASSIGN_OR_RETURN(p.mode, parseMode(ctx, at.getString("mode", "nearest")));
  if (upsample && p.mode == Mode::kCubic) {
    return invalidArgument("Upsample: mode must be nearest or linear");
  }
  if (legacy) {
    p.coord = "asymmetric";
    p.nearest = "simple";
  } else {
    p.coord = at.getString("coordinate_transformation_mode", "half_pixel");
    p.nearest = at.getString("nearest_mode", "round_prefer_floor");
    p.cubic_a = at.getFloat("cubic_coeff_a", -0.75f);
    p.exclude_outside = at.getInt("exclude_outside", 0) != 0;
    p.extrapolation = at.getFloat("extrapolation_value", 0.0f);
    if (ctx.opset >= 18) p.antialias = at.getInt("antialias", 0) != 0;
    static const char* kCoords[] = {
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
        "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
    bool known = std::any_of(std::begin(kCoords), std::end(kCoords),
                             [&](const char* c) { return p.coord == c; });
    if (p.coord == "half_pixel_symmetric" && ctx.opset < 19) known = false;
    if (p.coord == "tf_half_pixel_for_nn" && ctx.opset >= 13) known = false;
    if (!known) {
      return invalidArgument("{}: unknown coordinate_transformation_mode '{}'", ctx.op, p.coord);
    }
    static const char* kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    if (std::none_of(std::begin(kNearest), std::end(kNearest),
                     [&](const char* c) { return p.nearest == c; })) {
      return invalidArgument("{}: unknown nearest_mode '{}'", ctx.op, p.nearest);
    }
  }
  if (p.mode != Mode::kNearest && x->dtype == DataType::kString) {
    return unsupportedType(ctx, x->dtype);
  }
  const int64_t rank = x->rank();
  Dims axes;
  if (!upsample && ctx.opset >= 18 && at.getInts("axes")) {
    ASSIGN_OR_RETURN(axes, normalizeAxes(*at.getInts("axes"), rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<double> scales, roi;
  Dims sizes;
  if (upsample && ctx.opset < 9) {
    auto fl = at.float_lists.find("scales");
    if (fl == at.float_lists.end())
      return invalidArgument("Upsample: the scales attribute is missing");
    scales.assign(fl->second.begin(), fl->second.end());
  } else if (legacy) {
    ASSIGN_OR_RETURN(const HostTensor* s, requireInput(ctx, 1));
    ASSIGN_OR_RETURN(scales, readFloats<double>(ctx, *s));
  } else {
    ASSIGN_OR_RETURN(roi, optionalFloats(ctx, 1));
    ASSIGN_OR_RETURN(scales, optionalFloats(ctx, 2));
    const HostTensor* s = ctx.input(3);
    if (s != nullptr && s->numElements() > 0) {
      ASSIGN_OR_RETURN(sizes, readInts(*s, "sizes"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<AxisPlan> plans,
                   resizeAxes(ctx.op, ctx.opset, at, x->dims, axes, roi, scales, sizes,
                              p.coord == "tf_crop_and_resize"));
  ASSIGN_OR_RETURN(HostTensor out, runResize(ctx, p, *x, std::move(plans)));
  return single(std::move(out));
}

// --- DepthToSpace and SpaceToDepth
// ------------------------------------------------------------------

StatusOr<Outputs> depthSpaceKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  if (x->rank() != 4)
    return invalidArgument("{}: input must be 4-D, got rank {}", ctx.op, x->rank());
  if (!ctx.attrs.has("blocksize")) return invalidArgument("{}: blocksize is required", ctx.op);
  const int64_t b = ctx.attrs.getInt("blocksize", 0);
  if (b <= 0 || b > (int64_t{1} << 31)) {
    return invalidArgument("{}: blocksize must be positive, got {}", ctx.op, b);
  }
  const int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
  const bool to_space = ctx.op == "DepthToSpace";
  std::string mode = ctx.opset >= 11 ? ctx.attrs.getString("mode", "DCR") : std::string("DCR");
  if (to_space && mode != "DCR" && mode != "CRD") {
    return invalidArgument("DepthToSpace: mode must be DCR or CRD, got '{}'", mode);
  }
  const bool crd = mode == "CRD";
  size_t eb = elementBytes(x->dtype);
  if (to_space) {
    if (c % (b * b) != 0) {
      return invalidArgument("DepthToSpace: channels {} not divisible by blocksize^2", c);
    }
    const int64_t oc = c / (b * b);
    ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, {n, oc, h * b, w * b}));
    int64_t i = 0;
    for (int64_t in = 0; in < n; ++in) {
      for (int64_t co = 0; co < oc; ++co) {
        for (int64_t y = 0; y < h * b; ++y) {
          for (int64_t xx = 0; xx < w * b; ++xx, ++i) {
            int64_t bi = y % b, bj = xx % b;
            int64_t ci = crd ? co * b * b + bi * b + bj : (bi * b + bj) * oc + co;
            copyElement(out, i, *x, ((in * c + ci) * h + y / b) * w + xx / b, eb);
          }
        }
      }
    }
    return single(std::move(out));
  }
  if (h % b != 0 || w % b != 0) {
    return invalidArgument("SpaceToDepth: spatial dims {}x{} not divisible by blocksize {}", h, w,
                           b);
  }
  const int64_t oh = h / b, ow = w / b;
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, {n, c * b * b, oh, ow}));
  int64_t i = 0;
  for (int64_t in = 0; in < n; ++in) {
    for (int64_t co = 0; co < c * b * b; ++co) {
      int64_t blk = co / c, ci = co % c, bi = blk / b, bj = blk % b;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t xx = 0; xx < ow; ++xx, ++i) {
          copyElement(out, i, *x, ((in * c + ci) * h + y * b + bi) * w + xx * b + bj, eb);
        }
      }
    }
  }
  return single(std::move(out));
}

// --- CenterCropPad
// ----------------------------------------------------------------------------------

StatusOr<Outputs> centerCropPadKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  ASSIGN_OR_RETURN(const HostTensor* shape_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(Dims shape, readInts(*shape_t, "shape"));
  const int64_t rank = x->rank();
  Dims axes;
  if (auto a = ctx.attrs.getInts("axes")) {
    ASSIGN_OR_RETURN(axes, normalizeAxes(*a, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (shape.size() != axes.size()) {
    return invalidArgument("CenterCropPad: {} shape values for {} axes", shape.size(), axes.size());
  }
  Dims out_dims = x->dims;
  // Per axis: output index o reads input index o + shift (when in range).
  Dims shift(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = static_cast<size_t>(axes[i]);
    if (shape[i] < 0) return invalidArgument("CenterCropPad: negative shape {}", shape[i]);
    int64_t in = x->dims[a];
    out_dims[a] = shape[i];
    // Cropping starts at (in - out) / 2; padding puts (out - in) / 2 before.
    shift[a] = in >= shape[i] ? (in - shape[i]) / 2 : -((shape[i] - in) / 2);
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, out_dims));
  int64_t total = out.numElements();
  Dims in_strides = contiguousStrides(x->dims);
  size_t eb = elementBytes(x->dtype);
  std::vector<int64_t> counter(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t off = 0;
    bool inside = true;
    for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
      int64_t s = counter[d] + shift[d];
      if (s < 0 || s >= x->dims[d]) inside = false;
      off += s * in_strides[d];
    }
    if (inside) copyElement(out, i, *x, off, eb);
    for (size_t d = static_cast<size_t>(rank); d-- > 0;) {
      if (++counter[d] < out_dims[d]) break;
      counter[d] = 0;
    }
  }
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
