// merge-consecutive, view ops: two ops that only reshape become one (or none).
//
//   Reshape(R(x), s2), R = Reshape/Unsqueeze/Squeeze/Flatten -> Reshape(x, s2)
//                                           (s2 constant; a 0 in s2 copies a dim of R(x): it
//                                           becomes R = Reshape(x, s1)'s s1 there, or R(x)'s
//                                           shape is taken as below)
//   Unsqueeze(Squeeze(x, a), a)             -> x                   (the squeezed dims were 1)
//   Squeeze(Unsqueeze(x, a), a)             -> x            (the inner one stays for other users)
//   Squeeze(Squeeze(x, a1), a2)             -> Squeeze(x, a1 + a2 mapped onto x's dims)
//   Unsqueeze(Unsqueeze(x, a1), a2)         -> Unsqueeze(x, a2 + a1 mapped onto the output's dims)
//   V(Reshape(x, s)), V = Unsqueeze/Squeeze/Flatten -> Reshape(x, V applied to s)
//                                           (1s inserted, 1s removed, or the two products)
//   V(W(x)), V, W view ops, V's result shape known but for one dim -> Reshape(x, that shape)
//                                           (the unknown dim -1, a dim equal to x's symbol 0)
//   Unsqueeze(ReduceX<keepdims=0>(x, a), a) -> ReduceX<keepdims=1>(x, a)   (ArgMax/ArgMin too)
//
// Unsqueeze axes refer to its output, whose rank for the Reduce rule is the Reduce input's.
#include <algorithm>
#include <set>

#include "merge_consecutive.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes::merge {
namespace {

using pass::attrInt;
using pass::attrInts;
using pass::constantInts;
using pass::rankOf;
using rewrite::PatternContext;

/// The producer of `v` when it is a single-use view op.
ir::Node* singleUseView(const ir::Value* v) {
  for (const char* op : {"Reshape", "Unsqueeze", "Squeeze", "Flatten"}) {
    if (ir::Node* n = pass::singleUseProducer(v, op)) return n;
  }
  return nullptr;
}

/// A new int64 constant holding a Reshape target.
ir::Value* shapeConstant(const ir::Node& node, const std::vector<int64_t>& target,
                         PatternContext& ctx) {
  return ctx.rewriter().createInitializer(
      *node.owningGraph(), "reshape_shape",
      pass::makeInt64Tensor(target, {static_cast<int64_t>(target.size())}));
}

/// A Reshape target for `out` from x: known dims as they are, a dim that is x's symbol at the same
/// index 0 (copy), one other dim -1. Nullopt when more is unknown, or a dim is 0.
std::optional<std::vector<int64_t>> targetFromShape(const ir::Value* x, const ir::Value* out) {
  if (!out->type().isTensor() || !out->type().shape) return std::nullopt;
  const auto& o = *out->type().shape;
  const ir::Shape& xs = x->type().isTensor() ? x->type().shape : ir::Shape{};
  std::vector<int64_t> target;
  int unknown = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    if (o[i].isKnown()) {
      if (o[i].value == 0) return std::nullopt;  // 0 would copy; -1 beside a 0 is ambiguous
      target.push_back(o[i].value);
    } else if (o[i].kind == ir::Dim::Kind::kParam && xs && i < xs->size() &&
               (*xs)[i].kind == ir::Dim::Kind::kParam && (*xs)[i].param == o[i].param) {
      target.push_back(0);
    } else {
      ++unknown;
      target.push_back(-1);
    }
  }
  if (unknown > 1) return std::nullopt;
  return target;
}

/// The outer target of Reshape(Reshape(x, s1), s2) with each 0 (a copy of the intermediate's dim)
/// replaced by what it copies: s1's dim, or 0 again where s1 copies x's dim there. Nullopt where
/// that dim is s1's -1 or the inner Reshape is not one with a constant target.
std::optional<std::vector<int64_t>> resolveCopies(const ir::Node& inner, std::vector<int64_t> s2) {
  if (inner.opType() != "Reshape" || attrInt(inner, "allowzero", 0) != 0) return std::nullopt;
  auto s1 = constantInts(inner.input(1));
  if (!s1) return std::nullopt;
  for (size_t i = 0; i < s2.size(); ++i) {
    if (s2[i] != 0) continue;
    if (i >= s1->size() || (*s1)[i] < 0) return std::nullopt;
    s2[i] = (*s1)[i];
  }
  return s2;
}

class ReshapeReshapePattern final : public rewrite::Pattern {
 public:
  ReshapeReshapePattern() : Pattern("merge-reshape-reshape", "Reshape", "", 1, 5) {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    // Each of these keeps the elements in row-major order: only the target shape matters.
    ir::Node* inner = singleUseView(node->input(0));
    if (inner == nullptr) {
      return ctx.fail("input is not a single-use Reshape, Unsqueeze, Squeeze or Flatten");
    }
    auto target = constantInts(node->input(1));
    if (!target) return ctx.fail("outer target not constant");
    bool allowzero = attrInt(*node, "allowzero", 0) != 0;
    if (!allowzero && std::count(target->begin(), target->end(), 0) > 0) {
      // A 0 copies a dim of the intermediate: say which, or take the result shape.
      auto resolved = resolveCopies(*inner, *target);
      if (!resolved) resolved = targetFromShape(inner->input(0), node->output(0));
      if (!resolved) return ctx.fail("outer target copies a dim of the intermediate (0)");
      ctx.rewriter().setInput(node, 1, shapeConstant(*node, *resolved, ctx));
    }
    ctx.rewriter().setInput(node, 0, inner->input(0));
    ctx.rewriter().eraseNode(inner);
    return true;
  }
};

/// Squeeze/Unsqueeze take their axes as an attribute before opset 13, as input 1 from 13.
bool axesAsInput(const PatternContext& ctx) {
  return ctx.opset() >= 13;
}

/// Reads Squeeze/Unsqueeze axes; nullopt when absent or not constant.
std::optional<std::vector<int64_t>> axesOf(const ir::Node& n, const PatternContext& ctx) {
  if (!axesAsInput(ctx)) return attrInts(n, "axes");
  if (n.numInputs() < 2 || n.input(1) == nullptr) return std::nullopt;
  return constantInts(n.input(1));
}

bool hasAxes(const ir::Node& n, const PatternContext& ctx) {
  return axesAsInput(ctx) ? n.numInputs() >= 2 && n.input(1) != nullptr
                          : n.findAttribute("axes") != nullptr;
}

std::optional<std::set<int64_t>> normalizedAxes(const std::vector<int64_t>& axes,
                                                std::optional<int64_t> rank) {
  std::set<int64_t> out;
  for (int64_t a : axes) {
    if (a < 0) {
      if (!rank) return std::nullopt;
      a += *rank;
    }
    if (a < 0 || (rank && a >= *rank) || !out.insert(a).second) return std::nullopt;
  }
  return out;
}

/// The rank of x in V(W(x)) for Squeeze/Unsqueeze W with `inner_axes` axes: from x, or from W's
/// output.
std::optional<int64_t> innerInputRank(const ir::Node& inner, size_t inner_axes) {
  if (auto r = rankOf(inner.input(0))) return r;
  auto mid = rankOf(inner.output(0));
  if (!mid) return std::nullopt;
  auto k = static_cast<int64_t>(inner_axes);
  return inner.opType() == "Squeeze" ? *mid + k : *mid - k;
}

class SqueezeUnsqueezePattern final : public rewrite::Pattern {
 public:
  /// `outer` is the op at the root; the inner op is its inverse. Tried before the general view
  /// merge, which would make a Reshape of what this removes.
  explicit SqueezeUnsqueezePattern(const char* outer)
      : Pattern(std::string("merge-") + outer + "-inverse", outer, "", 2),
        outer_(outer),
        inner_(outer_ == "Squeeze" ? "Unsqueeze" : "Squeeze") {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    // The outer node goes whatever else reads the inner one (which then stays for them).
    ir::Value* in = node->input(0);
    ir::Node* inner = in == nullptr ? nullptr : in->producer();
    if (inner == nullptr || inner->opType() != inner_ || !inner->domain().empty()) {
      return ctx.fail("input is not a {}", inner_);
    }
    auto a_outer = axesOf(*node, ctx);
    auto a_inner = axesOf(*inner, ctx);
    if (!a_outer || !a_inner || a_outer->empty() || a_inner->empty()) {
      return ctx.fail("axes not constant or absent");
    }
    // Both normalize against the rank of the Unsqueeze's output = the Squeeze's input.
    ir::Value* x = inner->input(0);
    std::optional<int64_t> rank = innerInputRank(*inner, a_inner->size());
    if (rank && outer_ == "Squeeze") *rank += static_cast<int64_t>(a_inner->size());
    auto s1 = normalizedAxes(*a_outer, rank);
    auto s2 = normalizedAxes(*a_inner, rank);
    if (!s1 || !s2 || *s1 != *s2) return ctx.fail("axes differ or cannot be compared");
    return forwardTo(node, x, ctx);
  }

 private:
  std::string outer_;
  std::string inner_;
};

/// The dims of [0, rank) not in `taken`, in order.
std::vector<int64_t> freeDims(int64_t rank, const std::set<int64_t>& taken) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (taken.count(i) == 0) out.push_back(i);
  }
  return out;
}

class SameViewPattern final : public rewrite::Pattern {
 public:
  /// Squeeze of a Squeeze or Unsqueeze of an Unsqueeze.
  explicit SameViewPattern(const char* op)
      : Pattern(std::string("merge-") + op + "-" + op, op), op_(op) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Node* inner = pass::singleUseProducer(node->input(0), op_.c_str());
    if (inner == nullptr) return ctx.fail("input is not a single-use {}", op_);
    bool squeeze = op_ == "Squeeze";
    if (squeeze && !hasAxes(*node, ctx) && !hasAxes(*inner, ctx)) {
      // The inner Squeeze left no dim of 1: the outer one has nothing to remove.
      return forwardTo(node, inner->output(0), ctx);
    }
    auto a_outer = axesOf(*node, ctx);
    auto a_inner = axesOf(*inner, ctx);
    if (!a_outer || !a_inner || a_outer->empty() || a_inner->empty()) {
      return ctx.fail("axes not constant or absent");
    }
    auto r = innerInputRank(*inner, a_inner->size());
    auto n1 = static_cast<int64_t>(a_inner->size());
    auto n2 = static_cast<int64_t>(a_outer->size());
    // Squeeze axes refer to the input of each node, Unsqueeze axes to the output of each.
    std::optional<int64_t> r_inner, r_outer;
    if (r) r_inner = squeeze ? *r : *r + n1;
    if (r) r_outer = squeeze ? *r - n1 : *r + n1 + n2;
    auto s_inner = normalizedAxes(*a_inner, r_inner);
    auto s_outer = normalizedAxes(*a_outer, r_outer);
    if (!s_inner || !s_outer) return ctx.fail("axes negative with rank unknown, or repeated");
    // Squeeze: the outer axes index the dims of x that the inner one kept. Unsqueeze: the inner
    // axes index the output dims that the outer one did not insert.
    const std::set<int64_t>& base = squeeze ? *s_inner : *s_outer;
    const std::set<int64_t>& mapped = squeeze ? *s_outer : *s_inner;
    int64_t top = std::max(*base.rbegin(), *mapped.rbegin()) + n1 + n2 + 1;
    std::vector<int64_t> free = freeDims(top, base);
    std::set<int64_t> merged = base;
    for (int64_t a : mapped) merged.insert(free[static_cast<size_t>(a)]);
    ctx.rewriter().setInput(node, 0, inner->input(0));
    setAxes(node, {merged.begin(), merged.end()}, axesAsInput(ctx), ctx);
    ctx.rewriter().eraseNode(inner);
    return true;
  }

 private:
  std::string op_;
};

/// V's effect on a constant Reshape target `s` (-1 and positive dims; 0 only under allowzero).
std::optional<std::vector<int64_t>> applyView(const ir::Node& v, std::vector<int64_t> s,
                                              const PatternContext& ctx) {
  auto rank = static_cast<int64_t>(s.size());
  if (v.opType() == "Flatten") {
    int64_t axis = attrInt(v, "axis", 1);  // in [-rank, rank]
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return std::nullopt;
    std::vector<int64_t> out = {1, 1};
    for (int64_t i = 0; i < rank; ++i) {
      int64_t& side = out[i < axis ? 0 : 1];
      int64_t d = s[static_cast<size_t>(i)];
      side = d == -1 || side == -1 ? -1 : side * d;
    }
    return out;
  }
  auto axes = axesOf(v, ctx);
  if (v.opType() == "Squeeze" && !hasAxes(v, ctx)) {
    if (std::count(s.begin(), s.end(), -1) > 0) return std::nullopt;  // -1 may resolve to 1
    s.erase(std::remove(s.begin(), s.end(), 1), s.end());
    return s;
  }
  if (!axes || axes->empty()) return std::nullopt;
  bool unsqueeze = v.opType() == "Unsqueeze";
  auto set = normalizedAxes(*axes, unsqueeze ? rank + static_cast<int64_t>(axes->size()) : rank);
  if (!set) return std::nullopt;
  if (unsqueeze) {
    for (int64_t a : *set) s.insert(s.begin() + a, 1);
    return s;
  }
  for (auto it = set->rbegin(); it != set->rend(); ++it) {
    if (s[static_cast<size_t>(*it)] != 1) return std::nullopt;
    s.erase(s.begin() + *it);
  }
  return s;
}

class ViewIntoReshapePattern final : public rewrite::Pattern {
 public:
  explicit ViewIntoReshapePattern(const char* op)
      : Pattern(std::string("merge-view-") + op + "-into-reshape", op, "", 1, 5) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Node* inner = singleUseView(node->input(0));
    if (inner == nullptr) return ctx.fail("input is not a single-use view op");
    bool same_family =
        node->opType() != "Flatten" && inner->opType() != "Flatten" && inner->opType() != "Reshape";
    if (same_family && node->opType() == inner->opType()) {
      return ctx.fail("{} of {} composes its axes instead", node->opType(), inner->opType());
    }
    bool allowzero = inner->opType() == "Reshape" && attrInt(*inner, "allowzero", 0) != 0;
    std::optional<std::vector<int64_t>> target;
    if (inner->opType() == "Reshape") {
      auto s = constantInts(inner->input(1));
      if (s && (allowzero || std::count(s->begin(), s->end(), 0) == 0)) {
        target = applyView(*node, *s, ctx);
      }
    }
    if (!target) {
      allowzero = false;
      target = targetFromShape(inner->input(0), node->output(0));
    }
    if (!target) return ctx.fail("the result shape is not known well enough for one Reshape");
    auto& rw = ctx.rewriter();
    ir::Value* shape = shapeConstant(*node, *target, ctx);
    rw.setOpType(node, "Reshape", "");
    for (const char* a : {"axes", "axis"}) rw.removeAttribute(node, a);
    if (allowzero) rw.setAttribute(node, pass::intAttr("allowzero", 1));
    rw.setInput(node, 0, inner->input(0));
    if (node->numInputs() > 1) {
      rw.setInput(node, 1, shape);
    } else {
      rw.addInput(node, shape);
    }
    rw.eraseNode(inner);
    return true;
  }
};

/// ReduceX<keepdims=0> then Unsqueeze of the reduced axes is ReduceX<keepdims=1>.
class ReduceUnsqueezePattern final : public rewrite::Pattern {
 public:
  ReduceUnsqueezePattern() : Pattern("merge-reduce-unsqueeze", "Unsqueeze") {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Node* reduce = nullptr;
    for (const char* op : kReduceOps) {
      if (reduce == nullptr) reduce = pass::singleUseProducer(node->input(0), op);
    }
    if (reduce == nullptr) return ctx.fail("input is not a single-use Reduce, ArgMax or ArgMin");
    if (attrInt(*reduce, "keepdims", 1) != 0) return ctx.fail("the Reduce keeps its dims");
    auto a_unsq = axesOf(*node, ctx);
    if (!a_unsq || a_unsq->empty()) return ctx.fail("Unsqueeze axes not constant");
    // The Unsqueeze output has the Reduce input's rank.
    std::optional<int64_t> rank = rankOf(reduce->input(0));
    if (!rank) rank = rankOf(node->output(0));
    auto reduced = reducedAxes(*reduce, rank, ctx);
    if (!reduced) return false;
    auto s_unsq = normalizedAxes(*a_unsq, rank);
    auto s_red = normalizedAxes(*reduced, rank);
    if (!s_unsq || !s_red || *s_unsq != *s_red) {
      return ctx.fail("the Unsqueeze does not restore the reduced axes");
    }
    if (!ctx.rewriter().canReplaceWithoutIdentity(node->output(0), reduce->output(0))) {
      return ctx.fail("would rename model output '{}'", node->output(0)->name());
    }
    ctx.rewriter().setAttribute(reduce, pass::intAttr("keepdims", 1));
    ctx.rewriter().setType(reduce->output(0), node->output(0)->type());
    ctx.rewriter().replaceNode(node, {reduce->output(0)});
    return true;
  }

 private:
  static constexpr const char* kReduceOps[] = {
      "ReduceSum", "ReduceMean",   "ReduceMax",       "ReduceMin",       "ReduceProd", "ReduceL1",
      "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax",     "ArgMin"};

  /// The axes `reduce` removes, unnormalized; all of them when it has none (and reduces all).
  static std::optional<std::vector<int64_t>> reducedAxes(const ir::Node& reduce,
                                                         std::optional<int64_t> rank,
                                                         PatternContext& ctx) {
    if (reduce.opType() == "ArgMax" || reduce.opType() == "ArgMin") {
      return std::vector<int64_t>{attrInt(reduce, "axis", 0)};
    }
    bool as_input = pass::reduceAxesFromInput(reduce, ctx.opset());
    std::optional<std::vector<int64_t>> axes;
    if (!as_input) {
      axes = attrInts(reduce, "axes");
    } else if (reduce.numInputs() > 1 && reduce.input(1) != nullptr) {
      axes = constantInts(reduce.input(1));
      if (!axes) return ctx.fail("Reduce axes not constant"), std::nullopt;
    }
    if (axes && !axes->empty()) return axes;
    // No axes: the identity under noop_with_empty_axes (an input-axes attribute), else all.
    if (as_input && attrInt(reduce, "noop_with_empty_axes", 0) != 0) {
      return ctx.fail("empty axes with noop_with_empty_axes: the Reduce is the identity"),
             std::nullopt;
    }
    if (!rank) return ctx.fail("reduces all axes of an unknown rank"), std::nullopt;
    std::vector<int64_t> all(static_cast<size_t>(*rank));
    for (int64_t i = 0; i < *rank; ++i) all[static_cast<size_t>(i)] = i;
    return all;
  }
};

}  // namespace

void setAxes(ir::Node* node, const std::vector<int64_t>& axes, bool as_input, PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  if (!as_input) {
    rw.setAttribute(node, pass::intsAttr("axes", axes));
    return;
  }
  ir::Value* v =
      rw.createInitializer(*node->owningGraph(), "axes",
                           pass::makeInt64Tensor(axes, {static_cast<int64_t>(axes.size())}));
  if (node->numInputs() > 1) {
    rw.setInput(node, 1, v);
  } else {
    rw.addInput(node, v);
  }
}

void addViewPatterns(rewrite::PatternList& list) {
  list.push_back(std::make_unique<ReshapeReshapePattern>());
  list.push_back(std::make_unique<SqueezeUnsqueezePattern>("Squeeze"));
  list.push_back(std::make_unique<SqueezeUnsqueezePattern>("Unsqueeze"));
  list.push_back(std::make_unique<SameViewPattern>("Squeeze"));
  list.push_back(std::make_unique<SameViewPattern>("Unsqueeze"));
  // Before the general view merge: keepdims=1 leaves one node, a Reshape would leave two.
  list.push_back(std::make_unique<ReduceUnsqueezePattern>());
  for (const char* op : {"Unsqueeze", "Squeeze", "Flatten"}) {
    list.push_back(std::make_unique<ViewIntoReshapePattern>(op));
  }
}

}  // namespace onnxopt::passes::merge
