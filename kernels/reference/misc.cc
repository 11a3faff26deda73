// Miscellaneous reference kernels: Cast and CastLike (numeric types and bool), Range,
// ConstantOfShape, NonZero, CumSum, OneHot, DequantizeLinear and QuantizeLinear (per-tensor,
// per-axis and blocked scales; 8/16/32-bit integer types).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

#include "low_precision.h"
#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

/// Parses a string element for Cast: plain and scientific numbers, and "INF", "+INF", "-INF",
/// "NaN" in any case; integers parse exactly. Anything else is refused (the standard leaves it
/// undefined).
StatusOr<Num> parseNumber(const std::string& s, bool want_int) {
  std::string t = s;
  size_t b = t.find_first_not_of(" \t\n\r"), e = t.find_last_not_of(" \t\n\r");
  t = b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  std::string lower = t;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  Num n;
  n.is_float = true;
  if (lower == "inf" || lower == "+inf") {
    n.f = std::numeric_limits<double>::infinity();
    return n;
  }
  if (lower == "-inf") {
    n.f = -std::numeric_limits<double>::infinity();
    return n;
  }
  if (lower == "nan" || lower == "+nan" || lower == "-nan") {
    n.f = std::numeric_limits<double>::quiet_NaN();
    return n;
  }
  if (lower == "true" || lower == "false") {
    n.is_float = false;
    n.i = lower == "true" ? 1 : 0;
    return n;
  }
  const char* first = t.data();
  const char* last = t.data() + t.size();
  if (first != last && *first == '+') ++first;
  if (want_int) {
    int64_t i = 0;
    auto r = std::from_chars(first, last, i);
    if (r.ec == std::errc() && r.ptr == last) {
      n.is_float = false;
      n.i = i;
      return n;
    }
    uint64_t u = 0;
    r = std::from_chars(first, last, u);
    if (r.ec == std::errc() && r.ptr == last) {
      n.is_float = false;
      n.is_unsigned = true;
      n.i = static_cast<int64_t>(u);
      return n;
    }
  }
  double d = 0;
  auto r = std::from_chars(first, last, d);
  if (first == last || r.ptr != last ||
      (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) {
    return invalidArgument("Cast: '{}' is not a number", s);
  }
  if (r.ec == std::errc::result_out_of_range) {
    d = std::strtod(std::string(first, last).c_str(), nullptr);  // gives +-inf or a denormal
  }
  n.f = d;
  return n;
}

/// A number as Cast writes it to a string: the shortest text that reads back to the same value
/// in the source type ("INF", "-INF", "NaN" for the special values).
std::string formatNumber(const Num& v, DataType from) {
  if (!v.is_float) {
    return v.is_unsigned ? std::to_string(static_cast<uint64_t>(v.i)) : std::to_string(v.i);
  }
  if (std::isnan(v.f)) return "NaN";
  if (std::isinf(v.f)) return v.f > 0 ? "INF" : "-INF";
  char buf[64];
  std::to_chars_result r = from == DataType::kDouble
                               ? std::to_chars(buf, buf + sizeof buf, v.f)
                               : std::to_chars(buf, buf + sizeof buf, static_cast<float>(v.f));
  return std::string(buf, r.ptr);
}

}  // namespace

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
  bool from_string = x->dtype == DataType::kString, to_string = to == DataType::kString;
  if ((!from_string && !isNumType(x->dtype)) || (from_string && to_string)) {
    return unsupportedType(ctx, x->dtype);
  }
  if (!to_string && !isNumType(to)) return unsupportedType(ctx, to);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(to, x->dims));
  int64_t n = x->numElements();
  if (!from_string && !to_string && !isLowPrecision(x->dtype) && !isLowPrecision(to)) {
    RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto stag) -> Status {
      using S = typename decltype(stag)::type;
      return visitType(ctx, to, [&](auto dtag) -> Status {
        using D = typename decltype(dtag)::type;
        for (int64_t i = 0; i < n; ++i) {
          store<D>(out, i, convertNumber<Compute<D>>(load<S>(*x, i)));
        }
        return Status::ok();
      });
    }));
    return single(std::move(out));
  }
  StoreOptions opt;
  if (ctx.opset >= 19) opt.saturate = ctx.attrs.getInt("saturate", 1) != 0;
  if (ctx.opset >= 24) {
    std::string mode = ctx.attrs.getString("round_mode", "up");
    if (mode == "up") {
      opt.round_mode = 0;
    } else if (mode == "down") {
      opt.round_mode = 1;
    } else if (mode == "nearest") {
      opt.round_mode = 2;
    } else {
      return invalidArgument("Cast: bad round_mode '{}'", mode);
    }
  }
  bool int_target = !to_string && miniFloatFormat(to) == nullptr && to != DataType::kFloat8E8M0 &&
                    to != DataType::kFloat && to != DataType::kDouble && to != DataType::kFloat16 &&
                    to != DataType::kBfloat16;
  for (int64_t i = 0; i < n; ++i) {
    Num v;
    if (from_string) {
      ASSIGN_OR_RETURN(v, parseNumber(x->strings[static_cast<size_t>(i)], int_target));
    } else {
      v = loadNum(ctx, *x, i);
    }
    if (to_string) {
      out.strings[static_cast<size_t>(i)] = formatNumber(v, x->dtype);
    } else {
      storeNum(ctx, out, i, v, opt);
    }
  }
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
  auto scalarLike = [](const HostTensor& t) { return t.rank() <= 1 && t.numElements() == 1; };
  if (zp != nullptr && zp->dims != scale.dims && !(scalarLike(*zp) && scalarLike(scale))) {
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

/// The integer range of a quantized integer type, or nullopt for the float ones.
std::optional<std::pair<int64_t, int64_t>> quantRange(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return std::pair<int64_t, int64_t>{-128, 127};
    case DataType::kUint8:
      return std::pair<int64_t, int64_t>{0, 255};
    case DataType::kInt16:
      return std::pair<int64_t, int64_t>{-32768, 32767};
    case DataType::kUint16:
      return std::pair<int64_t, int64_t>{0, 65535};
    case DataType::kInt4:
      return std::pair<int64_t, int64_t>{-8, 7};
    case DataType::kUint4:
      return std::pair<int64_t, int64_t>{0, 15};
    case DataType::kInt2:
      return std::pair<int64_t, int64_t>{-2, 1};
    case DataType::kUint2:
      return std::pair<int64_t, int64_t>{0, 3};
    default:
      return std::nullopt;
  }
}

/// QuantizeLinear's output types (DequantizeLinear also takes int32).
bool isQuantType(DataType t) {
  return quantRange(t).has_value() || miniFloatFormat(t) != nullptr;
}

bool isDequantOutput(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

}  // namespace

StatusOr<Outputs> dequantizeLinearKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* scale, requireInput(ctx, 1));
  const HostTensor* zp = ctx.input(2);
  if (!isQuantType(x->dtype) && x->dtype != DataType::kInt32) {
    return unsupportedType(ctx, x->dtype);
  }
  if (zp != nullptr && zp->dtype != x->dtype) {
    return invalidArgument("DequantizeLinear: zero point type differs from the input's");
  }
  DataType out_type = scale->dtype;
  if (!isDequantOutput(out_type)) return unsupportedType(ctx, out_type);
  int64_t out_attr = ctx.attrs.getInt("output_dtype", 0);
  if (out_attr != 0 && out_attr != static_cast<int64_t>(out_type)) {
    return unimplemented(ctx, "output_dtype different from the scale type");
  }
  ASSIGN_OR_RETURN(QuantLayout q, quantLayout(ctx, *x, *scale, zp));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(out_type, x->dims));
  bool float_x = miniFloatFormat(x->dtype) != nullptr;
  forEachQuant(*x, q, [&](int64_t i, int64_t s) {
    Num v = loadNum(ctx, *x, i);
    float centered;
    if (float_x) {
      double d = v.f;
      if (zp != nullptr) d -= loadNum(ctx, *zp, s).f;
      centered = static_cast<float>(d);
    } else {
      int64_t d = v.i;
      if (zp != nullptr) d -= loadNum(ctx, *zp, s).i;
      centered = static_cast<float>(d);
    }
    Num r;
    r.is_float = true;
    r.f = static_cast<double>(centered * static_cast<float>(loadNum(ctx, *scale, s).f));
    storeNum(ctx, out, i, r);
  });
  return single(std::move(out));
}

StatusOr<Outputs> quantizeLinearKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* scale, requireInput(ctx, 1));
  const HostTensor* zp = ctx.input(2);
  DataType out_type = DataType::kUint8;
  int64_t out_attr = ctx.opset >= 21 ? ctx.attrs.getInt("output_dtype", 0) : 0;
  if (zp != nullptr) {
    out_type = zp->dtype;
    if (out_attr != 0 && out_attr != static_cast<int64_t>(out_type)) {
      return invalidArgument("QuantizeLinear: output_dtype differs from the zero point's type");
    }
  } else if (out_attr != 0) {
    if (out_attr < 0 || out_attr > kMaxKnownDataType) {
      return invalidArgument("QuantizeLinear: bad output_dtype {}", out_attr);
    }
    out_type = static_cast<DataType>(out_attr);
  }
  if (!isQuantType(out_type)) return unsupportedType(ctx, out_type);
  bool x_ok = x->dtype == DataType::kInt32 || x->dtype == DataType::kFloat ||
              x->dtype == DataType::kDouble || x->dtype == DataType::kFloat16 ||
              x->dtype == DataType::kBfloat16;
  if (!x_ok) return unsupportedType(ctx, x->dtype);
  if (!isDequantOutput(scale->dtype) && scale->dtype != DataType::kDouble) {
    return unsupportedType(ctx, scale->dtype);
  }
  bool in_double = ctx.opset >= 23 &&
                   ctx.attrs.getInt("precision", 0) == static_cast<int64_t>(DataType::kDouble);
  StoreOptions opt;
  if (ctx.opset >= 19) opt.saturate = ctx.attrs.getInt("saturate", 1) != 0;
  auto range = quantRange(out_type);
  ASSIGN_OR_RETURN(QuantLayout q, quantLayout(ctx, *x, *scale, zp));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(out_type, x->dims));
  forEachQuant(*x, q, [&](int64_t i, int64_t s) {
    double xv = loadNum(ctx, *x, i).asDouble(), sv = loadNum(ctx, *scale, s).asDouble();
    double v =
        in_double ? xv / sv : static_cast<double>(static_cast<float>(xv) / static_cast<float>(sv));
    Num r;
    if (range) {
      double k = std::nearbyint(v);
      if (zp != nullptr) k += static_cast<double>(loadNum(ctx, *zp, s).i);
      if (std::isnan(k)) k = 0;
      r.i = static_cast<int64_t>(
          std::clamp(k, static_cast<double>(range->first), static_cast<double>(range->second)));
    } else {
      r.is_float = true;
      r.f = v;
      if (zp != nullptr) r.f += loadNum(ctx, *zp, s).f;
    }
    storeNum(ctx, out, i, r, opt);
  });
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
