// optimize-transposes: Transposes pushed down through layout-agnostic ops, toward another
// Transpose they cancel or merge with (merge-consecutive) or a constant that absorbs them.
//
//   N(Transpose<p>(x), y1, ...)  ==>  Transpose<p>(N(x, y1', ...))      y' = Transpose<p^-1>(y)
//
// N is an elementwise op of the default domain with one output: the unary math and activation
// ops, Cast, Clip, the binary arithmetic, comparison and logic ops, Sum/Max/Min/Mean, Where.
// Elementwise ops commute with moving elements, so N on the permuted operands is N's result
// permuted. Or N keeps the rank and names axes, which are renamed on x (axis a of
// Transpose<p>(x) is axis p[a] of x):
//   Softmax/LogSoftmax/Hardmax<axis=a> (opset 13+)   ==>  <axis=p[a]>
//   Concat<axis=a>(T(x1), T(x2) | constant, ...)      ==>  Concat<axis=p[a]>(x1, x2, ...)
//   ArgMax/ArgMin<axis=a>                              ==>  <axis=p[a]>
//   QuantizeLinear/DequantizeLinear<axis=a> (1-D scale) ==>  <axis=p[a]>; a scalar scale:
//                                                          elementwise
//   Slice(T(x), starts, ends, axes=A) (constant)      ==>  Slice(x, starts, ends, p[A])
//   Pad(T(x), pads) (constant, no axes input)         ==>  Pad(x, pads permuted per dim)
//   Reduce*<axes=A> (constant axes, attribute or input)  ==>  axes p[A]
// With keepdims=0 the result has fewer dims, in x's order after the push: the Transpose pushed
// becomes Transpose<q> of the result (q orders x's kept axes as the result had them), and none at
// all where q is the identity (NHWC global pooling: ReduceMean over H and W of NCHW's Transpose).
//
// Each other operand y becomes:
//   - itself, when it is a scalar (rank 0) or a one-element constant of no higher rank than x
//     (its dims are all 1: it broadcasts the same either way);
//   - x' where y is Transpose<p>(x') already (the two cancel);
//   - Transpose<p^-1>(y) otherwise, a constant first unsqueezed to the rank of x where it has
//     fewer dims (fold-constants permutes a constant once, offline; it costs nothing at run time).
//
// Cost model: a push happens when it adds no Transpose that runs (every other operand is a
// constant, one element or a cancelling Transpose), or when it adds one, for a run-time operand
// of x's rank, and the Transpose pushed then meets its inverse right after the op (a residual
// Add between two NHWC/NCHW sandwiches: two Transposes go, one comes). So the count of run-time
// Transposes never grows, and a push that keeps it moves a Transpose strictly later in the
// graph: pushing ends. The Transpose pushed must have N as its only user, its perm must be
// explicit and x's rank known; a run-time operand of lower rank than x (it would need an
// Unsqueeze as well) stops it. Run with merge-consecutive (Transpose pairs: merged, or gone when
// they are inverse), fold-constants and dce in one fixed point.
#include <algorithm>
#include <set>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

bool isElementwise(const ir::Node& n) {
  static const std::set<std::string> kOps = {
      // unary
      "Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Erf", "Floor",
      "Ceil", "Round", "Sign", "Sin", "Cos", "Not", "IsNaN", "IsInf", "Gelu", "LeakyRelu", "Elu",
      "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish", "Swish",
      "ThresholdedRelu", "Cast", "Clip",
      // binary and variadic
      "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Equal", "Less", "Greater",
      "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where"};
  if (!n.domain().empty() || n.numOutputs() != 1) return false;
  // QuantizeLinear/DequantizeLinear with a per-tensor (scalar) scale: elementwise.
  if ((n.opType() == "QuantizeLinear" || n.opType() == "DequantizeLinear") && n.numInputs() >= 2) {
    return pass::rankOf(n.input(1)) == 0;
  }
  return kOps.count(n.opType()) > 0;
}

/// A constant, or the Unsqueeze of one this pass made (fold-constants folds both).
bool isConstantOperand(const ir::Value* v) {
  if (pass::constantTensor(v)) return true;
  const ir::Node* p = v->producer();
  return p != nullptr && p->opType() == "Unsqueeze" && p->domain().empty() &&
         pass::constantTensor(p->input(0)) && p->numInputs() == 2 &&
         pass::constantTensor(p->input(1));
}

/// How one other operand of the pushed-through node is rewritten.
struct Operand {
  enum class Kind { kKeep, kCancel, kConstant, kRunTime } kind = Kind::kKeep;
  ir::Value* value = nullptr;  ///< kCancel: the Transpose's input
  int64_t rank = 0;
};

/// Ops whose result keeps the input's rank and which name axes: the axes to give them on x.
struct AxisRemap {
  std::string attribute;      ///< "axis" or "axes"
  bool axes_input = false;    ///< Reduce* axes as input 1 (opset 18; ReduceSum 13)
  std::vector<int64_t> axes;  ///< on x
  /// Constant int64 inputs the op takes on x instead (Slice's axes, Pad's pads): index, values.
  std::vector<std::pair<size_t, std::vector<int64_t>>> inputs;
  /// A reduction with keepdims=0 (the result has fewer dims): the perm that orders the reduced x's
  /// remaining dims as the op's result had them, the Transpose left after it (none when it is
  /// the identity: the pushed Transpose is gone).
  std::optional<std::vector<int64_t>> reduced_perm;
};

/// The perm q with Op(x) reduced over p[A] = Transpose<q>(Op(Transpose<p>(x)) reduced over A),
/// keepdims=0: the kept axes of the transposed tensor, in order, are x's axes p[i] (i not in A);
/// the pushed op keeps them in x's order.
std::vector<int64_t> reducedPerm(const std::vector<int64_t>& perm,
                                 const std::vector<int64_t>& axes) {
  std::vector<int64_t> kept_x;  // x's axes the original result keeps, in its order
  for (size_t i = 0; i < perm.size(); ++i) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) == axes.end()) {
      kept_x.push_back(perm[i]);
    }
  }
  std::vector<int64_t> sorted = kept_x;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> q;
  for (int64_t a : kept_x) {
    q.push_back(std::lower_bound(sorted.begin(), sorted.end(), a) - sorted.begin());
  }
  return q;
}

std::optional<AxisRemap> axisRemapOf(const ir::Node& n, int64_t opset, int64_t rank,
                                     const std::vector<int64_t>& perm) {
  if (!n.domain().empty() || n.numOutputs() != 1) return std::nullopt;
  const std::string& op = n.opType();
  auto one = [&](int64_t fallback) -> std::optional<AxisRemap> {
    auto axis = pass::normalizeAxis(pass::attrInt(n, "axis", fallback), rank);
    if (!axis) return std::nullopt;
    AxisRemap r;
    r.attribute = "axis";
    r.axes = {perm[static_cast<size_t>(*axis)]};
    return r;
  };
  // Softmax and its kin take one axis from opset 13 (before, the axis split the input in two).
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset >= 13) return one(-1);
  if (op == "Concat" && n.findAttribute("axis") != nullptr) return one(0);
  // Per-axis quantization: the scale's axis.
  if ((op == "QuantizeLinear" || op == "DequantizeLinear") && n.numInputs() >= 2 &&
      pass::rankOf(n.input(1)) == 1) {
    return one(1);
  }
  // Slice (inputs from opset 10) with constant starts and axes: the axes renamed, the starts,
  // ends and steps per axis as they were.
  if (op == "Slice" && opset >= 10 && n.numInputs() >= 3) {
    auto starts = pass::constantInts(n.input(1));
    if (!starts || !pass::constantInts(n.input(2))) return std::nullopt;
    std::vector<int64_t> axes;
    if (n.numInputs() > 3 && n.input(3) != nullptr) {
      auto given = pass::constantInts(n.input(3));
      if (!given) return std::nullopt;
      axes = *given;
    } else {
      for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    AxisRemap r;
    std::vector<int64_t> renamed;
    for (int64_t a : axes) {
      auto norm = pass::normalizeAxis(a, rank);
      if (!norm) return std::nullopt;
      renamed.push_back(perm[static_cast<size_t>(*norm)]);
    }
    r.inputs.push_back({3, renamed});
    return r;
  }
  // Pad (pads as an input from opset 11, no axes input): x's pads are the transposed tensor's,
  // permuted (dim p[i] of x is dim i of the transposed tensor).
  if (op == "Pad" && opset >= 11 && n.numInputs() >= 2 &&
      (n.numInputs() < 4 || n.input(3) == nullptr)) {
    auto pads = pass::constantInts(n.input(1));
    if (!pads || pads->size() != 2 * static_cast<size_t>(rank)) return std::nullopt;
    std::vector<int64_t> on_x(pads->size());
    for (size_t i = 0; i < static_cast<size_t>(rank); ++i) {
      on_x[static_cast<size_t>(perm[i])] = (*pads)[i];
      on_x[static_cast<size_t>(rank + perm[i])] = (*pads)[rank + i];
    }
    AxisRemap r;
    r.inputs.push_back({1, on_x});
    return r;
  }
  if (op == "ArgMax" || op == "ArgMin") {
    auto r = one(0);
    if (r && pass::attrInt(n, "keepdims", 1) == 0) {
      auto axis = pass::normalizeAxis(pass::attrInt(n, "axis", 0), rank);
      r->reduced_perm = reducedPerm(perm, {*axis});
    }
    return r;
  }
  if (op.rfind("Reduce", 0) == 0) {
    // Explicit constant axes; keepdims 0 or 1.
    auto axes = pass::reduceAxes(n, opset, rank, /*any_keepdims=*/true);
    if (!axes) return std::nullopt;
    AxisRemap r;
    r.attribute = "axes";
    r.axes_input = pass::reduceAxesFromInput(n, opset);
    for (int64_t a : *axes) r.axes.push_back(perm[static_cast<size_t>(a)]);
    std::sort(r.axes.begin(), r.axes.end());
    if (pass::attrInt(n, "keepdims", 1) == 0) r.reduced_perm = reducedPerm(perm, *axes);
    return r;
  }
  return std::nullopt;
}

class PushTransposePattern final : public rewrite::Pattern {
 public:
  PushTransposePattern() : Pattern("push-transpose", "Transpose") {}

  bool matchAndRewrite(ir::Node* transpose, PatternContext& ctx) const override {
    auto perm = pass::attrInts(*transpose, "perm");
    auto rank = pass::rankOf(transpose->input(0));
    if (!perm || !rank || static_cast<int64_t>(perm->size()) != *rank) {
      return ctx.fail("perm not explicit or the input's rank unknown");
    }
    // A constant's Transpose (ours, for an operand) is fold-constants' to fold, for free; pushing
    // it would trade it for a run-time one.
    if (isConstantOperand(transpose->input(0)))
      return ctx.fail("the Transpose of a constant folds");
    ir::Value* out = transpose->output(0);
    if (!pass::hasSingleUse(out)) return ctx.fail("the Transpose has other users");
    ir::Node* node = out->uses().front().user;
    std::vector<int64_t> inverse(perm->size());
    for (size_t i = 0; i < perm->size(); ++i) {
      int64_t p = (*perm)[i];
      if (p < 0 || p >= *rank) return ctx.fail("bad perm");
      inverse[static_cast<size_t>(p)] = static_cast<int64_t>(i);
    }
    // The axes the op names on the transposed tensor, named on x: axis a of Transpose<p>(x) is
    // axis p[a] of x.
    std::optional<AxisRemap> remap;
    size_t data_inputs = node->numInputs();
    if (!isElementwise(*node)) {
      remap = axisRemapOf(*node, ctx.opset(), *rank, *perm);
      if (!remap) return ctx.fail("its user is no elementwise op nor one whose axes remap");
      if (node->opType() != "Concat") data_inputs = 1;
    }
    // Every operand: the pushed Transpose's (replaced by x), or one that adds no run-time
    // Transpose (cost model above).
    std::vector<Operand> operands(node->numInputs());
    int run_time = 0;
    ir::Node* inverse_after = nullptr;  // with a run-time operand: the Transpose that cancels
    for (size_t i = 0; i < data_inputs; ++i) {
      ir::Value* y = node->input(i);
      if (y == nullptr || y == out) continue;
      auto t = pass::constantTensor(y);
      auto ry = pass::rankOf(y);
      if (!ry) return ctx.fail("an operand's rank is unknown");
      bool concat = node->opType() == "Concat";  // no broadcasting: every operand has x's rank
      if (!concat && (*ry == 0 || (t && t->numElements().value_or(0) == 1 && *ry <= *rank))) {
        continue;
      }
      ir::Node* producer = y->producer();
      if (producer != nullptr && producer->opType() == "Transpose" && producer->domain().empty() &&
          pass::attrInts(*producer, "perm") == perm) {
        operands[i] = {Operand::Kind::kCancel, producer->input(0), *ry};
        continue;
      }
      if (t && (concat ? *ry == *rank : *ry <= *rank)) {
        operands[i] = {Operand::Kind::kConstant, nullptr, *ry};
        continue;
      }
      if (!t && *ry == *rank) {
        operands[i] = {Operand::Kind::kRunTime, nullptr, *ry};
        ++run_time;
        continue;
      }
      return ctx.fail("operand {} would need an Unsqueeze and a Transpose at run time", i);
    }
    if (run_time > 0) {
      // One run-time Transpose added pays when the pushed one then cancels with an inverse
      // Transpose right after the op: two go, one comes.
      ir::Value* result = node->output(0);
      ir::Node* next = pass::hasSingleUse(result) ? result->uses().front().user : nullptr;
      bool cancels = run_time == 1 && next != nullptr && next->opType() == "Transpose" &&
                     next->domain().empty() && pass::attrInts(*next, "perm") == inverse;
      if (!cancels) {
        return ctx.fail("an operand would need a Transpose at run time that nothing cancels");
      }
      inverse_after = next;
    }
    auto& rw = ctx.rewriter();
    ir::Graph& graph = *node->owningGraph();
    rw.setInsertionPoint(node);
    std::vector<ir::Value*> inputs(node->inputs().begin(), node->inputs().end());
    for (size_t i = 0; i < data_inputs; ++i) {
      if (inputs[i] == out) {
        inputs[i] = transpose->input(0);
        continue;
      }
      const Operand& o = operands[i];
      if (o.kind == Operand::Kind::kCancel) {
        inputs[i] = o.value;
      } else if (o.kind == Operand::Kind::kRunTime) {
        inputs[i] = pass::createTranspose(rw, inputs[i], inverse);
      } else if (o.kind == Operand::Kind::kConstant) {
        ir::Value* c = inputs[i];
        if (o.rank < *rank) {  // numpy broadcasting: leading dims of 1
          std::vector<int64_t> axes;
          for (int64_t a = 0; a < *rank - o.rank; ++a) axes.push_back(a);
          ir::Value* axes_value = rw.createInitializer(
              graph, "unsqueeze_axes",
              pass::makeInt64Tensor(axes, {static_cast<int64_t>(axes.size())}));
          ir::Type wide = c->type();
          if (wide.shape) wide.shape->insert(wide.shape->begin(), axes.size(), ir::Dim::known(1));
          c = rw.createNode("Unsqueeze", "", {c, axes_value}, {wide})->output(0);
        }
        inputs[i] = pass::createTranspose(rw, c, inverse);
      }
    }
    ir::Node* pushed = rw.createNodeLike(node->opType(), "", inputs, node);
    for (const ir::Attribute& a : node->attributes()) rw.copyAttribute(*node, pushed, a.name);
    if (remap && !remap->inputs.empty()) {
      for (const auto& [index, values] : remap->inputs) {
        ir::Value* v = rw.createInitializer(
            graph, index == 1 ? "pads" : "axes",
            pass::makeInt64Tensor(values, {static_cast<int64_t>(values.size())}));
        while (pushed->numInputs() <= index) rw.addInput(pushed, nullptr);
        rw.setInput(pushed, index, v);
      }
    } else if (remap) {
      if (remap->axes_input) {
        rw.setInput(
            pushed, 1,
            rw.createInitializer(
                graph, "axes",
                pass::makeInt64Tensor(remap->axes, {static_cast<int64_t>(remap->axes.size())})));
      } else {
        ir::Attribute a;
        a.name = remap->attribute;
        if (remap->attribute == "axes") {
          a.kind = ir::Attribute::Kind::kInts;
          a.ints = remap->axes;
        } else {
          a.kind = ir::Attribute::Kind::kInt;
          a.i = remap->axes.front();
        }
        rw.setAttribute(pushed, std::move(a));
      }
    }
    if (remap && remap->reduced_perm) {
      // keepdims=0: what is left of the pushed Transpose is the reduced result's reordering,
      // nothing when that is the identity (an NHWC global pool's ReduceMean over H and W).
      const std::vector<int64_t>& q = *remap->reduced_perm;
      std::vector<int64_t> q_inverse(q.size());
      bool identity = true;
      for (size_t i = 0; i < q.size(); ++i) {
        q_inverse[static_cast<size_t>(q[i])] = static_cast<int64_t>(i);
        identity &= q[i] == static_cast<int64_t>(i);
      }
      rw.setType(pushed->output(0), pass::permutedType(node->output(0)->type(), q_inverse));
      rw.replaceNode(
          node, {identity ? pushed->output(0) : pass::createTranspose(rw, pushed->output(0), q)});
      rw.eraseNode(transpose);
      return true;
    }
    rw.setType(pushed->output(0), pass::permutedType(node->output(0)->type(), inverse));
    if (inverse_after != nullptr) {
      // The pushed Transpose and the inverse after the op cancel here, in this rewrite: the
      // count drops by one at once (left to merge-consecutive, the pair would still stand when
      // the Transpose just added is looked at, and the two would be pushed back and forth).
      rw.replaceNode(inverse_after, {pushed->output(0)});
      rw.eraseNode(node);
      rw.eraseNode(transpose);
      return true;
    }
    rw.replaceNode(node, {pass::createTranspose(rw, pushed->output(0), *perm)});
    rw.eraseNode(transpose);
    return true;
  }
};

class OptimizeTransposesPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "optimize-transposes"; }
  std::string summary() const override {
    return "Push Transposes down through elementwise and axis-naming ops toward an inverse "
           "Transpose they cancel with, never adding to the run-time Transposes";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<PushTransposePattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createOptimizeTransposesPass() {
  return std::make_unique<OptimizeTransposesPass>();
}

}  // namespace onnxopt::passes
