// Helpers shared by the per-op inference functions (private to src/ir/shape_inference).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/support/axis.h"

namespace onnxopt::ir::infer {

/// int64 arithmetic that reports overflow instead of wrapping (or trapping).
inline std::optional<int64_t> addChecked(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> mulChecked(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// A floating-point size as an int64, when finite and in range (a cast of anything else is UB).
inline std::optional<int64_t> toInt64(double x) {
  if (!std::isfinite(x) || x < -9.2e18 || x > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(x);
}

/// A dim that is a known non-negative size; nullopt for unknown, symbolic or negative values.
inline Dim knownOrUnknown(std::optional<int64_t> v) {
  return v && *v >= 0 ? Dim::known(*v) : Dim::unknown();
}

/// The type two sources agree on: equal dims stay, differing ones become unknown.
inline Type mergeTypes(const Type& a, const Type& b) {
  if (!a.isKnown()) return b;
  if (!b.isKnown()) return a;
  if (a == b || !a.isTensor() || !b.isTensor()) return a;
  Type t = Type::tensor(a.elem_type == b.elem_type ? a.elem_type : DataType::kUndefined);
  if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
    std::vector<Dim> dims;
    for (size_t i = 0; i < a.shape->size(); ++i) {
      dims.push_back((*a.shape)[i] == (*b.shape)[i] ? (*a.shape)[i] : Dim::unknown());
    }
    t.shape = dims;
  }
  return t;
}

inline std::vector<Dim> knownDims(const std::vector<int64_t>& v) {
  std::vector<Dim> out;
  for (int64_t x : v) out.push_back(Dim::known(x));
  return out;
}

inline Dim dimOf(const std::optional<SymExpr>& e) {
  return e ? Dim::fromExpr(*e) : Dim::unknown();
}

/// a op b on dims; unknown when either is unknown. Two known dims take `known`, the same
/// arithmetic on int64 (nullopt where SymExpr's would overflow or have no value), without
/// building expressions: most dims are known.
template <typename Op, typename KnownOp>
Dim dimBinary(const Dim& a, const Dim& b, Op op, KnownOp known) {
  if (a.isKnown() && b.isKnown()) {
    std::optional<int64_t> r = known(a.value, b.value);
    return r ? Dim::known(*r) : Dim::unknown();
  }
  auto x = a.toExpr();
  auto y = b.toExpr();
  if (!x || !y) return Dim::unknown();
  return Dim::fromExpr(op(*x, *y));
}

inline Dim dimMul(const Dim& a, const Dim& b) {
  return dimBinary(
      a, b, [](const SymExpr& x, const SymExpr& y) { return x * y; },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        int64_t r = 0;
        if (__builtin_mul_overflow(x, y, &r)) return std::nullopt;
        return r;
      });
}
inline Dim dimAdd(const Dim& a, const Dim& b) {
  return dimBinary(
      a, b, [](const SymExpr& x, const SymExpr& y) { return x + y; },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        int64_t r = 0;
        if (__builtin_add_overflow(x, y, &r)) return std::nullopt;
        return r;
      });
}
inline Dim dimSub(const Dim& a, const Dim& b) {
  // (Known dims are not negative, so x - y cannot overflow.)
  return dimBinary(
      a, b, [](const SymExpr& x, const SymExpr& y) { return x - y; },
      [](int64_t x, int64_t y) -> std::optional<int64_t> { return x - y; });
}
inline Dim dimFloorDiv(const Dim& a, const Dim& b) {
  // (Both not negative: floor division is C++'s; by zero it has no value.)
  return dimBinary(
      a, b, [](const SymExpr& x, const SymExpr& y) { return SymExpr::floorDiv(x, y); },
      [](int64_t x, int64_t y) -> std::optional<int64_t> {
        if (y == 0) return std::nullopt;
        return x / y;
      });
}
inline Dim dimProduct(const std::vector<Dim>& dims, size_t from, size_t to) {
  Dim p = Dim::known(1);
  for (size_t i = from; i < to && i < dims.size(); ++i) p = dimMul(p, dims[i]);
  return p;
}

/// The length of 1-D input `i` (a shape tensor whose values are unknown), when known and a
/// plausible rank: a declared int64[10000000000] would otherwise allocate that many dims.
inline std::optional<size_t> shapeTensorLength(const InferenceContext& ctx, size_t i) {
  constexpr int64_t kMaxRank = 1024;
  auto ts = ctx.inputShape(i);
  if (!ts || ts->size() != 1 || !(*ts)[0].isKnown() || (*ts)[0].value > kMaxRank) {
    return std::nullopt;
  }
  return static_cast<size_t>((*ts)[0].value);
}

/// Output i has input j's type and shape.
inline void passThrough(InferenceContext& ctx, size_t out = 0, size_t in = 0) {
  if (const Type* t = ctx.inputType(in)) ctx.setOutputType(out, *t);
}

/// The element type of input `i`, or undefined.
inline DataType elemOr(const InferenceContext& ctx, size_t i) {
  return ctx.inputElemType(i).value_or(DataType::kUndefined);
}

/// Reads an "axes"-like list: from the attribute before `input_since`, else from input `input`.
inline std::optional<std::vector<int64_t>> axesArg(const InferenceContext& ctx, const char* attr,
                                                   size_t input, int64_t input_since) {
  if (ctx.opset() < input_since) return ctx.attrInts(attr);
  if (!ctx.hasInput(input)) return std::nullopt;
  return ctx.inputInts(input);
}

}  // namespace onnxopt::ir::infer
