// fold-constants: constant folding and shape folding.
//
//   %y = Op(c1, ..., cn), every ci constant   ==>  initializer %y = ReferenceKernel[Op](c1, .., cn)
//   %v = Reshape|Flatten|Squeeze|Unsqueeze(c), or Slice(c) selecting one contiguous run of c
//                                             ==>  initializer %v viewing c's bytes (no copy)
//   %v = Concat(c1, ..., cn), axis k          ==>  initializer %v: for each index of the axes
//                                                   before k, the ci's slabs after it, in order
//                                                   (one copy, no kernel)
//   Shape chains over static and partly static shapes, and Reshape targets computed from them,
//   become constants: shape_folding.h has those rules.
//
// Guards: nondeterministic ops (Random*, Multinomial, Bernoulli, Dropout in training mode, seeded or
// not: pass::isNondeterministicNode, counted as skipped-random) and ops with subgraphs never fold;
// QuantizeLinear/DequantizeLinear fold only with --fold-qdq (their pairs carry quantization for the
// runtime). Folding does not grow stored data: a result larger than constant inputs of more than
// 4 KiB is not created (Cast(int8 weight) to float then Mul by its scale stays, as the file stored
// it) unless grow-weights (--fold-grow-weights). A result over the size limit that is also larger
// than its inputs is not created, so weight generators (ConstantOfShape, Tile, Expand) do not
// bloat the model, except where the result is only a weight of compute ops (Conv/Gemm/MatMul
// operands, normalization parameters): that tensor is in memory at run time anyway, and as a
// constant it can absorb what follows. Nodes whose output is a subgraph output stay (a subgraph
// output must be a node output).
#include <algorithm>

#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "shape_folding.h"

namespace onnxopt::passes {
namespace {

class FoldConstantsPass final : public pass::GraphPass {
 public:
  std::string id() const override { return "fold-constants"; }
  std::string summary() const override {
    return "Compute nodes whose inputs are all constant, and Shape/Size of static shapes";
  }
  std::vector<pass::PassOption> options() const override {
    return {{"fold-qdq", "bool", "false", "also fold QuantizeLinear/DequantizeLinear"},
            {"size-limit", "int", "1048576",
             "bytes: larger results that are also larger than their inputs are not created"},
            {"grow-weights", "bool", "false",
             "also create results larger than the stored constants they read (over 4 KiB): "
             "Cast(int8 weight) to float, DequantizeLinear with fold-qdq"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name == "fold-qdq") {
      ASSIGN_OR_RETURN(fold_qdq_, parseBool(name, value));
      return Status::ok();
    }
    if (name == "grow-weights") {
      ASSIGN_OR_RETURN(grow_weights_, parseBool(name, value));
      return Status::ok();
    }
    if (name == "size-limit") {
      ASSIGN_OR_RETURN(int64_t v, parseInt(name, value));
      if (v < 0) return invalidArgument("size-limit must not be negative");
      size_limit_ = static_cast<uint64_t>(v);
      return Status::ok();
    }
    return Pass::setOption(name, value);
  }

  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    inferred_this_run_ = false;
    shape_values_ = nullptr;
    // Shape chains start at Shape or Size: without one there is nothing for the values to say,
    // and inference is not worth its time. What infer-shapes (or this pass's last run) found is
    // reused when nothing changed since.
    if (readsShapes(*model.graph)) {
      if (auto values = pass::inferShapesOnce(model, ctx); values.isOk()) {
        inferred_this_run_ = true;
        shape_values_ = *values;
      }
    }
    auto changed = GraphPass::run(model, ctx);
    // The values name Values that this run may have freed.
    shape_values_ = nullptr;
    return changed;
  }

 protected:
  StatusOr<bool> runOnGraph(ir::Graph& graph, ir::Model& model, rewrite::Rewriter& rewriter,
                            pass::PassContext& ctx) override {
    bool changed = false;
    for (ir::Node* n : graph) {
      // Ops of other domains fold where the reference kernels know that domain (ai.onnx.ml, ...),
      // at the model's opset of that domain.
      const std::string op = kernels::referenceOpName(n->domain(), n->opType());
      const int64_t opset = model.opsetVersion(n->domain()).value_or(0);
      if (op == "Constant" || !n->subgraphs().empty()) continue;
      if (pass::isNondeterministicNode(*n)) {
        bump("skipped-random");  // Random*, Bernoulli, Multinomial, unseeded training Dropout
        continue;
      }
      if (!fold_qdq_ && (op == "QuantizeLinear" || op == "DequantizeLinear")) continue;
      if (op == "Reshape" && shapefold::foldReshapeTarget(n, shape_values_, rewriter)) {
        bump("reshape-targets-folded");
        changed = true;
        continue;
      }
      if (!outputsCanBeInitializers(*n)) continue;
      std::optional<std::vector<ir::Tensor>> results;
      if (op == "Shape" || op == "Size") results = fromHosts(shapefold::foldShape(*n));
      if ((op == "Gather" || op == "Slice") && !results) {
        results = fromHosts(shapefold::foldShapeElements(*n));
      }
      // A value computed from partly static shapes (Gather(Shape(x), 0) * 12, Concat of such)
      // whose every element inference knows. Nodes that read only constants are left to the
      // kernels, which compute rather than trust the propagated values.
      if (!results && shape_values_ && !readsOnlyConstants(*n)) {
        results = shapefold::foldKnownValues(*n, *shape_values_);
        if (results) bump("shape-values-folded");
      }
      if (!results) results = foldWithKernel(*n, opset, size_limit_, model, ctx);
      if (!results) continue;
      replaceWithInitializers(n, std::move(*results), rewriter);
      bump(op == "Shape" || op == "Size" ? "shapes-folded" : "nodes-folded");
      changed = true;
    }
    return changed;
  }

 private:
  /// True when every use of the node's outputs is a weight operand of a compute op (Conv and
  /// Gemm weights and biases, MatMul operands, normalization parameters), possibly through
  /// Reshape/Unsqueeze/Transpose/Cast. Such a tensor exists in memory at run time anyway, and as a
  /// constant it can be absorbed (BatchNormalization into Conv): a generator (ConstantOfShape,
  /// Tile) is materialized past the size limit for it.
  static bool feedsOnlyWeights(const ir::Node& n, int depth) {
    if (depth > 4) return false;
    bool any = false;
    for (const ir::Value* out : n.outputs()) {
      if (out == nullptr) continue;
      if (out->isGraphOutput()) return false;
      for (const ir::Use& use : out->uses()) {
        const ir::Node& u = *use.user;
        const std::string& op = u.opType();
        size_t i = use.index;
        bool weight =
            (u.domain().empty() || u.domain() == "ai.onnx") &&
            (((op == "Conv" || op == "ConvTranspose") && i >= 1) || op == "Gemm" ||
             op == "MatMul" || (op == "BatchNormalization" && i >= 1) ||
             ((op == "InstanceNormalization" || op == "LayerNormalization" ||
               op == "GroupNormalization") &&
              i >= 1) ||
             ((op == "Reshape" || op == "Unsqueeze" || op == "Transpose" || op == "Cast") &&
              i == 0 && feedsOnlyWeights(u, depth + 1)));
        if (!weight) return false;
        any = true;
      }
    }
    return any;
  }

  static bool readsShapes(const ir::Graph& g) {
    return std::any_of(g.begin(), g.end(), [](const ir::Node* n) {
      if ((n->opType() == "Shape" || n->opType() == "Size") && n->domain().empty()) return true;
      const std::vector<ir::Graph*> subs = n->subgraphs();
      return std::any_of(subs.begin(), subs.end(),
                         [](const ir::Graph* sub) { return readsShapes(*sub); });
    });
  }

  static bool outputsCanBeInitializers(const ir::Node& n) {
    for (const ir::Value* out : n.outputs()) {
      if (out == nullptr) continue;
      for (const ir::Use& use : out->uses()) {
        const ir::Graph* g = use.user->owningGraph();
        // A subgraph output must stay a node output (onnx.checker).
        if (use.user == g->returnNode() && g->parentNode() != nullptr) return false;
      }
    }
    return n.numOutputs() > 0;
  }

  /// Bytes of the node's results as the inferred output types give them (every output's shape
  /// static, its element type of fixed width); nullopt when that is not known. Saturates.
  static std::optional<uint64_t> predictedOutputBytes(const ir::Node& n) {
    uint64_t total = 0;
    for (const ir::Value* out : n.outputs()) {
      if (out == nullptr) continue;
      auto dims = pass::staticShape(out);
      auto elem = pass::elemTypeOf(out);
      if (!dims || !elem || dataTypeBits(*elem) == 0) return std::nullopt;
      uint64_t count = 1;
      for (int64_t d : *dims) {
        if (d < 0) return std::nullopt;
        if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count)) return UINT64_MAX;
      }
      if (count > UINT64_MAX / 16) return UINT64_MAX;
      std::optional<uint64_t> bytes = dataTypeStorageBytes(*elem, count);
      if (!bytes || __builtin_add_overflow(total, *bytes, &total)) return UINT64_MAX;
    }
    return total;
  }

  enum class SizeVerdict { kFits, kWeightOnly, kTooLarge, kGrows };

  /// The size rules. A result larger than its (distinct) constant inputs, when those hold more
  /// than kParameterBytes, is not created unless grow-weights: it would widen or repeat stored
  /// data (Cast(int8 weight) to float, DequantizeLinear, Tile of a table). Results built from
  /// parameters (shapes, scalars, fill values) may grow up to the limit; past it they are not
  /// created either, unless they only feed weights (and stay under kMaxMaterializedBytes).
  SizeVerdict sizeVerdict(const ir::Node& n, uint64_t output_bytes, uint64_t input_bytes,
                          uint64_t limit) const {
    if (output_bytes <= input_bytes) return SizeVerdict::kFits;
    if (!grow_weights_ && input_bytes > kParameterBytes) return SizeVerdict::kGrows;
    if (output_bytes <= limit) return SizeVerdict::kFits;
    if (output_bytes <= kMaxMaterializedBytes && feedsOnlyWeights(n, 0)) {
      return SizeVerdict::kWeightOnly;
    }
    return SizeVerdict::kTooLarge;
  }

  /// Folds a node with the reference kernel. Every size check happens before any work: the
  /// result's size comes from the inferred output types (inference is run once per pass run if
  /// a candidate's types are not known), and each distinct input is copied to the host once (a
  /// Concat of 1000 uses of one 4 MB weight copies 4 MB, and is refused before that, as 4 GB).
  static std::optional<std::vector<ir::Tensor>> fromHosts(
      std::optional<std::vector<kernels::HostTensor>> hosts) {
    if (!hosts) return std::nullopt;
    std::vector<ir::Tensor> out;
    out.reserve(hosts->size());
    for (kernels::HostTensor& h : *hosts) out.push_back(bridge::fromHost(std::move(h)));
    return out;
  }

  /// Results that are a contiguous run of constant `data`'s bytes view them (no copy), under the
  /// output's inferred static dims (the kernel path checks its results against those too):
  ///   Reshape, Flatten, Squeeze, Unsqueeze  all of data's bytes, in their order;
  ///   Slice with steps 1                    the run from the first selected element, when every
  ///                                         axis outside the innermost cut one keeps a single
  ///                                         element (so the selection is one run).
  /// nullopt when the dims are not known, do not agree, or the selection is not one run.
  static std::optional<std::vector<ir::Tensor>> foldAsView(const ir::Node& n,
                                                           const ir::Tensor& data) {
    const std::string& op = n.opType();
    bool reshape = op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
    if (!(n.domain().empty() || n.domain() == "ai.onnx") || n.numOutputs() != 1 ||
        !(reshape || op == "Slice")) {
      return std::nullopt;
    }
    const ir::Value* out = n.output(0);
    auto dims = pass::staticShape(out);
    auto elem = pass::elemTypeOf(out);
    auto count = data.numElements();
    const int bits = dataTypeBits(data.dtype());
    if (!dims || !elem || *elem != data.dtype() || data.dtype() == DataType::kString || !count ||
        bits == 0 || bits % 8 != 0 ||
        data.byteSize() != static_cast<uint64_t>(*count) * (bits / 8)) {
      return std::nullopt;
    }
    int64_t product = 1;
    for (int64_t d : *dims) {
      if (d < 0 || __builtin_mul_overflow(product, d, &product)) return std::nullopt;
    }
    std::vector<ir::Tensor> views;
    if (reshape) {
      if (product != *count) return std::nullopt;
      views.push_back(data.subView(*dims, 0, data.byteSize()));
      return views;
    }
    auto offset = product == 0 ? std::nullopt : contiguousSliceOffset(n, data.dims(), *dims);
    if (!offset) return std::nullopt;
    const auto elem_bytes = static_cast<size_t>(bits / 8);
    views.push_back(data.subView(*dims, static_cast<size_t>(*offset) * elem_bytes,
                                 static_cast<size_t>(product) * elem_bytes));
    return views;
  }

  /// Concat of constants `inputs` (one per input of `n`) as bytes: each input's slab at each index
  /// of the axes before `axis`, appended in order into the result, under the output's inferred
  /// static dims (the slabs are whole runs of bytes, so nothing is computed or zero-filled first).
  /// nullopt when the types or dims do not agree, or the element type is not whole bytes.
  static std::optional<std::vector<ir::Tensor>> foldConcatBytes(
      const ir::Node& n, const std::vector<const ir::Tensor*>& inputs) {
    if (n.opType() != "Concat" || !(n.domain().empty() || n.domain() == "ai.onnx") ||
        n.numOutputs() != 1 || inputs.empty()) {
      return std::nullopt;
    }
    auto dims = pass::staticShape(n.output(0));
    auto elem = pass::elemTypeOf(n.output(0));
    const ir::Attribute* axis_attr = n.findAttribute("axis");
    const int bits = elem ? dataTypeBits(*elem) : 0;
    if (!dims || dims->empty() || bits == 0 || bits % 8 != 0 || *elem == DataType::kString ||
        axis_attr == nullptr || axis_attr->kind != ir::Attribute::Kind::kInt) {
      return std::nullopt;
    }
    const auto rank = static_cast<int64_t>(dims->size());
    const int64_t axis = axis_attr->i < 0 ? axis_attr->i + rank : axis_attr->i;
    if (axis < 0 || axis >= rank) return std::nullopt;
    // outer: the product of the dims before the axis; each input's slab: its dims from the axis on.
    uint64_t outer = 1, total = 0;
    std::vector<uint64_t> slab(inputs.size());
    int64_t axis_sum = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ir::Tensor* t = inputs[i];
      if (t == nullptr || t->dtype() != *elem || t->dims().size() != dims->size()) {
        return std::nullopt;
      }
      uint64_t bytes = static_cast<uint64_t>(bits / 8);
      for (int64_t a = 0; a < rank; ++a) {
        const int64_t d = t->dims()[static_cast<size_t>(a)];
        if (d < 0 || (a != axis && d != (*dims)[static_cast<size_t>(a)])) return std::nullopt;
        if (a >= axis && __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
          return std::nullopt;
        }
      }
      axis_sum += t->dims()[static_cast<size_t>(axis)];
      slab[i] = bytes;
      total += t->byteSize();
    }
    for (int64_t a = 0; a < axis; ++a)
      outer *= static_cast<uint64_t>((*dims)[static_cast<size_t>(a)]);
    if (axis_sum != (*dims)[static_cast<size_t>(axis)]) return std::nullopt;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (outer * slab[i] != inputs[i]->byteSize()) return std::nullopt;
    }
    std::string out;
    out.reserve(total);
    for (uint64_t o = 0; o < outer; ++o) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        out.append(reinterpret_cast<const char*>(inputs[i]->data()) + o * slab[i], slab[i]);
      }
    }
    std::vector<ir::Tensor> result(1, ir::Tensor(*elem, *dims));
    result[0].setBytes(std::move(out));
    return result;
  }

  /// The element offset at which Slice `n` of an input of `in` dims, yielding `out` dims, selects
  /// one contiguous run (steps 1, see foldAsView); nullopt otherwise.
  static std::optional<int64_t> contiguousSliceOffset(const ir::Node& n,
                                                      const std::vector<int64_t>& in,
                                                      const std::vector<int64_t>& out) {
    if (n.numInputs() < 3 || in.size() != out.size()) return std::nullopt;
    auto starts = pass::constantInts(n.input(1));
    auto ends = pass::constantInts(n.input(2));
    if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
    const auto rank = static_cast<int64_t>(in.size());
    std::vector<int64_t> axes(starts->size());
    for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    if (n.numInputs() > 3 && n.input(3) != nullptr) {
      auto a = pass::constantInts(n.input(3));
      if (!a || a->size() != starts->size()) return std::nullopt;
      axes = *a;
    }
    if (n.numInputs() > 4 && n.input(4) != nullptr) {
      auto steps = pass::constantInts(n.input(4));
      if (!steps || steps->size() != starts->size()) return std::nullopt;
      for (int64_t step : *steps) {
        if (step != 1) return std::nullopt;
      }
    }
    std::vector<int64_t> first(in.size(), 0);
    std::vector<bool> seen(in.size(), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
      if (axis < 0 || axis >= rank || seen[static_cast<size_t>(axis)]) return std::nullopt;
      seen[static_cast<size_t>(axis)] = true;
      const int64_t dim = in[static_cast<size_t>(axis)];
      auto clampIndex = [&](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
      const int64_t b = clampIndex((*starts)[i]);
      const int64_t e = clampIndex((*ends)[i]);
      if (std::max<int64_t>(e - b, 0) != out[static_cast<size_t>(axis)]) return std::nullopt;
      first[static_cast<size_t>(axis)] = b;
    }
    for (size_t a = 0; a < in.size(); ++a) {
      if (!seen[a] && in[a] != out[a]) return std::nullopt;
    }
    // One run: every axis outside the innermost one that is cut keeps a single element.
    size_t cut = in.size();
    for (size_t a = 0; a < in.size(); ++a) {
      if (out[a] != in[a]) cut = a;
    }
    for (size_t a = 0; a < cut && cut < in.size(); ++a) {
      if (out[a] != 1) return std::nullopt;
    }
    int64_t offset = 0;
    int64_t stride = 1;
    for (size_t a = in.size(); a-- > 0;) {
      offset += first[a] * stride;
      stride *= in[a];
    }
    return offset;
  }

  std::optional<std::vector<ir::Tensor>> foldWithKernel(const ir::Node& n, int64_t opset,
                                                        uint64_t limit, ir::Model& model,
                                                        pass::PassContext& ctx) {
    // A cheap necessary condition first: most nodes of a large graph have computed inputs.
    for (const ir::Value* v : n.inputs()) {
      if (v == nullptr || v->initializer() != nullptr || v->sparseInitializer() != nullptr)
        continue;
      if (v->producer() == nullptr || v->producer()->opType() != "Constant") return std::nullopt;
    }
    // What the kernels cannot run (op, opset, element types) is known before any copy or shape
    // inference: only limits that depend on attributes and values are left to the kernel.
    if (!kernels::referenceCapabilities().supports(bridge::opQuery(n, opset))) return std::nullopt;
    // Constant inputs, as views (no copy); sizes counted once per distinct value.
    std::vector<const ir::Value*> distinct;
    std::vector<ir::Tensor> tensors;
    uint64_t input_bytes = 0;
    for (const ir::Value* v : n.inputs()) {
      if (v == nullptr || std::find(distinct.begin(), distinct.end(), v) != distinct.end()) {
        continue;
      }
      auto t = ir::constantTensor(v);
      if (!t) return std::nullopt;
      if (t->byteSize() > (uint64_t{1} << 30)) return std::nullopt;  // not worth paging in
      input_bytes += t->byteSize();
      distinct.push_back(v);
      tensors.push_back(std::move(*t));
    }
    auto predicted = predictedOutputBytes(n);
    if (!predicted && !inferred_this_run_) {
      inferred_this_run_ = true;
      ir::ShapeInferenceOptions options;
      options.diagnostics = ctx.diagnostics;
      if (auto stats = ir::inferShapes(model, options); stats.isOk()) {
        ctx.type_refinements += stats->refined;
        predicted = predictedOutputBytes(n);
      }
    }
    auto refuse = [&](SizeVerdict verdict) {
      if (verdict == SizeVerdict::kTooLarge) bump("skipped-size-limit");
      if (verdict == SizeVerdict::kGrows) bump("skipped-would-grow");
      return verdict == SizeVerdict::kTooLarge || verdict == SizeVerdict::kGrows;
    };
    if (predicted && refuse(sizeVerdict(n, *predicted, input_bytes, limit))) return std::nullopt;
    if (predicted && wouldDuplicate(n, *predicted)) return std::nullopt;
    if (predicted && !distinct.empty() && n.input(0) == distinct.front()) {
      if (auto view = foldAsView(n, tensors.front())) {
        bump("folded-as-views");
        return view;
      }
    }
    // Each input's index among the distinct constants (-1: an absent input).
    std::vector<int> slot;
    for (const ir::Value* v : n.inputs()) {
      auto it = std::find(distinct.begin(), distinct.end(), v);
      slot.push_back(v == nullptr ? -1 : static_cast<int>(it - distinct.begin()));
    }
    if (predicted && n.opType() == "Concat") {
      std::vector<const ir::Tensor*> in;
      for (int k : slot) in.push_back(k < 0 ? nullptr : &tensors[static_cast<size_t>(k)]);
      if (auto joined = foldConcatBytes(n, in)) {
        bump("concats-joined");
        return joined;
      }
    }
    std::vector<kernels::HostTensor> hosts;
    hosts.reserve(tensors.size());
    for (const ir::Tensor& t : tensors) hosts.push_back(bridge::toHost(t));
    std::vector<const kernels::HostTensor*> ptrs;
    for (int k : slot) ptrs.push_back(k < 0 ? nullptr : &hosts[static_cast<size_t>(k)]);
    auto results =
        kernels::runReferenceKernel(kernels::referenceOpName(n.domain(), n.opType()), opset, ptrs,
                                    bridge::toKernelAttrs(n), n.numOutputs());
    if (!results.isOk()) {
      if (results.status().code() == StatusCode::kInvalidArgument) {
        std::string name = n.output(0) ? n.output(0)->name() : n.name();
        report(ctx.diagnostics, {Severity::kWarning, name,
                                 fmt::format("not folding {} '{}': {}", n.opType(), name,
                                             results.status().message())});
      }
      return std::nullopt;
    }
    uint64_t output_bytes = 0;
    for (const auto& r : *results) output_bytes += r.bytes.size();
    SizeVerdict verdict = sizeVerdict(n, output_bytes, input_bytes, limit);
    if (!predicted) {  // types unknown even after inference: the same rules, after the fact
      if (refuse(verdict) || wouldDuplicate(n, output_bytes)) return std::nullopt;
    }
    if (!agreesWithDeclaredTypes(n, *results, ctx)) return std::nullopt;
    if (verdict == SizeVerdict::kWeightOnly) bump("weights-materialized");
    return fromHosts(std::move(results).value());
  }

  /// A result over 4 KiB derived from a constant over 4 KiB that stays in use elsewhere would store
  /// the data twice (e.g. Unsqueeze of a weight shared by two branches): it stays a node.
  bool wouldDuplicate(const ir::Node& n, uint64_t output_bytes) {
    constexpr uint64_t kSmall = 4096;
    if (output_bytes <= kSmall || keptInputBytes(n) <= kSmall) return false;
    bump("skipped-would-duplicate");
    return true;
  }

  /// The kernel's results must agree with what the graph declares about the outputs; a warning
  /// names the output that does not.
  static bool agreesWithDeclaredTypes(const ir::Node& n,
                                      const std::vector<kernels::HostTensor>& results,
                                      pass::PassContext& ctx) {
    for (size_t i = 0; i < results.size(); ++i) {
      const ir::Value* out = n.output(i);
      if (out == nullptr) continue;
      auto declared = pass::staticShape(out);
      auto elem = pass::elemTypeOf(out);
      if ((declared && *declared != results[i].dims) || (elem && *elem != results[i].dtype)) {
        report(ctx.diagnostics,
               {Severity::kWarning, out->name(),
                fmt::format("not folding {} '{}': the result contradicts the declared type",
                            n.opType(), out->name())});
        return false;
      }
    }
    return true;
  }

  /// True when a node reads only constants (so folding it, too, is possible).
  static bool readsOnlyConstants(const ir::Node& n) {
    if (!n.subgraphs().empty() || pass::isNondeterministicNode(n) ||
        n.owningGraph()->returnNode() == &n) {
      return false;
    }
    return std::all_of(n.inputs().begin(), n.inputs().end(), [](const ir::Value* v) {
      return v == nullptr || ir::constantTensor(v).has_value();
    });
  }

  /// Bytes of the node's constant inputs that other nodes still use (they stay after folding).
  /// Users that read only constants do not count: they fold too (a weight sliced into parts).
  static uint64_t keptInputBytes(const ir::Node& n) {
    uint64_t kept = 0;
    std::vector<const ir::Value*> seen;
    for (const ir::Value* v : n.inputs()) {
      if (v == nullptr || std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
      seen.push_back(v);
      bool other_users = v->isGraphOutput() ||
                         std::any_of(v->uses().begin(), v->uses().end(), [&](const ir::Use& u) {
                           return u.user != &n && !readsOnlyConstants(*u.user);
                         });
      if (!other_users) continue;
      if (auto t = ir::constantTensor(v)) kept += t->byteSize();
    }
    return kept;
  }

  static void replaceWithInitializers(ir::Node* n, std::vector<ir::Tensor> results,
                                      rewrite::Rewriter& rewriter) {
    ir::Graph& g = *n->owningGraph();
    std::vector<ir::Value*> values(n->numOutputs(), nullptr);
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      ir::Value* out = n->output(i);
      if (out == nullptr || !out->hasUses()) continue;
      // The initializer takes the name over: directly, or by the rewriter's renaming when the
      // value is a model output.
      values[i] = rewrite::isNamedOutput(out)
                      ? rewriter.createInitializer(g, out->name(), std::move(results[i]))
                      : rewriter.createInitializerNamedAs(out, std::move(results[i]));
    }
    rewriter.replaceNode(n, values);
  }

  /// Constant inputs up to this size are parameters (shapes, scalars, small tables), not stored
  /// data that a larger result would widen or repeat.
  static constexpr uint64_t kParameterBytes = 4096;
  /// Above this, not even a weight-only result is materialized (as for inputs: not worth it).
  static constexpr uint64_t kMaxMaterializedBytes = uint64_t{1} << 30;

  bool fold_qdq_ = false;
  bool grow_weights_ = false;
  uint64_t size_limit_ = uint64_t{1} << 20;
  bool inferred_this_run_ = false;  ///< shape inference already ran during this run()
  /// What inference knew of shape tensors at run()'s start (PassContext::inferred), when it ran.
  const shapefold::ShapeValues* shape_values_ = nullptr;
};

}  // namespace

std::unique_ptr<pass::Pass> createFoldConstantsPass() {
  return std::make_unique<FoldConstantsPass>();
}

}  // namespace onnxopt::passes
