// convert-precision: float32 compute becomes float16 or bfloat16, with float32 islands where the
// conversion is unsafe or not allowed, and Cast nodes only at the islands' borders.
//
//   %y = Op(%x: float, %w: float init)        ==>   %x16 = Cast<to=T>(%x)      (graph input kept)
//   (Op converted)                                  %y16 = Op(%x16, %w16: T init)
//                                                   %y = Cast<to=FLOAT>(%y16)  (graph output kept)
//
//   %s = ReduceSum(%e)  (kept in float32)     ==>   %e32 = Cast<to=FLOAT>(%e16)  one per value,
//                                                   %s = ReduceSum(%e32)         shared by users
//
// A node is converted when its op allows T at the model's opset wherever it allows float (the
// table tools/gen_precision_ops.py writes from onnx's schemas), it has no subgraph, none of its
// outputs is captured by a subgraph, its float initializers fit T, and it is not kept: by
// default the accumulation-sensitive ops (the Reduce* family, CumSum, Range, Instance/Group
// normalization's statistics), an Exp, Pow or Log feeding one of them, and what keep-ops /
// keep-nodes name. safe-values (opt's precision analysis, runtime/precision_analysis.h) names the
// nodes of the first two kinds measured safe in the target type, and nodes whose constant past
// the range saturates without changing their output: those convert. Values between converted
// nodes are retyped in place; an initializer read only by converted nodes is replaced by its T
// copy, one read by both sides exists once per type.
// keep-io-types (default true) leaves the graph's float inputs and outputs float32 (Casts at the
// border); false retypes them. Cast<to=FLOAT> nodes that are converted cast to T instead. Integer
// and bool tensors are never touched. A node with subgraphs stays float32 and its subgraphs
// convert inside, with a float32 interface (Casts at their border, inside them), when they hold
// a product or convolution to speed up.
// Quantized models (qdq_precision.h): from opset 19 Q/DQ scales convert with the float side;
// below it Q/DQ and what lies between a DQ and the next Q stay float32 (one warning names
// --target-opset 19); a Q/DQ whose float side stays float32 stays with it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "onnxopt/ir/constants.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/support/half.h"
#include "precision_schema.h"
#include "qdq_precision.h"

namespace onnxopt::passes {
namespace {

bool bitSet(int64_t mask, size_t i) {
  return i < 62 && ((mask >> i) & 1) != 0;
}

/// The ops kept in float32 by default: accumulations over many elements without a float32
/// accumulator in their definition.
const std::set<std::string>& defaultKept() {
  static const std::set<std::string> ops = {"ReduceSum",
                                            "ReduceMean",
                                            "ReduceProd",
                                            "ReduceSumSquare",
                                            "ReduceL1",
                                            "ReduceL2",
                                            "ReduceLogSum",
                                            "ReduceLogSumExp",
                                            "CumSum",
                                            "Range",
                                            "InstanceNormalization",
                                            "GroupNormalization"};
  return ops;
}

/// A policy, not a trait: the ops kept in float32 where they feed an accumulation kept in float32
/// (defaultKept()), since their results magnify the low-precision type's rounding of their input
/// (Exp, Pow) or lose its relative precision (Log): a log-sum-exp chain stays float32 whole.
bool feedsAccumulationInFloat32(const std::string& op) {
  return op == "Exp" || op == "Pow" || op == "Log";
}

std::set<std::string> splitList(const std::string& text) {
  std::set<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.insert(item);
  }
  return out;
}

bool isFloatTensor(const ir::Value* v) {
  return v != nullptr && v->type().isTensor() && v->type().elem_type == DataType::kFloat;
}

/// Largest finite magnitude of the target type (bfloat16 spans float32's range).
float maxFinite(DataType t) {
  return largestFinite(t);
}

/// `t` (float32) converted to `to`, rounded to nearest even; a finite value past the type's range
/// saturates to its largest finite value (only the readers measured safe that way convert).
ir::Tensor convertedTensor(const ir::Tensor& t, DataType to) {
  size_t n = t.byteSize() / sizeof(float);
  std::string bytes(n * 2, '\0');
  for (size_t i = 0; i < n; ++i) {
    float f = 0.0f;
    std::memcpy(&f, t.data() + i * sizeof(float), sizeof f);
    uint16_t h = toLowPrecision(f, to, /*saturate=*/true);
    std::memcpy(&bytes[i * 2], &h, 2);
  }
  ir::Tensor out(to, t.dims());
  out.setBytes(std::move(bytes));
  return out;
}

/// Whether every value of `t` (float32) is finite in `to`, or infinite / NaN already.
bool fits(const ir::Tensor& t, DataType to) {
  size_t n = t.byteSize() / sizeof(float);
  float limit = maxFinite(to);
  for (size_t i = 0; i < n; ++i) {
    float f = 0.0f;
    std::memcpy(&f, t.data() + i * sizeof(float), sizeof f);
    if (std::isfinite(f) && std::fabs(f) > limit) return false;
  }
  return true;
}

constexpr const char* kBeyondRange = "a constant beyond the type's range";
constexpr const char* kQdqOpset = "a Q/DQ below opset 19";
constexpr const char* kQdqRegion = "between a DQ and a Q below opset 19";

class ConvertPrecisionPass final : public pass::Pass {
 public:
  std::string id() const override { return "convert-precision"; }
  std::string summary() const override {
    return "Convert float32 compute to float16 or bfloat16 (to=), float32 islands where unsafe or "
           "not allowed, Casts only at their borders";
  }
  std::vector<pass::PassOption> options() const override {
    return {{"to", "string", "", "the target type: fp16 or bf16 (required)"},
            {"keep-io-types", "bool", "true",
             "keep the graph's float inputs and outputs float32 (Casts at the border)"},
            {"keep-ops", "string", "", "op types kept in float32, comma-separated (quoted)"},
            {"keep-nodes", "string", "", "node names kept in float32, comma-separated (quoted)"},
            {"keep-values", "string", "",
             "value names whose producers and readers stay float32 (opt's precision analysis)"},
            {"safe-values", "string", "",
             "nodes (by first output) that convert though kept by default: measured safe by "
             "opt's precision analysis (constants past the range saturate)"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name == "to") {
      if (value == "fp16" || value == "float16") {
        target_ = DataType::kFloat16;
      } else if (value == "bf16" || value == "bfloat16") {
        target_ = DataType::kBfloat16;
      } else {
        return makeError(StatusCode::kInvalidArgument,
                         "convert-precision: to must be fp16 or bf16, not '{}'", value);
      }
      return Status::ok();
    }
    if (name == "keep-io-types") {
      ASSIGN_OR_RETURN(keep_io_, parseBool(name, value));
      return Status::ok();
    }
    if (name == "keep-ops") {
      keep_ops_ = splitList(value);
      for (const std::string& op : keep_ops_) {
        if (!hasPrecisionRow(op)) {
          return makeError(StatusCode::kInvalidArgument,
                           "convert-precision: keep-ops names '{}', which is no ONNX op with a "
                           "float input or output",
                           op);
        }
      }
      return Status::ok();
    }
    if (name == "keep-nodes") {
      keep_nodes_ = splitList(value);
      return Status::ok();
    }
    if (name == "keep-values") {
      keep_values_ = splitList(value);
      return Status::ok();
    }
    if (name == "safe-values") {
      safe_values_ = splitList(value);
      return Status::ok();
    }
    return Pass::setOption(name, value);
  }

  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    if (target_ == DataType::kUndefined) {
      return makeError(StatusCode::kInvalidArgument,
                       "convert-precision: the target type is not set (to=fp16 or to=bf16)");
    }
    ir::Graph& g = *model.graph;
    opset_ = model.opsetVersion("").value_or(1);
    rewrite::Rewriter rw;
    retyped_.clear();
    to_target_.clear();
    to_float_.clear();
    init_copies_.clear();
    converted_ = 0;
    casts_ = 0;
    clips_ = 0;
    saturated_.clear();

    if (!keep_io_) {
      for (ir::Value* in : g.inputs()) {
        if (isFloatTensor(in) && in->initializer() == nullptr) retype(rw, in);
      }
    }
    std::map<std::string, int64_t> kept_why;
    convertGraph(rw, g, /*top=*/true, kept_why);
    // What the rules above miss must be an error, never a model that no runtime loads.
    RETURN_IF_ERROR(checkPrecisionTypes(g, opset_, target_));
    for (const auto& [why, count] : kept_why) bump("kept: " + why, count);
    warnQuantized(ctx, kept_why);
    bump("converted", converted_);
    bump("casts", casts_);
    bump("clips", clips_);
    std::string list;
    for (const auto& [why, count] : kept_why) {
      list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", why, count);
    }
    report(ctx.diagnostics,
           {Severity::kNote, "",
            fmt::format("convert-precision: {} nodes converted to {}, {} Casts added{}{}",
                        converted_, dataTypeName(target_), casts_,
                        list.empty() ? "" : "; kept in float32: ", list)});
    return rw.changed();
  }

 private:
  /// Converts `g`'s nodes, then each subgraph's. A subgraph (If/Loop/Scan body) converts on its
  /// own with its interface float32, as keep-io-types does for the main graph: its formal inputs,
  /// its outputs and the outer values it reads (the node owning it stays float32, and so do the
  /// producers of values it captures), so Casts sit inside it, at its border.
  void convertGraph(rewrite::Rewriter& rw, ir::Graph& g, bool top,
                    std::map<std::string, int64_t>& kept_why) {
    // A Cast lives in one graph: the caches start empty in each.
    to_target_.clear();
    to_float_.clear();
    captured_ = capturedValues(g);
    qdq_region_.clear();
    top_ = top;
    if (opset_ < kLowPrecisionQdqOpset) qdq_region_ = qdqRegion(g, keep_io_ || !top);
    std::vector<ir::Node*> nodes;
    for (ir::Node* n : g) nodes.push_back(n);
    // A subgraph without a product or a convolution to speed up (a branch picking a padding, a
    // loop counter) stays float32: the Casts at its border would cost more than it saves.
    const bool worth = top || std::any_of(nodes.begin(), nodes.end(), [this](ir::Node* n) {
                         return computeHeavy(n->opType()) && keptBecause(*n).empty();
                       });
    for (ir::Node* n : worth ? nodes : std::vector<ir::Node*>{}) {
      std::string why = keptBecause(*n);
      if (why.empty()) {
        convertNode(rw, n);
      } else {
        if (touchesFloat(*n)) ++kept_why[why];
        if (why == kBeyondRange || why == kDequantizedRange || readsBeyondRange(*n)) {
          for (ir::Value* o : n->outputs()) {
            if (isFloatTensor(o)) saturated_.insert(o);
          }
        }
        feedFloat(rw, n);
      }
    }
    if (worth && (keep_io_ || !top)) restoreOutputs(rw, g);
    if (!worth) {
      ++kept_why["a subgraph without products or convolutions"];
      for (ir::Node* n : nodes) {
        // Its Q/DQ count toward the warning that names the opset converting them.
        std::string why = keptBecause(*n);
        if (why == kQdqOpset || why == kQdqRegion) ++kept_why[why];
        // It may still read an outer graph input that keep-io-types=false retyped.
        feedFloat(rw, n);
      }
    }
    for (ir::Node* n : nodes) {
      for (ir::Graph* sub : n->subgraphs()) convertGraph(rw, *sub, /*top=*/false, kept_why);
    }
  }

  /// Values of `g` that a subgraph of one of its nodes reads (they keep their type).
  static std::set<const ir::Value*> capturedValues(ir::Graph& g) {
    std::set<const ir::Value*> out;
    for (ir::Node* n : g) {
      for (ir::Graph* sub : n->subgraphs()) {
        for (ir::Node* inner : sub->allNodesRecursive()) {
          for (ir::Value* v : inner->inputs()) {
            if (v != nullptr && v->owningGraph() == &g) out.insert(v);
          }
        }
      }
    }
    return out;
  }

  /// Whether `n` reads or writes a float32 tensor (or one already retyped from float32).
  bool touchesFloat(const ir::Node& n) const {
    auto floating = [this](ir::Value* v) { return isFloatTensor(v) || retyped_.count(v) > 0; };
    for (ir::Value* v : n.inputs()) {
      if (floating(v)) return true;
    }
    for (ir::Value* v : n.outputs()) {
      if (floating(v)) return true;
    }
    return false;
  }

  /// Why `n` stays float32 (empty: it is converted).
  std::string keptBecause(const ir::Node& n) const {
    if (!touchesFloat(n)) return "no float tensor";
    // A value of unknown type beside float ones (shape inference did not run, or could not type
    // it) may be float32: converting the node could mix it into float16 inputs.
    auto unknown = [this](ir::Value* v) {
      return v != nullptr && retyped_.count(v) == 0 &&
             (v->type().kind == ir::Type::Kind::kUnknown ||
              (v->type().isTensor() && v->type().elem_type == DataType::kUndefined));
    };
    if (std::any_of(n.inputs().begin(), n.inputs().end(), unknown) ||
        std::any_of(n.outputs().begin(), n.outputs().end(), unknown)) {
      return "a value of unknown type";
    }
    // A sequence or optional of float tensors keeps its element type: its reader or writer
    // converted would mix float32 elements into float16 tensors.
    auto container = [](ir::Value* v) { return v != nullptr && !v->type().isTensor(); };
    if (std::any_of(n.inputs().begin(), n.inputs().end(), container) ||
        std::any_of(n.outputs().begin(), n.outputs().end(), container)) {
      return "a sequence, map or optional value";
    }
    if (!n.domain().empty() && n.domain() != "ai.onnx") return "not a default-domain op";
    if (!n.subgraphs().empty()) return "has a subgraph";
    // Its value cannot be rewritten in the target type (a sparse_value).
    if (n.opType() == "Constant" && !ir::constantNodeTensor(n)) return "a sparse constant";
    if (keep_nodes_.count(n.name()) > 0) return "keep-nodes";
    // Below opset 19 a Q/DQ cannot take the type: what lies between them stays float32 with them.
    if (isQdq(n) && opset_ < kLowPrecisionQdqOpset) return kQdqOpset;
    if (qdq_region_.count(&n) > 0) return kQdqRegion;
    if (keep_ops_.count(n.opType()) > 0) return "keep-ops";
    for (ir::Value* o : n.outputs()) {
      if (o != nullptr && keep_values_.count(o->name()) > 0)
        return "analysis: writes a value kept float32";
    }
    for (ir::Value* v : n.inputs()) {
      if (v != nullptr && keep_values_.count(v->name()) > 0)
        return "analysis: reads a value kept float32";
    }
    const bool safe = measuredSafe(n);
    if (!safe && defaultKept().count(n.opType()) > 0) return "accumulation-sensitive";
    if (!hasPrecisionRow(n.opType())) return "unknown op";
    const OpPrecision* row = precisionOf(n.opType(), opset_);
    bool half = target_ == DataType::kFloat16;
    if (row == nullptr || !(half ? row->fp16 : row->bf16)) return "type not allowed at this opset";
    if (opset_ < (half ? row->fp16_body_from : row->bf16_body_from)) {
      return "its function body does not allow the type at this opset";
    }
    if (std::string why = quantizedKeepReason(n, target_); !why.empty()) return why;
    if (isQdq(n) && floatSideKept(n)) return "a Q/DQ whose float side stays float32";
    // A narrower input changes what BitCast's output reinterprets.
    if (n.opType() == "BitCast") return "reinterprets the bits";
    // A constant made from scalars, nothing to speed up; onnxruntime mistypes its float16 form.
    if (n.opType() == "MelWeightMatrix") return "a constant generator";
    int64_t restricted = half ? row->fp16_restricted : row->bf16_restricted;
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      ir::Value* o = n.output(i);
      if (o == nullptr) continue;
      if (bitSet(restricted, i) && (o->hasUses() || o->isGraphOutput())) {
        return "an output stays float32";
      }
      if (captured_.count(o) > 0) return "read by a subgraph";
    }
    // Measured safe: the constant saturates to the type's largest finite value.
    if (!safe && readsBeyondRange(n)) return kBeyondRange;
    if (feedsAccumulationInFloat32(n.opType())) {
      // A chain into a reduction kept in float32: its values are computed in float32 too.
      for (const ir::Use& u : n.output(0)->uses()) {
        if (defaultKept().count(u.user->opType()) > 0 && !measuredSafe(*u.user)) {
          return "feeds an accumulation";
        }
      }
    }
    return "";
  }

  /// Whether a float32 value `v` read in graph `g` stays float32: a graph input or outer value
  /// kept so (keep-io-types, a subgraph's interface), or the output of a node kept float32.
  bool staysFloat32(const ir::Value* v, const ir::Graph& g) const {
    const ir::Node* p = v->producer();
    if (v->owningGraph() != &g) return true;
    if (p == nullptr) return v->initializer() == nullptr && (keep_io_ || !top_);
    return !isQdq(*p) && !keptBecause(*p).empty();
  }

  /// Whether the float side of a Q/DQ stays float32: a QuantizeLinear's x, or every reader of a
  /// DequantizeLinear's output (and the graph output it is, where that stays float32). Converted,
  /// the node would only move the Cast to its other side. Readers and producers that are Q/DQ
  /// themselves count as converted (a requantization chain converts whole).
  bool floatSideKept(const ir::Node& n) const {
    const ir::Graph& g = *n.owningGraph();
    if (n.opType() == "QuantizeLinear") return staysFloat32(n.input(0), g);
    const ir::Value* o = n.output(0);
    if (o == nullptr || (!o->hasUses() && !o->isGraphOutput())) return false;
    if (o->isGraphOutput() && !(keep_io_ || !top_)) return false;
    return std::all_of(o->uses().begin(), o->uses().end(), [this, &g](const ir::Use& u) {
      return u.user == g.returnNode() || (!isQdq(*u.user) && !keptBecause(*u.user).empty());
    });
  }

  /// Whether `n` is a Constant whose float value does not fit the target type, or reads a float
  /// initializer or Constant output that does not: its outputs are clipped into the type's range
  /// where they enter the converted region, if it stays float32.
  bool readsBeyondRange(const ir::Node& n) const {
    if (n.opType() == "Constant" || n.opType() == "ConstantOfShape") return !constantFits(n);
    for (ir::Value* v : n.inputs()) {
      if (!isFloatTensor(v)) continue;
      if (v->initializer() != nullptr && !fits(*v->initializer(), target_)) return true;
      const ir::Node* p = v->producer();
      if (p != nullptr && (p->opType() == "Constant" || p->opType() == "ConstantOfShape") &&
          !constantFits(*p)) {
        return true;
      }
    }
    return false;
  }

  /// Whether a Constant's or ConstantOfShape's float value fits the target type.
  bool constantFits(const ir::Node& n) const {
    std::optional<ir::Tensor> t = ir::constantNodeTensor(n);
    if (n.opType() == "ConstantOfShape") {
      const ir::Attribute* a = n.findAttribute("value");
      t = a != nullptr && a->tensors.size() == 1 ? std::optional<ir::Tensor>(a->tensors[0])
                                                 : std::nullopt;
    }
    return !t || t->dtype() != DataType::kFloat || fits(*t, target_);
  }

  /// Whether the precision analysis measured `n` safe in the target type (safe-values).
  bool measuredSafe(const ir::Node& n) const {
    return n.numOutputs() > 0 && n.output(0) != nullptr &&
           safe_values_.count(n.output(0)->name()) > 0;
  }

  /// One warning for the Q/DQ kept float32 below opset 19, naming the opset that converts them;
  /// one for those whose scale the type cannot hold.
  void warnQuantized(pass::PassContext& ctx, std::map<std::string, int64_t>& kept_why) const {
    const std::string type = dataTypeName(target_);
    if (int64_t qdq = kept_why[kQdqOpset]; qdq > 0) {
      report(
          ctx.diagnostics,
          {Severity::kWarning, "",
           fmt::format("convert-precision: {} QuantizeLinear/DequantizeLinear nodes stay float32 "
                       "at opset {} ({} scales need opset {}), with the {} nodes between "
                       "them; --target-opset {} (or later) converts them",
                       qdq, opset_, type, kLowPrecisionQdqOpset, kept_why[kQdqRegion],
                       kLowPrecisionQdqOpset)});
    }
    for (const char* why : {kUnrepresentableScale, kDequantizedRange}) {
      if (int64_t n = kept_why[why]; n > 0) {
        report(ctx.diagnostics,
               {Severity::kWarning, "",
                fmt::format("convert-precision: {} QuantizeLinear/DequantizeLinear nodes stay "
                            "float32: {} ({})",
                            n, why, type)});
      }
    }
    std::erase_if(kept_why, [](const auto& kv) { return kv.second == 0; });
  }

  void retype(rewrite::Rewriter& rw, ir::Value* v) {
    ir::Type t = v->type();
    t.elem_type = target_;
    rw.setType(v, t);
    retyped_.insert(v);
  }

  /// `v` (float32) as the target type for a converted node before `before`.
  ir::Value* asTarget(rewrite::Rewriter& rw, ir::Value* v, ir::Node* before) {
    if (retyped_.count(v) > 0) return v;
    if (const ir::Tensor* init = v->initializer()) {
      auto it = init_copies_.find(v);
      if (it != init_copies_.end()) return it->second;
      ir::Value* copy = rw.createInitializer(
          *v->owningGraph(), v->name() + "_" + (target_ == DataType::kFloat16 ? "fp16" : "bf16"),
          convertedTensor(*init, target_));
      init_copies_[v] = copy;
      return copy;
    }
    return castOf(rw, v, target_, before, to_target_);
  }

  /// A Cast of `v` to `to` inserted before `before` (nullptr: at the end of v's graph), one per
  /// value.
  ir::Value* castOf(rewrite::Rewriter& rw, ir::Value* v, DataType to, ir::Node* before,
                    std::map<ir::Value*, ir::Value*>& cache) {
    auto it = cache.find(v);
    if (it != cache.end()) return it->second;
    ir::Type t = v->type();
    t.elem_type = to;
    if (before != nullptr) {
      rw.setInsertionPoint(before);
    } else {
      rw.setInsertionPointToEnd(*v->owningGraph());
    }
    ir::Value* in = v;
    if (to != DataType::kFloat && saturated_.count(v) > 0 && opset_ >= 12) {
      // The output of a node kept for a constant past the type's range (an attention mask of
      // float32's lowest value): clipped to the type's finite range before the Cast, which would
      // make it -inf (a row masked everywhere would then give NaN, where float32 gives a uniform
      // softmax).
      ir::Graph& g = *v->owningGraph();
      std::string prefix = to == DataType::kFloat16 ? "fp16" : "bf16";
      ir::Tensor lo(DataType::kFloat, {}), hi(DataType::kFloat, {});
      float lo_v = -maxFinite(to), hi_v = maxFinite(to);
      lo.setBytes(std::string(reinterpret_cast<const char*>(&lo_v), sizeof lo_v));
      hi.setBytes(std::string(reinterpret_cast<const char*>(&hi_v), sizeof hi_v));
      ir::Node* clip = rw.createNode("Clip", "",
                                     {v, rw.createInitializer(g, prefix + "_lowest", std::move(lo)),
                                      rw.createInitializer(g, prefix + "_max", std::move(hi))},
                                     std::vector<ir::Type>{v->type()});
      in = clip->output(0);
      ++clips_;
    }
    ir::Node* cast = rw.createNode("Cast", "", {in}, std::vector<ir::Type>{t});
    rw.setAttribute(cast, pass::intAttr("to", static_cast<int64_t>(to)));
    ++casts_;
    cache[v] = cast->output(0);
    return cast->output(0);
  }

  void convertNode(rewrite::Rewriter& rw, ir::Node* n) {
    const OpPrecision* row = precisionOf(n->opType(), opset_);
    for (size_t i = 0; i < n->numInputs(); ++i) {
      ir::Value* v = n->input(i);
      if (bitSet(row->float_inputs, i)) {  // declared tensor(float): stays float32
        if (v != nullptr && retyped_.count(v) > 0) {
          rw.setInput(n, i, castOf(rw, v, DataType::kFloat, n, to_float_));
        }
        continue;
      }
      if (isFloatTensor(v)) rw.setInput(n, i, asTarget(rw, v, n));
    }
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      ir::Value* o = n->output(i);
      if (isFloatTensor(o) && !bitSet(row->float_outputs, i)) retype(rw, o);
    }
    if (n->opType() == "Constant") convertConstant(rw, n);
    convertTypeAttribute(rw, n);
    ++converted_;
  }

  /// The attribute typing a retyped output 0 (Cast's to, RandomNormal's dtype, ConstantOfShape's
  /// value) says the target type where it said float, or said nothing and meant float: left
  /// alone, the output would hold float32 data under a float16 type.
  void convertTypeAttribute(rewrite::Rewriter& rw, ir::Node* n) {
    const TypeAttribute* ta = typeAttributeOf(n->opType());
    if (ta == nullptr || n->output(0) == nullptr || retyped_.count(n->output(0)) == 0) return;
    const ir::Attribute* a = n->findAttribute(ta->name);
    if (ta->tensor) {
      ir::Tensor value(DataType::kFloat, {1});  // ConstantOfShape's default: one float zero
      value.setBytes(std::string(sizeof(float), '\0'));
      if (a != nullptr && a->tensors.size() == 1) value = a->tensors[0];
      if (value.dtype() != DataType::kFloat) return;
      ir::Attribute converted;
      converted.name = ta->name;
      converted.kind = ir::Attribute::Kind::kTensor;
      converted.tensors.push_back(convertedTensor(value, target_));
      rw.setAttribute(n, std::move(converted));
      return;
    }
    const bool says_float = a == nullptr ? ta->float_by_default
                                         : a->kind == ir::Attribute::Kind::kInt &&
                                               a->i == static_cast<int64_t>(DataType::kFloat);
    if (says_float) rw.setAttribute(n, pass::intAttr(ta->name, static_cast<int64_t>(target_)));
  }

  /// A converted Constant holds its value in the target type (value_float / value_floats become
  /// a value tensor of it).
  void convertConstant(rewrite::Rewriter& rw, ir::Node* n) {
    std::optional<ir::Tensor> t = ir::constantNodeTensor(*n);
    if (!t || t->dtype() != DataType::kFloat) return;
    for (const char* old : {"value_float", "value_floats"}) {
      if (n->findAttribute(old) != nullptr) rw.removeAttribute(n, old);
    }
    ir::Attribute value;
    value.name = "value";
    value.kind = ir::Attribute::Kind::kTensor;
    value.tensors.push_back(convertedTensor(*t, target_));
    rw.setAttribute(n, std::move(value));
  }

  /// A kept node's inputs that were retyped get a Cast back to float32.
  void feedFloat(rewrite::Rewriter& rw, ir::Node* n) {
    for (size_t i = 0; i < n->numInputs(); ++i) {
      ir::Value* v = n->input(i);
      if (v != nullptr && retyped_.count(v) > 0) {
        rw.setInput(n, i, castOf(rw, v, DataType::kFloat, n, to_float_));
      }
    }
  }

  /// keep-io-types: each graph output that was retyped is a Cast back to float32 that takes the
  /// output's name (in a body too, so that a per-layer comparison pairs the value that means the
  /// same). Only the output changes: the graph's converted nodes that read the value keep reading
  /// it in the target type, its float32 readers already read a Cast of it.
  void restoreOutputs(rewrite::Rewriter& rw, ir::Graph& g) {
    ir::Node* ret = g.returnNode();
    std::set<ir::Value*> named;  // a value listed as two outputs is renamed once
    for (size_t i = 0; i < ret->numInputs(); ++i) {
      ir::Value* o = ret->input(i);
      if (retyped_.count(o) == 0 || o->owningGraph() != &g) continue;
      ir::Value* out = castOf(rw, o, DataType::kFloat, nullptr, to_float_);
      rw.setInput(ret, i, out);
      if (!o->name().empty() && named.insert(o).second) {
        std::string name = o->name();
        rw.setName(o, rw.uniqueName(g, name + (target_ == DataType::kFloat16 ? "_fp16" : "_bf16")));
        rw.setName(out, name);
      }
    }
  }

  DataType target_ = DataType::kUndefined;
  bool keep_io_ = true;
  std::set<std::string> keep_ops_, keep_nodes_, keep_values_, safe_values_;
  int64_t opset_ = 1;
  std::set<const ir::Value*> captured_;
  std::set<const ir::Node*> qdq_region_;
  bool top_ =
      true;  ///< converting the main graph (not a subgraph)  ///< below opset 19: nodes between DQ and Q
  std::set<ir::Value*> retyped_;
  std::set<ir::Value*> saturated_;  ///< outputs of nodes kept for kBeyondRange
  std::map<ir::Value*, ir::Value*> to_target_, to_float_, init_copies_;
  int64_t converted_ = 0, casts_ = 0, clips_ = 0;
};

}  // namespace

bool precisionMeasurable(const ir::Node& node) {
  const std::string& op = node.opType();
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  return defaultKept().count(op) > 0;
}

bool precisionAllows(const std::string& op, int64_t opset, DataType type) {
  if (type != DataType::kFloat16 && type != DataType::kBfloat16) return true;
  if (!hasPrecisionRow(op)) return true;
  const OpPrecision* row = precisionOf(op, opset);
  return row != nullptr && (type == DataType::kFloat16 ? row->fp16 : row->bf16);
}

std::unique_ptr<pass::Pass> createConvertPrecisionPass() {
  return std::make_unique<ConvertPrecisionPass>();
}

}  // namespace onnxopt::passes
