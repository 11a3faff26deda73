// Random-generator reference kernels, for `opt run` only (fold-constants never folds them:
// pass::isNondeterministicOp): RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike,
// Bernoulli, Multinomial. The generator is a 64-bit Mersenne Twister seeded from the `seed`
// attribute (0 when absent, so a run is repeatable); normals by Box-Muller, uniforms from 53 bits.
// The standard leaves the generator to the runtime: the values follow the distributions, not
// any other runtime's streams.
#include <cmath>
#include <numbers>
#include <random>

#include "low_precision.h"
#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

class Rng {
 public:
  explicit Rng(const KernelContext& ctx)
      : gen_(static_cast<uint64_t>(static_cast<int64_t>(ctx.attrs.getFloat("seed", 0.0f)))) {}
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  double normal() {
    double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 gen_;
};

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
         t == DataType::kBfloat16;
}

void storeD(const KernelContext& ctx, HostTensor& t, int64_t i, double v) {
  Num n;
  n.is_float = true;
  n.f = v;
  storeNum(ctx, t, i, n);
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
  Rng rng(ctx);
  bool normal = ctx.op == "RandomNormal" || ctx.op == "RandomNormalLike";
  double a = normal ? ctx.attrs.getFloat("mean", 0.0f) : ctx.attrs.getFloat("low", 0.0f);
  double b = normal ? ctx.attrs.getFloat("scale", 1.0f) : ctx.attrs.getFloat("high", 1.0f);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    storeD(ctx, out, i, normal ? a + b * rng.normal() : a + (b - a) * rng.uniform());
  }
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
  Rng rng(ctx);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    double prob = loadNum(ctx, *p, i).f;
    if (!(prob >= 0 && prob <= 1)) {
      return invalidArgument("Bernoulli: probability {} is outside [0, 1]", prob);
    }
    Num n;
    n.i = rng.uniform() < prob ? 1 : 0;
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
  Rng rng(ctx);
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
      double u = rng.uniform() * total;
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
