// upgrade-opset: raises the default-domain opset of a model to `target` (`opt --target-opset N`),
// so that fusions needing newer operators (LayerNormalization 17, Gelu 20) can apply.
//
//   opset v, every node's op unchanged in (v, N] or converted  ==>  opset N
//
// passes/opset/opset_changes.inc (generated from the onnx package's schema history) lists each
// version where an op's signature changed or it was deprecated. A change is crossed when it is
// known to keep behaviour with the new defaults (kCompatible below), or by a converter here
// (attributes that became inputs, Softmax's axis semantics at 13, Resize's rounding and inputs
// and Upsample's replacement by Resize in passes/opset/resize_upgrade.cc, ...). Anything else
// (Scan-8, a deprecated op) refuses the whole upgrade with a warning naming the op; the model
// stays as it was.
//
// An upgrade must also keep the model runnable by the reference runtime:
// passes/opset/op_versions.inc (generated from onnxruntime's CPU kernel registry) says which op
// versions onnxruntime runs, and a node that runs at its current version must still run at its new
// one (GlobalLpPool-22, RoiAlign-22 and Bernoulli-22 do not). When the target fails either test,
// the pass raises the opset to the highest version below it that passes both, and says so.
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "op_versions.h"
#include "resize_upgrade.h"

namespace onnxopt::passes {
namespace {

enum class ChangeKind { kSignature, kDeprecated };
struct OpsetChange {
  const char* op;
  int version;
  ChangeKind kind;
};

#define SIGNATURE ChangeKind::kSignature
#define DEPRECATED ChangeKind::kDeprecated
constexpr OpsetChange kChanges[] = {
#define ONNXOPT_OPSET_CHANGE(op, version, kind) {op, version, kind},
#include "opset_changes.inc"
#undef ONNXOPT_OPSET_CHANGE
};
#undef SIGNATURE
#undef DEPRECATED

/// Signature changes that keep behaviour: added attributes or optional inputs whose defaults are
/// the old behaviour.
const std::set<std::pair<std::string, int>> kCompatible = {{"ArgMax", 12},
                                                           {"ArgMin", 12},
                                                           {"AveragePool", 10},
                                                           {"AveragePool", 19},
                                                           {"Cast", 19},
                                                           {"CastLike", 19},
                                                           {"Constant", 11},
                                                           {"Constant", 12},
                                                           {"DepthToSpace", 11},
                                                           {"DequantizeLinear", 13},
                                                           {"DequantizeLinear", 21},
                                                           {"DequantizeLinear", 23},
                                                           {"QuantizeLinear", 13},
                                                           {"QuantizeLinear", 19},
                                                           {"QuantizeLinear", 21},
                                                           {"QuantizeLinear", 23},
                                                           {"Resize", 18},
                                                           {"GRU", 14},
                                                           {"LSTM", 14},
                                                           {"RNN", 14},
                                                           {"GatherND", 12},
                                                           {"Gemm", 11},
                                                           {"LpPool", 18},
                                                           {"MaxPool", 8},
                                                           {"MaxPool", 10},
                                                           {"OptionalHasElement", 18},
                                                           {"Pad", 18},
                                                           {"Reshape", 14},
                                                           {"ScatterElements", 16},
                                                           {"ScatterND", 16},
                                                           {"Shape", 15},
                                                           {"TopK", 11}};

/// The smallest IR version that may import each opset (onnx/helper.py VERSION_TABLE).
int64_t minIrVersion(int64_t opset) {
  if (opset <= 8) return 3;
  if (opset == 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  return 11;
}

bool isReduce(const std::string& op) {
  return op.rfind("Reduce", 0) == 0;
}

class UpgradeOpsetPass final : public pass::Pass {
 public:
  std::string id() const override { return "upgrade-opset"; }
  std::string summary() const override {
    return "Raise the default-domain opset to target, converting ops whose signature changed";
  }
  std::vector<pass::PassOption> options() const override {
    return {{"target", "int", "0", "the opset to reach (0: leave the model as it is)"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name != "target") return Pass::setOption(name, value);
    ASSIGN_OR_RETURN(target_, parseInt(name, value));
    return Status::ok();
  }

  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    int64_t from = model.opsetVersion("").value_or(0);
    if (target_ <= from) return false;
    auto refuse = [&](const std::string& why) -> StatusOr<bool> {
      bump("refused");
      report(ctx.diagnostics,
             {Severity::kWarning, "",
              fmt::format("not upgrading opset {} to {}: {}", from, target_, why)});
      return false;
    };
    if (target_ > 23) return refuse("onnxopt knows opsets up to 23");
    if (from < 7) return refuse("opsets below 7 have other broadcasting rules");
    for (const auto& f : model.functions) {
      for (const auto& op : f->opset_imports) {
        if (op.domain.empty() || op.domain == "ai.onnx")
          return refuse("a function imports ai.onnx");
      }
    }
    // The highest opset up to the target that every node can cross.
    std::string why_not_target;
    std::vector<std::pair<ir::Node*, int>> conversions;
    int64_t to = target_;
    for (; to > from; --to) {
      conversions.clear();
      std::string why = plan(model, from, to, conversions);
      if (why.empty()) break;
      if (to == target_) why_not_target = std::move(why);
    }
    if (to == from) return refuse(why_not_target);
    if (to < target_) {
      report(ctx.diagnostics, {Severity::kWarning, "",
                               fmt::format("upgrading opset {} to {}, not {}: {}", from, to,
                                           target_, why_not_target)});
      bump("lowered-target");
    }
    rewrite::Rewriter rw;
    for (const auto& [n, v] : conversions) {
      rw.setInsertionPoint(n);
      convert(n, v, rw);
      bump("converted." + n->opType());
    }
    for (ir::OpsetImport& op : model.opset_imports) {
      if (op.domain.empty() || op.domain == "ai.onnx") op.version = to;
    }
    model.ir_version = std::max(model.ir_version, minIrVersion(to));
    bump("upgraded");
    return true;
  }

 private:
  /// Why the model cannot go from opset `from` to `to` (empty when it can); fills `conversions`
  /// with the nodes to convert and the version each crosses.
  static std::string plan(ir::Model& model, int64_t from, int64_t to,
                          std::vector<std::pair<ir::Node*, int>>& conversions) {
    for (ir::Graph* g : rewrite::allGraphs(model, false)) {
      for (ir::Node* n : *g) {
        if (!n->domain().empty() && n->domain() != "ai.onnx") continue;
        // An Upsample crossing opset 10 becomes a Resize and goes on with Resize's changes.
        bool to_resize = n->opType() == "Upsample" && to >= 10;
        std::string why = planOp(*n, n->opType(), from, to_resize ? 10 : to, conversions);
        if (why.empty() && to_resize) why = planOp(*n, "Resize", 10, to, conversions);
        if (!why.empty()) return why;
        const std::string& new_op = to_resize ? std::string("Resize") : n->opType();
        const OpVersion* old_version = resolveOpVersion(n->opType(), from);
        const OpVersion* new_version = resolveOpVersion(new_op, to);
        if (old_version != nullptr && new_version != old_version && old_version->runs_on_ort_cpu &&
            !new_version->runs_on_ort_cpu) {
          return fmt::format("{}-{} has no kernel in onnxruntime's CPU provider", new_op,
                             new_version->since);
        }
      }
    }
    // The conditions that depend on the node (ranks, attribute values, used outputs).
    for (const auto& [n, v] : conversions) {
      std::string why = precondition(*n, v);
      if (!why.empty()) return n->opType() + ": " + why;
    }
    return {};
  }

  /// Adds the conversions `n` needs for the changes of `op` in (from, to]; says why when one
  /// cannot be made.
  static std::string planOp(ir::Node& n, const std::string& op, int64_t from, int64_t to,
                            std::vector<std::pair<ir::Node*, int>>& conversions) {
    for (const OpsetChange& c : kChanges) {
      if (op != c.op || c.version <= from || c.version > to) continue;
      if (kCompatible.count({op, c.version})) continue;
      if (!canConvert(op, c.version)) {
        if (c.kind == ChangeKind::kDeprecated) return op + " is deprecated";
        return fmt::format("{} changed at opset {} and cannot be converted", op, c.version);
      }
      conversions.emplace_back(&n, c.version);
    }
    return {};
  }

  static bool canConvert(const std::string& op, int v) {
    if ((op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum" || op == "Split") && v == 13)
      return true;
    if (isReduce(op) && v == 18) return true;
    if (op == "Split" && v == 18) return true;
    if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && v == 13) return true;
    if ((op == "Clip" || op == "Pad") && v == 11) return true;
    if ((op == "Slice" || op == "TopK") && v == 10) return true;
    if (op == "Dropout" && v == 12) return true;
    if (op == "BatchNormalization" && (v == 9 || v == 14)) return true;
    if (op == "RoiAlign" && v == 16) return true;
    if (op == "Upsample" && (v == 9 || v == 10)) return true;
    if (op == "Resize" && (v == 11 || v == 13)) return true;
    return false;
  }

  /// The axis a Softmax, LogSoftmax or Hardmax before opset 13 takes from 13 on, when one does. The old ones
  /// flatten the dims from `axis` on into one; the new ones reduce over `axis` alone. They agree
  /// when the dims after `axis` are all 1 (a classifier's [N, C, 1, 1]), or there are none (then
  /// -1).
  static std::optional<int64_t> softmaxAxis13(const ir::Node& n) {
    auto rank = pass::rankOf(n.input(0));
    if (!rank) return std::nullopt;
    auto axis = pass::normalizeAxis(pass::attrInt(n, "axis", 1), *rank);
    if (!axis) return std::nullopt;
    if (*axis == *rank - 1) return -1;
    auto trailing = pass::staticDimsFrom(n.input(0), *axis + 1);
    if (!trailing) return std::nullopt;
    for (int64_t d : *trailing) {
      if (d != 1) return std::nullopt;
    }
    return *axis;
  }

  /// Softmax-11<axis=a>(x) -> Reshape(Softmax-13<axis=-1>(Flatten<axis=a>(x)), Shape(x)): the
  /// old ops' own definition (the dims from `a` on as one row), for any axis and rank.
  static void flattenSoftmax(ir::Node* n, rewrite::Rewriter& rw) {
    ir::Value* x = n->input(0);
    ir::Node* flat = rw.createNode("Flatten", "", {x});
    setInt(flat, "axis", pass::attrInt(*n, "axis", 1), rw);
    ir::Node* row = rw.createNode(n->opType(), n->domain(), {flat->output()});
    setInt(row, "axis", -1, rw);
    ir::Node* shape = rw.createNode("Shape", "", {x});
    ir::Node* back =
        rw.createNode("Reshape", "", {row->output(), shape->output()}, {n->output()->type()});
    rw.replaceNode(n, {back->output()});
  }

  static std::string precondition(const ir::Node& n, int v) {
    const std::string& op = n.opType();
    if (op == "Upsample" || op == "Resize") return resizeUpgradeBlocker(n, v);
    if (op == "BatchNormalization" && v == 9 && pass::attrInt(n, "spatial", 1) != 1)
      return "spatial=0";
    if (op == "BatchNormalization" && v == 14) {
      for (size_t i = 1; i < n.numOutputs(); ++i) {
        if (n.output(i) != nullptr) return "training outputs";
      }
    }
    // Dropout-10 in inference mode produces its own mask; from 12 on the mask is all true.
    if (op == "Dropout" && v == 12 && n.output(1) != nullptr && n.output(1)->hasUses())
      return "the mask output is used";
    if ((op == "Clip" || op == "Pad") && !pass::elemTypeOf(n.input(0)))
      return "the input type is unknown";
    return {};
  }

  /// Moves an ints attribute into a new int64 initializer input at `index` (absent inputs before it
  /// are added as empty).
  static void attrToInput(ir::Node* n, const char* attr, size_t index, rewrite::Rewriter& rw) {
    auto values = pass::attrInts(*n, attr);
    if (!values) return;
    ir::Value* v = rw.createInitializer(
        *n->owningGraph(), std::string(attr),
        pass::makeInt64Tensor(*values, {static_cast<int64_t>(values->size())}));
    while (n->numInputs() < index) rw.addInput(n, nullptr);
    if (n->numInputs() == index) {
      rw.addInput(n, v);
    } else {
      rw.setInput(n, index, v);
    }
    rw.removeAttribute(n, attr);
  }

  static ir::Value* scalarOfType(ir::Node* n, DataType dtype, double value, const char* name,
                                 rewrite::Rewriter& rw) {
    return rw.createInitializer(*n->owningGraph(), name, pass::makeFloatTensor(dtype, {}, {value}));
  }

  static void setInt(ir::Node* n, const char* name, int64_t v, rewrite::Rewriter& rw) {
    ir::Attribute a;
    a.name = name;
    a.kind = ir::Attribute::Kind::kInt;
    a.i = v;
    rw.setAttribute(n, std::move(a));
  }

  void convert(ir::Node* n, int v, rewrite::Rewriter& rw) {
    const std::string& op = n->opType();
    if (op == "Squeeze" || op == "Unsqueeze" || isReduce(op)) {
      attrToInput(n, "axes", 1, rw);
    } else if (op == "Split" && v == 13) {
      attrToInput(n, "split", 1, rw);
    } else if (op == "Split" && v == 18) {
      if (n->numInputs() < 2 || n->input(1) == nullptr) {
        setInt(n, "num_outputs", static_cast<int64_t>(n->numOutputs()), rw);
      }
    } else if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
      if (auto axis = softmaxAxis13(*n)) {
        setInt(n, "axis", *axis, rw);
      } else {
        flattenSoftmax(n, rw);
      }
    } else if (op == "Clip") {
      DataType t = *pass::elemTypeOf(n->input(0));
      const ir::Attribute* lo = n->findAttribute("min");
      const ir::Attribute* hi = n->findAttribute("max");
      ir::Value* min_v = lo ? scalarOfType(n, t, lo->f, "clip_min", rw) : nullptr;
      ir::Value* max_v = hi ? scalarOfType(n, t, hi->f, "clip_max", rw) : nullptr;
      if (min_v != nullptr || max_v != nullptr) rw.addInput(n, min_v);
      if (max_v != nullptr) rw.addInput(n, max_v);
      rw.removeAttribute(n, "min");
      rw.removeAttribute(n, "max");
    } else if (op == "Pad") {
      DataType t = *pass::elemTypeOf(n->input(0));
      const char* pads_attr = n->findAttribute("pads") ? "pads" : "paddings";
      float value = pass::attrFloat(*n, "value", 0.0f);
      attrToInput(n, pads_attr, 1, rw);
      if (value != 0.0f) rw.addInput(n, scalarOfType(n, t, value, "pad_value", rw));
      rw.removeAttribute(n, "value");
    } else if (op == "Slice") {
      auto axes = pass::attrInts(*n, "axes");
      attrToInput(n, "starts", 1, rw);
      attrToInput(n, "ends", 2, rw);
      if (axes) attrToInput(n, "axes", 3, rw);
    } else if (op == "TopK") {
      int64_t k = pass::attrInt(*n, "k", 0);
      ir::Value* kv = rw.createInitializer(*n->owningGraph(), "k", pass::makeInt64Tensor({k}, {1}));
      rw.addInput(n, kv);
      rw.removeAttribute(n, "k");
    } else if (op == "Dropout") {
      if (n->findAttribute("ratio")) {
        ir::Value* r =
            scalarOfType(n, DataType::kFloat, pass::attrFloat(*n, "ratio", 0.5f), "ratio", rw);
        rw.addInput(n, r);
        rw.removeAttribute(n, "ratio");
      }
    } else if (op == "BatchNormalization") {
      rw.removeAttribute(n, "spatial");
    } else if (op == "Upsample" || op == "Resize") {
      upgradeResize(n, v, rw);
    } else if (op == "RoiAlign") {
      if (!n->findAttribute("coordinate_transformation_mode")) {
        ir::Attribute a;
        a.name = "coordinate_transformation_mode";
        a.kind = ir::Attribute::Kind::kString;
        a.s = "output_half_pixel";  // the behaviour before opset 16
        rw.setAttribute(n, std::move(a));
      }
    }
  }

  int64_t target_ = 0;
};

}  // namespace

const OpVersion* resolveOpVersion(const std::string& op, int64_t opset) {
  static constexpr OpVersion kOpVersions[] = {
#define ONNXOPT_OP_VERSION(op, since, runs) {op, since, runs},
#include "op_versions.inc"
#undef ONNXOPT_OP_VERSION
  };
  static const auto* by_op = [] {
    auto* map = new std::unordered_map<std::string, std::vector<const OpVersion*>>();
    for (const OpVersion& v : kOpVersions) (*map)[v.op].push_back(&v);  // ascending since
    return map;
  }();
  auto it = by_op->find(op);
  if (it == by_op->end()) return nullptr;
  const OpVersion* found = nullptr;
  for (const OpVersion* v : it->second) {
    if (v->since <= opset) found = v;
  }
  return found;
}

std::unique_ptr<pass::Pass> createUpgradeOpsetPass() {
  return std::make_unique<UpgradeOpsetPass>();
}

}  // namespace onnxopt::passes
