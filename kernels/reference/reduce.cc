// Reduction reference kernels: ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1
// ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp (axes as attribute or input, keepdims,
// noop_with_empty_axes; empty reductions give the op's identity), ArgMax and ArgMin.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

enum class Reduce { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

std::optional<Reduce> reduceKind(const std::string& op) {
  static const std::map<std::string, Reduce> kinds = {
      {"ReduceSum", Reduce::kSum},       {"ReduceMean", Reduce::kMean},
      {"ReduceMax", Reduce::kMax},       {"ReduceMin", Reduce::kMin},
      {"ReduceProd", Reduce::kProd},     {"ReduceL1", Reduce::kL1},
      {"ReduceL2", Reduce::kL2},         {"ReduceSumSquare", Reduce::kSumSquare},
      {"ReduceLogSum", Reduce::kLogSum}, {"ReduceLogSumExp", Reduce::kLogSumExp},
  };
  auto it = kinds.find(op);
  if (it == kinds.end()) return std::nullopt;
  return it->second;
}

// Accumulates in A (the compute type for floats and wrapping integers, double for the ops whose
// integer results go through a transcendental function).
template <typename T, typename A>
Status reduceTyped(Reduce kind, const HostTensor& x, const Dims& out_strides, HostTensor& out,
                   int64_t group) {
  using C = Compute<T>;
  int64_t n_out = out.numElements();
  std::vector<A> acc(static_cast<size_t>(n_out));
  A init{};
  if (kind == Reduce::kProd) init = A(1);
  if (kind == Reduce::kMax || kind == Reduce::kMin || kind == Reduce::kLogSumExp) {
    bool want_max = kind != Reduce::kMin;
    if constexpr (std::is_floating_point_v<A>) {
      init = want_max ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    } else {
      init = want_max ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
    }
  }
  std::fill(acc.begin(), acc.end(), init);
  auto value = [&](int64_t i) { return static_cast<A>(load<T>(x, i)); };
  auto visit = [&](auto&& f) {
    forEachBroadcast(x.dims, {out_strides}, [&](int64_t i, const int64_t* off) {
      A& a = acc[static_cast<size_t>(off[0])];
      a = f(a, value(i));
    });
  };
  auto add = [](A a, A b) -> A {
    if constexpr (std::is_integral_v<A>) {
      return wrapAdd(a, b);
    } else {
      return a + b;
    }
  };
  auto mul = [](A a, A b) -> A {
    if constexpr (std::is_integral_v<A>) {
      return wrapMul(a, b);
    } else {
      return a * b;
    }
  };
  auto absolute = [](A v) -> A {
    if constexpr (std::is_floating_point_v<A>) {
      return std::fabs(v);
    } else if constexpr (std::is_signed_v<A>) {
      return v < 0 ? wrapSub<A>(0, v) : v;
    } else {
      return v;
    }
  };
  switch (kind) {
    case Reduce::kSum:
    case Reduce::kMean:
    case Reduce::kLogSum:
      visit(add);
      break;
    case Reduce::kProd:
      visit(mul);
      break;
    case Reduce::kL1:
      visit([&](A a, A v) { return add(a, absolute(v)); });
      break;
    case Reduce::kL2:
    case Reduce::kSumSquare:
      visit([&](A a, A v) { return add(a, mul(v, v)); });
      break;
    case Reduce::kMax:
      visit([](A a, A v) {
        if constexpr (std::is_floating_point_v<A>) {
          if (std::isnan(v) || std::isnan(a)) return std::isnan(a) ? a : v;
        }
        return v > a ? v : a;
      });
      break;
    case Reduce::kMin:
      visit([](A a, A v) {
        if constexpr (std::is_floating_point_v<A>) {
          if (std::isnan(v) || std::isnan(a)) return std::isnan(a) ? a : v;
        }
        return v < a ? v : a;
      });
      break;
    case Reduce::kLogSumExp: {
      if constexpr (std::is_floating_point_v<A>) {
        std::vector<A> maxes = acc;
        forEachBroadcast(x.dims, {out_strides}, [&](int64_t i, const int64_t* off) {
          A& m = maxes[static_cast<size_t>(off[0])];
          m = std::max(m, value(i));
        });
        std::fill(acc.begin(), acc.end(), A(0));
        forEachBroadcast(x.dims, {out_strides}, [&](int64_t i, const int64_t* off) {
          size_t o = static_cast<size_t>(off[0]);
          A m = std::isinf(maxes[o]) ? A(0) : maxes[o];
          acc[o] += std::exp(value(i) - m);
        });
        for (size_t o = 0; o < acc.size(); ++o) {
          A m = std::isinf(maxes[o]) ? A(0) : maxes[o];
          acc[o] = std::log(acc[o]) + m;
        }
      }
      break;
    }
  }
  for (int64_t o = 0; o < n_out; ++o) {
    A a = acc[static_cast<size_t>(o)];
    if constexpr (std::is_floating_point_v<A>) {
      if (kind == Reduce::kMean) a = a / static_cast<A>(group);
      if (kind == Reduce::kL2) a = std::sqrt(a);
      if (kind == Reduce::kLogSum) a = std::log(a);
    } else {
      if (kind == Reduce::kMean) {
        if (group == 0) return invalidArgument("ReduceMean: empty integer reduction");
        a = static_cast<A>(a / static_cast<A>(group));
      }
    }
    store<T>(out, o, convertNumber<C>(a));
  }
  return Status::ok();
}

}  // namespace

StatusOr<Outputs> reduceKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  std::optional<Reduce> kind = reduceKind(ctx.op);
  if (!kind) return unimplemented(ctx, "unknown reduction");
  int64_t input_opset = *kind == Reduce::kSum ? 13 : 18;
  std::optional<Dims> axes;
  if (ctx.opset < input_opset) {
    axes = ctx.attrs.getInts("axes");
  } else if (const HostTensor* a = ctx.input(1)) {
    ASSIGN_OR_RETURN(axes, readInts(*a, "axes"));
  }
  bool keepdims = ctx.attrs.getInt("keepdims", 1) != 0;
  bool noop = ctx.opset >= input_opset && ctx.attrs.getInt("noop_with_empty_axes", 0) != 0;
  int64_t rank = x->rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  if (!axes.has_value() || axes->empty()) {
    if (noop) return single(*x);
    std::fill(reduced.begin(), reduced.end(), true);
  } else {
    ASSIGN_OR_RETURN(Dims norm, normalizeAxes(*axes, rank));
    for (int64_t a : norm) reduced[static_cast<size_t>(a)] = true;
  }
  Dims keep_dims, out_dims;
  int64_t group = 1;
  for (size_t d = 0; d < reduced.size(); ++d) {
    keep_dims.push_back(reduced[d] ? 1 : x->dims[d]);
    if (reduced[d]) group *= x->dims[d];
    if (!reduced[d] || keepdims) out_dims.push_back(keep_dims.back());
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, out_dims));
  Dims out_strides = contiguousStrides(keep_dims);
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (reduced[d]) out_strides[d] = 0;
  }
  Reduce k = *kind;
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsBool<T>) {
      if (k != Reduce::kMax && k != Reduce::kMin) return unsupportedType(ctx, x->dtype);
      return reduceTyped<T, uint8_t>(k, *x, out_strides, out, group);
    } else if constexpr (kIsFloat<T>) {
      return reduceTyped<T, Compute<T>>(k, *x, out_strides, out, group);
    } else {
      if (k == Reduce::kL2 || k == Reduce::kLogSum || k == Reduce::kLogSumExp) {
        return reduceTyped<T, double>(k, *x, out_strides, out, group);
      }
      return reduceTyped<T, T>(k, *x, out_strides, out, group);
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> argMinMaxKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  int64_t rank = x->rank();
  if (rank == 0) return invalidArgument("{}: input must have rank >= 1", ctx.op);
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", 0), rank));
  bool keepdims = ctx.attrs.getInt("keepdims", 1) != 0;
  bool last = ctx.opset >= 12 && ctx.attrs.getInt("select_last_index", 0) != 0;
  bool is_max = ctx.op == "ArgMax";
  int64_t dim = x->dims[static_cast<size_t>(axis)];
  Dims dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) {
      dims.push_back(x->dims[static_cast<size_t>(d)]);
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kInt64, dims));
  if (out.numElements() == 0) return single(std::move(out));
  if (dim == 0) return invalidArgument("{}: the reduced dimension is empty", ctx.op);
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
          int64_t base = o * dim * inner + in;
          C best = load<T>(*x, base);
          int64_t best_k = 0;
          for (int64_t k = 1; k < dim; ++k) {
            C v = load<T>(*x, base + k * inner);
            bool better =
                is_max ? (v > best || (last && v == best)) : (v < best || (last && v == best));
            if (better) {
              best = v;
              best_k = k;
            }
          }
          out.set<int64_t>(o * inner + in, best_k);
        }
      }
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
