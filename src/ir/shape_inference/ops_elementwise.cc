// Elementwise ops: unary, broadcasting binary and variadic, comparison and logic, Where, Cast.
// Integer shape values propagate through Add/Sub/Mul/Div, Equal, Where and Cast.
#include <limits>

#include "helpers.h"
#include "onnxopt/ir/op_traits.h"

namespace onnxopt::ir::detail {
namespace {

using infer::elemOr;
using infer::passThrough;

void unary(InferenceContext& ctx) {
  passThrough(ctx);
}

void unaryBool(InferenceContext& ctx) {
  ctx.setOutput(0, DataType::kBool, ctx.inputShape(0));
}

bool isIntegral(DataType t) {
  return t == DataType::kInt64 || t == DataType::kInt32;
}

/// Broadcast of all inputs' shapes (nullopt when a rank is unknown or they do not broadcast).
std::optional<std::vector<Dim>> broadcastInputs(InferenceContext& ctx, size_t first = 0) {
  std::optional<std::vector<Dim>> shape;
  for (size_t i = first; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) continue;
    auto s = ctx.inputShape(i);
    if (!s) return std::nullopt;
    if (!shape) {
      shape = s;
      continue;
    }
    shape = broadcastShapes(*shape, *s);
    if (!shape) {
      ctx.warn("input shapes do not broadcast");
      return std::nullopt;
    }
  }
  return shape;
}

/// Elementwise combination of two shape values with size-1 broadcasting.
template <typename Op>
void propagateBinary(InferenceContext& ctx, Op op) {
  const ShapeValue* a = ctx.inputValue(0);
  const ShapeValue* b = ctx.inputValue(1);
  if (a == nullptr || b == nullptr) return;
  size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1)) return;
  ShapeValue out;
  for (size_t i = 0; i < n; ++i) {
    const auto& x = (*a)[a->size() == 1 ? 0 : i];
    const auto& y = (*b)[b->size() == 1 ? 0 : i];
    out.push_back(x && y ? op(*x, *y) : std::nullopt);
  }
  ctx.setOutputValue(0, std::move(out));
}

template <int kKind>  // 0 add, 1 sub, 2 mul, 3 div, 4 mod
void arithmetic(InferenceContext& ctx) {
  ctx.setOutput(0, elemOr(ctx, 0), broadcastInputs(ctx));
  if (!isIntegral(elemOr(ctx, 0))) return;
  propagateBinary(ctx, [](const SymExpr& x, const SymExpr& y) -> std::optional<SymExpr> {
    switch (kKind) {
      case 0:
        return x + y;
      case 1:
        return x - y;
      case 2:
        return x * y;
      case 4:
        // Floored (fmod = 0) and truncated (fmod = 1) remainders agree for non-negative
        // operands, and dims are: only those are followed.
        if (!x.isNonNegative() || !y.isNonNegative() || y.constantValue() == 0) {
          return std::nullopt;
        }
        return SymExpr::mod(x, y);
      default: {
        auto cx = x.constantValue(), cy = y.constantValue();
        if (cx && cy) {
          // Division by zero has no value; INT64_MIN / -1 overflows (and traps in C++).
          if (*cy == 0 || (*cy == -1 && *cx == std::numeric_limits<int64_t>::min())) {
            return std::nullopt;
          }
          return SymExpr::constant(*cx / *cy);  // integer Div truncates
        }
        // Truncation equals floor division only for non-negative operands (dims are).
        if (!x.isNonNegative() || !y.isNonNegative() || cy == 0) return std::nullopt;
        return SymExpr::floorDiv(x, y);
      }
    }
  });
}

void binaryKeepType(InferenceContext& ctx) {
  ctx.setOutput(0, elemOr(ctx, 0), broadcastInputs(ctx));
}

void comparison(InferenceContext& ctx) {
  ctx.setOutput(0, DataType::kBool, broadcastInputs(ctx));
  if (ctx.node().opType() != "Equal") return;
  // Booleans travel as 0/1 so that Where(Equal(shape, c), ...) can be followed.
  propagateBinary(ctx, [](const SymExpr& x, const SymExpr& y) -> std::optional<SymExpr> {
    if (x == y) return SymExpr::constant(1);
    if (x.isConstant() && y.isConstant()) return SymExpr::constant(0);
    // A dim (non-negative) never equals a negative constant such as Reshape's -1.
    auto negative = [](const SymExpr& e) { return e.constantValue().value_or(0) < 0; };
    if ((negative(x) && y.isNonNegative()) || (negative(y) && x.isNonNegative())) {
      return SymExpr::constant(0);
    }
    return std::nullopt;
  });
}

void variadic(InferenceContext& ctx) {
  ctx.setOutput(0, elemOr(ctx, 0), broadcastInputs(ctx));
}

void prelu(InferenceContext& ctx) {
  passThrough(ctx);
}

void where(InferenceContext& ctx) {
  ctx.setOutput(0, elemOr(ctx, 1), broadcastInputs(ctx));
  const ShapeValue* c = ctx.inputValue(0);
  const ShapeValue* x = ctx.inputValue(1);
  const ShapeValue* y = ctx.inputValue(2);
  if (c == nullptr || x == nullptr || y == nullptr) return;
  size_t n = std::max(c->size(), std::max(x->size(), y->size()));
  auto at = [&](const ShapeValue* v, size_t i) -> const std::optional<SymExpr>* {
    if (v->size() == 1) return &(*v)[0];
    if (v->size() == n) return &(*v)[i];
    return nullptr;
  };
  ShapeValue out;
  for (size_t i = 0; i < n; ++i) {
    auto* ci = at(c, i);
    auto* xi = at(x, i);
    auto* yi = at(y, i);
    if (ci == nullptr || xi == nullptr || yi == nullptr) return;
    auto cv = *ci ? (*ci)->constantValue() : std::nullopt;
    out.push_back(cv ? (*cv != 0 ? *xi : *yi) : std::nullopt);
  }
  ctx.setOutputValue(0, std::move(out));
}

void cast(InferenceContext& ctx) {
  auto to = static_cast<DataType>(ctx.attrInt("to", 0));
  ctx.setOutput(0, to, ctx.inputShape(0));
  if (isIntegral(to) && isIntegral(elemOr(ctx, 0))) {
    if (const ShapeValue* v = ctx.inputValue(0)) ctx.setOutputValue(0, *v);
  }
}

void castLike(InferenceContext& ctx) {
  DataType to = elemOr(ctx, 1);
  ctx.setOutput(0, to, ctx.inputShape(0));
  if (isIntegral(to) && isIntegral(elemOr(ctx, 0))) {
    if (const ShapeValue* v = ctx.inputValue(0)) ctx.setOutputValue(0, *v);
  }
}

void identity(InferenceContext& ctx) {
  passThrough(ctx);
  if (const ShapeValue* v = ctx.inputValue(0)) ctx.setOutputValue(0, *v);
}

/// The mask is bool from opset 10; before, it has X's type (one T, as the reference kernel
/// writes it).
void dropout(InferenceContext& ctx) {
  passThrough(ctx);
  if (ctx.numOutputs() < 2) return;
  DataType mask = ctx.opset() < 10 ? elemOr(ctx, 0) : DataType::kBool;
  ctx.setOutput(1, mask, ctx.inputShape(0));
}

}  // namespace

void registerElementwiseOps(std::vector<OpInference>& t) {
  // Unary elementwise ops keep input 0's shape, and its type unless they write bool; Cast's own
  // rule is below.
  for (const OpTraits& op : opTraitTable()) {
    if (op.elementwise != Elementwise::kUnary || op.has(OpTrait::kConverts)) continue;
    t.push_back({"", op.op.data(), 1, op.has(OpTrait::kWritesBool) ? &unaryBool : &unary});
  }
  // Not elementwise, but output 0 has input 0's type and shape.
  for (const char* op :
       {"Softmax", "LogSoftmax", "Hardmax", "CumSum", "LRN", "InstanceNormalization",
        "LpNormalization", "MeanVarianceNormalization", "Trilu", "ReverseSequence", "ScatterND",
        "ScatterElements", "Scatter", "CumProd", "RotaryEmbedding"}) {
    t.push_back({"", op, 1, &unary});
  }
  t.push_back({"", "Identity", 1, &identity});
  t.push_back({"", "Dropout", 1, &dropout});
  t.push_back({"", "Add", 1, &arithmetic<0>});
  t.push_back({"", "Sub", 1, &arithmetic<1>});
  t.push_back({"", "Mul", 1, &arithmetic<2>});
  t.push_back({"", "Div", 1, &arithmetic<3>});
  t.push_back({"", "Mod", 10, &arithmetic<4>});
  for (const char* op : {"Pow", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    t.push_back({"", op, 1, &binaryKeepType});
  }
  for (const char* op :
       {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}) {
    t.push_back({"", op, 1, &comparison});
  }
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) t.push_back({"", op, 1, &variadic});
  t.push_back({"", "PRelu", 1, &prelu});
  t.push_back({"", "Where", 1, &where});
  t.push_back({"", "Cast", 1, &cast});
  t.push_back({"", "CastLike", 1, &castLike});
}

}  // namespace onnxopt::ir::detail
