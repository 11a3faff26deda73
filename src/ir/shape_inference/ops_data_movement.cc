// Data-movement ops whose output shape comes from attributes or from the data, carrying no integer
// values: Expand, Tile, Pad, Resize, DepthToSpace/SpaceToDepth, OneHot, EyeLike, the gathers by
// index tensor (GatherElements, GatherND) and the data-dependent NonZero, TopK, Unique, Compress.
#include "helpers.h"

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
  auto data_rank = static_cast<int64_t>(data->size());
  if (b < 0 || b > data_rank || last > data_rank - b || b >= static_cast<int64_t>(idx->size())) {
    ctx.warn("batch_dims or indices too deep");
    return ctx.setOutputType(0, Type::tensor(elem));
  }
  std::vector<Dim> out(idx->begin(), idx->end() - 1);
  out.insert(out.end(), data->begin() + b + last, data->end());
  ctx.setOutput(0, elem, out);
}

void expand(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  const ShapeValue* target = ctx.inputValue(1);
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  if (target == nullptr) {
    if (auto len = infer::shapeTensorLength(ctx, 1)) {
      return ctx.setOutput(0, elem, std::vector<Dim>(std::max(in->size(), *len), Dim::unknown()));
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
  if (reps != nullptr && std::any_of(reps->begin(), reps->end(), [](const auto& r) {
        return r && r->constantValue().value_or(0) < 0;
      })) {
    ctx.warn("negative repeats");
    reps = nullptr;
  }
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
    auto norm = a ? normalizeAxes(*a, rank) : std::nullopt;
    if (a && !norm) {
      ctx.warn("axes out of range or repeated");
      return ctx.setOutput(0, elem, std::vector<Dim>(in->size(), Dim::unknown()));
    }
    if (!norm) {
      pads.reset();
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);  // which axes is unknown: all
    } else {
      axes = *norm;
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
    // Negative pads crop; a known dim cropped below zero is an invalid model.
    auto total = infer::addChecked((*pads)[i], (*pads)[i + axes.size()]);
    auto x = out[axes[i]].toExpr();
    Dim d = total && x ? Dim::fromExpr(*x + SymExpr::constant(*total)) : Dim::unknown();
    if (d.kind == Dim::Kind::kValue && d.value < 0) {
      ctx.warn("pads crop an axis below zero");
      d = Dim::unknown();
    }
    out[axes[i]] = d;
  }
  ctx.setOutput(0, elem, out);
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
  auto axis = normalizeAxis(ctx.attrInt("axis", -1), static_cast<int64_t>(in->size()));
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
    auto axis = normalizeAxis(axis_attr->i, static_cast<int64_t>(in->size()));
    if (!axis) return ctx.warn("axis out of range");
    std::vector<Dim> out = *in;
    out[*axis] = n;
    ctx.setOutput(0, elem, out);
  }
  ctx.setOutput(1, DataType::kInt64, std::vector<Dim>{n});
  if (ctx.numOutputs() > 2) {
    Dim total =
        in ? (axis_attr
                  ? (*in)[normalizeAxis(axis_attr->i, static_cast<int64_t>(in->size())).value_or(0)]
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
  if (ctx.attrInt("blocksize", 1) <= 0) {
    ctx.warn("blocksize must be positive");
    return ctx.setOutput(0, elem, std::vector<Dim>(4, Dim::unknown()));
  }
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
        d = infer::knownOrUnknown(infer::toInt64(f));
      }
    }
  }
  auto rank = static_cast<int64_t>(in->size()) + 1;
  auto axis = normalizeAxis(ctx.attrInt("axis", -1), rank);
  if (!axis) return ctx.warn("axis out of range");
  std::vector<Dim> out = *in;
  out.insert(out.begin() + *axis, d);
  ctx.setOutput(0, elem, out);
}

/// Resize output sizes from `sizes` under keep_aspect_ratio_policy (Resize-18): "stretch" takes
/// them as they are; "not_larger" / "not_smaller" scale every resized axis by the min / max of
/// sizes[i] / in[axes[i]] and round half up, which needs every resized input dim known.
std::optional<std::vector<Dim>> resizeBySizes(InferenceContext& ctx, const std::vector<Dim>& in,
                                              const std::vector<int64_t>& axes,
                                              const std::vector<int64_t>& sizes) {
  std::vector<Dim> out = in;
  std::string policy = ctx.opset() >= 18 ? ctx.attrString("keep_aspect_ratio_policy", "stretch")
                                         : std::string("stretch");
  if (std::any_of(sizes.begin(), sizes.end(), [](int64_t x) { return x < 0; })) {
    ctx.warn("negative sizes");
    return std::nullopt;
  }
  if (policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = Dim::known(sizes[i]);
    return out;
  }
  if (policy != "not_larger" && policy != "not_smaller") {
    ctx.warn("unknown keep_aspect_ratio_policy '" + policy + "'");
    return std::nullopt;
  }
  // As onnxruntime computes it: the scale in float, the size rounded half away from zero.
  bool not_larger = policy == "not_larger";
  float scale = not_larger ? std::numeric_limits<float>::max() : 0.0f;
  for (size_t i = 0; i < axes.size(); ++i) {
    const Dim& d = in[axes[i]];
    if (!d.isKnown() || d.value == 0) return std::nullopt;
    float s = static_cast<float>(sizes[i]) / static_cast<float>(d.value);
    scale = not_larger ? std::min(scale, s) : std::max(scale, s);
  }
  for (int64_t a : axes) {
    out[a] =
        infer::knownOrUnknown(infer::toInt64(std::round(scale * static_cast<float>(in[a].value))));
  }
  return out;
}

void resize(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  auto rank = static_cast<int64_t>(in->size());
  std::vector<Dim> unknown(in->size(), Dim::unknown());
  // sizes (opset 11+: input 3) or scales (input 2; Upsample and Resize-10: input 1).
  bool is_upsample = ctx.node().opType() == "Upsample";
  size_t scales_input = (is_upsample || ctx.opset() < 11) ? 1 : 2;
  std::vector<int64_t> axes;
  if (auto a = ctx.opset() >= 18 && !is_upsample ? ctx.attrInts("axes") : std::nullopt) {
    auto norm = normalizeAxes(*a, rank);
    if (!norm) {
      ctx.warn("axes out of range or repeated");
      return ctx.setOutput(0, elem, unknown);
    }
    axes = *norm;
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  // An empty sizes tensor stands for "absent" (exporters write one beside real scales).
  auto sizes =
      !is_upsample && ctx.opset() >= 11 && ctx.hasInput(3) ? ctx.inputInts(3) : std::nullopt;
  if (!is_upsample && ctx.opset() >= 11 && ctx.hasInput(3) && !(sizes && sizes->empty())) {
    if (!sizes || sizes->size() != axes.size()) return ctx.setOutput(0, elem, unknown);
    return ctx.setOutput(0, elem, resizeBySizes(ctx, *in, axes, *sizes).value_or(unknown));
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
  if (sc.size() != axes.size()) return ctx.setOutput(0, elem, unknown);
  std::vector<Dim> out = *in;
  bool disputed = false;
  for (size_t i = 0; i < axes.size(); ++i) {
    const Dim& d = (*in)[axes[i]];
    if (!(sc[i] > 0.0f) || !std::isfinite(sc[i])) {
      ctx.warn("scales must be positive");
      return ctx.setOutput(0, elem, unknown);
    }
    if (d.isKnown()) {
      // onnx multiplies in double and floors, onnxruntime multiplies in float and truncates: a
      // size they round differently (40 * 0.575f: 22 against 23) is disputed, not written.
      auto onnx = infer::toInt64(std::floor(static_cast<double>(d.value) * sc[i]));
      auto ort = infer::toInt64(sc[i] * static_cast<float>(d.value));
      disputed |= onnx != ort;
      out[axes[i]] = infer::knownOrUnknown(onnx == ort ? onnx : std::nullopt);
    } else if (sc[i] == 1.0f) {
      out[axes[i]] = d;
    } else if (sc[i] == std::floor(sc[i]) && sc[i] < 65536.0f) {
      out[axes[i]] = dimMul(d, Dim::known(static_cast<int64_t>(sc[i])));
    } else {
      out[axes[i]] = Dim::unknown();
    }
  }
  if (disputed) return ctx.setOutputDisputed(0, elem, out);
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
  auto axis = normalizeAxis(axis_attr->i, static_cast<int64_t>(in->size()));
  if (!axis) return ctx.warn("axis out of range");
  std::vector<Dim> out = *in;
  out[*axis] = ctx.freshDim();
  ctx.setOutput(0, elem, out);
}

}  // namespace

void registerDataMovementOps(std::vector<OpInference>& t) {
  t.push_back({"", "GatherElements", 1, &gatherElements});
  t.push_back({"", "GatherND", 1, &gatherND});
  t.push_back({"", "Expand", 1, &expand});
  t.push_back({"", "Tile", 1, &tile});
  t.push_back({"", "Pad", 1, &pad});
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
