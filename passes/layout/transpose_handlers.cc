// The per-op handler table of optimize-transposes: how an op that names axes of its input takes x
// instead of Transpose<p>(x) (axis a of Transpose<p>(x) is axis p[a] of x):
//
//   Softmax/LogSoftmax/Hardmax<axis=a> (opset 13+)   ==>  <axis=p[a]>
//   Concat<axis=a>(T(x1), T(x2) | constant, ...)      ==>  Concat<axis=p[a]>(x1, x2, ...)
//   ArgMax/ArgMin<axis=a>                              ==>  <axis=p[a]>
//   QuantizeLinear/DequantizeLinear<axis=a> (1-D scale) ==>  <axis=p[a]>
//   Slice(T(x), starts, ends, axes=A) (constant)      ==>  Slice(x, starts, ends, p[A])
//   Pad(T(x), pads) (constant, every mode)            ==>  Pad(x, pads permuted per dim)
//   Pad(T(x), pads, value, axes=A) (opset 18+)        ==>  Pad(x, pads, value, p[A])
//   Pad<pads>(T(x)) (before opset 11)                 ==>  Pad<pads permuted per dim>(x)
//   Resize(T(x), roi, scales | sizes) (constant)      ==>  Resize(x, roi, factors permuted)
//   Reduce*<axes=A> (constant axes, attribute or input)  ==>  axes p[A]
//   Squeeze(T(x), A)                                  ==>  Transpose<q>(Squeeze(x, p[A]))
//   Unsqueeze(T(x), A)                                ==>  Transpose<q>(Unsqueeze(x, A))
//
// With keepdims=0 (and Squeeze, Unsqueeze) the result has another rank, its dims in x's order
// after the push: the Transpose pushed becomes Transpose<q> of the result (q orders x's kept axes
// as the result had them), none at all where q is the identity (NHWC global pooling: ReduceMean
// over H and W of NCHW's Transpose).
#include "transpose_handlers.h"

#include <algorithm>
#include <map>

#include "onnxopt/ir/op_traits.h"
#include "onnxopt/pass/matchers.h"

namespace onnxopt::passes {

bool isElementwise(const ir::Node& n) {
  if (!n.domain().empty() || n.numOutputs() != 1) return false;
  // QuantizeLinear/DequantizeLinear with a per-tensor (scalar) scale: elementwise.
  if ((n.opType() == "QuantizeLinear" || n.opType() == "DequantizeLinear") && n.numInputs() >= 2) {
    return pass::rankOf(n.input(1)) == 0;
  }
  return ir::isElementwise(n.domain(), n.opType());
}

bool isConstantOperand(const ir::Value* v) {
  if (pass::constantTensor(v)) return true;
  const ir::Node* p = v->producer();
  return p != nullptr && p->opType() == "Unsqueeze" && p->domain().empty() &&
         pass::constantTensor(p->input(0)) && p->numInputs() == 2 &&
         pass::constantTensor(p->input(1));
}

namespace {

/// What a handler reads besides the node: the opset, the rank of x and the Transpose's perm.
struct PushedTranspose {
  int64_t opset;
  int64_t rank;
  const std::vector<int64_t>& perm;
};

using Handler = std::optional<AxisRemap> (*)(const ir::Node&, const PushedTranspose&);

ir::Tensor int64Vector(const std::vector<int64_t>& values) {
  return pass::makeInt64Tensor(values, {static_cast<int64_t>(values.size())});
}

/// Axes named on the transposed tensor (negative ones too), named on x; nullopt when one is out
/// of range.
std::optional<std::vector<int64_t>> renamedAxes(const std::vector<int64_t>& axes,
                                                const PushedTranspose& t) {
  std::vector<int64_t> renamed;
  for (int64_t a : axes) {
    auto norm = pass::normalizeAxis(a, t.rank);
    if (!norm) return std::nullopt;
    renamed.push_back(t.perm[static_cast<size_t>(*norm)]);
  }
  return renamed;
}

/// Per-dim values of the transposed tensor (begins first, then ends: Pad's layout) on x: dim p[i]
/// of x is dim i of the transposed tensor.
std::optional<std::vector<int64_t>> padsOnX(const std::vector<int64_t>& pads,
                                            const PushedTranspose& t) {
  auto rank = static_cast<size_t>(t.rank);
  if (pads.size() != 2 * rank) return std::nullopt;
  std::vector<int64_t> on_x(pads.size());
  for (size_t i = 0; i < rank; ++i) {
    on_x[static_cast<size_t>(t.perm[i])] = pads[i];
    on_x[rank + static_cast<size_t>(t.perm[i])] = pads[rank + i];
  }
  return on_x;
}

/// Unsqueeze(Transpose<p>(x), A) = Transpose<q>(Unsqueeze(x, A)): A (normalized, on the result)
/// holds new unit dims in both; the k-th other slot of the result holds x's dim p[k], which the
/// pushed op put in its p[k]-th other slot.
std::vector<int64_t> unsqueezedPerm(const std::vector<int64_t>& perm,
                                    const std::vector<int64_t>& axes) {
  size_t rank = perm.size() + axes.size();
  std::vector<int64_t> slots;  // the result's positions that are not new
  for (size_t j = 0; j < rank; ++j) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(j)) == axes.end()) {
      slots.push_back(static_cast<int64_t>(j));
    }
  }
  std::vector<int64_t> q(rank);
  for (size_t j = 0; j < rank; ++j) q[j] = static_cast<int64_t>(j);
  for (size_t k = 0; k < slots.size(); ++k) {
    q[static_cast<size_t>(slots[k])] = slots[static_cast<size_t>(perm[k])];
  }
  return q;
}

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

/// Squeeze/Unsqueeze's axes (an attribute before opset 13, a constant input from 13), or nullopt.
std::optional<std::vector<int64_t>> squeezeAxes(const ir::Node& n, int64_t opset) {
  if (opset < 13) return pass::attrInts(n, "axes");
  if (n.numInputs() < 2 || n.input(1) == nullptr) return std::nullopt;
  return pass::constantInts(n.input(1));
}

/// The axes on x, sorted, as the `axes` attribute or (`as_input`) as input 1.
AxisRemap axesRemap(std::vector<int64_t> axes, bool as_input) {
  std::sort(axes.begin(), axes.end());
  AxisRemap r;
  if (as_input) {
    r.inputs.push_back({1, "axes", int64Vector(axes)});
  } else {
    r.attribute = pass::intsAttr("axes", axes);
  }
  return r;
}

std::optional<AxisRemap> oneAxis(const ir::Node& n, const PushedTranspose& t, int64_t fallback) {
  auto axis = pass::normalizeAxis(pass::attrInt(n, "axis", fallback), t.rank);
  if (!axis) return std::nullopt;
  AxisRemap r;
  r.attribute = pass::intAttr("axis", t.perm[static_cast<size_t>(*axis)]);
  return r;
}

// Softmax and its kin take one axis from opset 13 (before, the axis split the input in two).
std::optional<AxisRemap> softmaxLike(const ir::Node& n, const PushedTranspose& t) {
  if (t.opset < 13) return std::nullopt;
  return oneAxis(n, t, -1);
}

std::optional<AxisRemap> concat(const ir::Node& n, const PushedTranspose& t) {
  if (n.findAttribute("axis") == nullptr) return std::nullopt;
  return oneAxis(n, t, 0);
}

// Per-axis quantization (a 1-D scale): the scale's axis. A scalar scale is elementwise.
std::optional<AxisRemap> quantize(const ir::Node& n, const PushedTranspose& t) {
  if (n.numInputs() < 2 || pass::rankOf(n.input(1)) != 1) return std::nullopt;
  return oneAxis(n, t, 1);
}

std::optional<AxisRemap> argMinMax(const ir::Node& n, const PushedTranspose& t) {
  auto r = oneAxis(n, t, 0);
  if (r && pass::attrInt(n, "keepdims", 1) == 0) {
    auto axis = pass::normalizeAxis(pass::attrInt(n, "axis", 0), t.rank);
    r->result_perm = reducedPerm(t.perm, {*axis});
  }
  return r;
}

// Slice (inputs from opset 10) with constant starts and axes: the axes renamed, the starts, ends
// and steps per axis as they were.
std::optional<AxisRemap> slice(const ir::Node& n, const PushedTranspose& t) {
  if (t.opset < 10 || n.numInputs() < 3) return std::nullopt;
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
  auto renamed = renamedAxes(axes, t);
  if (!renamed) return std::nullopt;
  AxisRemap r;
  r.inputs.push_back({3, "axes", int64Vector(*renamed)});
  return r;
}

// Pad, every mode (each pads a dim on its own): the pads of the transposed tensor permuted onto
// x's dims; with an axes input (opset 18) the pads stay and the axes are renamed. Before opset
// 11 the pads are an attribute (Pad-1's "paddings", of opset 1 only, is left alone).
std::optional<AxisRemap> pad(const ir::Node& n, const PushedTranspose& t) {
  AxisRemap r;
  if (t.opset < 11) {
    auto pads = pass::attrInts(n, "pads");
    auto on_x = pads ? padsOnX(*pads, t) : std::nullopt;
    if (!on_x) return std::nullopt;
    r.attribute = pass::intsAttr("pads", *on_x);
    return r;
  }
  if (n.numInputs() < 2 || n.input(1) == nullptr) return std::nullopt;
  auto pads = pass::constantInts(n.input(1));
  if (!pads) return std::nullopt;
  if (n.numInputs() > 3 && n.input(3) != nullptr) {
    auto axes = pass::constantInts(n.input(3));
    auto renamed = axes ? renamedAxes(*axes, t) : std::nullopt;
    if (!renamed || pads->size() != 2 * renamed->size()) return std::nullopt;
    r.inputs.push_back({3, "axes", int64Vector(*renamed)});
    return r;
  }
  auto on_x = padsOnX(*pads, t);
  if (!on_x) return std::nullopt;
  r.inputs.push_back({1, "pads", int64Vector(*on_x)});
  return r;
}

// Squeeze with explicit axes: x's axes p[A] go, and the kept ones keep x's order.
std::optional<AxisRemap> squeeze(const ir::Node& n, const PushedTranspose& t) {
  auto given = squeezeAxes(n, t.opset);
  if (!given || given->empty()) return std::nullopt;
  std::vector<int64_t> axes;
  for (int64_t a : *given) {
    auto norm = pass::normalizeAxis(a, t.rank);
    if (!norm) return std::nullopt;
    axes.push_back(*norm);
  }
  std::vector<int64_t> on_x;
  for (int64_t a : axes) on_x.push_back(t.perm[static_cast<size_t>(a)]);
  AxisRemap r = axesRemap(on_x, t.opset >= 13);
  r.result_perm = reducedPerm(t.perm, axes);
  return r;
}

// Unsqueeze: the same new unit dims on x, then the Transpose that puts x's dims in order.
std::optional<AxisRemap> unsqueeze(const ir::Node& n, const PushedTranspose& t) {
  auto given = squeezeAxes(n, t.opset);
  if (!given || given->empty()) return std::nullopt;
  int64_t out_rank = t.rank + static_cast<int64_t>(given->size());
  std::vector<int64_t> axes;
  for (int64_t a : *given) {
    auto norm = pass::normalizeAxis(a, out_rank);
    if (!norm) return std::nullopt;
    axes.push_back(*norm);
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  AxisRemap r = axesRemap(axes, t.opset >= 13);
  r.result_perm = unsqueezedPerm(t.perm, axes);
  return r;
}

// Resize (opset 11+, no axes attribute, an empty or unused roi) with constant scales or sizes:
// interpolation is separable, so each dim's factor goes with the dim (x's dim p[i] gets the
// transposed tensor's factor i).
std::optional<AxisRemap> resize(const ir::Node& n, const PushedTranspose& t) {
  if (t.opset < 11 || n.findAttribute("axes") != nullptr || n.numInputs() < 3) return std::nullopt;
  const ir::Attribute* mode = n.findAttribute("coordinate_transformation_mode");
  if (mode != nullptr && mode->s == "tf_crop_and_resize") return std::nullopt;
  AxisRemap r;
  for (size_t index : {size_t{2}, size_t{3}}) {
    if (index >= n.numInputs() || n.input(index) == nullptr) continue;
    auto c = pass::constantTensor(n.input(index));
    if (!c) return std::nullopt;
    if (c->numElements().value_or(-1) == 0) continue;  // an empty scales beside sizes
    if (c->numElements().value_or(-1) != t.rank) return std::nullopt;
    if (index == 2) {
      auto v = pass::floatValues(*c);
      if (!v) return std::nullopt;
      std::vector<double> on_x(v->size());
      for (size_t i = 0; i < v->size(); ++i) on_x[static_cast<size_t>(t.perm[i])] = (*v)[i];
      r.inputs.push_back({2, "scales", pass::makeFloatTensor(c->dtype(), {t.rank}, on_x)});
    } else {
      auto v = pass::constantInts(n.input(index));
      if (!v) return std::nullopt;
      std::vector<int64_t> on_x(v->size());
      for (size_t i = 0; i < v->size(); ++i) on_x[static_cast<size_t>(t.perm[i])] = (*v)[i];
      r.inputs.push_back({3, "sizes", int64Vector(on_x)});
    }
  }
  if (r.inputs.empty()) return std::nullopt;
  return r;
}

// Reductions with explicit constant axes; keepdims 0 or 1.
std::optional<AxisRemap> reduce(const ir::Node& n, const PushedTranspose& t) {
  auto axes = pass::reduceAxes(n, t.opset, t.rank, /*any_keepdims=*/true);
  if (!axes) return std::nullopt;
  std::vector<int64_t> on_x;
  for (int64_t a : *axes) on_x.push_back(t.perm[static_cast<size_t>(a)]);
  AxisRemap r = axesRemap(on_x, pass::reduceAxesFromInput(n, t.opset));
  if (pass::attrInt(n, "keepdims", 1) == 0) r.result_perm = reducedPerm(t.perm, *axes);
  return r;
}

const std::map<std::string, Handler>& handlers() {
  static const std::map<std::string, Handler> kHandlers = {
      {"Softmax", softmaxLike},
      {"LogSoftmax", softmaxLike},
      {"Hardmax", softmaxLike},
      {"Concat", concat},
      {"QuantizeLinear", quantize},
      {"DequantizeLinear", quantize},
      {"ArgMax", argMinMax},
      {"ArgMin", argMinMax},
      {"Slice", slice},
      {"Pad", pad},
      {"Squeeze", squeeze},
      {"Unsqueeze", unsqueeze},
      {"Resize", resize},
      {"ReduceMean", reduce},
      {"ReduceSum", reduce},
      {"ReduceMax", reduce},
      {"ReduceMin", reduce},
      {"ReduceProd", reduce},
      {"ReduceL1", reduce},
      {"ReduceL2", reduce},
      {"ReduceLogSum", reduce},
      {"ReduceLogSumExp", reduce},
      {"ReduceSumSquare", reduce},
  };
  return kHandlers;
}

}  // namespace

std::optional<AxisRemap> axisRemapOf(const ir::Node& n, int64_t opset, int64_t rank,
                                     const std::vector<int64_t>& perm) {
  if (!n.domain().empty() || n.numOutputs() != 1) return std::nullopt;
  auto it = handlers().find(n.opType());
  if (it == handlers().end()) return std::nullopt;
  return it->second(n, PushedTranspose{opset, rank, perm});
}

}  // namespace onnxopt::passes
