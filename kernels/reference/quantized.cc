// Quantized-arithmetic reference kernels: DynamicQuantizeLinear, MatMulInteger, ConvInteger,
// QLinearMatMul and QLinearConv.
//   MatMulInteger(A, B, za, zb) = (A - za) @ (B - zb) in int32
//   QLinearMatMul = saturate(rint((A - za) @ (B - zb) * sa * sb / sy) + zy)
//   QLinearConv   = saturate(rint((Conv(X - zx, W - zw) + B) * sx * sw / sy) + zy)
// The integer products are exact: MatMul runs on the centered int32 values (wrapping as int32
// does), Conv on doubles (exact below 2^53, far above what the Conv work cap allows).
#include <algorithm>
#include <cmath>

#include "low_precision.h"
#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

bool isInt8Like(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUint8;
}

/// x - zp as a tensor of `to` (int32 or double). zp is a scalar, or 1-D along `axis` of x
/// (per row of a matrix, per column, or per output channel).
StatusOr<HostTensor> centered(const KernelContext& ctx, const HostTensor& x, const HostTensor* zp,
                              int64_t axis, DataType to, const char* what) {
  if (!isInt8Like(x.dtype)) return unsupportedType(ctx, x.dtype);
  if (zp != nullptr && zp->dtype != x.dtype) {
    return invalidArgument("{}: {} zero point type differs from the input's", ctx.op, what);
  }
  int64_t per = 0;  // 0: one zero point
  if (zp != nullptr && zp->numElements() != 1) {
    int64_t len = axis >= 0 && axis < x.rank() ? x.dims[static_cast<size_t>(axis)] : -1;
    bool ok = zp->numElements() == len && std::count_if(zp->dims.begin(), zp->dims.end(),
                                                        [](int64_t d) { return d != 1; }) <= 1;
    if (!ok) return invalidArgument("{}: {} zero point has the wrong shape", ctx.op, what);
    per = len;
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(to, x.dims));
  int64_t n = x.numElements();
  int64_t inner = per != 0 ? dimProduct(x.dims, axis + 1, x.rank()) : 1;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = loadNum(ctx, x, i).i;
    if (zp != nullptr) v -= loadNum(ctx, *zp, per != 0 ? (i / inner) % per : 0).i;
    if (to == DataType::kInt32) {
      out.set<int32_t>(i, static_cast<int32_t>(v));
    } else {
      out.set<double>(i, static_cast<double>(v));
    }
  }
  return out;
}

/// The scale's elements as the ONNX reference computes with them (float32 arithmetic, or the
/// scale's own float16/bfloat16).
StatusOr<std::vector<float>> readScale(const KernelContext& ctx, const HostTensor& t) {
  if (t.dtype != DataType::kFloat && t.dtype != DataType::kFloat16 &&
      t.dtype != DataType::kBfloat16) {
    return unsupportedType(ctx, t.dtype);
  }
  std::vector<float> v(static_cast<size_t>(t.numElements()));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(loadNum(ctx, t, static_cast<int64_t>(i)).f);
  }
  return v;
}

/// a * b / c rounded as the scale type rounds.
float scaleProduct(const KernelContext& ctx, DataType type, float a, float b, float c) {
  Num r;
  r.is_float = true;
  HostTensor tmp = HostTensor::zeros(type, {});
  auto round = [&](float v) {
    r.f = v;
    storeNum(ctx, tmp, 0, r);
    return static_cast<float>(loadNum(ctx, tmp, 0).f);
  };
  return round(round(a * b) / c);
}

/// saturate(rint(acc * mult + zp)) into out element i (int8 or uint8).
void requantize(HostTensor& out, int64_t i, double acc, float mult, int64_t zp) {
  double lo = out.dtype == DataType::kInt8 ? -128 : 0,
         hi = out.dtype == DataType::kInt8 ? 127 : 255;
  double v =
      std::nearbyint(std::clamp(acc * static_cast<double>(mult) + static_cast<double>(zp), lo, hi));
  if (std::isnan(v)) v = 0;
  if (out.dtype == DataType::kInt8) {
    out.set<int8_t>(i, static_cast<int8_t>(v));
  } else {
    out.set<uint8_t>(i, static_cast<uint8_t>(v));
  }
}

/// Runs another reference kernel on prepared inputs, with this node's attributes.
StatusOr<HostTensor> runInner(const KernelContext& ctx,
                              StatusOr<Outputs> (*fn)(const KernelContext&), const char* op,
                              int64_t opset, const std::vector<const HostTensor*>& ins) {
  std::string name = op;
  KernelContext inner{name, opset, ins, ctx.attrs, 1};
  ASSIGN_OR_RETURN(Outputs outs, fn(inner));
  return std::move(outs[0]);
}

}  // namespace

StatusOr<Outputs> dynamicQuantizeLinearKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  if (x->dtype != DataType::kFloat) return unsupportedType(ctx, x->dtype);
  int64_t n = x->numElements();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    float v = x->get<float>(i);
    if (std::isnan(v)) return invalidArgument("DynamicQuantizeLinear: the input holds NaN");
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (std::isinf(lo) || std::isinf(hi)) {
    return invalidArgument("DynamicQuantizeLinear: the input holds an infinity");
  }
  float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  float zp = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  ASSIGN_OR_RETURN(HostTensor y, makeOutput(DataType::kUint8, x->dims));
  for (int64_t i = 0; i < n; ++i) {
    float q = std::nearbyint(x->get<float>(i) / scale) + zp;
    y.set<uint8_t>(i, static_cast<uint8_t>(std::clamp(q, 0.0f, 255.0f)));
  }
  HostTensor s = HostTensor::zeros(DataType::kFloat, {});
  s.set<float>(0, scale);
  HostTensor z = HostTensor::zeros(DataType::kUint8, {});
  z.set<uint8_t>(0, static_cast<uint8_t>(zp));
  Outputs outs;
  outs.push_back(std::move(y));
  outs.push_back(std::move(s));
  outs.push_back(std::move(z));
  outs.resize(std::min<size_t>(ctx.num_outputs, 3));
  return outs;
}

StatusOr<Outputs> matMulIntegerKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* a, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* b, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(HostTensor ca,
                   centered(ctx, *a, ctx.input(2), a->rank() - 2, DataType::kInt32, "A"));
  ASSIGN_OR_RETURN(HostTensor cb,
                   centered(ctx, *b, ctx.input(3), b->rank() - 1, DataType::kInt32, "B"));
  ASSIGN_OR_RETURN(HostTensor y, runInner(ctx, matMulKernel, "MatMul", 13, {&ca, &cb}));
  return single(std::move(y));
}

StatusOr<Outputs> convIntegerKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* w, requireInput(ctx, 1));
  const HostTensor* xz = ctx.input(2);
  if (xz != nullptr && xz->numElements() != 1) {
    return invalidArgument("ConvInteger: x_zero_point must be a scalar");
  }
  ASSIGN_OR_RETURN(HostTensor cx, centered(ctx, *x, xz, 1, DataType::kDouble, "X"));
  ASSIGN_OR_RETURN(HostTensor cw, centered(ctx, *w, ctx.input(3), 0, DataType::kDouble, "W"));
  ASSIGN_OR_RETURN(HostTensor acc, runInner(ctx, convKernel, "Conv", 11, {&cx, &cw}));
  ASSIGN_OR_RETURN(HostTensor y, makeOutput(DataType::kInt32, acc.dims));
  int64_t n = acc.numElements();
  for (int64_t i = 0; i < n; ++i) y.set<int32_t>(i, convertNumber<int32_t>(acc.get<double>(i)));
  return single(std::move(y));
}

StatusOr<Outputs> qLinearMatMulKernel(const KernelContext& ctx) {
  std::vector<const HostTensor*> in(8);
  for (size_t k = 0; k < 8; ++k) {
    ASSIGN_OR_RETURN(in[k], requireInput(ctx, k));
  }
  const HostTensor &a = *in[0], &b = *in[3], &yz = *in[7];
  if (!isInt8Like(yz.dtype)) return unsupportedType(ctx, yz.dtype);
  if (in[1]->dtype != in[4]->dtype || in[1]->dtype != in[6]->dtype) {
    return invalidArgument("QLinearMatMul: the scales have different types");
  }
  if (yz.numElements() != 1 || in[6]->numElements() != 1) {
    return invalidArgument("QLinearMatMul: y_scale and y_zero_point must be scalars");
  }
  if (a.rank() < 1 || b.rank() < 1) return invalidArgument("QLinearMatMul: scalar operand");
  ASSIGN_OR_RETURN(HostTensor ca, centered(ctx, a, in[2], a.rank() - 2, DataType::kInt32, "a"));
  ASSIGN_OR_RETURN(HostTensor cb, centered(ctx, b, in[5], b.rank() - 1, DataType::kInt32, "b"));
  ASSIGN_OR_RETURN(HostTensor acc, runInner(ctx, matMulKernel, "MatMul", 13, {&ca, &cb}));
  ASSIGN_OR_RETURN(auto sa, readScale(ctx, *in[1]));
  ASSIGN_OR_RETURN(auto sb, readScale(ctx, *in[4]));
  ASSIGN_OR_RETURN(auto sy, readScale(ctx, *in[6]));
  int64_t m = a.rank() >= 2 ? a.dims[a.dims.size() - 2] : 1;
  int64_t nn = b.rank() >= 2 ? b.dims.back() : 1;
  if ((sa.size() != 1 && static_cast<int64_t>(sa.size()) != m) ||
      (sb.size() != 1 && static_cast<int64_t>(sb.size()) != nn)) {
    return invalidArgument("QLinearMatMul: a_scale or b_scale has the wrong size");
  }
  ASSIGN_OR_RETURN(HostTensor y, makeOutput(yz.dtype, acc.dims));
  int64_t zp = loadNum(ctx, yz, 0).i;
  int64_t total = acc.numElements();
  for (int64_t i = 0; i < total; ++i) {
    int64_t col = b.rank() >= 2 ? i % nn : 0;
    int64_t row = a.rank() >= 2 ? (i / (b.rank() >= 2 ? nn : 1)) % m : 0;
    float mult = scaleProduct(ctx, in[1]->dtype, sa[sa.size() == 1 ? 0 : static_cast<size_t>(row)],
                              sb[sb.size() == 1 ? 0 : static_cast<size_t>(col)], sy[0]);
    requantize(y, i, static_cast<double>(acc.get<int32_t>(i)), mult, zp);
  }
  return single(std::move(y));
}

StatusOr<Outputs> qLinearConvKernel(const KernelContext& ctx) {
  std::vector<const HostTensor*> in(8);
  for (size_t k = 0; k < 8; ++k) {
    ASSIGN_OR_RETURN(in[k], requireInput(ctx, k));
  }
  const HostTensor* bias = ctx.input(8);
  const HostTensor &x = *in[0], &w = *in[3], &yz = *in[7];
  if (!isInt8Like(yz.dtype)) return unsupportedType(ctx, yz.dtype);
  if (in[2]->numElements() != 1 || yz.numElements() != 1 || in[1]->numElements() != 1 ||
      in[6]->numElements() != 1) {
    return invalidArgument("QLinearConv: x and y scales and zero points must be scalars");
  }
  ASSIGN_OR_RETURN(HostTensor cx, centered(ctx, x, in[2], 1, DataType::kDouble, "x"));
  ASSIGN_OR_RETURN(HostTensor cw, centered(ctx, w, in[5], 0, DataType::kDouble, "w"));
  HostTensor cb;
  std::vector<const HostTensor*> conv_in = {&cx, &cw};
  if (bias != nullptr) {
    if (bias->dtype != DataType::kInt32) return unsupportedType(ctx, bias->dtype);
    ASSIGN_OR_RETURN(cb, makeOutput(DataType::kDouble, bias->dims));
    for (int64_t i = 0; i < bias->numElements(); ++i) cb.set<double>(i, bias->get<int32_t>(i));
    conv_in.push_back(&cb);
  }
  ASSIGN_OR_RETURN(HostTensor acc, runInner(ctx, convKernel, "Conv", 11, conv_in));
  ASSIGN_OR_RETURN(auto sx, readScale(ctx, *in[1]));
  ASSIGN_OR_RETURN(auto sw, readScale(ctx, *in[4]));
  ASSIGN_OR_RETURN(auto sy, readScale(ctx, *in[6]));
  int64_t m = w.dims[0];
  if (sw.size() != 1 && static_cast<int64_t>(sw.size()) != m) {
    return invalidArgument("QLinearConv: w_scale must be a scalar or one per output channel");
  }
  ASSIGN_OR_RETURN(HostTensor y, makeOutput(yz.dtype, acc.dims));
  int64_t inner = dimProduct(acc.dims, 2, acc.rank());
  int64_t zp = loadNum(ctx, yz, 0).i;
  for (int64_t i = 0; i < acc.numElements(); ++i) {
    size_t c = sw.size() == 1 ? 0 : static_cast<size_t>((i / inner) % m);
    requantize(y, i, acc.get<double>(i), sx[0] * sw[c] / sy[0], zp);
  }
  return single(std::move(y));
}

}  // namespace onnxopt::kernels::ref
