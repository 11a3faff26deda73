// Shape-manipulating ops. Shape, Size, Gather, Slice, Concat, Squeeze/Unsqueeze, Reshape, Range,
// ConstantOfShape and Constant also carry integer values, so targets computed from Shape chains
// stay symbolic.
#include <limits>

#include "helpers.h"
#include "onnxopt/ir/constants.h"

namespace onnxopt::ir::detail {
namespace {

using infer::axesArg;
using infer::dimAdd;
using infer::dimFloorDiv;
using infer::dimMul;
using infer::dimOf;
using infer::dimProduct;
using infer::dimSub;
using infer::elemOr;
using infer::knownDims;
using infer::normAxis;

constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();

ShapeValue valueOfDims(const std::vector<Dim>& dims) {
  ShapeValue v;
  for (const Dim& d : dims) v.push_back(d.toExpr());
  return v;
}

void constant(InferenceContext& ctx) {
  auto t = constantNodeTensor(ctx.node());
  if (!t) {
    if (const Attribute* a = ctx.attr("sparse_value"); a != nullptr && !a->sparse_tensors.empty()) {
      ctx.setOutput(0, a->sparse_tensors[0].values.dtype(), knownDims(a->sparse_tensors[0].dims));
    }
    return;
  }
  ctx.setOutput(0, t->dtype(), knownDims(t->dims()));
  if ((t->dtype() == DataType::kInt64 || t->dtype() == DataType::kInt32) && t->dims().size() <= 1) {
    ShapeValue v;
    for (int64_t x : tensorInts(*t)) v.push_back(SymExpr::constant(x));
    ctx.setOutputValue(0, std::move(v));
  }
}

void shape(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  if (!in) {
    ctx.setOutput(0, DataType::kInt64, std::vector<Dim>{Dim::unknown()});
    return;
  }
  auto rank = static_cast<int64_t>(in->size());
  int64_t start = ctx.attrInt("start", 0);
  int64_t end = ctx.attrInt("end", rank);
  auto clampIndex = [&](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
  start = clampIndex(start);
  end = clampIndex(end);
  std::vector<Dim> dims(in->begin() + start, in->begin() + std::max(start, end));
  ctx.setOutput(0, DataType::kInt64, knownDims({static_cast<int64_t>(dims.size())}));
  ctx.setOutputValue(0, valueOfDims(dims));
}

void size(InferenceContext& ctx) {
  ctx.setOutput(0, DataType::kInt64, std::vector<Dim>{});
  if (auto in = ctx.inputShape(0)) {
    Dim n = dimProduct(*in, 0, in->size());
    ctx.setOutputValue(0, {n.toExpr()});
  }
}

void reshape(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  const ShapeValue* target = nullptr;
  ShapeValue from_attr;
  if (ctx.opset() < 5) {
    auto s = ctx.attrInts("shape");
    if (s) {
      for (int64_t x : *s) from_attr.push_back(SymExpr::constant(x));
      target = &from_attr;
    }
  } else {
    target = ctx.inputValue(1);
  }
  if (target == nullptr) {
    auto ts = ctx.inputShape(1);
    if (ts && ts->size() == 1 && (*ts)[0].isKnown()) {
      ctx.setOutput(0, elem, std::vector<Dim>(static_cast<size_t>((*ts)[0].value), Dim::unknown()));
    } else {
      ctx.setOutputType(0, Type::tensor(elem));
    }
    return;
  }
  bool allowzero = ctx.attrInt("allowzero", 0) != 0;
  auto in = ctx.inputShape(0);
  std::vector<Dim> out;
  int minus_one = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    const auto& e = (*target)[i];
    auto c = e ? e->constantValue() : std::nullopt;
    if (c && *c == 0 && !allowzero) {
      out.push_back(in && i < in->size() ? (*in)[i] : Dim::unknown());
    } else if (c && *c == -1) {
      minus_one = static_cast<int>(i);
      out.push_back(Dim::unknown());
    } else {
      out.push_back(dimOf(e));
    }
  }
  if (minus_one >= 0 && in) {
    Dim total = dimProduct(*in, 0, in->size());
    Dim rest = Dim::known(1);
    for (size_t i = 0; i < out.size(); ++i) {
      if (static_cast<int>(i) != minus_one) rest = dimMul(rest, out[i]);
    }
    out[minus_one] = dimFloorDiv(total, rest);
  }
  ctx.setOutput(0, elem, out);
  if (const ShapeValue* v = ctx.inputValue(0)) {
    if (out.size() <= 1) ctx.setOutputValue(0, *v);
  }
}

void flatten(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  if (!in) {
    ctx.setOutput(0, elemOr(ctx, 0), std::vector<Dim>{Dim::unknown(), Dim::unknown()});
    return;
  }
  auto rank = static_cast<int64_t>(in->size());
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < 0) axis += rank;
  axis = std::clamp(axis, int64_t{0}, rank);
  ctx.setOutput(0, elemOr(ctx, 0),
                std::vector<Dim>{dimProduct(*in, 0, static_cast<size_t>(axis)),
                                 dimProduct(*in, static_cast<size_t>(axis), in->size())});
}

void squeeze(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  bool has_axes = ctx.opset() < 13 ? ctx.attr("axes") != nullptr : ctx.hasInput(1);
  auto axes = axesArg(ctx, "axes", 1, 13);
  if (!in || (has_axes && !axes)) {
    ctx.setOutputType(0, Type::tensor(elem));
    return;
  }
  auto rank = static_cast<int64_t>(in->size());
  std::vector<bool> drop(in->size(), false);
  if (has_axes) {
    for (int64_t a : *axes) {
      auto n = normAxis(a, rank);
      if (!n) return ctx.warn("axis out of range");
      drop[*n] = true;
    }
  } else {
    for (size_t i = 0; i < in->size(); ++i) {
      if (!(*in)[i].isKnown()) {
        ctx.setOutputType(0, Type::tensor(elem));
        return;
      }
      drop[i] = (*in)[i].value == 1;
    }
  }
  std::vector<Dim> out;
  for (size_t i = 0; i < in->size(); ++i) {
    if (!drop[i]) out.push_back((*in)[i]);
  }
  ctx.setOutput(0, elem, out);
  if (const ShapeValue* v = ctx.inputValue(0)) ctx.setOutputValue(0, *v);
}

void unsqueeze(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  auto axes = axesArg(ctx, "axes", 1, 13);
  if (!in || !axes) {
    ctx.setOutputType(0, Type::tensor(elem));
    return;
  }
  auto rank = static_cast<int64_t>(in->size() + axes->size());
  std::vector<bool> ones(static_cast<size_t>(rank), false);
  for (int64_t a : *axes) {
    auto n = normAxis(a, rank);
    if (!n) return ctx.warn("axis out of range");
    ones[*n] = true;
  }
  std::vector<Dim> out;
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(ones[i] ? Dim::known(1) : (*in)[j++]);
  ctx.setOutput(0, elem, out);
  if (const ShapeValue* v = ctx.inputValue(0)) ctx.setOutputValue(0, *v);
}

void transpose(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  auto perm = ctx.attrInts("perm");
  if (perm && perm->size() != in->size()) return ctx.warn("perm does not match the input's rank");
  std::vector<Dim> out;
  for (size_t i = 0; i < in->size(); ++i) {
    int64_t p = perm ? (*perm)[i] : static_cast<int64_t>(in->size() - 1 - i);
    auto n = normAxis(p, static_cast<int64_t>(in->size()));
    if (!n) return ctx.warn("bad perm");
    out.push_back((*in)[*n]);
  }
  ctx.setOutput(0, elem, out);
}

void concat(InferenceContext& ctx) {
  DataType elem = DataType::kUndefined;
  std::optional<std::vector<Dim>> out;
  bool rank_known = true;
  int64_t axis = ctx.attrInt("axis", 0);
  std::optional<int64_t> norm;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (elem == DataType::kUndefined) elem = elemOr(ctx, i);
    auto s = ctx.inputShape(i);
    if (!s) {
      rank_known = false;
      continue;
    }
    if (!norm) norm = normAxis(axis, static_cast<int64_t>(s->size()));
    if (!norm) return ctx.warn("axis out of range");
    if (!out) {
      out = s;
      continue;
    }
    if (s->size() != out->size()) return ctx.warn("inputs differ in rank");
    for (size_t d = 0; d < s->size(); ++d) {
      if (static_cast<int64_t>(d) == *norm) {
        (*out)[d] = dimAdd((*out)[d], (*s)[d]);
      } else if ((*out)[d].isUnknown() || (!(*out)[d].isKnown() && (*s)[d].isKnown())) {
        (*out)[d] = (*s)[d];
      }
    }
  }
  if (out && !rank_known) (*out)[*norm] = Dim::unknown();
  ctx.setOutput(0, elem, out);
  // Values: concatenation of known 1-D values.
  ShapeValue value;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const ShapeValue* v = ctx.inputValue(i);
    if (v == nullptr) return;
    value.insert(value.end(), v->begin(), v->end());
  }
  ctx.setOutputValue(0, std::move(value));
}

void split(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  size_t n = ctx.numOutputs();
  if (!in) {
    for (size_t i = 0; i < n; ++i) ctx.setOutputType(i, Type::tensor(elem));
    return;
  }
  auto axis = normAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(in->size()));
  if (!axis) return ctx.warn("axis out of range");
  std::optional<std::vector<int64_t>> sizes =
      ctx.opset() < 13 ? ctx.attrInts("split")
                       : (ctx.hasInput(1) ? ctx.inputInts(1) : std::nullopt);
  if (ctx.opset() < 13 && !sizes && ctx.hasInput(1))
    sizes = ctx.inputInts(1);  // Split-2 input form
  bool explicit_sizes =
      ctx.opset() < 13 ? ctx.attr("split") != nullptr || ctx.hasInput(1) : ctx.hasInput(1);
  for (size_t i = 0; i < n; ++i) {
    std::vector<Dim> out = *in;
    const Dim& d = (*in)[*axis];
    if (sizes && sizes->size() == n) {
      out[*axis] = Dim::known((*sizes)[i]);
    } else if (explicit_sizes) {
      out[*axis] = Dim::unknown();
    } else if (d.isKnown()) {
      // Equal parts; with num_outputs (opset 18) the last part takes the remainder.
      int64_t part = (d.value + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
      int64_t size = i + 1 < n ? part : d.value - part * static_cast<int64_t>(n - 1);
      if (d.value % static_cast<int64_t>(n) == 0) size = d.value / static_cast<int64_t>(n);
      out[*axis] = Dim::known(size);
    } else {
      out[*axis] = dimFloorDiv(d, Dim::known(static_cast<int64_t>(n)));
      if (ctx.opset() >= 18 && ctx.attr("num_outputs") != nullptr) out[*axis] = Dim::unknown();
    }
    ctx.setOutput(i, elem, out);
  }
}

/// One axis of a Slice: the output extent given the dim and constant parameters.
Dim sliceDim(const Dim& d, int64_t start, int64_t end, int64_t step) {
  if (d.isKnown()) {
    int64_t n = d.value;
    auto clampTo = [&](int64_t x, int64_t lo, int64_t hi) { return std::clamp(x, lo, hi); };
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (step > 0) {
      start = clampTo(start, 0, n);
      end = clampTo(end, 0, n);
      return Dim::known(std::max<int64_t>(0, (end - start + step - 1) / step));
    }
    start = clampTo(start, 0, n - 1);
    end = clampTo(end, -1, n - 1);
    return Dim::known(std::max<int64_t>(0, (start - end - step - 1) / -step));
  }
  if (step != 1) return Dim::unknown();
  // A symbolic dim: exact when the slice runs to the end from a constant offset.
  if (end >= (int64_t{1} << 31) && start >= 0) return dimSub(d, Dim::known(start));
  if (end >= (int64_t{1} << 31) && start < 0) return Dim::known(-start);  // assumes d >= -start
  if (start >= 0 && end >= 0) return Dim::unknown();  // min(end, d) - start: not kept symbolic
  return Dim::unknown();
}

void slice(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attrInts("starts");
    ends = ctx.attrInts("ends");
    axes = ctx.attrInts("axes");
  } else {
    starts = ctx.inputInts(1);
    ends = ctx.inputInts(2);
    if (ctx.hasInput(3)) axes = ctx.inputInts(3);
    if (ctx.hasInput(4)) steps = ctx.inputInts(4);
    if ((ctx.hasInput(3) && !axes) || (ctx.hasInput(4) && !steps)) starts.reset();
  }
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  auto rank = static_cast<int64_t>(in->size());
  std::vector<Dim> out = *in;
  auto unit_steps = [&] {
    if (!ctx.hasInput(4)) return true;
    auto st = ctx.inputInts(4);
    return st && std::all_of(st->begin(), st->end(), [](int64_t x) { return x == 1; });
  };
  if ((!starts || !ends) && ctx.opset() >= 10 && axes && unit_steps()) {
    // Symbolic ends from a Shape chain: x[0:E] along an axis has min(E, d) elements.
    const ShapeValue* sv = ctx.inputValue(1);
    const ShapeValue* ev = ctx.inputValue(2);
    if (sv != nullptr && ev != nullptr && sv->size() == axes->size() &&
        ev->size() == axes->size()) {
      std::vector<Dim> sliced = *in;
      bool ok = true;
      for (size_t i = 0; i < axes->size() && ok; ++i) {
        auto n = normAxis((*axes)[i], rank);
        const auto& s0 = (*sv)[i];
        const auto& e0 = (*ev)[i];
        auto d = n ? (*in)[*n].toExpr() : std::nullopt;
        ok = n && s0 && e0 && d && s0->constantValue() == 0 && e0->isNonNegative();
        if (ok) sliced[*n] = Dim::fromExpr(SymExpr::min(*e0, *d));
      }
      if (ok) return ctx.setOutput(0, elem, sliced);
    }
  }
  if (!starts || !ends || starts->size() != ends->size()) {
    // Unknown parameters: the rank is kept; the sliced axes (all, if unknown) lose their size.
    if (axes) {
      for (int64_t a : *axes) {
        if (auto n = normAxis(a, rank)) out[*n] = Dim::unknown();
      }
    } else {
      for (Dim& d : out) d = Dim::unknown();
    }
    return ctx.setOutput(0, elem, out);
  }
  for (size_t i = 0; i < starts->size(); ++i) {
    int64_t axis = axes ? (*axes)[i] : static_cast<int64_t>(i);
    auto n = normAxis(axis, rank);
    int64_t step = steps ? (*steps)[i] : 1;
    if (!n || step == 0) return ctx.warn("bad axis or zero step");
    out[*n] = sliceDim((*in)[*n], (*starts)[i], (*ends)[i], step);
  }
  ctx.setOutput(0, elem, out);
  // Values: slicing a known 1-D value.
  const ShapeValue* v = ctx.inputValue(0);
  if (v == nullptr || rank != 1 || starts->size() != 1) return;
  auto len = static_cast<int64_t>(v->size());
  int64_t step = steps ? (*steps)[0] : 1;
  int64_t s = (*starts)[0], e = (*ends)[0];
  if (s < 0) s += len;
  if (e < 0) e += len;
  ShapeValue sliced;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, len);
    e = std::clamp<int64_t>(e, 0, len);
    for (int64_t i = s; i < e; i += step) sliced.push_back((*v)[i]);
  } else {
    s = std::clamp<int64_t>(s, 0, len - 1);
    e = std::clamp<int64_t>(e, -1, len - 1);
    for (int64_t i = s; i > e; i += step) sliced.push_back((*v)[i]);
  }
  ctx.setOutputValue(0, std::move(sliced));
}

void gather(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto data = ctx.inputShape(0);
  auto idx = ctx.inputShape(1);
  if (!data || !idx) return ctx.setOutputType(0, Type::tensor(elem));
  auto axis = normAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(data->size()));
  if (!axis) return ctx.warn("axis out of range");
  std::vector<Dim> out(data->begin(), data->begin() + *axis);
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + *axis + 1, data->end());
  ctx.setOutput(0, elem, out);
  const ShapeValue* v = ctx.inputValue(0);
  auto indices = ctx.inputInts(1);
  if (v == nullptr || !indices || data->size() != 1) return;
  ShapeValue picked;
  for (int64_t i : *indices) {
    if (i < 0) i += static_cast<int64_t>(v->size());
    if (i < 0 || i >= static_cast<int64_t>(v->size())) return;
    picked.push_back((*v)[i]);
  }
  ctx.setOutputValue(0, std::move(picked));
}

void gatherElements(InferenceContext& ctx) {
  ctx.setOutput(0, elemOr(ctx, 0), ctx.inputShape(1));
}

void gatherND(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto data = ctx.inputShape(0);
  auto idx = ctx.inputShape(1);
  int64_t b = ctx.attrInt("batch_dims", 0);
  if (!data || !idx || idx->empty() || !idx->back().isKnown()) {
    return ctx.setOutputType(0, Type::tensor(elem));
  }
  int64_t last = idx->back().value;
  std::vector<Dim> out(idx->begin(), idx->end() - 1);
  if (b + last > static_cast<int64_t>(data->size())) return ctx.warn("indices too deep");
  out.insert(out.end(), data->begin() + b + last, data->end());
  ctx.setOutput(0, elem, out);
}

void expand(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  const ShapeValue* target = ctx.inputValue(1);
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  if (target == nullptr) {
    auto ts = ctx.inputShape(1);
    if (ts && ts->size() == 1 && (*ts)[0].isKnown()) {
      size_t rank = std::max(in->size(), static_cast<size_t>((*ts)[0].value));
      return ctx.setOutput(0, elem, std::vector<Dim>(rank, Dim::unknown()));
    }
    return ctx.setOutputType(0, Type::tensor(elem));
  }
  std::vector<Dim> shape;
  for (const auto& e : *target) shape.push_back(dimOf(e));
  auto out = broadcastShapes(*in, shape);
  if (!out) return ctx.warn("shape does not broadcast");
  ctx.setOutput(0, elem, out);
  // Values: a scalar or one-element value broadcast to a known length.
  const ShapeValue* v = ctx.inputValue(0);
  if (v != nullptr && v->size() == 1 && out->size() == 1 && (*out)[0].isKnown() &&
      (*out)[0].value <= 64) {
    ctx.setOutputValue(0, ShapeValue(static_cast<size_t>((*out)[0].value), (*v)[0]));
  }
}

void tile(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  const ShapeValue* reps = ctx.inputValue(1);
  std::vector<Dim> out = *in;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = reps != nullptr && reps->size() == out.size() ? dimMul(out[i], dimOf((*reps)[i]))
                                                           : Dim::unknown();
  }
  ctx.setOutput(0, elem, out);
}

void pad(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  std::optional<std::vector<int64_t>> pads =
      ctx.opset() < 11 ? (ctx.attr("pads") ? ctx.attrInts("pads") : ctx.attrInts("paddings"))
                       : ctx.inputInts(1);
  auto rank = static_cast<int64_t>(in->size());
  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.hasInput(3)) {
    auto a = ctx.inputInts(3);
    if (!a)
      pads.reset();
    else
      for (int64_t x : *a) {
        auto n = normAxis(x, rank);
        if (!n) return ctx.warn("axis out of range");
        axes.push_back(*n);
      }
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  std::vector<Dim> out = *in;
  if (!pads || pads->size() != 2 * axes.size()) {
    for (int64_t a : axes) out[a] = Dim::unknown();
    return ctx.setOutput(0, elem, out);
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    out[axes[i]] = dimAdd(out[axes[i]], Dim::known((*pads)[i] + (*pads)[i + axes.size()]));
  }
  ctx.setOutput(0, elem, out);
}

void range(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  const Tensor* s = ctx.inputConstant(0);
  const Tensor* l = ctx.inputConstant(1);
  const Tensor* d = ctx.inputConstant(2);
  auto scalar = [](const Tensor* t) -> std::optional<double> {
    if (t == nullptr) return std::nullopt;
    auto ints = tensorInts(*t);
    if (ints.size() == 1) return static_cast<double>(ints[0]);
    if (t->dtype() == DataType::kFloat && t->byteSize() == 4) {
      float f;
      std::memcpy(&f, t->data(), 4);
      return f;
    }
    if (t->dtype() == DataType::kDouble && t->byteSize() == 8) {
      double f;
      std::memcpy(&f, t->data(), 8);
      return f;
    }
    return std::nullopt;
  };
  auto sv = ctx.inputValue(0), lv = ctx.inputValue(1), dv = ctx.inputValue(2);
  auto start = scalar(s), limit = scalar(l), delta = scalar(d);
  if (start && limit && delta && *delta != 0) {
    auto n = static_cast<int64_t>(std::max(0.0, std::ceil((*limit - *start) / *delta)));
    ctx.setOutput(0, elem, std::vector<Dim>{Dim::known(n)});
    if (n <= 64 && (elem == DataType::kInt64 || elem == DataType::kInt32)) {
      ShapeValue v;
      for (int64_t i = 0; i < n; ++i)
        v.push_back(SymExpr::constant(static_cast<int64_t>(*start + i * *delta)));
      ctx.setOutputValue(0, std::move(v));
    }
    return;
  }
  // Symbolic: Range(0, N, 1) has N elements.
  if (sv && lv && dv && sv->size() == 1 && lv->size() == 1 && dv->size() == 1 && (*sv)[0] &&
      (*lv)[0] && (*dv)[0] && (*dv)[0]->constantValue() == 1) {
    return ctx.setOutput(
        0, elem,
        std::vector<Dim>{Dim::fromExpr(SymExpr::max(*(*lv)[0] - *(*sv)[0], SymExpr::constant(0)))});
  }
  ctx.setOutput(0, elem, std::vector<Dim>{ctx.freshDim()});
}

void constantOfShape(InferenceContext& ctx) {
  DataType elem = DataType::kFloat;
  const Attribute* value = ctx.attr("value");
  if (value != nullptr && value->tensors.size() == 1) elem = value->tensors[0].dtype();
  const ShapeValue* target = ctx.inputValue(0);
  if (target != nullptr) {
    std::vector<Dim> dims;
    for (const auto& e : *target) dims.push_back(dimOf(e));
    ctx.setOutput(0, elem, dims);
    // A short integer fill: its value is known too.
    auto n = dims.size() == 1 && dims[0].isKnown() ? dims[0].value : -1;
    if (n >= 0 && n <= 64 && value != nullptr && value->tensors.size() == 1) {
      auto fill = tensorInts(value->tensors[0]);
      if (fill.size() == 1)
        ctx.setOutputValue(0, ShapeValue(static_cast<size_t>(n), SymExpr::constant(fill[0])));
    }
    return;
  }
  auto ts = ctx.inputShape(0);
  if (ts && ts->size() == 1 && (*ts)[0].isKnown()) {
    return ctx.setOutput(0, elem,
                         std::vector<Dim>(static_cast<size_t>((*ts)[0].value), Dim::unknown()));
  }
  ctx.setOutputType(0, Type::tensor(elem));
}

void nonZero(InferenceContext& ctx) {
  auto rank = ctx.inputRank(0);
  ctx.setOutput(0, DataType::kInt64,
                std::vector<Dim>{rank ? Dim::known(*rank) : Dim::unknown(), ctx.freshDim()});
}

void topK(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  if (!in) {
    ctx.setOutputType(0, Type::tensor(elem));
    ctx.setOutputType(1, Type::tensor(DataType::kInt64));
    return;
  }
  auto axis = normAxis(ctx.attrInt("axis", -1), static_cast<int64_t>(in->size()));
  if (!axis) return ctx.warn("axis out of range");
  std::vector<Dim> out = *in;
  if (ctx.opset() < 10) {
    out[*axis] = Dim::known(ctx.attrInt("k", 0));
  } else {
    const ShapeValue* k = ctx.inputValue(1);
    out[*axis] =
        k != nullptr && k->size() == 1 && (*k)[0] ? Dim::fromExpr(*(*k)[0]) : ctx.freshDim();
  }
  ctx.setOutput(0, elem, out);
  ctx.setOutput(1, DataType::kInt64, out);
}

void unique(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  const Attribute* axis_attr = ctx.attr("axis");
  Dim n = ctx.freshDim();
  if (axis_attr == nullptr || !in) {
    ctx.setOutput(0, elem, std::vector<Dim>{n});
  } else {
    auto axis = normAxis(axis_attr->i, static_cast<int64_t>(in->size()));
    if (!axis) return ctx.warn("axis out of range");
    std::vector<Dim> out = *in;
    out[*axis] = n;
    ctx.setOutput(0, elem, out);
  }
  ctx.setOutput(1, DataType::kInt64, std::vector<Dim>{n});
  if (ctx.numOutputs() > 2) {
    Dim total =
        in ? (axis_attr
                  ? (*in)[normAxis(axis_attr->i, static_cast<int64_t>(in->size())).value_or(0)]
                  : dimProduct(*in, 0, in->size()))
           : Dim::unknown();
    ctx.setOutput(2, DataType::kInt64, std::vector<Dim>{total});
  }
  ctx.setOutput(3, DataType::kInt64, std::vector<Dim>{n});
}

void depthSpace(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  if (!in || in->size() != 4) return ctx.setOutputType(0, Type::tensor(elem));
  Dim b = Dim::known(ctx.attrInt("blocksize", 1));
  Dim b2 = dimMul(b, b);
  std::vector<Dim> out = *in;
  if (ctx.node().opType() == "DepthToSpace") {
    out[1] = dimFloorDiv((*in)[1], b2);
    out[2] = dimMul((*in)[2], b);
    out[3] = dimMul((*in)[3], b);
  } else {
    out[1] = dimMul((*in)[1], b2);
    out[2] = dimFloorDiv((*in)[2], b);
    out[3] = dimFloorDiv((*in)[3], b);
  }
  ctx.setOutput(0, elem, out);
}

void oneHot(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 2);
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  auto depth = ctx.inputValue(1);
  Dim d = depth != nullptr && depth->size() == 1 ? dimOf((*depth)[0]) : Dim::unknown();
  if (d.isUnknown()) {
    if (const Tensor* t = ctx.inputConstant(1); t != nullptr && t->numElements() == 1) {
      if (t->dtype() == DataType::kFloat && t->byteSize() == 4) {
        float f;
        std::memcpy(&f, t->data(), 4);
        d = Dim::known(static_cast<int64_t>(f));
      }
    }
  }
  auto rank = static_cast<int64_t>(in->size()) + 1;
  auto axis = normAxis(ctx.attrInt("axis", -1), rank);
  if (!axis) return ctx.warn("axis out of range");
  std::vector<Dim> out = *in;
  out.insert(out.begin() + *axis, d);
  ctx.setOutput(0, elem, out);
}

void resize(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  auto rank = static_cast<int64_t>(in->size());
  std::vector<Dim> out(in->size(), Dim::unknown());
  // sizes (opset 11+: input 3) or scales (input 2; Upsample and Resize-10: input 1).
  bool is_upsample = ctx.node().opType() == "Upsample";
  size_t scales_input = (is_upsample || ctx.opset() < 11) ? 1 : 2;
  std::vector<int64_t> axes;
  if (auto a = ctx.attrInts("axes")) {
    for (int64_t x : *a) axes.push_back(normAxis(x, rank).value_or(0));
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (!is_upsample && ctx.opset() >= 11 && ctx.hasInput(3)) {
    if (auto sizes = ctx.inputInts(3); sizes && sizes->size() == axes.size()) {
      out = *in;
      for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = Dim::known((*sizes)[i]);
      return ctx.setOutput(0, elem, out);
    }
    return ctx.setOutput(0, elem, out);
  }
  const Tensor* scales = ctx.inputConstant(scales_input);
  std::vector<float> sc;
  if (scales != nullptr && scales->dtype() == DataType::kFloat) {
    sc.resize(scales->byteSize() / 4);
    std::memcpy(sc.data(), scales->data(), sc.size() * 4);
  } else if (is_upsample && ctx.opset() < 9) {
    auto a = ctx.attr("scales");
    if (a != nullptr) sc = a->floats;
  }
  if (sc.size() != axes.size()) return ctx.setOutput(0, elem, out);
  out = *in;
  for (size_t i = 0; i < axes.size(); ++i) {
    const Dim& d = (*in)[axes[i]];
    if (d.isKnown()) {
      out[axes[i]] =
          Dim::known(static_cast<int64_t>(std::floor(static_cast<double>(d.value) * sc[i])));
    } else if (sc[i] == 1.0f) {
      out[axes[i]] = d;
    } else if (sc[i] == std::floor(sc[i])) {
      out[axes[i]] = dimMul(d, Dim::known(static_cast<int64_t>(sc[i])));
    } else {
      out[axes[i]] = Dim::unknown();
    }
  }
  ctx.setOutput(0, elem, out);
}

void eyeLike(InferenceContext& ctx) {
  const Attribute* dtype = ctx.attr("dtype");
  ctx.setOutput(0, dtype != nullptr ? static_cast<DataType>(dtype->i) : elemOr(ctx, 0),
                ctx.inputShape(0));
}

void compress(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  const Attribute* axis_attr = ctx.attr("axis");
  if (axis_attr == nullptr || !in) return ctx.setOutput(0, elem, std::vector<Dim>{ctx.freshDim()});
  auto axis = normAxis(axis_attr->i, static_cast<int64_t>(in->size()));
  if (!axis) return ctx.warn("axis out of range");
  std::vector<Dim> out = *in;
  out[*axis] = ctx.freshDim();
  ctx.setOutput(0, elem, out);
}

}  // namespace

void registerShapeOps(std::vector<OpInference>& t) {
  t.push_back({"", "Constant", 1, &constant});
  t.push_back({"", "Shape", 1, &shape});
  t.push_back({"", "Size", 1, &size});
  t.push_back({"", "Reshape", 1, &reshape});
  t.push_back({"", "Flatten", 1, &flatten});
  t.push_back({"", "Squeeze", 1, &squeeze});
  t.push_back({"", "Unsqueeze", 1, &unsqueeze});
  t.push_back({"", "Transpose", 1, &transpose});
  t.push_back({"", "Concat", 1, &concat});
  t.push_back({"", "Split", 1, &split});
  t.push_back({"", "Slice", 1, &slice});
  t.push_back({"", "Gather", 1, &gather});
  t.push_back({"", "GatherElements", 1, &gatherElements});
  t.push_back({"", "GatherND", 1, &gatherND});
  t.push_back({"", "Expand", 1, &expand});
  t.push_back({"", "Tile", 1, &tile});
  t.push_back({"", "Pad", 1, &pad});
  t.push_back({"", "Range", 1, &range});
  t.push_back({"", "ConstantOfShape", 1, &constantOfShape});
  t.push_back({"", "NonZero", 1, &nonZero});
  t.push_back({"", "TopK", 1, &topK});
  t.push_back({"", "Unique", 1, &unique});
  t.push_back({"", "DepthToSpace", 1, &depthSpace});
  t.push_back({"", "SpaceToDepth", 1, &depthSpace});
  t.push_back({"", "OneHot", 1, &oneHot});
  t.push_back({"", "Resize", 1, &resize});
  t.push_back({"", "Upsample", 1, &resize});
  t.push_back({"", "EyeLike", 1, &eyeLike});
  t.push_back({"", "Compress", 1, &compress});
}

}  // namespace onnxopt::ir::detail
