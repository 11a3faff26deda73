// optimize-transposes: Transposes pushed down through layout-agnostic ops, toward another
// Transpose they cancel or merge with (merge-consecutive) or a constant that absorbs them.
//
//   N(Transpose<p>(x), y1, ...)  ==>  Transpose<p>(N(x, y1', ...))      y' = Transpose<p^-1>(y)
//
// N is an elementwise op of the default domain with one output (ir/op_traits.def): the unary
// math and activation ops, Cast, Clip, the binary arithmetic, bitwise, comparison and logic ops,
// Mod, PRelu, Sum/Max/Min/Mean, Where.
// Elementwise ops commute with moving elements, so N on the permuted operands is N's result
// permuted. Or N names axes of its input, which are renamed on x (axis a of Transpose<p>(x) is
// axis p[a] of x): Softmax, Concat, ArgMax, per-axis Q/DQ, Slice, Pad, Resize, Reduce*, Squeeze,
// Unsqueeze; transpose_handlers.cc holds that table, rule by rule.
//
// And into an op that takes it as an attribute (the lecture's attribute embedding):
//   Gemm<transA=t>(Transpose(A), B, C)                ==>  Gemm<transA=1-t>(A, B, C)  (B too)
//   MatMul(Transpose(A), B), 2-D, opset 11+           ==>  Gemm<transA=1>(A, B)
//   Shape<s_i, e_i>(T<p>(x)) for every user i of T   ==>  Gather(Shape(x), p[s_i:e_i]) each
//   Split<axis=a>(T(x)) -> y_i                        ==>  T(z_i), z = Split<axis=p[a]>(x), where
//                                                          enough y_i meet the inverse Transpose
//
// Size-weighted: past Pad and Resize (results larger than their input) a Transpose is pushed only
// where it then meets its inverse, right after or past elementwise ops with constant operands
// (it would move more bytes otherwise).
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
// graph: pushing ends. A Transpose with several users is pushed into one of them only where the
// result then meets the inverse Transpose (cancelled in the same rewrite; the Transpose stays for
// the others, one user fewer). Its perm must be explicit and x's rank known; a run-time operand
// of lower rank than x (it would need an Unsqueeze as well) stops it. No rewrite adds nodes once
// fold-constants has folded the constants it permutes: the Shape rule takes every user of the
// Transpose at once, so the Transpose goes (one Shape and k Gathers for it and k Shapes). Run
// with merge-consecutive (Transpose pairs: merged, or gone when they are inverse),
// fold-constants and dce in one fixed point.
#include <algorithm>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "transpose_handlers.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// Whether `v` reaches Transpose<inverse> through a chain of single users that a Transpose is
/// pushed through adding nothing: elementwise ops whose other operands are constants (a Pad's
/// NHWC ReLU between the Pad and the Transpose back to NCHW).
bool reachesInverse(ir::Value* v, const std::vector<int64_t>& inverse) {
  constexpr int kMaxChain = 8;  // the activation and scaling an exporter puts there, and more
  for (int step = 0; step <= kMaxChain && pass::hasSingleUse(v); ++step) {
    ir::Node* next = v->uses().front().user;
    if (next->opType() == "Transpose" && next->domain().empty()) {
      return pass::attrInts(*next, "perm") == inverse;
    }
    if (!isElementwise(*next)) return false;
    for (ir::Value* y : next->inputs()) {
      if (y != nullptr && y != v && !isConstantOperand(y)) return false;
    }
    v = next->output(0);
  }
  return false;
}

/// Size-weighted: past an op whose result is larger than its input (Pad, an upsampling Resize) a
/// Transpose would move more bytes, so only where it then meets its inverse, there or past ops
/// it is pushed through for free.
bool sizeWeightAllows(const ir::Node& transpose, const ir::Node& node,
                      const std::vector<int64_t>& inverse) {
  if (node.opType() != "Pad" && node.opType() != "Resize") return true;
  if (reachesInverse(node.output(0), inverse)) return true;
  auto in = pass::staticShape(transpose.output(0));
  auto res = pass::staticShape(node.output(0));
  if (!in || !res) return false;
  auto count = [](const std::vector<int64_t>& d) {
    int64_t n = 1;
    for (int64_t v : d) n *= v;
    return n;
  };
  return count(*res) <= count(*in);
}

/// Gives `pushed` the attribute and constant inputs that name its axes on x.
void applyRemap(rewrite::Rewriter& rw, ir::Graph& graph, ir::Node* pushed, AxisRemap& remap) {
  if (remap.attribute) rw.setAttribute(pushed, std::move(*remap.attribute));
  for (RemappedInput& in : remap.inputs) {
    ir::Value* v = rw.createInitializer(graph, in.name, std::move(in.tensor));
    while (pushed->numInputs() <= in.index) rw.addInput(pushed, nullptr);
    rw.setInput(pushed, in.index, v);
  }
}

/// How one other operand of the pushed-through node is rewritten.
struct Operand {
  enum class Kind { kKeep, kCancel, kConstant, kRunTime } kind = Kind::kKeep;
  ir::Value* value = nullptr;  ///< kCancel: the Transpose's input
  int64_t rank = 0;
};

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
    std::vector<int64_t> inverse(perm->size(), -1);
    for (size_t i = 0; i < perm->size(); ++i) {
      int64_t p = (*perm)[i];
      if (p < 0 || p >= *rank || inverse[static_cast<size_t>(p)] >= 0) {
        return ctx.fail("bad perm");
      }
      inverse[static_cast<size_t>(p)] = static_cast<int64_t>(i);
    }
    if (pass::hasSingleUse(out)) {
      return pushInto(transpose, out->uses().front().user, *perm, inverse, *rank, false, ctx);
    }
    // Several users: into one whose result meets the inverse Transpose right after, so the push
    // adds nothing (the Transpose stays for the others, one user fewer).
    std::vector<ir::Node*> users;
    for (const ir::Use& u : out->uses()) {
      if (u.user != transpose->owningGraph()->returnNode() &&
          std::find(users.begin(), users.end(), u.user) == users.end()) {
        users.push_back(u.user);
      }
    }
    for (ir::Node* user : users) {
      if (pushInto(transpose, user, *perm, inverse, *rank, true, ctx)) return true;
    }
    return ctx.fail("the Transpose has several users and no push into one cancels");
  }

 private:
  /// The pushed op's inputs: x for the pushed Transpose's output, and each other data operand
  /// as `operands` classified it (its Transpose's input, or made to read in x's order).
  std::vector<ir::Value*> pushedInputs(ir::Node* transpose, ir::Node* node,
                                       const std::vector<Operand>& operands, size_t data_inputs,
                                       const std::vector<int64_t>& inverse, int64_t rank,
                                       rewrite::Rewriter& rw, ir::Graph& graph) const {
    ir::Value* out = transpose->output(0);
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
        if (o.rank < rank) {  // numpy broadcasting: leading dims of 1
          std::vector<int64_t> axes;
          for (int64_t a = 0; a < rank - o.rank; ++a) axes.push_back(a);
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
    return inputs;
  }

  /// Pushes `transpose` (perm, its inverse, the rank of its input) into `node`, one of its users.
  /// `must_cancel`: only where the result then meets the inverse Transpose (cancelled here).
  bool pushInto(ir::Node* transpose, ir::Node* node, const std::vector<int64_t>& perm,
                const std::vector<int64_t>& inverse, int64_t rank, bool must_cancel,
                PatternContext& ctx) const {
    ir::Value* out = transpose->output(0);
    // The axes the op names on the transposed tensor, named on x: axis a of Transpose<p>(x) is
    // axis p[a] of x.
    std::optional<AxisRemap> remap;
    size_t data_inputs = node->numInputs();
    if (!isElementwise(*node)) {
      remap = axisRemapOf(*node, ctx.opset(), rank, perm);
      if (!remap) return ctx.fail("its user is no elementwise op nor one whose axes remap");
      if (node->opType() != "Concat") data_inputs = 1;
      if (!sizeWeightAllows(*transpose, *node, inverse)) {
        return ctx.fail("the Transpose would move onto a larger tensor that nothing cancels");
      }
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
      if (!concat && (*ry == 0 || (t && t->numElements().value_or(0) == 1 && *ry <= rank))) {
        continue;
      }
      ir::Node* producer = y->producer();
      if (producer != nullptr && producer->opType() == "Transpose" && producer->domain().empty() &&
          pass::attrInts(*producer, "perm") == perm) {
        operands[i] = {Operand::Kind::kCancel, producer->input(0), *ry};
        continue;
      }
      if (t && (concat ? *ry == rank : *ry <= rank)) {
        operands[i] = {Operand::Kind::kConstant, nullptr, *ry};
        continue;
      }
      if (!t && *ry == rank) {
        operands[i] = {Operand::Kind::kRunTime, nullptr, *ry};
        ++run_time;
        continue;
      }
      return ctx.fail("operand {} would need an Unsqueeze and a Transpose at run time", i);
    }
    if (run_time > 0 || must_cancel) {
      // One run-time Transpose added pays when the pushed one then cancels with an inverse
      // Transpose right after the op: two go, one comes. A Transpose of several users is pushed
      // into one only so (it stays for the others).
      ir::Value* result = node->output(0);
      ir::Node* next = pass::hasSingleUse(result) ? result->uses().front().user : nullptr;
      bool cancels = run_time <= 1 && next != nullptr && next->opType() == "Transpose" &&
                     next->domain().empty() && pass::attrInts(*next, "perm") == inverse &&
                     !(remap && remap->result_perm);
      if (!cancels) {
        return ctx.fail("an operand would need a Transpose at run time that nothing cancels");
      }
      inverse_after = next;
    }
    auto& rw = ctx.rewriter();
    ir::Graph& graph = *node->owningGraph();
    rw.setInsertionPoint(node);
    std::vector<ir::Value*> inputs =
        pushedInputs(transpose, node, operands, data_inputs, inverse, rank, rw, graph);
    ir::Node* pushed = rw.createNodeLike(node->opType(), "", inputs, node);
    for (const ir::Attribute& a : node->attributes()) rw.copyAttribute(*node, pushed, a.name);
    if (remap) applyRemap(rw, graph, pushed, *remap);
    if (remap && remap->result_perm) {
      // Another rank (keepdims=0, Squeeze, Unsqueeze): what is left of the pushed Transpose is
      // the result's reordering, nothing when that is the identity (an NHWC global pool's
      // ReduceMean over H and W).
      const std::vector<int64_t>& q = *remap->result_perm;
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
      if (!transpose->output(0)->hasUses()) rw.eraseNode(transpose);
      return true;
    }
    rw.replaceNode(node, {pass::createTranspose(rw, pushed->output(0), perm)});
    rw.eraseNode(transpose);
    return true;
  }
};

/// Gemm(Transpose<[1, 0]>(A), B, C) ==> Gemm<transA = 1 - transA>(A, B, C), B likewise; a 2-D
/// MatMul(Transpose(A), B) ==> Gemm<transA=1>(A, B) (opset 11+, where C is optional). The
/// Transpose must have no other user (else it stays and nothing is saved).
class AbsorbIntoGemmPattern final : public rewrite::Pattern {
 public:
  explicit AbsorbIntoGemmPattern(const char* op)
      : Pattern(std::string("absorb-transpose-") + op, op) {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    bool gemm = node->opType() == "Gemm";
    if (!gemm && ctx.opset() < 11) return ctx.fail("MatMul to Gemm needs opset 11 (C optional)");
    if (node->numInputs() < 2) return ctx.fail("fewer than two operands");
    auto t = pass::elemTypeOf(node->output(0));
    if (!t || !pass::isFloatType(*t)) return ctx.fail("not a known float type");
    ir::Node* absorbed[2] = {nullptr, nullptr};
    for (size_t i = 0; i < 2; ++i) {
      ir::Node* tr = pass::singleUseProducer(node->input(i), "Transpose");
      if (tr == nullptr || pass::rankOf(tr->input(0)) != 2) continue;
      auto perm = pass::attrInts(*tr, "perm");
      if (perm && *perm != std::vector<int64_t>{1, 0}) continue;
      absorbed[i] = tr;
    }
    if (absorbed[0] == nullptr && absorbed[1] == nullptr) {
      return ctx.fail("no operand is a single-use 2-D Transpose");
    }
    if (!gemm && (pass::rankOf(node->input(0)) != 2 || pass::rankOf(node->input(1)) != 2)) {
      return ctx.fail("the MatMul is not 2-D");
    }
    auto& rw = ctx.rewriter();
    std::vector<ir::Value*> inputs(node->inputs().begin(), node->inputs().end());
    ir::Node* g = rw.createNodeLike("Gemm", "", inputs, node);
    if (gemm) {
      for (const ir::Attribute& a : node->attributes()) rw.copyAttribute(*node, g, a.name);
    }
    const char* names[2] = {"transA", "transB"};
    for (size_t i = 0; i < 2; ++i) {
      if (absorbed[i] == nullptr) continue;
      rw.setInput(g, i, absorbed[i]->input(0));
      int64_t was = gemm ? pass::attrInt(*node, names[i], 0) : 0;
      rw.setAttribute(g, pass::intAttr(names[i], 1 - was));
    }
    std::string name = node->output(0)->name();
    rw.replaceNode(node, {g->output(0)});
    if (g->output(0)->name() != name) rw.setName(g->output(0), name);
    for (ir::Node* tr : absorbed) {
      if (tr != nullptr) rw.eraseNode(tr);
    }
    return true;
  }
};

/// Split<axis=a>(Transpose<p>(x)) ==> Transpose<p> of each output of Split<axis=p[a]>(x): one
/// Transpose becomes k, so only where enough of them meet their inverse (an output whose only
/// user is the inverse Transpose: merge-consecutive cancels the pair): k - m <= 1 + m for m such
/// outputs, at least one.
class SplitPattern final : public rewrite::Pattern {
 public:
  SplitPattern() : Pattern("push-transpose-split", "Split") {}
  bool matchAndRewrite(ir::Node* split, PatternContext& ctx) const override {
    ir::Node* tr = pass::singleUseProducer(split->input(0), "Transpose");
    if (tr == nullptr) return ctx.fail("not the only user of a Transpose");
    auto perm = pass::attrInts(*tr, "perm");
    auto rank = pass::rankOf(tr->input(0));
    if (!perm || !rank || static_cast<int64_t>(perm->size()) != *rank) {
      return ctx.fail("perm not explicit or the input's rank unknown");
    }
    if (isConstantOperand(tr->input(0))) return ctx.fail("the Transpose of a constant folds");
    auto axis = pass::normalizeAxis(pass::attrInt(*split, "axis", 0), *rank);
    if (!axis) return ctx.fail("bad axis");
    std::vector<int64_t> inverse(perm->size(), -1);
    for (size_t i = 0; i < perm->size(); ++i) {
      int64_t p = (*perm)[i];
      if (p < 0 || p >= *rank || inverse[static_cast<size_t>(p)] >= 0) return ctx.fail("bad perm");
      inverse[static_cast<size_t>(p)] = static_cast<int64_t>(i);
    }
    size_t k = split->numOutputs(), m = 0;
    for (size_t i = 0; i < k; ++i) {
      ir::Value* y = split->output(i);
      if (y == nullptr || !pass::hasSingleUse(y)) continue;
      ir::Node* next = y->uses().front().user;
      if (next->opType() == "Transpose" && next->domain().empty() &&
          pass::attrInts(*next, "perm") == inverse) {
        ++m;
      }
    }
    if (m == 0 || k > 1 + 2 * m) {
      return ctx.fail("{} of {} outputs meet the inverse Transpose: the count would grow", m, k);
    }
    auto& rw = ctx.rewriter();
    std::vector<ir::Value*> inputs(split->inputs().begin(), split->inputs().end());
    inputs[0] = tr->input(0);
    std::vector<ir::Type> types;
    for (size_t i = 0; i < k; ++i) {
      types.push_back(pass::permutedType(split->output(i)->type(), inverse));
    }
    ir::Node* pushed = rw.createNode("Split", "", inputs, types);
    for (const ir::Attribute& a : split->attributes()) rw.copyAttribute(*split, pushed, a.name);
    rw.setAttribute(pushed, pass::intAttr("axis", (*perm)[static_cast<size_t>(*axis)]));
    std::vector<ir::Value*> outs;
    for (size_t i = 0; i < k; ++i)
      outs.push_back(pass::createTranspose(rw, pushed->output(i), *perm));
    rw.replaceNode(split, outs);
    rw.eraseNode(tr);
    return true;
  }
};

/// Shape<start, end>(Transpose<p>(x)) ==> Gather(Shape(x), p[start:end]): the dims are x's,
/// reordered. Only where every user of the Transpose is such a Shape: all of them are rewritten
/// at once, over one Shape(x), and the Transpose goes (k Shapes and the Transpose become one Shape
/// and k Gathers). Where the Transpose stays for another user, a Gather would be one node more.
class ShapeOfTransposePattern final : public rewrite::Pattern {
 public:
  ShapeOfTransposePattern() : Pattern("shape-of-transpose", "Transpose") {}
  bool matchAndRewrite(ir::Node* tr, PatternContext& ctx) const override {
    auto perm = pass::attrInts(*tr, "perm");
    if (!perm) return ctx.fail("the perm is not explicit");
    std::vector<ir::Node*> shapes;
    for (const ir::Use& u : tr->output(0)->uses()) {
      if (u.user->opType() != "Shape" || !u.user->domain().empty() ||
          u.user->owningGraph() != tr->owningGraph()) {
        return ctx.fail("a user of the Transpose is no Shape of its graph: it would stay");
      }
      shapes.push_back(u.user);
    }
    if (shapes.empty()) return ctx.fail("no user");
    auto rank = static_cast<int64_t>(perm->size());
    auto& rw = ctx.rewriter();
    rw.setInsertionPoint(tr);
    ir::Type dims =
        ir::Type::tensor(ir::DataType::kInt64, std::vector<ir::Dim>{ir::Dim::known(rank)});
    ir::Value* full = rw.createNode("Shape", "", {tr->input(0)}, {dims})->output(0);
    // start/end (opset 15), clamped as the spec says.
    auto clamp = [&](int64_t v) {
      return std::min(std::max(v < 0 ? v + rank : v, int64_t{0}), rank);
    };
    for (ir::Node* shape : shapes) {
      int64_t start = clamp(pass::attrInt(*shape, "start", 0));
      int64_t end = clamp(pass::attrInt(*shape, "end", rank));
      std::vector<int64_t> picked;
      for (int64_t i = start; i < end; ++i) picked.push_back((*perm)[static_cast<size_t>(i)]);
      rw.setInsertionPoint(shape);
      ir::Value* indices = rw.createInitializer(
          *shape->owningGraph(), "shape_perm",
          pass::makeInt64Tensor(picked, {static_cast<int64_t>(picked.size())}));
      ir::Node* gather = rw.createNodeLike("Gather", "", {full, indices}, shape);
      std::string name = shape->output(0)->name();
      rw.replaceNode(shape, {gather->output(0)});
      if (gather->output(0)->name() != name) rw.setName(gather->output(0), name);
    }
    rw.eraseNode(tr);
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
    list.push_back(std::make_unique<AbsorbIntoGemmPattern>("Gemm"));
    list.push_back(std::make_unique<AbsorbIntoGemmPattern>("MatMul"));
    list.push_back(std::make_unique<ShapeOfTransposePattern>());
    list.push_back(std::make_unique<SplitPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createOptimizeTransposesPass() {
  return std::make_unique<OptimizeTransposesPass>();
}

}  // namespace onnxopt::passes
