// Elementwise reference kernels with multidirectional broadcasting: arithmetic (Add Sub Mul Div Mod
// Pow), variadic (Min Max Sum Mean), comparisons, logical and bitwise ops, unary math (Neg Abs Sqrt
// Reciprocal Exp Log Floor Ceil Round Sign Sin Cos Tanh Sigmoid Relu Erf), Clip, Where, IsNaN,
// IsInf. float16/bfloat16 compute in float and round back; float32 computes in float; integer
// arithmetic wraps.
#include <algorithm>
#include <cmath>
#include <map>

#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

template <typename T, typename O, typename F>
void applyBinary(const HostTensor& a, const HostTensor& b, HostTensor& out, F f) {
  mapBroadcast({&a, &b}, out.dims, [&](int64_t i, const int64_t* off) {
    store<O>(out, i, f(load<T>(a, off[0]), load<T>(b, off[1])));
  });
}

template <typename T, typename O, typename F>
void applyUnary(const HostTensor& a, HostTensor& out, F f) {
  int64_t n = a.numElements();
  for (int64_t i = 0; i < n; ++i) store<O>(out, i, f(load<T>(a, i)));
}

template <typename T>
bool hasZero(const HostTensor& t) {
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    if (load<T>(t, i) == 0) return true;
  }
  return false;
}

template <typename T>
T intDiv(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return wrapSub<T>(0, x);  // avoids INT_MIN / -1
  }
  return static_cast<T>(x / y);
}

template <typename T>
T intRem(T x, T y) {  // C remainder, sign of the dividend
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return 0;
  }
  return static_cast<T>(x % y);
}

template <typename T>
T intMod(T x, T y) {  // Python remainder, sign of the divisor
  T r = intRem(x, y);
  if constexpr (std::is_signed_v<T>) {
    if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
  }
  return r;
}

template <typename C>
C maxPropagateNaN(C x, C y) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
  }
  return x > y ? x : y;  // a NaN y loses no comparison and is returned
}

template <typename C>
C minPropagateNaN(C x, C y) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
  }
  return x < y ? x : y;
}

struct BinaryInputs {
  const HostTensor* a;
  const HostTensor* b;
  HostTensor out;
};

StatusOr<BinaryInputs> prepareBinary(const KernelContext& ctx, DataType out_type_or_undefined) {
  ASSIGN_OR_RETURN(const HostTensor* a, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* b, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkSameType(ctx, {a, b}));
  ASSIGN_OR_RETURN(Dims dims, broadcastShapes({&a->dims, &b->dims}));
  DataType out_type =
      out_type_or_undefined == DataType::kUndefined ? a->dtype : out_type_or_undefined;
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(out_type, std::move(dims)));
  return BinaryInputs{a, b, std::move(out)};
}

}  // namespace

StatusOr<Outputs> binaryArithmetic(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(BinaryInputs in, prepareBinary(ctx, DataType::kUndefined));
  const HostTensor& a = *in.a;
  const HostTensor& b = *in.b;
  HostTensor& out = in.out;
  const std::string& op = ctx.op;
  bool fmod = ctx.attrs.getInt("fmod", 0) != 0;
  RETURN_IF_ERROR(visitType(ctx, a.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, a.dtype);
    } else if constexpr (kIsInt<T>) {
      if (op == "Add") {
        applyBinary<T, T>(a, b, out, [](C x, C y) { return wrapAdd(x, y); });
      } else if (op == "Sub") {
        applyBinary<T, T>(a, b, out, [](C x, C y) { return wrapSub(x, y); });
      } else if (op == "Mul") {
        applyBinary<T, T>(a, b, out, [](C x, C y) { return wrapMul(x, y); });
      } else {
        if (hasZero<T>(b)) return invalidArgument("{}: integer division by zero", op);
        if (op == "Div") {
          applyBinary<T, T>(a, b, out, [](C x, C y) { return intDiv(x, y); });
        } else if (fmod) {
          applyBinary<T, T>(a, b, out, [](C x, C y) { return intRem(x, y); });
        } else {
          applyBinary<T, T>(a, b, out, [](C x, C y) { return intMod(x, y); });
        }
      }
      return Status::ok();
    } else {
      if (op == "Add") {
        applyBinary<T, T>(a, b, out, [](C x, C y) { return x + y; });
      } else if (op == "Sub") {
        applyBinary<T, T>(a, b, out, [](C x, C y) { return x - y; });
      } else if (op == "Mul") {
        applyBinary<T, T>(a, b, out, [](C x, C y) { return x * y; });
      } else if (op == "Div") {
        applyBinary<T, T>(a, b, out, [](C x, C y) { return x / y; });
      } else {
        if (!fmod) return invalidArgument("Mod: fmod must be 1 for floating-point inputs");
        applyBinary<T, T>(a, b, out, [](C x, C y) { return std::fmod(x, y); });
      }
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

namespace {

template <typename T>
T intPow(T base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (exp % 2 == 0) ? T(1) : T(-1);
    }
    return 0;  // |base| > 1: the exact result truncates to 0 (0 ** negative too)
  }
  T result = 1;
  while (exp > 0) {
    if (exp & 1) result = wrapMul(result, base);
    base = wrapMul(base, base);
    exp >>= 1;
  }
  return result;
}

}  // namespace

StatusOr<Outputs> powKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* a, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* b, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(Dims dims, broadcastShapes({&a->dims, &b->dims}));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(a->dtype, std::move(dims)));
  RETURN_IF_ERROR(visitType(ctx, a->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, a->dtype);
    } else {
      return visitType(ctx, b->dtype, [&](auto etag) -> Status {
        using E = typename decltype(etag)::type;
        using CE = Compute<E>;
        if constexpr (!kIsNumeric<E>) {
          return unsupportedType(ctx, b->dtype);
        } else {
          mapBroadcast({a, b}, out.dims, [&](int64_t i, const int64_t* off) {
            C x = load<T>(*a, off[0]);
            CE e = load<E>(*b, off[1]);
            C r;
            if constexpr (kIsFloat<T>) {
              r = std::pow(x, convertNumber<C>(e));
            } else if constexpr (kIsInt<E>) {
              r = intPow<C>(x, convertNumber<int64_t>(e));
            } else {
              r = convertNumber<C>(std::pow(static_cast<double>(x), static_cast<double>(e)));
            }
            store<T>(out, i, r);
          });
          return Status::ok();
        }
      });
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> variadicKernel(const KernelContext& ctx) {
  std::vector<const HostTensor*> ins;
  std::vector<const Dims*> shapes;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    ASSIGN_OR_RETURN(const HostTensor* t, requireInput(ctx, i));
    ins.push_back(t);
    shapes.push_back(&t->dims);
  }
  if (ins.empty()) return invalidArgument("{}: needs at least one input", ctx.op);
  RETURN_IF_ERROR(checkSameType(ctx, ins));
  ASSIGN_OR_RETURN(Dims dims, broadcastShapes(shapes));
  DataType type = ins[0]->dtype;
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(type, std::move(dims)));
  const std::string& op = ctx.op;
  RETURN_IF_ERROR(visitType(ctx, type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, type);
    } else {
      if (op == "Mean" && !kIsFloat<T>) return unsupportedType(ctx, type);
      int kind = op == "Max" ? 0 : op == "Min" ? 1 : op == "Sum" ? 2 : 3;
      mapBroadcast(ins, out.dims, [&](int64_t i, const int64_t* off) {
        C acc = load<T>(*ins[0], off[0]);
        for (size_t k = 1; k < ins.size(); ++k) {
          C v = load<T>(*ins[k], off[k]);
          if (kind == 0) {
            acc = maxPropagateNaN(acc, v);
          } else if (kind == 1) {
            acc = minPropagateNaN(acc, v);
          } else if constexpr (kIsInt<T>) {
            acc = wrapAdd(acc, v);
          } else {
            acc = acc + v;
          }
        }
        if constexpr (kIsFloat<T>) {
          if (kind == 3) acc = acc / static_cast<C>(ins.size());
        }
        store<T>(out, i, acc);
      });
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> comparisonKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(BinaryInputs in, prepareBinary(ctx, DataType::kBool));
  const HostTensor& a = *in.a;
  const HostTensor& b = *in.b;
  HostTensor& out = in.out;
  const std::string& op = ctx.op;
  if (a.dtype == DataType::kString) {
    if (op != "Equal") return unsupportedType(ctx, a.dtype);
    mapBroadcast({&a, &b}, out.dims, [&](int64_t i, const int64_t* off) {
      store<bool>(out, i,
                  a.strings[static_cast<size_t>(off[0])] == b.strings[static_cast<size_t>(off[1])]);
    });
    return single(std::move(out));
  }
  RETURN_IF_ERROR(visitType(ctx, a.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if (op == "Equal") {
      applyBinary<T, bool>(a, b, out, [](C x, C y) { return x == y; });
      return Status::ok();
    }
    if constexpr (kIsBool<T>) {
      return unsupportedType(ctx, a.dtype);
    } else {
      if (op == "Less") {
        applyBinary<T, bool>(a, b, out, [](C x, C y) { return x < y; });
      } else if (op == "Greater") {
        applyBinary<T, bool>(a, b, out, [](C x, C y) { return x > y; });
      } else if (op == "LessOrEqual") {
        applyBinary<T, bool>(a, b, out, [](C x, C y) { return x <= y; });
      } else {
        applyBinary<T, bool>(a, b, out, [](C x, C y) { return x >= y; });
      }
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> logicalKernel(const KernelContext& ctx) {
  if (ctx.op == "Not") {
    ASSIGN_OR_RETURN(const HostTensor* a, requireInput(ctx, 0));
    if (a->dtype != DataType::kBool) return unsupportedType(ctx, a->dtype);
    ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kBool, a->dims));
    applyUnary<bool, bool>(*a, out, [](bool x) { return !x; });
    return single(std::move(out));
  }
  ASSIGN_OR_RETURN(BinaryInputs in, prepareBinary(ctx, DataType::kBool));
  if (in.a->dtype != DataType::kBool) return unsupportedType(ctx, in.a->dtype);
  if (ctx.op == "And") {
    applyBinary<bool, bool>(*in.a, *in.b, in.out, [](bool x, bool y) { return x && y; });
  } else if (ctx.op == "Or") {
    applyBinary<bool, bool>(*in.a, *in.b, in.out, [](bool x, bool y) { return x || y; });
  } else {
    applyBinary<bool, bool>(*in.a, *in.b, in.out, [](bool x, bool y) { return x != y; });
  }
  return single(std::move(in.out));
}

StatusOr<Outputs> bitwiseKernel(const KernelContext& ctx) {
  if (ctx.op == "BitwiseNot") {
    ASSIGN_OR_RETURN(const HostTensor* a, requireInput(ctx, 0));
    ASSIGN_OR_RETURN(HostTensor out, makeOutput(a->dtype, a->dims));
    RETURN_IF_ERROR(visitType(ctx, a->dtype, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (!kIsInt<T>) {
        return unsupportedType(ctx, a->dtype);
      } else {
        applyUnary<T, T>(*a, out, [](T x) { return static_cast<T>(~x); });
        return Status::ok();
      }
    }));
    return single(std::move(out));
  }
  ASSIGN_OR_RETURN(BinaryInputs in, prepareBinary(ctx, DataType::kUndefined));
  const std::string& op = ctx.op;
  RETURN_IF_ERROR(visitType(ctx, in.a->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsInt<T>) {
      return unsupportedType(ctx, in.a->dtype);
    } else {
      if (op == "BitwiseAnd") {
        applyBinary<T, T>(*in.a, *in.b, in.out, [](T x, T y) { return static_cast<T>(x & y); });
      } else if (op == "BitwiseOr") {
        applyBinary<T, T>(*in.a, *in.b, in.out, [](T x, T y) { return static_cast<T>(x | y); });
      } else {
        applyBinary<T, T>(*in.a, *in.b, in.out, [](T x, T y) { return static_cast<T>(x ^ y); });
      }
      return Status::ok();
    }
  }));
  return single(std::move(in.out));
}

namespace {

template <typename C>
C sigmoid(C x) {
  if (x >= 0) return C(1) / (C(1) + std::exp(-x));
  C e = std::exp(x);
  return e / (C(1) + e);
}

template <typename C>
C sign(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
  }
  if constexpr (std::is_signed_v<C>) {
    return x > 0 ? C(1) : x < 0 ? C(-1) : C(0);
  } else {
    return x > 0 ? C(1) : C(0);
  }
}

enum class FloatUnary {
  kSqrt,
  kReciprocal,
  kExp,
  kLog,
  kFloor,
  kCeil,
  kRound,
  kSin,
  kCos,
  kTanh,
  kSigmoid,
  kErf
};

}  // namespace

StatusOr<Outputs> unaryKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* a, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(a->dtype, a->dims));
  const std::string& op = ctx.op;
  static const std::map<std::string, FloatUnary> kFloatOps = {
      {"Sqrt", FloatUnary::kSqrt},       {"Reciprocal", FloatUnary::kReciprocal},
      {"Exp", FloatUnary::kExp},         {"Log", FloatUnary::kLog},
      {"Floor", FloatUnary::kFloor},     {"Ceil", FloatUnary::kCeil},
      {"Round", FloatUnary::kRound},     {"Sin", FloatUnary::kSin},
      {"Cos", FloatUnary::kCos},         {"Tanh", FloatUnary::kTanh},
      {"Sigmoid", FloatUnary::kSigmoid}, {"Erf", FloatUnary::kErf},
  };
  RETURN_IF_ERROR(visitType(ctx, a->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, a->dtype);
    } else {
      if (op == "Neg") {
        if constexpr (kIsFloat<T>) {
          applyUnary<T, T>(*a, out, [](C x) { return -x; });
        } else if constexpr (kIsSignedInt<T>) {
          applyUnary<T, T>(*a, out, [](C x) { return wrapSub<C>(0, x); });
        } else {
          return unsupportedType(ctx, a->dtype);
        }
      } else if (op == "Abs") {
        if constexpr (kIsFloat<T>) {
          applyUnary<T, T>(*a, out, [](C x) { return std::fabs(x); });
        } else if constexpr (kIsSignedInt<T>) {
          applyUnary<T, T>(*a, out, [](C x) { return x < 0 ? wrapSub<C>(0, x) : x; });
        } else {
          applyUnary<T, T>(*a, out, [](C x) { return x; });
        }
      } else if (op == "Sign") {
        applyUnary<T, T>(*a, out, [](C x) { return sign(x); });
      } else if (op == "Relu") {
        if constexpr (kIsFloat<T> || kIsSignedInt<T>) {
          applyUnary<T, T>(*a, out, [](C x) { return x < 0 ? C(0) : x; });
        } else {
          return unsupportedType(ctx, a->dtype);
        }
      } else {
        auto it = kFloatOps.find(op);
        if (it == kFloatOps.end()) return unimplemented(ctx, "unknown unary op");
        FloatUnary kind = it->second;
        if constexpr (kIsInt<T>) {
          if (kind != FloatUnary::kErf) return unsupportedType(ctx, a->dtype);
          applyUnary<T, T>(*a, out,
                           [](C x) { return convertNumber<C>(std::erf(static_cast<double>(x))); });
        } else {
          applyUnary<T, T>(*a, out, [kind](C x) -> C {
            switch (kind) {
              case FloatUnary::kSqrt:
                return std::sqrt(x);
              case FloatUnary::kReciprocal:
                return C(1) / x;
              case FloatUnary::kExp:
                return std::exp(x);
              case FloatUnary::kLog:
                return std::log(x);
              case FloatUnary::kFloor:
                return std::floor(x);
              case FloatUnary::kCeil:
                return std::ceil(x);
              case FloatUnary::kRound:
                return std::nearbyint(x);  // default mode: half to even
              case FloatUnary::kSin:
                return std::sin(x);
              case FloatUnary::kCos:
                return std::cos(x);
              case FloatUnary::kTanh:
                return std::tanh(x);
              case FloatUnary::kSigmoid:
                return sigmoid(x);
              case FloatUnary::kErf:
                return std::erf(x);
            }
            return x;
          });
        }
      }
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> clipKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  const HostTensor* lo_t = ctx.opset >= 11 ? ctx.input(1) : nullptr;
  const HostTensor* hi_t = ctx.opset >= 11 ? ctx.input(2) : nullptr;
  for (const HostTensor* t : {lo_t, hi_t}) {
    if (t == nullptr) continue;
    if (t->dtype != x->dtype) return invalidArgument("Clip: min/max must have the input's type");
    if (t->numElements() != 1) return invalidArgument("Clip: min/max must be scalars");
  }
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, x->dtype);
    } else {
      C lo = std::numeric_limits<C>::lowest();
      C hi = std::numeric_limits<C>::max();
      if constexpr (kIsFloat<T>) {
        lo = -std::numeric_limits<C>::infinity();
        hi = std::numeric_limits<C>::infinity();
      }
      if (ctx.opset < 11) {
        if constexpr (!kIsFloat<T>) {
          return unsupportedType(ctx, x->dtype);
        } else {
          lo = static_cast<C>(ctx.attrs.getFloat("min", -std::numeric_limits<float>::infinity()));
          hi = static_cast<C>(ctx.attrs.getFloat("max", std::numeric_limits<float>::infinity()));
        }
      }
      if (lo_t != nullptr) lo = load<T>(*lo_t, 0);
      if (hi_t != nullptr) hi = load<T>(*hi_t, 0);
      applyUnary<T, T>(*x, out, [lo, hi](C v) {
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        return v;
      });
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> whereKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* cond, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* y, requireInput(ctx, 2));
  if (cond->dtype != DataType::kBool) return invalidArgument("Where: condition must be bool");
  RETURN_IF_ERROR(checkSameType(ctx, {x, y}));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  ASSIGN_OR_RETURN(Dims dims, broadcastShapes({&cond->dims, &x->dims, &y->dims}));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, std::move(dims)));
  size_t eb = elementBytes(x->dtype);
  mapBroadcast({cond, x, y}, out.dims, [&](int64_t i, const int64_t* off) {
    if (load<bool>(*cond, off[0])) {
      copyElement(out, i, *x, off[1], eb);
    } else {
      copyElement(out, i, *y, off[2], eb);
    }
  });
  return single(std::move(out));
}

StatusOr<Outputs> isNaNKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kBool, x->dims));
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>) {
      return unsupportedType(ctx, x->dtype);
    } else {
      applyUnary<T, bool>(*x, out, [](Compute<T> v) { return std::isnan(v); });
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> isInfKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kBool, x->dims));
  bool pos = ctx.attrs.getInt("detect_positive", 1) != 0;
  bool neg = ctx.attrs.getInt("detect_negative", 1) != 0;
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>) {
      return unsupportedType(ctx, x->dtype);
    } else {
      applyUnary<T, bool>(*x, out, [pos, neg](Compute<T> v) {
        return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
      });
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
