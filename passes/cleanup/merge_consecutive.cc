// merge-consecutive: fold a chain of two ops into one (or none).
//
//   Transpose<p2>(Transpose<p1>(x))         -> Transpose<q>(x), q[i] = p1[p2[i]]; x when q = id
//   Reshape(R(x), s2), R = Reshape/Unsqueeze/Squeeze/Flatten -> Reshape(x, s2)
//                                           (s2 constant, no 0 copying a dim)
//   Unsqueeze(Squeeze(x, a), a)             -> x                   (the squeezed dims were 1)
//   Squeeze(Unsqueeze(x, a), a)             -> x
//   Cast<T2>(Cast<T1>(x)), T0 -> T1 exact   -> Cast<T2>(x); x when T2 = T0
//   Concat<k>(.., Concat<k>(a, b), ..)      -> Concat<k>(.., a, b, ..)
//   Slice(Slice(x, s1, e1), s2, e2), step 1 -> Slice(x, s1 + s2, min(e1, s1 + e2)) per shared axis
//
// The inner node must have no other user (else nothing is saved), except for an inverse
// Transpose pair: the outer one goes either way. Axes are compared after
// normalization; negative axes need a known rank.
#include <algorithm>
#include <limits>
#include <set>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using pass::attrInt;
using pass::attrInts;
using pass::constantInts;
using pass::hasSingleUse;
using pass::rankOf;
using rewrite::PatternContext;

/// Replaces `node`'s output with `value` when that keeps model output names.
bool forwardTo(ir::Node* node, ir::Value* value, PatternContext& ctx) {
  if (!ctx.rewriter().canReplaceWithoutIdentity(node->output(0), value)) {
    return ctx.fail("would rename model output '{}'", node->output(0)->name());
  }
  ctx.rewriter().replaceNode(node, {value});
  return true;
}

class TransposeTransposePattern final : public rewrite::Pattern {
 public:
  TransposeTransposePattern() : Pattern("merge-transpose-transpose", "Transpose") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    // An inverse pair goes whatever else reads the inner Transpose (the outer one is saved);
    // a merge into one Transpose saves only when the inner one then goes too.
    ir::Value* in = node->input(0);
    ir::Node* inner = in == nullptr ? nullptr : in->producer();
    if (inner == nullptr || inner->opType() != "Transpose" || !inner->domain().empty()) {
      return ctx.fail("input is not a Transpose");
    }
    auto p1 = attrInts(*inner, "perm");
    auto p2 = attrInts(*node, "perm");
    if (!p1 || !p2 || p1->size() != p2->size()) return ctx.fail("perms not explicit");
    std::vector<int64_t> q(p2->size());
    bool identity = true;
    for (size_t i = 0; i < q.size(); ++i) {
      int64_t j = (*p2)[i];
      if (j < 0 || j >= static_cast<int64_t>(p1->size())) return ctx.fail("bad perm");
      q[i] = (*p1)[j];
      identity &= q[i] == static_cast<int64_t>(i);
    }
    ir::Value* x = inner->input(0);
    if (identity) return forwardTo(node, x, ctx);
    if (!pass::hasSingleUse(in)) return ctx.fail("the inner Transpose has other users");
    ir::Attribute perm;
    perm.name = "perm";
    perm.kind = ir::Attribute::Kind::kInts;
    perm.ints = q;
    ctx.rewriter().setAttribute(node, std::move(perm));
    ctx.rewriter().setInput(node, 0, x);
    ctx.rewriter().eraseNode(inner);
    return true;
  }
};

class ReshapeReshapePattern final : public rewrite::Pattern {
 public:
  ReshapeReshapePattern() : Pattern("merge-reshape-reshape", "Reshape", "", 1, 5) {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    // Each of these keeps the elements in row-major order: only the target shape matters.
    ir::Node* inner = nullptr;
    for (const char* op : {"Reshape", "Unsqueeze", "Squeeze", "Flatten"}) {
      if (inner == nullptr) inner = pass::singleUseProducer(node->input(0), op);
    }
    if (inner == nullptr) {
      return ctx.fail("input is not a single-use Reshape, Unsqueeze, Squeeze or Flatten");
    }
    auto target = constantInts(node->input(1));
    if (!target) return ctx.fail("outer target not constant");
    bool allowzero = attrInt(*node, "allowzero", 0) != 0;
    if (!allowzero && std::count(target->begin(), target->end(), 0) > 0) {
      return ctx.fail("outer target copies a dim of the intermediate (0)");
    }
    ctx.rewriter().setInput(node, 0, inner->input(0));
    ctx.rewriter().eraseNode(inner);
    return true;
  }
};

/// Reads Squeeze/Unsqueeze axes (attribute before opset 13, input from 13).
std::optional<std::vector<int64_t>> axesOf(const ir::Node& n, const PatternContext& ctx) {
  if (ctx.opset() < 13) return attrInts(n, "axes");
  if (n.numInputs() < 2 || n.input(1) == nullptr) return std::nullopt;
  return constantInts(n.input(1));
}

std::optional<std::set<int64_t>> normalizedAxes(const std::vector<int64_t>& axes,
                                                std::optional<int64_t> rank) {
  std::set<int64_t> out;
  for (int64_t a : axes) {
    if (a < 0) {
      if (!rank) return std::nullopt;
      a += *rank;
    }
    if (!out.insert(a).second) return std::nullopt;
  }
  return out;
}

class SqueezeUnsqueezePattern final : public rewrite::Pattern {
 public:
  /// `outer` is the op at the root; the inner op is its inverse.
  explicit SqueezeUnsqueezePattern(const char* outer)
      : Pattern(std::string("merge-") + outer + "-inverse", outer),
        outer_(outer),
        inner_(outer_ == "Squeeze" ? "Unsqueeze" : "Squeeze") {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Node* inner = pass::singleUseProducer(node->input(0), inner_.c_str());
    if (inner == nullptr) return ctx.fail("input is not a single-use {}", inner_);
    auto a_outer = axesOf(*node, ctx);
    auto a_inner = axesOf(*inner, ctx);
    if (!a_outer || !a_inner || a_outer->empty() || a_inner->empty()) {
      return ctx.fail("axes not constant or absent");
    }
    // Both normalize against the rank of the Unsqueeze's output = the Squeeze's input.
    ir::Value* x = inner->input(0);
    std::optional<int64_t> rank = rankOf(x);
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

bool castIsExact(ir::DataType from, ir::DataType to) {
  using D = ir::DataType;
  if (from == to) return true;
  auto in = [&](std::initializer_list<D> set) {
    return std::find(set.begin(), set.end(), to) != set.end();
  };
  switch (from) {
    case D::kBool:
      return in({D::kInt8, D::kUint8, D::kInt16, D::kUint16, D::kInt32, D::kUint32, D::kInt64,
                 D::kUint64, D::kFloat16, D::kBfloat16, D::kFloat, D::kDouble});
    case D::kInt8:
      return in(
          {D::kInt16, D::kInt32, D::kInt64, D::kFloat16, D::kBfloat16, D::kFloat, D::kDouble});
    case D::kUint8:
      return in({D::kInt16, D::kUint16, D::kInt32, D::kUint32, D::kInt64, D::kUint64, D::kFloat16,
                 D::kBfloat16, D::kFloat, D::kDouble});
    case D::kInt16:
      return in({D::kInt32, D::kInt64, D::kFloat, D::kDouble});
    case D::kUint16:
      return in({D::kInt32, D::kUint32, D::kInt64, D::kUint64, D::kFloat, D::kDouble});
    case D::kInt32:
      return in({D::kInt64, D::kDouble});
    case D::kUint32:
      return in({D::kInt64, D::kUint64, D::kDouble});
    case D::kFloat16:
    case D::kBfloat16:
      return in({D::kFloat, D::kDouble});
    case D::kFloat:
      return in({D::kDouble});
    default:
      return false;
  }
}

class CastCastPattern final : public rewrite::Pattern {
 public:
  CastCastPattern() : Pattern("merge-cast-cast", "Cast") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Node* inner = pass::singleUseProducer(node->input(0), "Cast");
    if (inner == nullptr) return ctx.fail("input is not a single-use Cast");
    ir::Value* x = inner->input(0);
    auto t0 = pass::elemTypeOf(x);
    if (!t0) return ctx.fail("type of the first input unknown");
    auto t1 = static_cast<ir::DataType>(attrInt(*inner, "to", 0));
    auto t2 = static_cast<ir::DataType>(attrInt(*node, "to", 0));
    if (!castIsExact(*t0, t1)) return ctx.fail("the first cast can lose values");
    if (t2 == *t0 && ctx.rewriter().canReplaceWithoutIdentity(node->output(0), x)) {
      return forwardTo(node, x, ctx);
    }
    // Otherwise one Cast from x (a same-type Cast where a model output's name must be kept).
    ctx.rewriter().setInput(node, 0, x);
    ctx.rewriter().eraseNode(inner);
    return true;
  }
};

class ConcatConcatPattern final : public rewrite::Pattern {
 public:
  ConcatConcatPattern() : Pattern("merge-concat-concat", "Concat") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    for (size_t i = 0; i < node->numInputs(); ++i) {
      ir::Node* inner = pass::singleUseProducer(node->input(i), "Concat");
      if (inner == nullptr) continue;
      int64_t outer_axis = attrInt(*node, "axis", 0);
      int64_t inner_axis = attrInt(*inner, "axis", 0);
      if (outer_axis != inner_axis) {
        auto rank = rankOf(node->input(i));
        if (!rank ||
            pass::normalizeAxis(outer_axis, *rank) != pass::normalizeAxis(inner_axis, *rank)) {
          continue;
        }
      }
      std::vector<ir::Value*> spliced;
      for (size_t j = 0; j < node->numInputs(); ++j) {
        if (j != i) {
          spliced.push_back(node->input(j));
          continue;
        }
        for (ir::Value* v : inner->inputs()) spliced.push_back(v);
      }
      auto& rw = ctx.rewriter();
      while (node->numInputs() > 0) rw.removeInput(node, node->numInputs() - 1);
      for (ir::Value* v : spliced) rw.addInput(node, v);
      rw.eraseNode(inner);
      return true;
    }
    return ctx.fail("no single-use Concat input on the same axis");
  }
};

class SliceSlicePattern final : public rewrite::Pattern {
 public:
  SliceSlicePattern() : Pattern("merge-slice-slice", "Slice", "", 1, 10) {}

  struct Params {
    std::vector<int64_t> starts, ends, axes;
  };

  static std::optional<Params> read(const ir::Node& n) {
    if (n.numInputs() < 3) return std::nullopt;
    auto starts = constantInts(n.input(1));
    auto ends = constantInts(n.input(2));
    if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
    Params p{*starts, *ends, {}};
    if (n.numInputs() > 3 && n.input(3) != nullptr) {
      auto axes = constantInts(n.input(3));
      if (!axes || axes->size() != starts->size()) return std::nullopt;
      p.axes = *axes;
    } else {
      for (size_t i = 0; i < starts->size(); ++i) p.axes.push_back(static_cast<int64_t>(i));
    }
    if (n.numInputs() > 4 && n.input(4) != nullptr) {
      auto steps = constantInts(n.input(4));
      if (!steps || std::any_of(steps->begin(), steps->end(), [](int64_t s) { return s != 1; })) {
        return std::nullopt;
      }
    }
    for (size_t i = 0; i < p.starts.size(); ++i) {
      if (p.starts[i] < 0 || p.ends[i] < 0 || p.axes[i] < 0) return std::nullopt;
    }
    return p;
  }

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Node* inner = pass::singleUseProducer(node->input(0), "Slice");
    if (inner == nullptr) return ctx.fail("input is not a single-use Slice");
    auto outer = read(*node);
    auto in = read(*inner);
    if (!outer || !in) return ctx.fail("parameters not constant, negative, or steps not 1");
    Params merged = *in;
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < outer->axes.size(); ++i) {
      auto it = std::find(merged.axes.begin(), merged.axes.end(), outer->axes[i]);
      if (it == merged.axes.end()) {
        merged.axes.push_back(outer->axes[i]);
        merged.starts.push_back(outer->starts[i]);
        merged.ends.push_back(outer->ends[i]);
        continue;
      }
      size_t k = static_cast<size_t>(it - merged.axes.begin());
      int64_t s1 = merged.starts[k], e1 = merged.ends[k];
      int64_t s2 = outer->starts[i], e2 = outer->ends[i];
      int64_t start = s2 > kMax - s1 ? kMax : s1 + s2;
      int64_t end = e2 > kMax - s1 ? e1 : std::min(e1, s1 + e2);
      merged.starts[k] = start;
      merged.ends[k] = end;
    }
    auto& rw = ctx.rewriter();
    ir::Graph& g = *node->owningGraph();
    auto n = static_cast<int64_t>(merged.axes.size());
    ir::Value* starts =
        rw.createInitializer(g, "slice_starts", pass::makeInt64Tensor(merged.starts, {n}));
    ir::Value* ends =
        rw.createInitializer(g, "slice_ends", pass::makeInt64Tensor(merged.ends, {n}));
    ir::Value* axes =
        rw.createInitializer(g, "slice_axes", pass::makeInt64Tensor(merged.axes, {n}));
    rw.setInput(node, 0, inner->input(0));
    rw.setInput(node, 1, starts);
    rw.setInput(node, 2, ends);
    if (node->numInputs() > 3) {
      rw.setInput(node, 3, axes);
    } else {
      rw.addInput(node, axes);
    }
    while (node->numInputs() > 4) rw.removeInput(node, node->numInputs() - 1);  // steps were all 1
    rw.eraseNode(inner);
    return true;
  }
};

class MergeConsecutivePass final : public pass::PatternPass {
 public:
  std::string id() const override { return "merge-consecutive"; }
  std::string summary() const override {
    return "Merge Transpose/Reshape/Cast/Concat/Slice chains and remove Squeeze/Unsqueeze pairs";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<TransposeTransposePattern>());
    list.push_back(std::make_unique<ReshapeReshapePattern>());
    list.push_back(std::make_unique<SqueezeUnsqueezePattern>("Squeeze"));
    list.push_back(std::make_unique<SqueezeUnsqueezePattern>("Unsqueeze"));
    list.push_back(std::make_unique<CastCastPattern>());
    list.push_back(std::make_unique<ConcatConcatPattern>());
    list.push_back(std::make_unique<SliceSlicePattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createMergeConsecutivePass() {
  return std::make_unique<MergeConsecutivePass>();
}

}  // namespace onnxopt::passes
