// eliminate-noop: remove nodes whose output equals one of their inputs.
//
//   Identity(x)                                  -> x
//   Dropout(x) at inference (mask unused)        -> x
//   Cast<to=T>(x), x : T;  CastLike(x, y), x, y : T   -> x
//   Reshape(x, s) / Expand(x, s) / Squeeze(x) / Flatten<axis=1>(x)  -> x
//     when the result has x's shape: declared so (the same dims or symbols), or each dim of s a
//     0 (copy), x's known dim, or the one -1
//   Slice(x) over the whole extent, step 1       -> x
//   Pad(x, 0...0)                                -> x
//   Transpose<perm=identity>(x)                  -> x
//   Split(x) with one output;  Concat(x)         -> x
//   Add(x, -0) = Add(-0, x), Sub(x, +0), Mul(x, 1) = Mul(1, x), Div(x, 1), Pow(x, 1),
//   And(x, true) = And(true, x), Or(x, false) = Or(false, x), Xor(x, false) = Xor(false, x)  -> x
//     when broadcasting leaves x's shape unchanged: the constant (a scalar or a tensor such as
//     ones[C,1,1]) has at most x's rank and each of its dims is 1 or x's known dim there. For
//     floats x + (+0) maps -0 to +0, so Add needs a -0 constant (or integers) unless
//     strict-signed-zero=false; likewise Sub needs +0.
//   LSTM/GRU/RNN(X, W, R, B, seq_lens, initial_h = 0, initial_c = 0) -> without the zero states
//     (the default): a constant, or a ConstantOfShape of 0 seen through Reshape/Unsqueeze/Expand/
//     Cast and the like. Floats need +0 unless strict-signed-zero=false.
//
// A model output keeps its name: a pattern that would rename one does not apply.
#include <cmath>
#include <limits>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using pass::attrInt;
using pass::attrInts;
using pass::constantInts;
using pass::constantTensor;
using pass::elemTypeOf;
using pass::rankOf;
using pass::staticShape;
using rewrite::PatternContext;

/// Base of every no-op pattern: `forwarded` names the input the node is equal to.
class NoOpPattern : public rewrite::Pattern {
 public:
  using Pattern::Pattern;

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const final {
    if (node->numOutputs() == 0 || node->output(0) == nullptr) return ctx.fail("no output");
    for (size_t i = 1; i < node->numOutputs(); ++i) {
      if (node->output(i) != nullptr && node->output(i)->hasUses()) {
        return ctx.fail("output {} is used", i);
      }
    }
    ir::Value* x = forwarded(*node, ctx);
    if (x == nullptr) return false;
    if (!ctx.rewriter().canReplaceWithoutIdentity(node->output(0), x)) {
      return ctx.fail("would rename model output '{}'", node->output(0)->name());
    }
    std::vector<ir::Value*> values(node->numOutputs(), nullptr);
    values[0] = x;
    ctx.rewriter().replaceNode(node, values);
    return true;
  }

 protected:
  /// The input the node's output equals, or nullptr (after ctx.fail) when it is not a no-op.
  virtual ir::Value* forwarded(const ir::Node& node, PatternContext& ctx) const = 0;
};

class IdentityPattern final : public NoOpPattern {
 public:
  IdentityPattern() : NoOpPattern("noop-identity", "Identity") {}
  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    if (n.input(0) == nullptr) return ctx.fail("no input"), nullptr;
    return n.input(0);
  }
};

class DropoutPattern final : public NoOpPattern {
 public:
  DropoutPattern() : NoOpPattern("noop-dropout", "Dropout") {}
  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    // Before opset 7, Dropout trained unless is_test was set.
    if (ctx.opset() < 7 && attrInt(n, "is_test", 0) == 0) return ctx.fail("training mode"), nullptr;
    if (n.numInputs() >= 3 && n.input(2) != nullptr) {
      auto mode = constantTensor(n.input(2));
      if (!mode || !pass::allElementsEqual(*mode, 0.0)) {
        return ctx.fail("training_mode is not a constant false"), nullptr;
      }
    }
    return n.input(0);
  }
};

class CastPattern final : public NoOpPattern {
 public:
  CastPattern() : NoOpPattern("noop-cast", "Cast") {}
  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    auto from = elemTypeOf(n.input(0));
    if (!from) return ctx.fail("input type unknown"), nullptr;
    if (static_cast<int64_t>(*from) != attrInt(n, "to", -1))
      return ctx.fail("changes type"), nullptr;
    return n.input(0);
  }
};

class CastLikePattern final : public NoOpPattern {
 public:
  CastLikePattern() : NoOpPattern("noop-castlike", "CastLike") {}
  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    auto from = elemTypeOf(n.input(0));
    auto to = elemTypeOf(n.input(1));
    if (!from || !to || *from != *to) return ctx.fail("types unknown or different"), nullptr;
    return n.input(0);
  }
};

/// Shape-only ops whose result shape equals the input's.
class ShapeOpPattern final : public NoOpPattern {
 public:
  explicit ShapeOpPattern(const char* op) : NoOpPattern(std::string("noop-") + op, op), op_(op) {}

  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    ir::Value* x = n.input(0);
    // Declared shapes already say so (the same known dims or the same symbols).
    if (pass::sameKnownShape(x, n.output(0))) return x;
    auto in = staticShape(x);
    if (op_ == "Reshape") return reshape(n, ctx);
    if (op_ == "Expand") return expand(n, ctx, in);
    if (op_ == "Squeeze") return squeeze(n, ctx, in);
    if (op_ == "Flatten") {
      auto r = rankOf(x);
      if (r && *r == 2 && attrInt(n, "axis", 1) == 1) return x;
      return ctx.fail("not a rank-2 input with axis 1"), nullptr;
    }
    return ctx.fail("unsupported op"), nullptr;
  }

 private:
  /// Each target dim is a 0 copying x's dim, x's known dim itself, or the one -1, which then
  /// resolves to x's dim there (symbolic or not) since every other dim is unchanged.
  static ir::Value* reshape(const ir::Node& n, PatternContext& ctx) {
    ir::Value* x = n.input(0);
    auto target = n.numInputs() >= 2 ? constantInts(n.input(1)) : attrInts(n, "shape");
    auto rank = rankOf(x);
    if (!rank || !target) return ctx.fail("input rank or target unknown"), nullptr;
    if (static_cast<int64_t>(target->size()) != *rank) return ctx.fail("rank changes"), nullptr;
    const std::vector<ir::Dim>& in = *x->type().shape;
    bool allowzero = attrInt(n, "allowzero", 0) != 0;
    int minus_one = 0;
    for (size_t i = 0; i < target->size(); ++i) {
      int64_t t = (*target)[i];
      if (t == 0 && !allowzero) continue;
      if (t == -1) {
        ++minus_one;
        continue;
      }
      if (!in[i].isKnown() || t != in[i].value) return ctx.fail("dim {} changes", i), nullptr;
    }
    if (minus_one > 1) return ctx.fail("several -1"), nullptr;
    return x;
  }

  ir::Value* expand(const ir::Node& n, PatternContext& ctx,
                    const std::optional<std::vector<int64_t>>& in) const {
    auto target = constantInts(n.input(1));
    if (!in || !target) return ctx.fail("input shape or target unknown"), nullptr;
    if (target->size() > in->size()) return ctx.fail("rank grows"), nullptr;
    size_t off = in->size() - target->size();
    for (size_t i = 0; i < target->size(); ++i) {
      int64_t t = (*target)[i];
      if (t != 1 && t != (*in)[off + i]) return ctx.fail("dim {} grows", off + i), nullptr;
    }
    return n.input(0);
  }

  ir::Value* squeeze(const ir::Node& n, PatternContext& ctx,
                     const std::optional<std::vector<int64_t>>& in) const {
    bool has_axes = n.findAttribute("axes") != nullptr || (n.numInputs() >= 2 && n.input(1));
    if (has_axes) {
      auto axes = n.numInputs() >= 2 ? constantInts(n.input(1)) : attrInts(n, "axes");
      if (!axes || !axes->empty()) return ctx.fail("squeezes explicit axes"), nullptr;
    }
    if (!in) return ctx.fail("input shape unknown"), nullptr;
    for (int64_t d : *in) {
      if (d == 1) return ctx.fail("has a dim of 1"), nullptr;
    }
    return n.input(0);
  }

  std::string op_;
};

class SlicePattern final : public NoOpPattern {
 public:
  SlicePattern() : NoOpPattern("noop-slice", "Slice") {}
  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    std::optional<std::vector<int64_t>> starts, ends, axes, steps;
    if (ctx.opset() < 10) {
      starts = attrInts(n, "starts");
      ends = attrInts(n, "ends");
      axes = attrInts(n, "axes");
    } else {
      starts = constantInts(n.input(1));
      ends = constantInts(n.input(2));
      if (n.numInputs() > 3 && n.input(3)) axes = constantInts(n.input(3));
      if (n.numInputs() > 4 && n.input(4)) {
        steps = constantInts(n.input(4));
        if (!steps) return ctx.fail("steps not constant"), nullptr;
      }
      if (n.numInputs() > 3 && n.input(3) && !axes) return ctx.fail("axes not constant"), nullptr;
    }
    if (!starts || !ends || starts->size() != ends->size()) {
      return ctx.fail("starts/ends not constant"), nullptr;
    }
    auto shape = staticShape(n.input(0));
    auto rank = rankOf(n.input(0));
    for (size_t i = 0; i < starts->size(); ++i) {
      if (steps && (*steps)[i] != 1) return ctx.fail("step is not 1"), nullptr;
      int64_t axis = axes ? (*axes)[i] : static_cast<int64_t>(i);
      if (axis < 0) {
        if (!rank) return ctx.fail("negative axis with unknown rank"), nullptr;
        axis += *rank;
      }
      int64_t start = (*starts)[i], end = (*ends)[i];
      std::optional<int64_t> dim;
      if (shape && axis >= 0 && axis < static_cast<int64_t>(shape->size())) dim = (*shape)[axis];
      bool from_begin = start == 0 || (dim && start <= -*dim);
      bool to_end = end == std::numeric_limits<int64_t>::max() || (dim && end >= *dim);
      if (!from_begin || !to_end) return ctx.fail("axis {} is cut", axis), nullptr;
    }
    return n.input(0);
  }
};

class PadPattern final : public NoOpPattern {
 public:
  PadPattern() : NoOpPattern("noop-pad", "Pad") {}
  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    auto pads = ctx.opset() < 11 ? attrInts(n, "pads") : constantInts(n.input(1));
    if (!pads) return ctx.fail("pads not constant"), nullptr;
    for (int64_t p : *pads) {
      if (p != 0) return ctx.fail("pads are not all zero"), nullptr;
    }
    return n.input(0);
  }
};

class TransposePattern final : public NoOpPattern {
 public:
  TransposePattern() : NoOpPattern("noop-transpose", "Transpose") {}
  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    auto perm = attrInts(n, "perm");
    if (!perm) {
      auto rank = rankOf(n.input(0));  // default perm reverses: identity only up to rank 1
      if (rank && *rank <= 1) return n.input(0);
      return ctx.fail("default perm on rank > 1 or unknown"), nullptr;
    }
    for (size_t i = 0; i < perm->size(); ++i) {
      if ((*perm)[i] != static_cast<int64_t>(i)) return ctx.fail("perm is not identity"), nullptr;
    }
    return n.input(0);
  }
};

class SingleSplitPattern final : public NoOpPattern {
 public:
  SingleSplitPattern() : NoOpPattern("noop-split", "Split") {}
  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    if (n.numOutputs() != 1) return ctx.fail("several outputs"), nullptr;
    return n.input(0);
  }
};

class SingleConcatPattern final : public NoOpPattern {
 public:
  SingleConcatPattern() : NoOpPattern("noop-concat", "Concat") {}
  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    if (n.numInputs() != 1 || n.input(0) == nullptr) return ctx.fail("several inputs"), nullptr;
    return n.input(0);
  }
};

/// Add/Sub/Mul/Div/Pow, And/Or/Xor with a neutral constant operand.
class NeutralOperandPattern final : public NoOpPattern {
 public:
  NeutralOperandPattern(const char* op, bool strict)
      : NoOpPattern(std::string("noop-") + op + "-neutral", op), op_(op), strict_(strict) {}

  ir::Value* forwarded(const ir::Node& n, PatternContext& ctx) const override {
    if (n.numInputs() != 2 || !n.input(0) || !n.input(1)) return ctx.fail("not binary"), nullptr;
    bool commutes = op_ != "Sub" && op_ != "Div" && op_ != "Pow";
    for (int side = 1; side >= (commutes ? 0 : 1); --side) {
      ir::Value* c = n.input(side);
      ir::Value* x = n.input(1 - side);
      auto t = constantTensor(c);
      if (!t || !isNeutral(*t, x)) continue;
      if (!keepsShape(*t, x)) return ctx.fail("broadcasting could change the shape"), nullptr;
      // The ONNX schema makes both operands (and the result) one type T; Pow's result has the
      // base's type. So the output type is x's type without checking.
      return x;
    }
    return ctx.fail("no neutral constant operand"), nullptr;
  }

 private:
  bool isNeutral(const ir::Tensor& t, const ir::Value* x) const {
    bool is_float = t.dtype() == ir::DataType::kFloat || t.dtype() == ir::DataType::kDouble ||
                    t.dtype() == ir::DataType::kFloat16 || t.dtype() == ir::DataType::kBfloat16;
    if (op_ == "Add" || op_ == "Sub") {
      if (!is_float || !strict_) return pass::allElementsEqual(t, 0.0);
      // x + (-0) == x and x - (+0) == x bit for bit, -0 included; the other signs are not.
      return pass::allSignedZeros(t, /*negative=*/op_ == "Add");
    }
    (void)x;
    if (op_ == "Or" || op_ == "Xor") return pass::allElementsEqual(t, 0.0);
    return pass::allElementsEqual(t, 1.0);  // Mul, Div, Pow; And's true
  }

  /// True when broadcasting `c` against `x` yields x's shape: c's rank is at most x's and each of
  /// c's dims is 1 or equals x's dim there, which must then be a known size (a dim of x that may be
  /// 1 would grow to c's). A ones[C,1,1] or zeros[C,1,1] (PyTorch's default GroupNorm affine) over
  /// x[N,C,H,W] qualifies.
  static bool keepsShape(const ir::Tensor& c, const ir::Value* x) {
    if (c.dims().empty()) return true;  // a scalar never changes the other operand's shape
    auto rank = rankOf(x);
    if (!rank || *rank < static_cast<int64_t>(c.dims().size())) return false;
    const std::vector<ir::Dim>& xs = *x->type().shape;
    size_t off = xs.size() - c.dims().size();
    for (size_t i = 0; i < c.dims().size(); ++i) {
      int64_t d = c.dims()[i];
      if (d == 1) continue;
      if (!xs[off + i].isKnown() || xs[off + i].value != d) return false;
    }
    return true;
  }

  std::string op_;
  bool strict_;
};

/// True when every element of `v` is zero, and +0 for floats when `positive` (the default state
/// of LSTM/GRU/RNN is +0). Sees a constant, a ConstantOfShape of zero, and ops that only move,
/// repeat or convert elements (0 converts to 0; a float's sign survives a float-to-float Cast).
bool provablyZero(const ir::Value* v, bool positive, int depth = 0) {
  if (v == nullptr || depth > 8) return false;
  auto zero = [&](const ir::Tensor& t) {
    bool is_float = pass::isFloatType(t.dtype());
    return is_float && positive ? pass::allSignedZeros(t, /*negative=*/false)
                                : pass::allElementsEqual(t, 0.0);
  };
  if (auto t = constantTensor(v)) return zero(*t);
  const ir::Node* p = v->producer();
  if (p == nullptr || !p->domain().empty()) return false;
  const std::string& op = p->opType();
  if (op == "ConstantOfShape") {
    const ir::Attribute* value = p->findAttribute("value");
    if (value == nullptr) return true;  // the default is a float32 +0
    return value->kind == ir::Attribute::Kind::kTensor && value->tensors.size() == 1 &&
           zero(value->tensors[0]);
  }
  static const char* const kMovers[] = {"Identity", "Reshape", "Flatten",   "Squeeze", "Unsqueeze",
                                        "Expand",   "Tile",    "Transpose", "Cast"};
  for (const char* mover : kMovers) {
    if (op == mover) return provablyZero(p->input(0), positive, depth + 1);
  }
  return false;
}

/// LSTM/GRU/RNN(.., initial_h = 0, initial_c = 0) -> the same without them: zero is the default.
class RnnZeroStatePattern final : public rewrite::Pattern {
 public:
  explicit RnnZeroStatePattern(const char* op, bool strict)
      : Pattern(std::string("noop-") + op + "-zero-state", op), op_(op), strict_(strict) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    // initial_h is input 5 of all three; LSTM's initial_c is input 6.
    std::vector<size_t> states = {5};
    if (op_ == "LSTM") states.push_back(6);
    bool changed = false;
    for (size_t i : states) {
      if (node->input(i) == nullptr || !provablyZero(node->input(i), strict_)) continue;
      ctx.rewriter().setInput(node, i, nullptr);
      changed = true;
    }
    if (!changed) return ctx.fail("no initial state that is provably zero");
    while (node->numInputs() > 0 && node->input(node->numInputs() - 1) == nullptr) {
      ctx.rewriter().removeInput(node, node->numInputs() - 1);
    }
    return true;
  }

 private:
  std::string op_;
  bool strict_;
};

class EliminateNoOpPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "eliminate-noop"; }
  std::string summary() const override {
    return "Remove Identity, inference Dropout, same-type Cast and shape/arith ops that change "
           "nothing";
  }
  std::vector<pass::PassOption> options() const override {
    return {
        {"strict-signed-zero", "bool", "true", "keep float x+0 and x-(-0), which turn -0 into +0"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name != "strict-signed-zero") return Pass::setOption(name, value);
    ASSIGN_OR_RETURN(strict_, parseBool(name, value));
    return Status::ok();
  }

 protected:
  std::optional<std::string> patternKey() const override { return strict_ ? "strict" : "loose"; }
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<IdentityPattern>());
    list.push_back(std::make_unique<DropoutPattern>());
    list.push_back(std::make_unique<CastPattern>());
    list.push_back(std::make_unique<CastLikePattern>());
    for (const char* op : {"Reshape", "Expand", "Squeeze", "Flatten"}) {
      list.push_back(std::make_unique<ShapeOpPattern>(op));
    }
    list.push_back(std::make_unique<SlicePattern>());
    list.push_back(std::make_unique<PadPattern>());
    list.push_back(std::make_unique<TransposePattern>());
    list.push_back(std::make_unique<SingleSplitPattern>());
    list.push_back(std::make_unique<SingleConcatPattern>());
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor"}) {
      list.push_back(std::make_unique<NeutralOperandPattern>(op, strict_));
    }
    for (const char* op : {"LSTM", "GRU", "RNN"}) {
      list.push_back(std::make_unique<RnnZeroStatePattern>(op, strict_));
    }
    return list;
  }

 private:
  bool strict_ = true;
};

}  // namespace

std::unique_ptr<pass::Pass> createEliminateNoOpPass() {
  return std::make_unique<EliminateNoOpPass>();
}

}  // namespace onnxopt::passes
