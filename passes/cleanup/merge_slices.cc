// merge-consecutive, Slices: a Slice of a Slice is one Slice.
//
//   Slice(Slice(x, s1, e1, a1, st1), s2, e2, a2, st2) -> Slice(x, s, e, a1 + a2, st)
//     an axis in one of them only:     its own start, end and step
//     an axis in both, with known dim: the inner one picks f1 + k*st1, k < n1; the outer one
//       picks k = f2 + m*st2, m < n2 (f, n after ONNX's clamping), so s = f1 + st1*f2,
//       st = st1*st2, e = s + n2*st (INT64_MIN when that is before 0 with st < 0)
//     an axis in both, dim unknown:   s1, e1, s2, e2 >= 0 and st1, st2 > 0: s = s1 + st1*s2,
//       e = min(e1, s1 + st1*e2), st = st1*st2 (sums saturate at INT64_MAX, which clamps alike)
//
// Opset 1..9 Slices (starts/ends/axes attributes, step 1) merge into the attribute form.
#include <algorithm>
#include <limits>
#include <map>

#include "merge_consecutive.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes::merge {
namespace {

using pass::attrInts;
using pass::constantInts;
using rewrite::PatternContext;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

struct AxisSlice {
  int64_t start = 0, end = 0, step = 1;
};

/// The Slice's parameters by normalized axis; nullopt when not constant, an axis repeats, a step is
/// 0, or an axis is negative with the rank unknown.
std::optional<std::map<int64_t, AxisSlice>> readSlice(const ir::Node& n, int64_t opset) {
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (opset < 10) {
    starts = attrInts(n, "starts");
    ends = attrInts(n, "ends");
    if (n.findAttribute("axes") != nullptr) axes = attrInts(n, "axes");
  } else {
    if (n.numInputs() < 3) return std::nullopt;
    starts = constantInts(n.input(1));
    ends = constantInts(n.input(2));
    if (n.numInputs() > 3 && n.input(3) != nullptr) {
      axes = constantInts(n.input(3));
      if (!axes) return std::nullopt;
    }
    if (n.numInputs() > 4 && n.input(4) != nullptr) {
      steps = constantInts(n.input(4));
      if (!steps) return std::nullopt;
    }
  }
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  size_t k = starts->size();
  if ((axes && axes->size() != k) || (steps && steps->size() != k)) return std::nullopt;
  auto rank = pass::rankOf(n.input(0));
  std::map<int64_t, AxisSlice> out;
  for (size_t i = 0; i < k; ++i) {
    int64_t axis = axes ? (*axes)[i] : static_cast<int64_t>(i);
    if (axis < 0) {
      if (!rank) return std::nullopt;
      axis += *rank;
    }
    int64_t step = steps ? (*steps)[i] : 1;
    if (axis < 0 || step == 0 || out.count(axis) > 0) return std::nullopt;
    out[axis] = AxisSlice{(*starts)[i], (*ends)[i], step};
  }
  return out;
}

/// a + b, saturating at INT64_MAX (both >= 0).
int64_t satAdd(int64_t a, int64_t b) {
  return b > kMax - a ? kMax : a + b;
}
/// a * b for a > 0, b >= 0, saturating at INT64_MAX.
int64_t satMul(int64_t a, int64_t b) {
  return b > kMax / a ? kMax : a * b;
}

/// The first index and count a Slice picks along a dim of size d (ONNX's clamping rules).
std::pair<int64_t, int64_t> resolve(const AxisSlice& s, int64_t d) {
  auto wrap = [&](int64_t v) { return v < 0 ? v + d : v; };
  int64_t start = wrap(s.start), end = wrap(s.end);
  if (d == 0) return {0, 0};
  if (s.step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
    return {start, end > start ? (end - start + s.step - 1) / s.step : 0};
  }
  start = std::clamp<int64_t>(start, 0, d - 1);
  end = std::clamp<int64_t>(end, -1, d - 1);
  return {start, start > end ? (start - end - s.step - 1) / -s.step : 0};
}

/// The one Slice along an axis that `outer` of `inner` is; nullopt when it cannot be written.
std::optional<AxisSlice> compose(const AxisSlice& in, const AxisSlice& out,
                                 std::optional<int64_t> dim) {
  if (dim) {
    auto [f1, n1] = resolve(in, *dim);
    auto [f2, n2] = resolve(out, n1);
    if (n2 == 0) return AxisSlice{0, 0, 1};
    // |st1*st2|, f1 + st1*f2 and the end stay within d*|st|: no overflow for dims below 2^31.
    if (*dim > (int64_t{1} << 31) || std::abs(in.step) > (int64_t{1} << 31) ||
        std::abs(out.step) > (int64_t{1} << 31)) {
      return std::nullopt;
    }
    int64_t step = in.step * out.step;
    int64_t start = f1 + in.step * f2;
    int64_t end = start + n2 * step;
    if (step < 0 && end < 0) end = kMin;
    return AxisSlice{start, end, step};
  }
  if (in.start < 0 || in.end < 0 || out.start < 0 || out.end < 0 || in.step < 0 || out.step < 0) {
    return std::nullopt;
  }
  if (out.step > kMax / in.step) return std::nullopt;
  int64_t start = satAdd(in.start, satMul(in.step, out.start));
  int64_t end = std::min(in.end, satAdd(in.start, satMul(in.step, out.end)));
  return AxisSlice{start, end, in.step * out.step};
}

class SliceSlicePattern final : public rewrite::Pattern {
 public:
  SliceSlicePattern() : Pattern("merge-slice-slice", "Slice") {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Node* inner = pass::singleUseProducer(node->input(0), "Slice");
    if (inner == nullptr) return ctx.fail("input is not a single-use Slice");
    auto outer = readSlice(*node, ctx.opset());
    auto merged = readSlice(*inner, ctx.opset());
    if (!outer || !merged) {
      return ctx.fail("parameters not constant, a step 0, or a negative axis of unknown rank");
    }
    ir::Value* x = inner->input(0);
    for (const auto& [axis, s] : *outer) {
      auto it = merged->find(axis);
      if (it == merged->end()) {
        (*merged)[axis] = s;
        continue;
      }
      std::optional<int64_t> dim;
      if (x->type().isTensor() && x->type().shape &&
          axis < static_cast<int64_t>(x->type().shape->size())) {
        const ir::Dim& d = (*x->type().shape)[static_cast<size_t>(axis)];
        if (d.isKnown()) dim = d.value;
      }
      auto c = compose(it->second, s, dim);
      if (!c) return ctx.fail("axis {}: cannot compose without its size", axis);
      it->second = *c;
    }
    rewrite(node, inner, *merged, ctx);
    return true;
  }

 private:
  static void rewrite(ir::Node* node, ir::Node* inner, const std::map<int64_t, AxisSlice>& merged,
                      PatternContext& ctx) {
    std::vector<int64_t> starts, ends, axes, steps;
    for (const auto& [axis, s] : merged) {
      axes.push_back(axis);
      starts.push_back(s.start);
      ends.push_back(s.end);
      steps.push_back(s.step);
    }
    auto& rw = ctx.rewriter();
    rw.setInput(node, 0, inner->input(0));
    if (ctx.opset() < 10) {  // both steps were 1
      rw.setAttribute(node, pass::intsAttr("starts", starts));
      rw.setAttribute(node, pass::intsAttr("ends", ends));
      rw.setAttribute(node, pass::intsAttr("axes", axes));
      rw.eraseNode(inner);
      return;
    }
    ir::Graph& g = *node->owningGraph();
    auto n = static_cast<int64_t>(axes.size());
    std::vector<ir::Value*> params = {
        rw.createInitializer(g, "slice_starts", pass::makeInt64Tensor(starts, {n})),
        rw.createInitializer(g, "slice_ends", pass::makeInt64Tensor(ends, {n})),
        rw.createInitializer(g, "slice_axes", pass::makeInt64Tensor(axes, {n}))};
    if (std::any_of(steps.begin(), steps.end(), [](int64_t s) { return s != 1; })) {
      params.push_back(rw.createInitializer(g, "slice_steps", pass::makeInt64Tensor(steps, {n})));
    }
    while (node->numInputs() > 1) rw.removeInput(node, node->numInputs() - 1);
    for (ir::Value* v : params) rw.addInput(node, v);
    rw.eraseNode(inner);
  }
};

}  // namespace

void addSlicePatterns(rewrite::PatternList& list) {
  list.push_back(std::make_unique<SliceSlicePattern>());
}

}  // namespace onnxopt::passes::merge
