// More math reference kernels: the inverse trigonometric and hyperbolic functions and Tan, Swish,
// Shrink, Hardmax, Det, LRN, LpNormalization, MeanVarianceNormalization, BitShift, BitCast,
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ops.h"
#include "visit_numeric.h"

namespace onnxopt::kernels::ref {

namespace {

/// Multiply-adds Det may spend (mats * m^3).
constexpr int64_t kMaxDetWork = int64_t{1} << 40;

enum class Trig { kAcos, kAcosh, kAsin, kAsinh, kAtan, kAtanh, kCosh, kSinh, kTan, kSwish };

template <typename C>
C applyTrig(Trig kind, C x, C alpha) {
  switch (kind) {
    case Trig::kAcos:
      return std::acos(x);
    case Trig::kAcosh:
      return std::acosh(x);
    case Trig::kAsin:
      return std::asin(x);
    case Trig::kAsinh:
      return std::asinh(x);
    case Trig::kAtan:
      return std::atan(x);
    case Trig::kAtanh:
      return std::atanh(x);
    case Trig::kCosh:
      return std::cosh(x);
    case Trig::kSinh:
      return std::sinh(x);
    case Trig::kTan:
      return std::tan(x);
    case Trig::kSwish:
      return x / (C(1) + std::exp(-alpha * x));
  }
  return x;
}

/// A tensor of x's float element type and shape `dims` holding the values r (computed in double).
StatusOr<Outputs> floatResult(const KernelContext& ctx, DataType type, Dims dims,
                              const std::vector<double>& r) {
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(type, std::move(dims)));
  RETURN_IF_ERROR(visitFloat(ctx, type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < r.size(); ++i) {
      store<T>(out, static_cast<int64_t>(i), static_cast<Compute<T>>(r[i]));
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

}  // namespace

StatusOr<Outputs> floatMathKernel(const KernelContext& ctx) {
  static const std::map<std::string, Trig> kOps = {{"Acos", Trig::kAcos}, {"Acosh", Trig::kAcosh},
                                                   {"Asin", Trig::kAsin}, {"Asinh", Trig::kAsinh},
                                                   {"Atan", Trig::kAtan}, {"Atanh", Trig::kAtanh},
                                                   {"Cosh", Trig::kCosh}, {"Sinh", Trig::kSinh},
                                                   {"Tan", Trig::kTan},   {"Swish", Trig::kSwish}};
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  auto it = kOps.find(ctx.op);
  if (it == kOps.end()) return unimplemented(ctx, "unknown op");
  Trig kind = it->second;
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  double alpha = ctx.attrs.getFloat("alpha", 1.0f);
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    int64_t n = x->numElements();
    for (int64_t i = 0; i < n; ++i) {
      store<T>(out, i, applyTrig<C>(kind, load<T>(*x, i), static_cast<C>(alpha)));
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

StatusOr<Outputs> shrinkKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  double lambd = ctx.attrs.getFloat("lambd", 0.5f);
  double bias = ctx.attrs.getFloat("bias", 0.0f);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  RETURN_IF_ERROR(visitNumeric(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    int64_t n = x->numElements();
    for (int64_t i = 0; i < n; ++i) {
      double v = static_cast<double>(load<T>(*x, i));
      double r = v < -lambd ? v + bias : v > lambd ? v - bias : 0.0;
      if constexpr (kIsFloat<T>) {
        store<T>(out, i, static_cast<C>(r));
      } else {
        store<T>(out, i, convertNumber<C>(r));
      }
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

StatusOr<Outputs> hardmaxKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  int64_t rank = x->rank();
  ASSIGN_OR_RETURN(int64_t axis,
                   normalizeAxis(ctx.attrs.getInt("axis", ctx.opset < 13 ? 1 : -1), rank));
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *x));
  std::vector<double> r(v.size(), 0.0);
  if (!v.empty()) {
    // Before opset 13 the input is read as a 2-D matrix [prod(dims[:axis]), prod(dims[axis:])].
    int64_t outer = dimProduct(x->dims, 0, axis);
    int64_t n =
        ctx.opset < 13 ? dimProduct(x->dims, axis, rank) : x->dims[static_cast<size_t>(axis)];
    int64_t inner = ctx.opset < 13 ? 1 : dimProduct(x->dims, axis + 1, rank);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        auto at = [&](int64_t j) { return static_cast<size_t>((o * n + j) * inner + in); };
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j) {
          if (v[at(j)] > v[at(best)]) best = j;  // the first maximum wins
        }
        r[at(best)] = 1;
      }
    }
  }
  return floatResult(ctx, x->dtype, x->dims, r);
}

StatusOr<Outputs> detKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *x));
  int64_t rank = x->rank();
  if (rank < 2 ||
      x->dims[static_cast<size_t>(rank - 1)] != x->dims[static_cast<size_t>(rank - 2)]) {
    return invalidArgument("Det: input must be [..., M, M]");
  }
  Dims out_dims(x->dims.begin(), x->dims.end() - 2);
  const int64_t m = x->dims.back();
  ASSIGN_OR_RETURN(const int64_t mats, checkedNumElements(out_dims));
  // The cost is mats * m^3.
  int64_t work = 0;
  if (__builtin_mul_overflow(mats, m * m, &work) || __builtin_mul_overflow(work, m, &work) ||
      work > kMaxDetWork) {
    return makeError(StatusCode::kResourceExhausted, "Det: too much work");
  }
  std::vector<double> dets(static_cast<size_t>(mats), 1.0);
  for (int64_t b = 0; b < mats && m > 0; ++b) {
    double* a = v.data() + b * m * m;
    auto at = [&](int64_t r, int64_t c) -> double& { return a[r * m + c]; };
    // Gaussian elimination with partial pivoting, in place.
    double det = 1;
    for (int64_t c = 0; c < m; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < m; ++r) {
        if (std::fabs(at(r, c)) > std::fabs(at(p, c))) p = r;
      }
      double pivot = at(p, c);
      if (pivot == 0) {
        det = 0;
        break;
      }
      if (p != c) {
        for (int64_t j = 0; j < m; ++j) std::swap(at(p, j), at(c, j));
        det = -det;
      }
      det *= pivot;
      for (int64_t r = c + 1; r < m; ++r) {
        double f = at(r, c) / pivot;
        for (int64_t j = c; j < m; ++j) at(r, j) -= f * at(c, j);
      }
    }
    dets[static_cast<size_t>(b)] = det;
  }
  return floatResult(ctx, x->dtype, out_dims, dets);
}

StatusOr<Outputs> lrnKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *x));
  if (!ctx.attrs.has("size")) return invalidArgument("LRN: attribute 'size' is required");
  int64_t size = ctx.attrs.getInt("size", 1);
  if (size < 1) return invalidArgument("LRN: size {} must be positive", size);
  if (x->rank() < 2) return invalidArgument("LRN: input must be [N, C, ...]");
  double alpha = ctx.attrs.getFloat("alpha", 1e-4f);
  double beta = ctx.attrs.getFloat("beta", 0.75f);
  double bias = ctx.attrs.getFloat("bias", 1.0f);
  std::vector<double> r(v.size());
  if (!v.empty()) {
    const int64_t n = x->dims[0], c = x->dims[1];
    const int64_t inner = dimProduct(x->dims, 2, x->rank());
    // The window over channels: floor((size - 1) / 2) before, ceil((size - 1) / 2) after.
    const int64_t before = (size - 1) / 2, after = size - 1 - before;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t lo = ch - std::min(before, ch);
        int64_t hi = std::min(c - 1, ch + std::min(after, c));
        for (int64_t s = 0; s < inner; ++s) {
          double sq = 0;
          for (int64_t j = lo; j <= hi; ++j) {
            double e = v[static_cast<size_t>((b * c + j) * inner + s)];
            sq += e * e;
          }
          size_t i = static_cast<size_t>((b * c + ch) * inner + s);
          r[i] = v[i] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
        }
      }
    }
  }
  return floatResult(ctx, x->dtype, x->dims, r);
}

StatusOr<Outputs> lpNormalizationKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *x));
  int64_t p = ctx.attrs.getInt("p", 2);
  if (p != 1 && p != 2) return invalidArgument("LpNormalization: p must be 1 or 2, got {}", p);
  int64_t rank = x->rank();
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", -1), rank));
  std::vector<double> r(v.size());
  if (!v.empty()) {
    const int64_t outer = dimProduct(x->dims, 0, axis);
    const int64_t dim = x->dims[static_cast<size_t>(axis)];
    const int64_t inner = dimProduct(x->dims, axis + 1, rank);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        auto at = [&](int64_t j) { return static_cast<size_t>((o * dim + j) * inner + in); };
        double norm = 0;
        for (int64_t j = 0; j < dim; ++j)
          norm += p == 1 ? std::fabs(v[at(j)]) : v[at(j)] * v[at(j)];
        if (p == 2) norm = std::sqrt(norm);
        // A zero norm gives zeros, as the ONNX reference does (not 0/0).
        for (int64_t j = 0; j < dim; ++j) r[at(j)] = norm == 0 ? 0.0 : v[at(j)] / norm;
      }
    }
  }
  return floatResult(ctx, x->dtype, x->dims, r);
}

StatusOr<Outputs> meanVarianceNormKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *x));
  int64_t rank = x->rank();
  Dims raw_axes = ctx.attrs.getInts("axes").value_or(Dims{0, 2, 3});
  ASSIGN_OR_RETURN(Dims axes, normalizeAxes(raw_axes, rank));
  int64_t n = static_cast<int64_t>(v.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  // Each element's group: its index with the reduced axes dropped.
  Dims strides = contiguousStrides(x->dims);
  std::vector<size_t> group(static_cast<size_t>(n));
  int64_t groups = 1;
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[static_cast<size_t>(d)]) continue;
      int64_t dim = x->dims[static_cast<size_t>(d)];
      g = g * dim + (i / strides[static_cast<size_t>(d)]) % dim;
    }
    group[static_cast<size_t>(i)] = static_cast<size_t>(g);
    groups = std::max(groups, g + 1);
  }
  std::vector<double> mean(static_cast<size_t>(groups), 0.0), var(static_cast<size_t>(groups), 0.0);
  double count = n == 0 ? 1.0 : static_cast<double>(n / groups);
  for (int64_t i = 0; i < n; ++i)
    mean[group[static_cast<size_t>(i)]] += v[static_cast<size_t>(i)] / count;
  for (int64_t i = 0; i < n; ++i) {
    double d = v[static_cast<size_t>(i)] - mean[group[static_cast<size_t>(i)]];
    var[group[static_cast<size_t>(i)]] += d * d / count;
  }
  std::vector<double> r(v.size());
  for (int64_t i = 0; i < n; ++i) {
    size_t g = group[static_cast<size_t>(i)];
    r[static_cast<size_t>(i)] = (v[static_cast<size_t>(i)] - mean[g]) / std::sqrt(var[g] + 1e-9);
  }
  return floatResult(ctx, x->dtype, x->dims, r);
}

StatusOr<Outputs> bitShiftKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* a, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* b, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkSameType(ctx, {a, b}));
  std::string dir = ctx.attrs.getString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") {
    return invalidArgument("BitShift: direction must be LEFT or RIGHT, got '{}'", dir);
  }
  bool left = dir == "LEFT";
  ASSIGN_OR_RETURN(Dims dims, broadcastShapes({&a->dims, &b->dims}));
  HostTensor out;
  RETURN_IF_ERROR(visitType(ctx, a->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!(kIsInt<T> && std::is_unsigned_v<T>)) {
      return unsupportedType(ctx, a->dtype);
    } else {
      ASSIGN_OR_RETURN(out, makeOutput(a->dtype, dims));
      constexpr uint64_t kBits = sizeof(T) * 8;
      mapBroadcast({a, b}, dims, [&](int64_t i, const int64_t* off) {
        T x = a->get<T>(off[0]);
        uint64_t s = b->get<T>(off[1]);
        // Shifting by the width or more empties the value (C++ leaves it undefined).
        T r = s >= kBits ? T(0) : left ? static_cast<T>(x << s) : static_cast<T>(x >> s);
        out.set<T>(i, r);
      });
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> bitCastKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  if (!ctx.attrs.has("to")) return invalidArgument("BitCast: attribute 'to' is required");
  int64_t code = ctx.attrs.getInt("to", 0);
  if (code < 1 || code > kMaxKnownDataType) return invalidArgument("BitCast: bad 'to' {}", code);
  DataType to = static_cast<DataType>(code);
  if (x->dtype == DataType::kString || to == DataType::kString) {
    return unsupportedType(ctx, DataType::kString);
  }
  int from_bits = dataTypeBits(x->dtype), to_bits = dataTypeBits(to);
  if (to_bits == 0) return unsupportedType(ctx, to);
  if (from_bits != to_bits) {
    return invalidArgument("BitCast: {} and {} differ in width", dataTypeName(x->dtype),
                           dataTypeName(to));
  }
  HostTensor out = *x;
  out.dtype = to;
  if (to == DataType::kBool) {
    // Only 0 and 1 are bools; other bytes read as true.
    for (char& c : out.bytes) c = c != 0 ? 1 : 0;
  }
  return single(std::move(out));
}

// --- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
// -------------------------------------------

namespace {

/// The loss of log-probabilities lp ([N, C, d...], as doubles) against `target` ([N, d...]):
/// -lp[n, target, d] * weight[target], reduced by `reduction`; ignore_index entries weigh 0.
StatusOr<Outputs> nllLoss(const KernelContext& ctx, DataType type, const Dims& dims,
                          const std::vector<double>& lp, const HostTensor& target,
                          const HostTensor* weight) {
  if (dims.size() < 2) return invalidArgument("{}: input must be [N, C, ...]", ctx.op);
  Dims t_dims = dims;
  t_dims.erase(t_dims.begin() + 1);
  if (target.dims != t_dims) return invalidArgument("{}: target must be [N, d1, ...]", ctx.op);
  ASSIGN_OR_RETURN(Dims labels, readInts(target, "target"));
  const int64_t c = dims[1];
  std::vector<double> w;
  if (weight != nullptr) {
    if (weight->dims != Dims{c}) return invalidArgument("{}: weight must be [C]", ctx.op);
    ASSIGN_OR_RETURN(w, readFloats<double>(ctx, *weight));
  }
  std::string reduction = ctx.attrs.getString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return invalidArgument("{}: reduction '{}'", ctx.op, reduction);
  }
  std::optional<int64_t> ignore;
  if (ctx.attrs.has("ignore_index")) ignore = ctx.attrs.getInt("ignore_index", 0);
  const int64_t rows = static_cast<int64_t>(labels.size());
  const int64_t inner = rows == 0 || dims[0] == 0 ? 0 : rows / dims[0];
  std::vector<double> loss(static_cast<size_t>(rows), 0.0);
  double loss_sum = 0, weight_sum = 0;
  for (int64_t i = 0; i < rows; ++i) {
    int64_t label = labels[static_cast<size_t>(i)];
    if (ignore && label == *ignore) continue;
    if (label < 0 || label >= c) {
      return invalidArgument("{}: target {} is outside [0, {})", ctx.op, label, c);
    }
    double wt = w.empty() ? 1.0 : w[static_cast<size_t>(label)];
    int64_t n = i / inner, d = i % inner;
    loss[static_cast<size_t>(i)] = -lp[static_cast<size_t>((n * c + label) * inner + d)] * wt;
    loss_sum += loss[static_cast<size_t>(i)];
    weight_sum += wt;
  }
  if (reduction == "none") return floatResult(ctx, type, t_dims, loss);
  return floatResult(ctx, type, {}, {reduction == "sum" ? loss_sum : loss_sum / weight_sum});
}

}  // namespace

StatusOr<Outputs> nllLossKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* target, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *x));
  return nllLoss(ctx, x->dtype, x->dims, v, *target, ctx.input(2));
}

StatusOr<Outputs> softmaxCrossEntropyKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* labels, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *x));
  if (x->rank() < 2) return invalidArgument("{}: scores must be [N, C, ...]", ctx.op);
  if (ctx.num_outputs > 2) return invalidArgument("{}: too many outputs", ctx.op);
  // log_softmax over the class axis (1).
  if (!v.empty()) {
    const int64_t c = x->dims[1];
    const int64_t outer = x->dims[0], inner = dimProduct(x->dims, 2, x->rank());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        auto at = [&](int64_t j) { return static_cast<size_t>((o * c + j) * inner + in); };
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < c; ++j) mx = std::max(mx, v[at(j)]);
        double sum = 0;
        for (int64_t j = 0; j < c; ++j) sum += std::exp(v[at(j)] - mx);
        double lse = mx + std::log(sum);
        for (int64_t j = 0; j < c; ++j) v[at(j)] -= lse;
      }
    }
  }
  ASSIGN_OR_RETURN(Outputs out, nllLoss(ctx, x->dtype, x->dims, v, *labels, ctx.input(2)));
  if (ctx.num_outputs == 2) {
    ASSIGN_OR_RETURN(Outputs log_prob, floatResult(ctx, x->dtype, x->dims, v));
    out.push_back(std::move(log_prob[0]));
  }
  return out;
}

}  // namespace onnxopt::kernels::ref
