// freeze-initializer-inputs: graph inputs that carry an initializer become plain initializers.
//
//   graph (%x, %w) { initializer %w = T }   ==>   graph (%x) { initializer %w = T }
//
// Up to IR version 3 every initializer had to be listed as a graph input, and it is a constant:
// freezing changes nothing a caller can see. From IR 4 on, such an input is an overridable default;
// exporters (PyTorch's keep_initializers_as_inputs) wrote weights that way without meaning it, and
// they block folding and weight absorption. Those are frozen too unless keep-overridable=true
// (`opt --keep-initializer-inputs`); a note says how many were frozen. Main graph only.
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

class FreezeInitializerInputsPass final : public pass::Pass {
 public:
  std::string id() const override { return "freeze-initializer-inputs"; }
  std::string summary() const override {
    return "Treat graph inputs with an initializer as constants (always for IR < 4; for IR 4+ "
           "unless keep-overridable)";
  }
  std::vector<pass::PassOption> options() const override {
    return {{"keep-overridable", "bool", "false",
             "keep IR 4+ inputs with an initializer as overridable inputs "
             "(--keep-initializer-inputs)"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name != "keep-overridable") return Pass::setOption(name, value);
    ASSIGN_OR_RETURN(keep_overridable_, parseBool(name, value));
    return Status::ok();
  }

  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    if (model.ir_version >= 4 && keep_overridable_) return false;
    std::vector<ir::Value*> defaults;
    for (ir::Value* v : model.graph->inputs()) {
      if (v->initializer() != nullptr) defaults.push_back(v);
    }
    if (defaults.empty()) return false;
    rewrite::Rewriter rw;
    for (ir::Value* v : defaults) rw.freezeInputDefault(v);
    bump("frozen", static_cast<int64_t>(defaults.size()));
    if (model.ir_version >= 4) {
      report(ctx.diagnostics,
             {Severity::kNote, "",
              fmt::format("{} graph inputs with an initializer are treated as constants and are no "
                          "longer inputs (--keep-initializer-inputs keeps them overridable)",
                          defaults.size())});
    }
    return true;
  }

 private:
  bool keep_overridable_ = false;
};

}  // namespace

std::unique_ptr<pass::Pass> createFreezeInitializerInputsPass() {
  return std::make_unique<FreezeInitializerInputsPass>();
}

}  // namespace onnxopt::passes
