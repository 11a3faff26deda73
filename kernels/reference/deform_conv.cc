// DeformConv (opsets 19 and 22, N-D): a convolution whose kernel taps move by learned offsets.
//   p = o * stride - pad_begin + tap * dilation + offset[n, og, tap, :, o]     (per spatial dim)
//   col[c, tap] = mask[n, og, tap, o] * interp(X[n, c], p)    for c in offset group og
//   Y[n, m, o] = B[m] + sum_{c in group(m), tap} W[m, c, tap] * col[c, tap]
// interp is multilinear over the 2^rank neighbours of p, a neighbour outside X counting as zero
// (GridSample with align_corners and zeros padding, as ONNX's reference samples). The output's
// spatial size is the offset's, which must equal Conv's
//   out = floor((in + pad_begin + pad_end - ((k - 1) * d + 1)) / s) + 1.
// Computes in double and rounds once; more than 2^40 multiply-adds is kResourceExhausted.
#include <algorithm>
#include <cmath>

#include "double_compute.h"

namespace onnxopt::kernels::ref {

namespace {

constexpr int64_t kMaxGeometryAttr = int64_t{1} << 31;

/// An ints attribute of `count` values in [min, kMaxGeometryAttr], or `fallback` repeated.
StatusOr<Dims> geometryAttr(const KernelContext& ctx, const char* name, size_t count,
                            int64_t fallback, int64_t min) {
  Dims v = ctx.attrs.getInts(name).value_or(Dims(count, fallback));
  if (v.size() != count) {
    return invalidArgument("{}: {} needs {} values, not {}", ctx.op, name, count, v.size());
  }
  if (std::any_of(v.begin(), v.end(), [&](int64_t e) { return e < min || e > kMaxGeometryAttr; })) {
    return invalidArgument("{}: a value of {} is out of range", ctx.op, name);
  }
  return v;
}

/// The spatial geometry: input, kernel and output sizes, strides, dilations, pads.
struct DeformGeometry {
  Dims in, kernel, out, strides, dilations, pads;  // pads: begins then ends
  int64_t kernel_volume = 1, out_volume = 1, in_volume = 1;
};

/// Multilinear sample of one channel plane (sizes `in`, row-major) at position p; neighbours
/// outside the plane are zero.
double sampleAt(const double* plane, const Dims& in, const std::vector<double>& p,
                const Dims& in_strides) {
  size_t rank = in.size();
  std::vector<int64_t> base(rank);
  std::vector<double> frac(rank);
  for (size_t d = 0; d < rank; ++d) {
    // Farther than one cell outside the plane, every neighbour is outside (and NaN stays out).
    if (!(p[d] > -1.0 && p[d] < static_cast<double>(in[d]))) return 0.0;
    double f = std::floor(p[d]);
    base[d] = static_cast<int64_t>(f);
    frac[d] = p[d] - f;
  }
  double value = 0;
  for (uint64_t corner = 0; corner < (uint64_t{1} << rank); ++corner) {
    double weight = 1;
    int64_t index = 0;
    bool inside = true;
    for (size_t d = 0; d < rank && inside; ++d) {
      bool upper = ((corner >> d) & 1) != 0;
      int64_t at = base[d] + (upper ? 1 : 0);
      weight *= upper ? frac[d] : 1.0 - frac[d];
      inside = at >= 0 && at < in[d];
      index += at * in_strides[d];
    }
    if (inside && weight != 0.0) value += weight * plane[index];
  }
  return value;
}

}  // namespace

StatusOr<Outputs> deformConvKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* w, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* offset, requireInput(ctx, 2));
  const HostTensor* bias = ctx.input(3);
  const HostTensor* mask = ctx.input(4);
  std::vector<const HostTensor*> all = {x, w, offset};
  for (const HostTensor* t : {bias, mask}) {
    if (t != nullptr) all.push_back(t);
  }
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  RETURN_IF_ERROR(checkSameType(ctx, all));
  if (x->rank() < 3) return invalidArgument("{}: X must have rank 3 or more", ctx.op);
  if (w->rank() != x->rank() || offset->rank() != x->rank()) {
    return invalidArgument("{}: W and offset must have X's rank {}", ctx.op, x->rank());
  }
  size_t rank = x->rank() - 2;
  int64_t n = x->dims[0], c = x->dims[1], m = w->dims[0], cg = w->dims[1];
  int64_t group = ctx.attrs.getInt("group", 1);
  int64_t offset_group = ctx.attrs.getInt("offset_group", 1);
  if (group < 1 || c % group != 0 || cg * group != c || m % group != 0) {
    return invalidArgument(
        "{}: group {} does not fit {} input channels, W's {} per group and {} "
        "output channels",
        ctx.op, group, c, cg, m);
  }
  if (offset_group < 1 || c % offset_group != 0) {
    return invalidArgument("{}: offset_group {} does not divide the {} input channels", ctx.op,
                           offset_group, c);
  }
  DeformGeometry g;
  g.in.assign(x->dims.begin() + 2, x->dims.end());
  g.kernel.assign(w->dims.begin() + 2, w->dims.end());
  g.out.assign(offset->dims.begin() + 2, offset->dims.end());
  if (auto ks = ctx.attrs.getInts("kernel_shape"); ks && *ks != g.kernel) {
    return invalidArgument("{}: kernel_shape does not match W", ctx.op);
  }
  ASSIGN_OR_RETURN(g.strides, geometryAttr(ctx, "strides", rank, 1, 1));
  ASSIGN_OR_RETURN(g.dilations, geometryAttr(ctx, "dilations", rank, 1, 1));
  ASSIGN_OR_RETURN(g.pads, geometryAttr(ctx, "pads", 2 * rank, 0, 0));
  for (size_t d = 0; d < rank; ++d) {
    if (g.kernel[d] < 1 || g.kernel[d] > kMaxGeometryAttr || g.in[d] > kMaxGeometryAttr) {
      return invalidArgument("{}: kernel or input size out of range", ctx.op);
    }
    int64_t span =
        g.in[d] + g.pads[d] + g.pads[d + rank] - ((g.kernel[d] - 1) * g.dilations[d] + 1);
    int64_t expected = span < 0 ? 0 : span / g.strides[d] + 1;
    if (span < 0 || g.out[d] != expected) {
      return invalidArgument("{}: offset's spatial size {} along axis {} is not the output size {}",
                             ctx.op, g.out[d], d, expected);
    }
    g.kernel_volume *= g.kernel[d];
    g.out_volume *= g.out[d];
    g.in_volume *= g.in[d];
  }
  int64_t taps = g.kernel_volume;
  if (offset->dims[0] != n || offset->dims[1] != offset_group * taps * static_cast<int64_t>(rank)) {
    return invalidArgument("{}: offset must have shape [{}, {}, ...]", ctx.op, n,
                           offset_group * taps * static_cast<int64_t>(rank));
  }
  if (mask != nullptr) {
    Dims want = {n, offset_group * taps};
    want.insert(want.end(), g.out.begin(), g.out.end());
    if (mask->dims != want) {
      return invalidArgument("{}: mask must have shape [{}, {}, output...]", ctx.op, n,
                             offset_group * taps);
    }
  }
  if (bias != nullptr && (bias->rank() != 1 || bias->dims[0] != m)) {
    return invalidArgument("{}: B must have shape [{}]", ctx.op, m);
  }
  Dims out_dims = {n, m};
  out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, out_dims));
  if (out.numElements() == 0) return single(std::move(out));
  int64_t corners = int64_t{1} << std::min<size_t>(rank, 62);
  RETURN_IF_ERROR(checkWorkLimit(ctx, {n, g.out_volume, taps, c, corners}));
  RETURN_IF_ERROR(checkWorkLimit(ctx, {n, g.out_volume, taps, m, cg}));
  if (static_cast<uint64_t>(c) * static_cast<uint64_t>(taps) > kMaxOutputBytes / sizeof(double)) {
    return makeError(StatusCode::kResourceExhausted, "{}: {} channels of {} taps are too many",
                     ctx.op, c, taps);
  }

  ASSIGN_OR_RETURN(std::vector<double> xv, readFloats<double>(ctx, *x));
  ASSIGN_OR_RETURN(std::vector<double> wv, readFloats<double>(ctx, *w));
  ASSIGN_OR_RETURN(std::vector<double> ov, readFloats<double>(ctx, *offset));
  std::vector<double> bv(static_cast<size_t>(m), 0.0), mv;
  if (bias != nullptr) {
    ASSIGN_OR_RETURN(bv, readFloats<double>(ctx, *bias));
  }
  if (mask != nullptr) {
    ASSIGN_OR_RETURN(mv, readFloats<double>(ctx, *mask));
  }
  Dims in_strides = contiguousStrides(g.in);
  int64_t c_per_og = c / offset_group, m_per_group = m / group;
  int64_t nd = static_cast<int64_t>(rank);
  std::vector<double> col(static_cast<size_t>(c * taps));
  std::vector<double> result(static_cast<size_t>(out.numElements()));
  std::vector<int64_t> oc(rank, 0), kc(rank, 0);
  std::vector<double> p(rank);
  for (int64_t b = 0; b < n; ++b) {
    std::fill(oc.begin(), oc.end(), 0);
    for (int64_t o = 0; o < g.out_volume; ++o) {
      std::fill(kc.begin(), kc.end(), 0);
      for (int64_t tap = 0; tap < taps; ++tap) {
        for (int64_t og = 0; og < offset_group; ++og) {
          int64_t ch = (b * offset_group + og) * taps + tap;
          for (size_t d = 0; d < rank; ++d) {
            double off =
                ov[static_cast<size_t>((ch * nd + static_cast<int64_t>(d)) * g.out_volume + o)];
            p[d] = static_cast<double>(oc[d] * g.strides[d] - g.pads[d] + kc[d] * g.dilations[d]) +
                   off;
          }
          double scale = mask != nullptr ? mv[static_cast<size_t>(ch * g.out_volume + o)] : 1.0;
          for (int64_t ci = og * c_per_og; ci < (og + 1) * c_per_og; ++ci) {
            const double* plane = xv.data() + (b * c + ci) * g.in_volume;
            col[static_cast<size_t>(ci * taps + tap)] =
                scale * sampleAt(plane, g.in, p, in_strides);
          }
        }
        for (size_t d = rank; d-- > 0;) {
          if (++kc[d] < g.kernel[d]) break;
          kc[d] = 0;
        }
      }
      for (int64_t mi = 0; mi < m; ++mi) {
        int64_t first = (mi / m_per_group) * cg;
        double acc = bv[static_cast<size_t>(mi)];
        const double* wp = wv.data() + mi * cg * taps;
        const double* cp = col.data() + first * taps;
        for (int64_t i = 0; i < cg * taps; ++i) acc += wp[i] * cp[i];
        result[static_cast<size_t>((b * m + mi) * g.out_volume + o)] = acc;
      }
      for (size_t d = rank; d-- > 0;) {
        if (++oc[d] < g.out[d]) break;
        oc[d] = 0;
      }
    }
  }
  RETURN_IF_ERROR(storeDoubles(ctx, out, result));
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
