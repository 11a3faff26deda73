// Miscellaneous reference kernels: Cast and CastLike (numeric types and bool), Range,
// ConstantOfShape, NonZero, CumSum, OneHot, DequantizeLinear and QuantizeLinear (per-tensor,
// per-axis and blocked scales; 8/16/32-bit integer types).
#include <algorithm>
#include <cmath>

#include "ops.h"

namespace onnxopt::kernels::ref {

StatusOr<Outputs> castKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  DataType to;
  if (ctx.op == "CastLike") {
    ASSIGN_OR_RETURN(const HostTensor* like, requireInput(ctx, 1));
    to = like->dtype;
  } else {
    if (!ctx.attrs.has("to")) return invalidArgument("Cast: attribute 'to' is required");
    int64_t code = ctx.attrs.getInt("to", 0);
    if (code < 0 || code > kMaxKnownDataType) return invalidArgument("Cast: bad 'to' {}", code);
    to = static_cast<DataType>(code);
  }
  if (to == x->dtype) return single(*x);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(to, x->dims));
  int64_t n = x->numElements();
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto stag) -> Status {
    using S = typename decltype(stag)::type;
    return visitType(ctx, to, [&](auto dtag) -> Status {
      using D = typename decltype(dtag)::type;
      for (int64_t i = 0; i < n; ++i) store<D>(out, i, convertNumber<Compute<D>>(load<S>(*x, i)));
      return Status::ok();
    });
  }));
  return single(std::move(out));
}

StatusOr<Outputs> rangeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* start_t, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* limit_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* delta_t, requireInput(ctx, 2));
  RETURN_IF_ERROR(checkSameType(ctx, {start_t, limit_t, delta_t}));
  for (const HostTensor* t : {start_t, limit_t, delta_t}) {
    if (t->numElements() != 1) return invalidArgument("Range: inputs must be scalars");
  }
  DataType type = start_t->dtype;
  HostTensor out;
  RETURN_IF_ERROR(visitType(ctx, type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, type);
    } else {
      C start = load<T>(*start_t, 0), limit = load<T>(*limit_t, 0), delta = load<T>(*delta_t, 0);
      if (delta == 0) return invalidArgument("Range: delta is 0");
      int64_t count = 0;
      if constexpr (kIsFloat<T>) {
        double c = std::ceil(static_cast<double>(static_cast<C>(limit - start)) /
                             static_cast<double>(delta));
        if (std::isnan(c)) return invalidArgument("Range: non-finite bounds");
        if (c > static_cast<double>(kMaxOutputBytes)) {
          return makeError(StatusCode::kResourceExhausted, "Range: too many elements");
        }
        count = c > 0 ? static_cast<int64_t>(c) : 0;
      } else {
        int64_t s = convertNumber<int64_t>(start), l = convertNumber<int64_t>(limit),
                d = convertNumber<int64_t>(delta);
        if constexpr (std::is_same_v<T, uint64_t>) {
          return unsupportedType(ctx, type);  // not in Range's type list; avoids sign games
        }
        int64_t diff;
        if (__builtin_sub_overflow(l, s, &diff)) {
          return makeError(StatusCode::kResourceExhausted, "Range: too many elements");
        }
        if ((diff > 0 && d > 0) || (diff < 0 && d < 0)) {
          count = diff / d + (diff % d != 0 ? 1 : 0);
        }
        if (count > static_cast<int64_t>(kMaxOutputBytes)) {
          return makeError(StatusCode::kResourceExhausted, "Range: too many elements");
        }
      }
      ASSIGN_OR_RETURN(out, makeOutput(type, {count}));
      for (int64_t i = 0; i < count; ++i) {
        if constexpr (kIsFloat<T>) {
          store<T>(out, i, static_cast<C>(start + static_cast<C>(i) * delta));
        } else {
          store<T>(out, i, wrapAdd<C>(start, wrapMul<C>(static_cast<C>(i), delta)));
        }
      }
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> constantOfShapeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* shape_t, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(Dims dims, readInts(*shape_t, "shape"));
  for (int64_t d : dims) {
    if (d < 0) return invalidArgument("ConstantOfShape: negative dimension {}", d);
  }
  HostTensor value = HostTensor::zeros(DataType::kFloat, {});
  if (const HostTensor* v = ctx.attrs.getTensor("value")) {
    if (v->numElements() != 1)
      return invalidArgument("ConstantOfShape: value must have one element");
    RETURN_IF_ERROR(checkMovable(ctx, v->dtype));
    bool ok = v->dtype == DataType::kString ? v->strings.size() == 1
                                            : v->bytes.size() == elementBytes(v->dtype);
    if (!ok) return invalidArgument("ConstantOfShape: malformed value tensor");
    value = *v;
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(value.dtype, dims));
  size_t eb = elementBytes(value.dtype);
  int64_t n = out.numElements();
  for (int64_t i = 0; i < n; ++i) copyElement(out, i, value, 0, eb);
  return single(std::move(out));
}

StatusOr<Outputs> nonZeroKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  std::vector<int64_t> hits;
  int64_t n = x->numElements();
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n; ++i) {
      if (convertNumber<bool>(load<T>(*x, i))) hits.push_back(i);
    }
    return Status::ok();
  }));
  int64_t rows = std::max<int64_t>(x->rank(), 1);  // a scalar reads as shape [1]
  int64_t nnz = static_cast<int64_t>(hits.size());
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kInt64, {rows, nnz}));
  Dims strides = contiguousStrides(x->dims);
  for (int64_t j = 0; j < nnz; ++j) {
    int64_t rest = hits[static_cast<size_t>(j)];
    if (x->rank() == 0) {
      out.set<int64_t>(j, 0);
      continue;
    }
    for (int64_t d = 0; d < x->rank(); ++d) {
      int64_t s = strides[static_cast<size_t>(d)];
      out.set<int64_t>(d * nnz + j, rest / s);
      rest %= s;
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> cumSumKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* axis_t, requireInput(ctx, 1));
  if (axis_t->rank() > 1) return invalidArgument("{}: axis must be a scalar", ctx.op);
  ASSIGN_OR_RETURN(int64_t raw_axis, readIntScalar(*axis_t, "axis"));
  int64_t rank = x->rank();
  if (rank == 0) return invalidArgument("{}: input must have rank >= 1", ctx.op);
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(raw_axis, rank));
  bool exclusive = ctx.attrs.getInt("exclusive", 0) != 0;
  bool reverse = ctx.attrs.getInt("reverse", 0) != 0;
  bool prod = ctx.op == "CumProd";  // CumProd (opset 26) scans with * from 1
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  int64_t dim = x->dims[static_cast<size_t>(axis)];
  const int64_t outer = dimProduct(x->dims, 0, axis);
  const int64_t inner = dimProduct(x->dims, axis + 1, rank);
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, x->dtype);
    } else {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t in = 0; in < inner; ++in) {
          C acc = prod ? C(1) : C(0);
          for (int64_t s = 0; s < dim; ++s) {
            int64_t k = reverse ? dim - 1 - s : s;
            int64_t idx = (o * dim + k) * inner + in;
            C v = load<T>(*x, idx);
            if (exclusive) store<T>(out, idx, acc);
            if constexpr (kIsInt<T>) {
              acc = prod ? wrapMul(acc, v) : wrapAdd(acc, v);
            } else {
              acc = prod ? static_cast<C>(acc * v) : static_cast<C>(acc + v);
            }
            if (!exclusive) store<T>(out, idx, acc);
          }
        }
      }
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> oneHotKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* ind_t, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* depth_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* values, requireInput(ctx, 2));
  RETURN_IF_ERROR(checkMovable(ctx, values->dtype));
  if (values->numElements() != 2) return invalidArgument("OneHot: values must have 2 elements");
  if (depth_t->numElements() != 1) return invalidArgument("OneHot: depth must be a scalar");
  int64_t depth = 0;
  std::vector<int64_t> indices;
  RETURN_IF_ERROR(visitType(ctx, depth_t->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    depth = convertNumber<int64_t>(load<T>(*depth_t, 0));
    return Status::ok();
  }));
  if (depth < 1) return invalidArgument("OneHot: depth must be positive, got {}", depth);
  int64_t n = ind_t->numElements();
  RETURN_IF_ERROR(visitType(ctx, ind_t->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n; ++i) indices.push_back(convertNumber<int64_t>(load<T>(*ind_t, i)));
    return Status::ok();
  }));
  int64_t rank = ind_t->rank() + 1;
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", -1), rank));
  Dims dims = ind_t->dims;
  dims.insert(dims.begin() + axis, depth);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(values->dtype, dims));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= ind_t->dims[static_cast<size_t>(d)];
  int64_t inner = n / std::max<int64_t>(outer, 1);
  if (outer == 0) inner = 0;
  size_t eb = elementBytes(values->dtype);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t d = 0; d < depth; ++d) {
      for (int64_t in = 0; in < inner; ++in) {
        int64_t idx = indices[static_cast<size_t>(o * inner + in)];
        if (idx < 0) idx += depth;
        copyElement(out, (o * depth + d) * inner + in, *values, idx == d ? 1 : 0, eb);
      }
    }
  }
  return single(std::move(out));
}

namespace {

/// How a scale tensor maps onto the elements of x: per tensor, per axis, or per block.
struct QuantLayout {
  int mode = 0;  // 0 per-tensor, 1 per-axis, 2 blocked
  int64_t axis = 0;
  int64_t block = 0;
  Dims scale_strides;
};

StatusOr<QuantLayout> quantLayout(const KernelContext& ctx, const HostTensor& x,
                                  const HostTensor& scale, const HostTensor* zp) {
  QuantLayout q;
  if (zp != nullptr && zp->dims != scale.dims) {
    return invalidArgument("{}: zero point and scale have different shapes", ctx.op);
  }
  int64_t block = ctx.opset >= 21 ? ctx.attrs.getInt("block_size", 0) : 0;
  if (block < 0) return invalidArgument("{}: negative block_size", ctx.op);
  if (block == 0 && scale.rank() <= 1 && scale.numElements() == 1) return q;  // per tensor
  if (x.rank() == 0) return invalidArgument("{}: per-axis scale for a scalar input", ctx.op);
  ASSIGN_OR_RETURN(q.axis, normalizeAxis(ctx.attrs.getInt("axis", 1), x.rank()));
  int64_t dim = x.dims[static_cast<size_t>(q.axis)];
  if (block == 0) {
    if (scale.rank() != 1 || scale.dims[0] != dim) {
      return invalidArgument("{}: per-axis scale must be 1-D of length {}", ctx.op, dim);
    }
    q.mode = 1;
    return q;
  }
  if (scale.rank() != x.rank()) return invalidArgument("{}: blocked scale rank differs", ctx.op);
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t want = d == q.axis ? (dim + block - 1) / block : x.dims[static_cast<size_t>(d)];
    if (scale.dims[static_cast<size_t>(d)] != want) {
      return invalidArgument("{}: blocked scale has dimension {} where {} is needed", ctx.op,
                             scale.dims[static_cast<size_t>(d)], want);
    }
  }
  q.mode = 2;
  q.block = block;
  q.scale_strides = contiguousStrides(scale.dims);
  return q;
}

/// Calls f(i, scale_index) for every element of x.
template <typename F>
void forEachQuant(const HostTensor& x, const QuantLayout& q, F f) {
  int64_t n = x.numElements();
  if (n == 0) return;
  size_t rank = x.dims.size();
  Dims counter(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t s = 0;
    if (q.mode == 1) {
      s = counter[static_cast<size_t>(q.axis)];
    } else if (q.mode == 2) {
      for (size_t d = 0; d < rank; ++d) {
        int64_t c = static_cast<int64_t>(d) == q.axis ? counter[d] / q.block : counter[d];
        s += c * q.scale_strides[d];
      }
    }
    f(i, s);
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < x.dims[d]) break;
      counter[d] = 0;
    }
  }
}

bool isQuantInt(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUint8 || t == DataType::kInt16 ||
         t == DataType::kUint16 || t == DataType::kInt32;
}

}  // namespace

StatusOr<Outputs> dequantizeLinearKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* scale, requireInput(ctx, 1));
  const HostTensor* zp = ctx.input(2);
  if (!isQuantInt(x->dtype)) return unsupportedType(ctx, x->dtype);
  if (zp != nullptr && zp->dtype != x->dtype) {
    return invalidArgument("DequantizeLinear: zero point type differs from the input's");
  }
  DataType out_type = scale->dtype;
  if (out_type != DataType::kFloat && out_type != DataType::kFloat16 &&
      out_type != DataType::kBfloat16) {
    return unsupportedType(ctx, out_type);
  }
  int64_t out_attr = ctx.attrs.getInt("output_dtype", 0);
  if (out_attr != 0 && out_attr != static_cast<int64_t>(out_type)) {
    return unimplemented(ctx, "output_dtype different from the scale type");
  }
  ASSIGN_OR_RETURN(QuantLayout q, quantLayout(ctx, *x, *scale, zp));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(out_type, x->dims));
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return visitType(ctx, out_type, [&](auto otag) -> Status {
      using O = typename decltype(otag)::type;
      if constexpr (!kIsInt<T> || !kIsFloat<O>) {
        return unsupportedType(ctx, out_type);
      } else {
        forEachQuant(*x, q, [&](int64_t i, int64_t s) {
          int64_t v = static_cast<int64_t>(load<T>(*x, i));
          if (zp != nullptr) v -= static_cast<int64_t>(load<T>(*zp, s));
          float sc = static_cast<float>(load<O>(*scale, s));
          store<O>(out, i, static_cast<Compute<O>>(static_cast<float>(v) * sc));
        });
        return Status::ok();
      }
    });
  }));
  return single(std::move(out));
}

StatusOr<Outputs> quantizeLinearKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* scale, requireInput(ctx, 1));
  const HostTensor* zp = ctx.input(2);
  DataType out_type = DataType::kUint8;
  if (zp != nullptr) {
    out_type = zp->dtype;
  } else if (ctx.opset >= 21 && ctx.attrs.getInt("output_dtype", 0) != 0) {
    out_type = static_cast<DataType>(ctx.attrs.getInt("output_dtype", 0));
  }
  if (!isQuantInt(out_type) || out_type == DataType::kInt32) return unsupportedType(ctx, out_type);
  ASSIGN_OR_RETURN(QuantLayout q, quantLayout(ctx, *x, *scale, zp));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(out_type, x->dims));
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T> && !std::is_same_v<T, int32_t>) {
      return unsupportedType(ctx, x->dtype);
    } else {
      return visitType(ctx, scale->dtype, [&](auto stag) -> Status {
        using S = typename decltype(stag)::type;
        if constexpr (!kIsFloat<S>) {
          return unsupportedType(ctx, scale->dtype);
        } else {
          return visitType(ctx, out_type, [&](auto otag) -> Status {
            using O = typename decltype(otag)::type;
            if constexpr (!kIsInt<O>) {
              return unsupportedType(ctx, out_type);
            } else {
              double lo = static_cast<double>(std::numeric_limits<O>::min());
              double hi = static_cast<double>(std::numeric_limits<O>::max());
              forEachQuant(*x, q, [&](int64_t i, int64_t s) {
                float v =
                    static_cast<float>(load<T>(*x, i)) / static_cast<float>(load<S>(*scale, s));
                double r = std::nearbyint(static_cast<double>(v));
                if (zp != nullptr) r += static_cast<double>(load<O>(*zp, s));
                if (std::isnan(r)) r = 0;
                r = std::clamp(r, lo, hi);
                store<O>(out, i, static_cast<O>(r));
              });
              return Status::ok();
            }
          });
        }
      });
    }
  }));
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
