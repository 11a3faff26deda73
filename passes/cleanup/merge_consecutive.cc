// merge-consecutive: fold a chain of two ops into one (or none).
//
//   Transpose<p2>(Transpose<p1>(x))         -> Transpose<q>(x), q[i] = p1[p2[i]]; x when q = id
//                                              (an absent perm reverses the dims: x's rank known)
//   Cast<T2>(Cast<T1>(x)), T0 -> T1 exact   -> Cast<T2>(x); x when T2 = T0
//   Concat<k>(.., Concat<k>(a, b), ..)      -> Concat<k>(.., a, b, ..)
//   f(f(x)) -> f(x),  f idempotent in ir/op_traits.def: Relu, Abs, Floor, Ceil, Round, Sign
//                                             (for every value, NaN, infinities and -0 included)
//   g(g(x)) -> x,     g an involution there: Neg, Not, BitwiseNot (Neg wraps INT_MIN to itself)
//   Where(Not(c), x, y)                     -> Where(c, y, x)
//   Reshape/Squeeze/Unsqueeze/Flatten and Reduce-then-Unsqueeze chains: merge_view_ops.cc
//   Slice of a Slice: merge_slices.cc
//
// The inner node must have no other user (else nothing is saved), except where the outer node
// goes and the inner one stays (an inverse Transpose pair, f(f(x)), g(g(x))). Axes are compared
// after normalization; negative axes need a known rank.
#include <algorithm>
#include <numeric>

#include "merge_consecutive.h"
#include "onnxopt/ir/op_traits.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace merge {

bool forwardTo(ir::Node* node, ir::Value* value, rewrite::PatternContext& ctx) {
  if (!ctx.rewriter().canReplaceWithoutIdentity(node->output(0), value)) {
    return ctx.fail("would rename model output '{}'", node->output(0)->name());
  }
  ctx.rewriter().replaceNode(node, {value});
  return true;
}

}  // namespace merge

namespace {

using merge::forwardTo;
using pass::attrInt;
using pass::attrInts;
using pass::rankOf;
using rewrite::PatternContext;

std::vector<int64_t> reversal(size_t rank) {
  std::vector<int64_t> p(rank);
  std::iota(p.rbegin(), p.rend(), 0);
  return p;
}

/// A Transpose's perm; the default (reversing the dims) when the rank is known.
std::optional<std::vector<int64_t>> permOf(const ir::Node& t) {
  if (auto p = attrInts(t, "perm")) return p;
  auto rank = rankOf(t.input(0));
  if (!rank) rank = rankOf(t.output(0));
  if (!rank) return std::nullopt;
  return reversal(static_cast<size_t>(*rank));
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
    // Both have the rank of x: an absent perm is the reversal at the other one's length.
    auto p1 = permOf(*inner);
    auto p2 = permOf(*node);
    if (!p1 && p2) p1 = reversal(p2->size());
    if (!p2 && p1) p2 = reversal(p1->size());
    if (!p1 || !p2 || p1->size() != p2->size()) return ctx.fail("perm absent and rank unknown");
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
    ctx.rewriter().setAttribute(node, pass::intsAttr("perm", q));
    ctx.rewriter().setInput(node, 0, x);
    ctx.rewriter().eraseNode(inner);
    return true;
  }
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

/// f(f(x)) -> f(x) for an idempotent f; g(g(x)) -> x for an involution g.
class RepeatedUnaryPattern final : public rewrite::Pattern {
 public:
  RepeatedUnaryPattern(const char* op, bool involution)
      : Pattern(std::string("merge-") + op + "-" + op, op), op_(op), involution_(involution) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Value* in = node->input(0);
    ir::Node* inner = in == nullptr ? nullptr : in->producer();
    if (inner == nullptr || inner->opType() != op_ || !inner->domain().empty()) {
      return ctx.fail("input is not a {}", op_);
    }
    return forwardTo(node, involution_ ? inner->input(0) : in, ctx);
  }

 private:
  std::string op_;
  bool involution_;
};

class WhereNotPattern final : public rewrite::Pattern {
 public:
  WhereNotPattern() : Pattern("merge-where-not", "Where") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Node* negation = pass::singleUseProducer(node->input(0), "Not");
    if (negation == nullptr) return ctx.fail("condition is not a single-use Not");
    // Swapping the branches keeps the broadcast shape: it is symmetric in them.
    ir::Value* x = node->input(1);
    ir::Value* y = node->input(2);
    auto& rw = ctx.rewriter();
    rw.setInput(node, 0, negation->input(0));
    rw.setInput(node, 1, y);
    rw.setInput(node, 2, x);
    rw.eraseNode(negation);
    return true;
  }
};

class MergeConsecutivePass final : public pass::PatternPass {
 public:
  std::string id() const override { return "merge-consecutive"; }
  std::string summary() const override {
    return "Merge Transpose/view-op/Cast/Concat/Slice chains, Reduce then Unsqueeze, repeated "
           "unary ops and Where of Not";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<TransposeTransposePattern>());
    merge::addViewPatterns(list);
    list.push_back(std::make_unique<CastCastPattern>());
    list.push_back(std::make_unique<ConcatConcatPattern>());
    merge::addSlicePatterns(list);
    for (const ir::OpTraits& t : ir::opTraitTable()) {
      bool involution = t.has(ir::OpTrait::kInvolution);
      if (involution || t.has(ir::OpTrait::kIdempotent)) {
        list.push_back(std::make_unique<RepeatedUnaryPattern>(t.op.data(), involution));
      }
    }
    list.push_back(std::make_unique<WhereNotPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createMergeConsecutivePass() {
  return std::make_unique<MergeConsecutivePass>();
}

}  // namespace onnxopt::passes
