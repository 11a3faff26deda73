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

constexpr int64_t kMinI64 = std::numeric_limits<int64_t>::min();

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
    if (auto len = infer::shapeTensorLength(ctx, 1)) {
      ctx.setOutput(0, elem, std::vector<Dim>(*len, Dim::unknown()));
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
    } else if (c && *c == -1 && minus_one < 0) {
      minus_one = static_cast<int>(i);
      out.push_back(Dim::unknown());
    } else if (c && *c < 0) {
      ctx.warn("the target shape has a second -1 or a negative size");
      return ctx.setOutput(0, elem, std::vector<Dim>(target->size(), Dim::unknown()));
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
    auto norm = normalizeAxes(*axes, rank);
    if (!norm) {
      ctx.warn("axes out of range or repeated");
      return ctx.setOutputType(0, Type::tensor(elem));
    }
    for (int64_t n : *norm) {
      const Dim& d = (*in)[static_cast<size_t>(n)];
      if (d.isKnown() && d.value != 1) {
        ctx.warn("squeezed axis is not of size 1");
        return ctx.setOutputType(0, Type::tensor(elem));
      }
      drop[static_cast<size_t>(n)] = true;
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
  auto norm = normalizeAxes(*axes, rank);
  if (!norm) {
    // A repeated axis would leave fewer new axes than the output rank counts on.
    ctx.warn("axes out of range or repeated");
    return ctx.setOutputType(0, Type::tensor(elem));
  }
  std::vector<bool> ones(static_cast<size_t>(rank), false);
  for (int64_t n : *norm) ones[static_cast<size_t>(n)] = true;
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
  std::vector<int64_t> order;
  for (size_t i = 0; i < in->size(); ++i) order.push_back(static_cast<int64_t>(in->size() - 1 - i));
  if (perm) {
    auto norm = normalizeAxes(*perm, static_cast<int64_t>(in->size()));
    if (perm->size() != in->size() || !norm) {
      ctx.warn("perm is not a permutation of the input's axes");
      return ctx.setOutputType(0, Type::tensor(elem));
    }
    order = *norm;
  }
  std::vector<Dim> out;
  for (int64_t p : order) out.push_back((*in)[static_cast<size_t>(p)]);
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
    if (!norm) norm = normalizeAxis(axis, static_cast<int64_t>(s->size()));
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
  auto axis = normalizeAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(in->size()));
  if (!axis) return ctx.warn("axis out of range");
  std::optional<std::vector<int64_t>> sizes =
      ctx.opset() < 13 ? ctx.attrInts("split")
                       : (ctx.hasInput(1) ? ctx.inputInts(1) : std::nullopt);
  if (ctx.opset() < 13 && !sizes && ctx.hasInput(1))
    sizes = ctx.inputInts(1);  // Split-2 input form
  bool explicit_sizes =
      ctx.opset() < 13 ? ctx.attr("split") != nullptr || ctx.hasInput(1) : ctx.hasInput(1);
  if (n == 0) return;
  const Dim& d = (*in)[*axis];
  if (sizes) {
    // Explicit sizes must be non-negative and add up to the dim (when it is known).
    int64_t total = 0;
    bool ok = sizes->size() == n;
    for (int64_t x : *sizes) {
      auto t = infer::addChecked(total, x);
      ok = ok && x >= 0 && t;
      total = t.value_or(0);
    }
    if (!ok || (d.isKnown() && total != d.value)) {
      ctx.warn("split sizes do not match the axis");
      sizes.reset();
    }
  }
  auto parts = static_cast<int64_t>(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<Dim> out = *in;
    if (sizes) {
      out[*axis] = Dim::known((*sizes)[i]);
    } else if (explicit_sizes) {
      out[*axis] = Dim::unknown();
    } else if (d.isKnown()) {
      // Equal parts; with num_outputs (opset 18) the last part takes the remainder (negative,
      // so unknown, when the parts do not fit: 5 into 4 parts of 2).
      int64_t part = d.value / parts + (d.value % parts != 0 ? 1 : 0);
      auto used = infer::mulChecked(part, parts - 1);
      int64_t size = i + 1 < n ? part : (used ? d.value - *used : -1);
      if (d.value % parts == 0) size = d.value / parts;
      out[*axis] = Dim::known(size);
    } else {
      out[*axis] = dimFloorDiv(d, Dim::known(static_cast<int64_t>(n)));
      if (ctx.opset() >= 18 && ctx.attr("num_outputs") != nullptr) out[*axis] = Dim::unknown();
    }
    ctx.setOutput(i, elem, out);
  }
}

/// Beyond any dim: a tensor with 2^62 elements along one axis cannot exist, so an end at or past
/// this runs to the end of every axis, and a start at or before its negation starts at 0.
constexpr int64_t kBeyondAnyDim = int64_t{1} << 62;

/// One axis of a Slice: the output extent given the dim and constant parameters (step != 0).
/// A known dim clamps start and end as ONNX does. A symbolic dim d keeps the length only as an
/// expression of d that holds for every d (the clamping happens at run time): x[s:] with s >= 0
/// has max(d - s, 0) elements, x[-k:] has min(k, d), never a bare k.
Dim sliceDim(const Dim& d, int64_t start, int64_t end, int64_t step) {
  if (d.isKnown()) {
    int64_t n = d.value;  // start + n and end + n below cannot overflow: n >= 0 > start
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, n);
      end = std::clamp<int64_t>(end, 0, n);
      if (end <= start) return Dim::known(0);
      return Dim::known(static_cast<int64_t>(
          static_cast<uint64_t>(end - start - 1) / static_cast<uint64_t>(step) + 1));
    }
    if (n == 0) return Dim::known(0);
    start = std::clamp<int64_t>(start, 0, n - 1);
    end = std::clamp<int64_t>(end, -1, n - 1);
    if (start <= end) return Dim::known(0);
    uint64_t mag = 0 - static_cast<uint64_t>(step);  // |step|, also for INT64_MIN
    return Dim::known(static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / mag + 1));
  }
  auto x = d.toExpr();
  if (!x) return Dim::unknown();
  const SymExpr zero = SymExpr::constant(0);
  if (step < 0) {
    // Only the reversal x[-1::-k] / x[INT_MAX::-k] down to the beginning: ceil(d / k) elements.
    bool from_last = start == -1 || start >= kBeyondAnyDim;
    if (!from_last || end > -kBeyondAnyDim || step == std::numeric_limits<int64_t>::min()) {
      return Dim::unknown();
    }
    return Dim::fromExpr(SymExpr::ceilDiv(*x, SymExpr::constant(-step)));
  }
  if (start <= -kBeyondAnyDim) start = 0;
  if (end <= -kBeyondAnyDim) return Dim::known(0);
  bool to_end = end >= kBeyondAnyDim;
  std::optional<SymExpr> len;
  if (start >= 0 && to_end) {
    len = SymExpr::max(*x - SymExpr::constant(start), zero);
  } else if (start >= 0 && end >= 0) {
    if (end <= start) return Dim::known(0);
    len = SymExpr::max(SymExpr::min(*x, SymExpr::constant(end)) - SymExpr::constant(start), zero);
  } else if (start >= 0) {  // end < 0
    len = SymExpr::max(*x + SymExpr::constant(end) - SymExpr::constant(start), zero);
  } else if (to_end) {  // start < 0
    len = SymExpr::min(*x, SymExpr::constant(-start));
  } else if (end < 0) {  // both from the back
    if (end <= start) return Dim::known(0);
    len = SymExpr::max(SymExpr::min(SymExpr::constant(end - start), *x + SymExpr::constant(end)),
                       zero);
  } else {
    return Dim::unknown();  // from the back to a fixed index: two clamps against d
  }
  if (step != 1) len = SymExpr::ceilDiv(*len, SymExpr::constant(step));
  return Dim::fromExpr(*len);
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
    auto norm = normalizeAxes(*axes, rank);
    if (sv != nullptr && ev != nullptr && norm && sv->size() == norm->size() &&
        ev->size() == norm->size()) {
      std::vector<Dim> sliced = *in;
      bool ok = true;
      for (size_t i = 0; i < norm->size() && ok; ++i) {
        auto n = (*norm)[i];
        const auto& s0 = (*sv)[i];
        const auto& e0 = (*ev)[i];
        auto d = (*in)[n].toExpr();
        ok = s0 && e0 && d && s0->constantValue() == 0 && e0->isNonNegative();
        if (ok) sliced[n] = Dim::fromExpr(SymExpr::min(*e0, *d));
      }
      if (ok) return ctx.setOutput(0, elem, sliced);
    }
  }
  std::optional<std::vector<int64_t>> norm_axes;
  if (axes) {
    norm_axes = normalizeAxes(*axes, rank);
    if (!norm_axes) {
      ctx.warn("axes out of range or repeated");
      return ctx.setOutput(0, elem, std::vector<Dim>(in->size(), Dim::unknown()));
    }
  }
  size_t count = starts ? starts->size() : 0;
  bool valid = starts && ends && ends->size() == count &&
               (!norm_axes || norm_axes->size() == count) && (!steps || steps->size() == count) &&
               (norm_axes || static_cast<int64_t>(count) <= rank);
  if (!valid) {
    // Unknown (or inconsistent) parameters: the rank is kept; the sliced axes (all, if unknown)
    // lose their size.
    if (norm_axes) {
      for (int64_t a : *norm_axes) out[a] = Dim::unknown();
    } else {
      for (Dim& d : out) d = Dim::unknown();
    }
    return ctx.setOutput(0, elem, out);
  }
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = norm_axes ? (*norm_axes)[i] : static_cast<int64_t>(i);
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) {
      ctx.warn("zero step");
      return ctx.setOutput(0, elem, std::vector<Dim>(in->size(), Dim::unknown()));
    }
    out[axis] = sliceDim((*in)[axis], (*starts)[i], (*ends)[i], step);
  }
  ctx.setOutput(0, elem, out);
  // Values: slicing a known 1-D value (at most kMaxTrackedElements long).
  const ShapeValue* v = ctx.inputValue(0);
  if (v == nullptr || rank != 1 || count != 1) return;
  auto len = static_cast<int64_t>(v->size());
  int64_t step = steps ? (*steps)[0] : 1;
  int64_t s = (*starts)[0], e = (*ends)[0];
  if (s < 0) s += len;
  if (e < 0) e += len;
  ShapeValue sliced;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, len);
    e = std::clamp<int64_t>(e, 0, len);
    for (int64_t i = s; i<e; i = e - i> step ? i + step : e) sliced.push_back((*v)[i]);
  } else if (len > 0) {
    s = std::clamp<int64_t>(s, 0, len - 1);
    e = std::clamp<int64_t>(e, -1, len - 1);
    uint64_t mag = 0 - static_cast<uint64_t>(step);  // |step|, also for INT64_MIN
    for (int64_t i = s; i > e; i = static_cast<uint64_t>(i - e) > mag ? i + step : e) {
      sliced.push_back((*v)[i]);
    }
  }
  ctx.setOutputValue(0, std::move(sliced));
}

void gather(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto data = ctx.inputShape(0);
  auto idx = ctx.inputShape(1);
  if (!data || !idx) return ctx.setOutputType(0, Type::tensor(elem));
  auto axis = normalizeAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(data->size()));
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
  bool integral = elem == DataType::kInt64 || elem == DataType::kInt32 ||
                  elem == DataType::kInt16 || elem == DataType::kInt8;
  auto si = ctx.inputInts(0), li = ctx.inputInts(1), di = ctx.inputInts(2);
  if (integral && si && li && di && si->size() == 1 && li->size() == 1 && di->size() == 1) {
    // Exact integer count: ceil((limit - start) / delta), never overflowing or trapping.
    int64_t start = (*si)[0], limit = (*li)[0], delta = (*di)[0];
    int64_t span = 0;
    if (delta == 0) {
      ctx.warn("delta is zero");
      return ctx.setOutput(0, elem, std::vector<Dim>{Dim::unknown()});
    }
    if (__builtin_sub_overflow(limit, start, &span) || (delta == -1 && span == kMinI64)) {
      return ctx.setOutput(0, elem, std::vector<Dim>{Dim::unknown()});
    }
    int64_t n = span / delta + ((span % delta != 0 && (span < 0) == (delta < 0)) ? 1 : 0);
    n = std::max<int64_t>(n, 0);
    int64_t count = n;
    ctx.setOutput(0, elem, std::vector<Dim>{Dim::known(count)});
    if (count <= 64) {
      ShapeValue v;
      for (int64_t i = 0; i < count; ++i) {
        v.push_back(SymExpr::constant(start + i * delta));  // within [start, limit)
      }
      ctx.setOutputValue(0, std::move(v));
    }
    return;
  }
  auto start = scalar(s), limit = scalar(l), delta = scalar(d);
  if (!integral && start && limit && delta && *delta != 0) {
    auto n = infer::toInt64(std::max(0.0, std::ceil((*limit - *start) / *delta)));
    return ctx.setOutput(0, elem, std::vector<Dim>{infer::knownOrUnknown(n)});
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
  if (auto len = infer::shapeTensorLength(ctx, 0)) {
    return ctx.setOutput(0, elem, std::vector<Dim>(*len, Dim::unknown()));
  }
  ctx.setOutputType(0, Type::tensor(elem));
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
  t.push_back({"", "Range", 1, &range});
  t.push_back({"", "ConstantOfShape", 1, &constantOfShape});
}

}  // namespace onnxopt::ir::detail
