// The base of the CUDA target's fusions (passes/target/cuda/): a pattern pass that, after its
// patterns ran, gives the model a function for every ai.onnxopt op now called
// (attachTargetFunctions), so the output stays runnable by other tools.
#pragma once

#include "onnxopt/pass/pass.h"
#include "onnxopt/passes/target_ops.h"

namespace onnxopt::passes {

class TargetPatternPass : public pass::PatternPass {
 public:
  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    ASSIGN_OR_RETURN(bool changed, PatternPass::run(model, ctx));
    ASSIGN_OR_RETURN(int64_t added, attachTargetFunctions(model));
    return changed || added > 0;
  }
};

}  // namespace onnxopt::passes
