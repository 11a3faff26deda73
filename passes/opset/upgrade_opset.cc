// upgrade-opset: raises the default-domain opset of a model to `target` (`opt --target-opset N`),
// so that fusions needing newer operators (LayerNormalization 17, Gelu 20) can apply.
//
//   opset v, every node's op unchanged in (v, N] or converted  ==>  opset N
//
// passes/opset/opset_changes.inc (generated from the onnx package's schema history) lists each
// version where an op's signature changed or it was deprecated. A change is crossed when it is
// known to keep behaviour with the new defaults (kCompatible below), or by a converter here
// (attributes that became inputs, Softmax's axis semantics at 13, ...). Anything else (Resize,
// Upsample, Scan-8, a deprecated op) refuses the whole upgrade with a warning naming the op; the
// model stays as it was.
#include <cmath>
#include <limits>
#include <set>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

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
      if (ctx.warnings != nullptr) {
        *ctx.warnings << "opt: warning: not upgrading opset " << from << " to " << target_ << ": "
                      << why << "\n";
      }
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
    // Plan: every crossed change is compatible or has a converter; else refuse.
    std::vector<std::pair<ir::Node*, int>> conversions;
    for (ir::Graph* g : rewrite::allGraphs(model, false)) {
      for (ir::Node* n : *g) {
        if (!n->domain().empty() && n->domain() != "ai.onnx") continue;
        for (const OpsetChange& c : kChanges) {
          if (n->opType() != c.op || c.version <= from || c.version > target_) continue;
          if (c.kind == ChangeKind::kDeprecated) return refuse(n->opType() + " is deprecated");
          if (kCompatible.count({n->opType(), c.version})) continue;
          if (!canConvert(*n, c.version)) {
            return refuse(fmt::format("{} changed at opset {} and cannot be converted", n->opType(),
                                      c.version));
          }
          conversions.emplace_back(n, c.version);
        }
      }
    }
    // Check the conditions that depend on the node (ranks, attribute values) before changing
    // anything.
    for (const auto& [n, v] : conversions) {
      std::string why = precondition(*n, v);
      if (!why.empty()) return refuse(n->opType() + ": " + why);
    }
    rewrite::Rewriter rw;
    for (const auto& [n, v] : conversions) {
      rw.setInsertionPoint(n);
      convert(n, v, rw);
      bump("converted." + n->opType());
    }
    for (ir::OpsetImport& op : model.opset_imports) {
      if (op.domain.empty() || op.domain == "ai.onnx") op.version = target_;
    }
    model.ir_version = std::max(model.ir_version, minIrVersion(target_));
    bump("upgraded");
    return true;
  }

 private:
  static bool canConvert(const ir::Node& n, int v) {
    const std::string& op = n.opType();
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
    return false;
  }

  static std::string precondition(const ir::Node& n, int v) {
    const std::string& op = n.opType();
    if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
      auto rank = pass::rankOf(n.input(0));
      int64_t axis = pass::attrInt(n, "axis", 1);
      if (!rank) return "the input rank is unknown";
      if (pass::normalizeAxis(axis, *rank) != *rank - 1) return "the axis is not the last one";
    }
    if (op == "BatchNormalization" && v == 9 && pass::attrInt(n, "spatial", 1) != 1)
      return "spatial=0";
    if (op == "BatchNormalization" && v == 14) {
      for (size_t i = 1; i < n.numOutputs(); ++i) {
        if (n.output(i) != nullptr) return "training outputs";
      }
    }
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
      setInt(n, "axis", -1, rw);  // precondition: the old axis was the last one
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

std::unique_ptr<pass::Pass> createUpgradeOpsetPass() {
  return std::make_unique<UpgradeOpsetPass>();
}

}  // namespace onnxopt::passes
