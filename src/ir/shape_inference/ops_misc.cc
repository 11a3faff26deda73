// Reductions, ArgMax/ArgMin, control flow (If, Loop, Scan), generators and detection ops.
#include <set>

#include "helpers.h"

namespace onnxopt::ir::detail {
namespace {

using infer::axesArg;
using infer::elemOr;
using infer::mergeTypes;

void reduce(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  auto in = ctx.inputShape(0);
  // Axes moved from an attribute to an input: ReduceSum at 13, the other reductions at 18.
  int64_t since = ctx.node().opType() == "ReduceSum" ? 13 : 18;
  bool keepdims = ctx.attrInt("keepdims", 1) != 0;
  bool has_axes = ctx.opset() < since ? ctx.attr("axes") != nullptr : ctx.hasInput(1);
  auto axes = axesArg(ctx, "axes", 1, since);
  if (!in) return ctx.setOutputType(0, Type::tensor(elem));
  if (has_axes && !axes) {
    if (keepdims) return ctx.setOutput(0, elem, std::vector<Dim>(in->size(), Dim::unknown()));
    return ctx.setOutputType(0, Type::tensor(elem));
  }
  auto rank = static_cast<int64_t>(in->size());
  std::set<int64_t> reduced;
  if (!has_axes || axes->empty()) {
    if (ctx.attrInt("noop_with_empty_axes", 0) != 0) return ctx.setOutput(0, elem, in);
    for (int64_t i = 0; i < rank; ++i) reduced.insert(i);
  } else {
    for (int64_t a : *axes) {
      auto n = normalizeAxis(a, rank);
      if (!n) return ctx.warn("axis out of range");
      reduced.insert(*n);
    }
  }
  std::vector<Dim> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced.count(i))
      out.push_back((*in)[i]);
    else if (keepdims)
      out.push_back(Dim::known(1));
  }
  ctx.setOutput(0, elem, out);
}

void argReduce(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  if (!in) return ctx.setOutputType(0, Type::tensor(DataType::kInt64));
  auto axis = normalizeAxis(ctx.attrInt("axis", 0), static_cast<int64_t>(in->size()));
  if (!axis) return ctx.warn("axis out of range");
  std::vector<Dim> out = *in;
  if (ctx.attrInt("keepdims", 1) != 0) {
    out[*axis] = Dim::known(1);
  } else {
    out.erase(out.begin() + *axis);
  }
  ctx.setOutput(0, DataType::kInt64, out);
}

Graph* subgraph(InferenceContext& ctx, const char* name) {
  const Attribute* a = ctx.attr(name);
  return a != nullptr && a->graphs.size() == 1 ? a->graphs[0].get() : nullptr;
}

void ifOp(InferenceContext& ctx) {
  Graph* then_g = subgraph(ctx, "then_branch");
  Graph* else_g = subgraph(ctx, "else_branch");
  if (then_g == nullptr || else_g == nullptr) return;
  auto a = ctx.inferSubgraph(*then_g, {});
  auto b = ctx.inferSubgraph(*else_g, {});
  for (size_t i = 0; i < ctx.numOutputs() && i < a.size() && i < b.size(); ++i) {
    ctx.setOutputType(i, mergeTypes(a[i], b[i]));
  }
}

void loop(InferenceContext& ctx) {
  Graph* body = subgraph(ctx, "body");
  if (body == nullptr) return;
  std::vector<Type> in{Type::tensor(DataType::kInt64, std::vector<Dim>{}),
                       Type::tensor(DataType::kBool, std::vector<Dim>{})};
  size_t carried = ctx.numInputs() >= 2 ? ctx.numInputs() - 2 : 0;
  for (size_t i = 0; i < carried; ++i) {
    const Type* t = ctx.inputType(i + 2);
    in.push_back(t != nullptr ? *t : Type());
  }
  std::vector<std::pair<size_t, size_t>> feedback;  // body input -> body output
  for (size_t i = 0; i < carried; ++i) feedback.emplace_back(i + 2, i + 1);
  auto out = ctx.inferSubgraph(*body, in, feedback);
  for (size_t i = 0; i < ctx.numOutputs(); ++i) {
    size_t body_out = i + 1;  // the body's first output is the condition
    if (body_out >= out.size()) break;
    if (i < carried) {
      ctx.setOutputType(i, mergeTypes(in[i + 2], out[body_out]));
      continue;
    }
    // Scan outputs: one slice per iteration, stacked along a new first axis.
    const Type& slice = out[body_out];
    if (!slice.isTensor()) continue;
    Type t = Type::tensor(slice.elem_type);
    if (slice.shape) {
      std::vector<Dim> dims{Dim::unknown()};
      dims.insert(dims.end(), slice.shape->begin(), slice.shape->end());
      t.shape = dims;
    }
    ctx.setOutputType(i, t);
  }
}

void scan(InferenceContext& ctx) {
  Graph* body = subgraph(ctx, "body");
  if (body == nullptr || ctx.opset() < 9) return;  // Scan-8 has a batch axis: not inferred
  int64_t num_scan = ctx.attrInt("num_scan_inputs", 0);
  if (num_scan < 0 || static_cast<uint64_t>(num_scan) > ctx.numInputs()) {
    return ctx.warn("num_scan_inputs exceeds the inputs");
  }
  auto m = static_cast<size_t>(num_scan);
  size_t n_states = ctx.numInputs() - m;
  auto in_axes = ctx.attrInts("scan_input_axes").value_or(std::vector<int64_t>(m, 0));
  Dim seq = Dim::unknown();
  std::vector<Type> in;
  for (size_t i = 0; i < n_states; ++i) {
    const Type* t = ctx.inputType(i);
    in.push_back(t != nullptr ? *t : Type());
  }
  for (size_t j = 0; j < m; ++j) {
    auto s = ctx.inputShape(n_states + j);
    Type t = Type::tensor(elemOr(ctx, n_states + j));
    if (s && j < in_axes.size()) {
      if (auto axis = normalizeAxis(in_axes[j], static_cast<int64_t>(s->size()))) {
        if (seq.isUnknown()) seq = (*s)[*axis];
        std::vector<Dim> dims = *s;
        dims.erase(dims.begin() + *axis);
        t.shape = dims;
      }
    }
    in.push_back(t);
  }
  std::vector<std::pair<size_t, size_t>> feedback;  // the state variables
  for (size_t i = 0; i < n_states; ++i) feedback.emplace_back(i, i);
  auto out = ctx.inferSubgraph(*body, in, feedback);
  size_t k = out.size() > n_states ? out.size() - n_states : 0;
  auto out_axes = ctx.attrInts("scan_output_axes").value_or(std::vector<int64_t>(k, 0));
  for (size_t i = 0; i < ctx.numOutputs() && i < out.size(); ++i) {
    if (i < n_states) {
      ctx.setOutputType(i, mergeTypes(in[i], out[i]));
      continue;
    }
    const Type& slice = out[i];
    if (!slice.isTensor()) continue;
    Type t = Type::tensor(slice.elem_type);
    if (slice.shape && i - n_states < out_axes.size()) {
      auto rank = static_cast<int64_t>(slice.shape->size()) + 1;
      if (auto axis = normalizeAxis(out_axes[i - n_states], rank)) {
        std::vector<Dim> dims = *slice.shape;
        dims.insert(dims.begin() + *axis, seq);
        t.shape = dims;
      }
    }
    ctx.setOutputType(i, t);
  }
}

void randomWithShape(InferenceContext& ctx) {
  auto shape = ctx.attrInts("shape");
  DataType elem =
      static_cast<DataType>(ctx.attrInt("dtype", static_cast<int64_t>(DataType::kFloat)));
  if (!shape) return ctx.setOutputType(0, Type::tensor(elem));
  ctx.setOutput(0, elem, infer::knownDims(*shape));
}

void randomLike(InferenceContext& ctx) {
  const Attribute* dtype = ctx.attr("dtype");
  ctx.setOutput(0, dtype != nullptr ? static_cast<DataType>(dtype->i) : elemOr(ctx, 0),
                ctx.inputShape(0));
}

void multinomial(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  DataType elem =
      static_cast<DataType>(ctx.attrInt("dtype", static_cast<int64_t>(DataType::kInt32)));
  Dim batch = in && in->size() == 2 ? (*in)[0] : Dim::unknown();
  ctx.setOutput(0, elem, std::vector<Dim>{batch, Dim::known(ctx.attrInt("sample_size", 1))});
}

void nonMaxSuppression(InferenceContext& ctx) {
  ctx.setOutput(0, DataType::kInt64, std::vector<Dim>{ctx.freshDim(), Dim::known(3)});
}

void roiAlign(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  auto rois = ctx.inputShape(1);
  Dim c = x && x->size() == 4 ? (*x)[1] : Dim::unknown();
  Dim n = rois && rois->size() == 2 ? (*rois)[0] : Dim::unknown();
  ctx.setOutput(0, elemOr(ctx, 0),
                std::vector<Dim>{n, c, Dim::known(ctx.attrInt("output_height", 1)),
                                 Dim::known(ctx.attrInt("output_width", 1))});
}

void gridSample(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  auto grid = ctx.inputShape(1);
  if (!x || !grid || x->size() < 3 || grid->size() != x->size()) {
    return ctx.setOutputType(0, Type::tensor(elemOr(ctx, 0)));
  }
  std::vector<Dim> out{(*x)[0], (*x)[1]};
  out.insert(out.end(), grid->begin() + 1, grid->end() - 1);
  ctx.setOutput(0, elemOr(ctx, 0), out);
}

// --- sequences and optionals ---

Type elementOf(const Type* t) {
  if (t != nullptr && (t->kind == Type::Kind::kSequence || t->kind == Type::Kind::kOptional) &&
      t->element) {
    return *t->element;
  }
  return Type();
}

Type wrap(Type::Kind kind, const Type& element) {
  Type t;
  t.kind = kind;
  if (element.isKnown()) t.element = std::make_shared<Type>(element);
  return t;
}

void scalarOf(InferenceContext& ctx, DataType elem) {
  ctx.setOutput(0, elem, std::vector<Dim>{});
}
void sequenceLength(InferenceContext& ctx) {
  scalarOf(ctx, DataType::kInt64);
}
void optionalHasElement(InferenceContext& ctx) {
  scalarOf(ctx, DataType::kBool);
}

void sequenceAt(InferenceContext& ctx) {
  Type e = elementOf(ctx.inputType(0));
  if (e.isKnown()) ctx.setOutputType(0, e);
}

void sequenceConstruct(InferenceContext& ctx) {
  Type merged;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Type* t = ctx.inputType(i);
    if (t == nullptr) return ctx.setOutputType(0, wrap(Type::Kind::kSequence, Type()));
    merged = i == 0 ? *t : mergeTypes(merged, *t);
  }
  ctx.setOutputType(0, wrap(Type::Kind::kSequence, merged));
}

void sameAsFirst(InferenceContext& ctx) {
  if (const Type* t = ctx.inputType(0)) ctx.setOutputType(0, *t);
}

void sequenceEmpty(InferenceContext& ctx) {
  auto elem = static_cast<DataType>(ctx.attrInt("dtype", static_cast<int64_t>(DataType::kFloat)));
  ctx.setOutputType(0, wrap(Type::Kind::kSequence, Type::tensor(elem)));
}

void optionalGetElement(InferenceContext& ctx) {
  const Type* t = ctx.inputType(0);
  if (t == nullptr) return;
  ctx.setOutputType(0, t->kind == Type::Kind::kOptional ? elementOf(t) : *t);
}

void optionalOp(InferenceContext& ctx) {
  if (const Attribute* a = ctx.attr("type"); a != nullptr && a->types.size() == 1) {
    return ctx.setOutputType(0, wrap(Type::Kind::kOptional, a->types[0]));
  }
  if (const Type* t = ctx.inputType(0)) ctx.setOutputType(0, wrap(Type::Kind::kOptional, *t));
}

void concatFromSequence(InferenceContext& ctx) {
  Type e = elementOf(ctx.inputType(0));
  if (!e.isTensor()) return;
  Type out = Type::tensor(e.elem_type);
  if (e.shape) {
    size_t rank = e.shape->size() + (ctx.attrInt("new_axis", 0) != 0 ? 1 : 0);
    out.shape = std::vector<Dim>(rank, Dim::unknown());
  }
  ctx.setOutputType(0, out);
}

void splitToSequence(InferenceContext& ctx) {
  ctx.setOutputType(0, wrap(Type::Kind::kSequence, Type::tensor(elemOr(ctx, 0))));
}

// --- losses, windows, strings and other ops met in the corpus ---

void det(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  if (!in || in->size() < 2) return ctx.setOutputType(0, Type::tensor(elemOr(ctx, 0)));
  ctx.setOutput(0, elemOr(ctx, 0), std::vector<Dim>(in->begin(), in->end() - 2));
}

void boolSameShape(InferenceContext& ctx) {
  ctx.setOutput(0, DataType::kBool, ctx.inputShape(0));
}

void stringConcat(InferenceContext& ctx) {
  auto a = ctx.inputShape(0);
  auto b = ctx.inputShape(1);
  ctx.setOutput(0, DataType::kString, a && b ? broadcastShapes(*a, *b) : std::nullopt);
}

void loss(InferenceContext& ctx) {
  // NegativeLogLikelihoodLoss(input, target), SoftmaxCrossEntropyLoss(scores, labels).
  DataType elem = elemOr(ctx, 0);
  if (ctx.attrString("reduction", "mean") == "none") {
    ctx.setOutput(0, elem, ctx.inputShape(1));
  } else {
    ctx.setOutput(0, elem, std::vector<Dim>{});
  }
  if (ctx.numOutputs() > 1) ctx.setOutput(1, elem, ctx.inputShape(0));
}

void window(InferenceContext& ctx) {
  auto elem =
      static_cast<DataType>(ctx.attrInt("output_datatype", static_cast<int64_t>(DataType::kFloat)));
  const ShapeValue* size = ctx.inputValue(0);
  Dim n = size != nullptr && size->size() == 1 && (*size)[0] ? Dim::fromExpr(*(*size)[0])
                                                             : Dim::unknown();
  ctx.setOutput(0, elem, std::vector<Dim>{n});
}

void centerCropPad(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  auto target = ctx.inputInts(1);
  DataType elem = elemOr(ctx, 0);
  if (!in || !target) return ctx.setOutputType(0, Type::tensor(elem));
  std::vector<Dim> out = *in;
  auto rank = static_cast<int64_t>(in->size());
  std::vector<int64_t> axes;
  if (auto a = ctx.attrInts("axes")) {
    auto norm = normalizeAxes(*a, rank);
    if (!norm) {
      ctx.warn("axes out of range or repeated");
      return ctx.setOutputType(0, Type::tensor(elem));
    }
    axes = *norm;
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (axes.size() != target->size()) return ctx.setOutputType(0, Type::tensor(elem));
  for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = infer::knownOrUnknown((*target)[i]);
  ctx.setOutput(0, elem, out);
}

void affineGrid(InferenceContext& ctx) {
  auto size = ctx.inputValue(1);
  DataType elem = elemOr(ctx, 0);
  if (size == nullptr || (size->size() != 4 && size->size() != 5))
    return ctx.setOutputType(0, Type::tensor(elem));
  std::vector<Dim> out{infer::dimOf((*size)[0])};
  for (size_t i = 2; i < size->size(); ++i) out.push_back(infer::dimOf((*size)[i]));
  out.push_back(Dim::known(static_cast<int64_t>(size->size()) - 2));
  ctx.setOutput(0, elem, out);
}

void imageDecoder(InferenceContext& ctx) {
  int64_t channels = ctx.attrString("pixel_format", "RGB") == "Grayscale" ? 1 : 3;
  ctx.setOutput(0, DataType::kUint8,
                std::vector<Dim>{Dim::unknown(), Dim::unknown(), Dim::known(channels)});
}

void stringSplit(InferenceContext& ctx) {
  auto in = ctx.inputShape(0);
  if (!in) return;
  std::vector<Dim> out = *in;
  out.push_back(ctx.freshDim());
  ctx.setOutput(0, DataType::kString, out);
  ctx.setOutput(1, DataType::kInt64, in);
}

void bitCast(InferenceContext& ctx) {
  ctx.setOutput(0, static_cast<DataType>(ctx.attrInt("to", 0)), ctx.inputShape(0));
}

void maxUnpool(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  if (ctx.hasInput(2)) {
    const ShapeValue* target = ctx.inputValue(2);
    if (target == nullptr) return ctx.setOutputType(0, Type::tensor(elem));
    std::vector<Dim> out;
    for (const auto& e : *target) out.push_back(infer::dimOf(e));
    return ctx.setOutput(0, elem, out);
  }
  auto x = ctx.inputShape(0);
  auto kernel = ctx.attrInts("kernel_shape");
  if (!x || x->size() < 3 || !kernel || kernel->size() != x->size() - 2) {
    return ctx.setOutputType(0, Type::tensor(elem));
  }
  size_t spatial = x->size() - 2;
  auto strides = ctx.attrInts("strides").value_or(std::vector<int64_t>(spatial, 1));
  auto pads = ctx.attrInts("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  if (strides.size() != spatial || pads.size() != 2 * spatial) {
    ctx.warn("strides or pads do not match the kernel");
    return ctx.setOutput(0, elem, std::vector<Dim>(x->size(), Dim::unknown()));
  }
  auto c = [](int64_t v) { return SymExpr::constant(v); };
  std::vector<Dim> out{(*x)[0], (*x)[1]};
  for (size_t i = 0; i < spatial; ++i) {
    auto in = (*x)[i + 2].toExpr();
    out.push_back(in ? Dim::fromExpr(c(strides[i]) * (*in - c(1)) + c((*kernel)[i]) - c(pads[i]) -
                                     c(pads[i + spatial]))
                     : Dim::unknown());
  }
  ctx.setOutput(0, elem, out);
}

void col2im(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  auto image = ctx.inputInts(1);
  auto block = ctx.inputInts(2);
  DataType elem = elemOr(ctx, 0);
  if (!x || x->size() != 3 || !image || !block) return ctx.setOutputType(0, Type::tensor(elem));
  std::optional<int64_t> prod = 1;
  for (int64_t b : *block) prod = prod && b > 0 ? infer::mulChecked(*prod, b) : std::nullopt;
  std::vector<Dim> out{(*x)[0],
                       prod ? infer::dimFloorDiv((*x)[1], Dim::known(*prod)) : Dim::unknown()};
  for (int64_t d : *image) out.push_back(infer::knownOrUnknown(d));
  ctx.setOutput(0, elem, out);
}

void stringNormalizer(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  if (!x) return ctx.setOutputType(0, Type::tensor(DataType::kString));
  std::vector<Dim> out = *x;
  if (!out.empty()) out.back() = Dim::unknown();  // stop words may be removed
  ctx.setOutput(0, DataType::kString, out);
}

void tfIdf(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  auto indexes = ctx.attrInts("ngram_indexes");
  int64_t width = 0;
  if (indexes) {
    for (int64_t i : *indexes) width = std::max(width, infer::addChecked(i, 1).value_or(0));
  }
  Dim w = indexes ? Dim::known(width) : Dim::unknown();
  if (!x) return ctx.setOutputType(0, Type::tensor(DataType::kFloat));
  if (x->size() == 1) return ctx.setOutput(0, DataType::kFloat, std::vector<Dim>{w});
  ctx.setOutput(0, DataType::kFloat, std::vector<Dim>{(*x)[0], w});
}

void melWeightMatrix(InferenceContext& ctx) {
  auto elem =
      static_cast<DataType>(ctx.attrInt("output_datatype", static_cast<int64_t>(DataType::kFloat)));
  auto bins = ctx.inputInts(0);
  auto dft = ctx.inputInts(1);
  Dim rows =
      dft && dft->size() == 1 && (*dft)[0] >= 0 ? Dim::known((*dft)[0] / 2 + 1) : Dim::unknown();
  Dim cols = bins && bins->size() == 1 ? infer::knownOrUnknown((*bins)[0]) : Dim::unknown();
  ctx.setOutput(0, elem, std::vector<Dim>{rows, cols});
}

}  // namespace

void registerMiscOps(std::vector<OpInference>& t) {
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    t.push_back({"", op, 1, &reduce});
  }
  t.push_back({"", "ArgMax", 1, &argReduce});
  t.push_back({"", "ArgMin", 1, &argReduce});
  t.push_back({"", "If", 1, &ifOp});
  t.push_back({"", "Loop", 1, &loop});
  t.push_back({"", "Scan", 1, &scan});
  t.push_back({"", "RandomNormal", 1, &randomWithShape});
  t.push_back({"", "RandomUniform", 1, &randomWithShape});
  t.push_back({"", "RandomNormalLike", 1, &randomLike});
  t.push_back({"", "RandomUniformLike", 1, &randomLike});
  t.push_back({"", "Bernoulli", 1, &randomLike});
  t.push_back({"", "Multinomial", 1, &multinomial});
  t.push_back({"", "NonMaxSuppression", 1, &nonMaxSuppression});
  t.push_back({"", "RoiAlign", 1, &roiAlign});
  t.push_back({"", "GridSample", 1, &gridSample});
  t.push_back({"", "SequenceLength", 1, &sequenceLength});
  t.push_back({"", "OptionalHasElement", 1, &optionalHasElement});
  t.push_back({"", "SequenceAt", 1, &sequenceAt});
  t.push_back({"", "SequenceConstruct", 1, &sequenceConstruct});
  t.push_back({"", "SequenceInsert", 1, &sameAsFirst});
  t.push_back({"", "SequenceErase", 1, &sameAsFirst});
  t.push_back({"", "SequenceEmpty", 1, &sequenceEmpty});
  t.push_back({"", "OptionalGetElement", 1, &optionalGetElement});
  t.push_back({"", "Optional", 1, &optionalOp});
  t.push_back({"", "ConcatFromSequence", 1, &concatFromSequence});
  t.push_back({"", "SplitToSequence", 1, &splitToSequence});
  t.push_back({"", "Det", 1, &det});
  t.push_back({"", "RegexFullMatch", 1, &boolSameShape});
  t.push_back({"", "StringConcat", 1, &stringConcat});
  t.push_back({"", "NegativeLogLikelihoodLoss", 1, &loss});
  t.push_back({"", "SoftmaxCrossEntropyLoss", 1, &loss});
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    t.push_back({"", op, 1, &window});
  t.push_back({"", "CenterCropPad", 1, &centerCropPad});
  t.push_back({"", "AffineGrid", 1, &affineGrid});
  t.push_back({"", "ImageDecoder", 1, &imageDecoder});
  t.push_back({"", "StringSplit", 1, &stringSplit});
  t.push_back({"", "BitCast", 1, &bitCast});
  t.push_back({"", "MaxUnpool", 1, &maxUnpool});
  t.push_back({"", "Col2Im", 1, &col2im});
  t.push_back({"", "StringNormalizer", 1, &stringNormalizer});
  t.push_back({"", "TfIdfVectorizer", 1, &tfIdf});
  t.push_back({"", "MelWeightMatrix", 1, &melWeightMatrix});
}

}  // namespace onnxopt::ir::detail
