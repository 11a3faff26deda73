// Random-generator reference kernels, for `opt run` only (fold-constants never folds them:
// pass::isNondeterministicOp): RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike,
// Bernoulli, Multinomial. The standard leaves the generator to the runtime; these follow ONNX's
// reference implementation, numpy's legacy RandomState(seed) (mt19937.h), so a seeded run
// reproduces its values:
//   RandomUniform(Like): T(rand()) * T(high - low) + T(low), rounded to T at each step
//   RandomNormal(Like):  T(randn()) * T(scale) + T(mean), likewise (numpy's legacy gauss)
//   Bernoulli:           binomial(1, p) per element (one uniform each, numpy's inversion)
//   Multinomial:         (not in ONNX's reference) one uniform per sample against the row's CDF
// The seed attribute is truncated to an integer, which must lie in [0, 2^32) as numpy requires;
// without one, the generator is seeded from std::random_device.
#include <cmath>
#include <random>

#include "low_precision.h"
#include "mt19937.h"
#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

StatusOr<Mt19937> makeRng(const KernelContext& ctx) {
  if (!ctx.attrs.has("seed")) return Mt19937(std::random_device{}());
  double seed = std::trunc(static_cast<double>(ctx.attrs.getFloat("seed", 0.0f)));
  if (!(seed >= 0 && seed <= 4294967295.0)) {
    return invalidArgument("{}: seed {} is outside [0, 2^32)", ctx.op, seed);
  }
  return Mt19937(static_cast<uint32_t>(seed));
}

/// v rounded to T's precision (numpy's arithmetic in T), back as a double.
template <typename T>
double roundTo(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<T, Float16>) {
    return halfToFloat(floatToHalf(static_cast<float>(v)));
  } else {
    return bfloat16ToFloat(floatToBfloat16(static_cast<float>(v)));
  }
}

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
         t == DataType::kBfloat16;
}

}  // namespace

StatusOr<Outputs> randomKernel(const KernelContext& ctx) {
  bool like = ctx.op == "RandomNormalLike" || ctx.op == "RandomUniformLike";
  Dims dims;
  DataType type = DataType::kFloat;
  if (like) {
    ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
    dims = x->dims;
    type = x->dtype;
  } else {
    auto shape = ctx.attrs.getInts("shape");
    if (!shape) return invalidArgument("{}: attribute 'shape' is required", ctx.op);
    dims = *shape;
    for (int64_t d : dims) {
      if (d < 0) return invalidArgument("{}: negative dimension {}", ctx.op, d);
    }
  }
  if (ctx.attrs.has("dtype") || !like) {
    int64_t code = ctx.attrs.getInt("dtype", static_cast<int64_t>(DataType::kFloat));
    if (code < 0 || code > kMaxKnownDataType) return invalidArgument("{}: bad dtype", ctx.op);
    type = static_cast<DataType>(code);
  }
  if (!isFloatType(type)) return unsupportedType(ctx, type);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(type, dims));
  ASSIGN_OR_RETURN(Mt19937 rng, makeRng(ctx));
  bool normal = ctx.op == "RandomNormal" || ctx.op == "RandomNormalLike";
  double a = normal ? ctx.attrs.getFloat("mean", 0.0f) : ctx.attrs.getFloat("low", 0.0f);
  double b = normal ? ctx.attrs.getFloat("scale", 1.0f) : ctx.attrs.getFloat("high", 1.0f);
  RETURN_IF_ERROR(visitFloat(ctx, type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    double mul = roundTo<T>(normal ? b : b - a), add = roundTo<T>(a);
    for (int64_t i = 0; i < out.numElements(); ++i) {
      double v = roundTo<T>(normal ? rng.nextGauss() : rng.nextDouble());
      store<T>(out, i, static_cast<Compute<T>>(roundTo<T>(roundTo<T>(v * mul) + add)));
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

StatusOr<Outputs> bernoulliKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* p, requireInput(ctx, 0));
  if (!isFloatType(p->dtype)) return unsupportedType(ctx, p->dtype);
  DataType type = p->dtype;
  if (ctx.attrs.has("dtype")) {
    int64_t code = ctx.attrs.getInt("dtype", 0);
    if (code < 0 || code > kMaxKnownDataType) return invalidArgument("Bernoulli: bad dtype");
    type = static_cast<DataType>(code);
  }
  if (!isNumType(type) || isLowPrecision(type)) return unsupportedType(ctx, type);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(type, p->dims));
  ASSIGN_OR_RETURN(Mt19937 rng, makeRng(ctx));
  for (int64_t i = 0; i < out.numElements(); ++i) {
    double prob = loadNum(ctx, *p, i).f;
    if (!(prob >= 0 && prob <= 1)) {
      return invalidArgument("Bernoulli: probability {} is outside [0, 1]", prob);
    }
    Num n;
    n.i = rng.nextBernoulli(prob);
    storeNum(ctx, out, i, n);
  }
  return single(std::move(out));
}

StatusOr<Outputs> multinomialKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  if (!isFloatType(x->dtype)) return unsupportedType(ctx, x->dtype);
  if (x->rank() != 2) return invalidArgument("Multinomial: the input must be [batch, classes]");
  int64_t samples = ctx.attrs.getInt("sample_size", 1);
  if (samples < 0) return invalidArgument("Multinomial: negative sample_size");
  auto type = static_cast<DataType>(ctx.attrs.getInt("dtype", 6));
  if (type != DataType::kInt32 && type != DataType::kInt64) return unsupportedType(ctx, type);
  int64_t batch = x->dims[0], classes = x->dims[1];
  if (classes == 0 && samples > 0) return invalidArgument("Multinomial: no classes");
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(type, {batch, samples}));
  ASSIGN_OR_RETURN(Mt19937 rng, makeRng(ctx));
  std::vector<double> cdf(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    // The input holds unnormalized log-probabilities.
    double mx = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, loadNum(ctx, *x, b * classes + c).f);
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) {
      total += std::exp(loadNum(ctx, *x, b * classes + c).f - mx);
      cdf[static_cast<size_t>(c)] = total;
    }
    if (!(total > 0) || std::isinf(total)) {
      return invalidArgument("Multinomial: row {} has no finite probabilities", b);
    }
    for (int64_t s = 0; s < samples; ++s) {
      double u = rng.nextDouble() * total;
      int64_t c = 0;
      while (c + 1 < classes && cdf[static_cast<size_t>(c)] <= u) ++c;
      Num n;
      n.i = c;
      storeNum(ctx, out, b * samples + s, n);
    }
  }
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
