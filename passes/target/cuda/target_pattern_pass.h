// The base of the CUDA target's fusions (passes/target/cuda/): a pattern pass that, after its
// patterns ran, gives the model a function for every ai.onnxopt op now called
// (attachTargetFunctions), so the output stays runnable by other tools; and the question every
// such fusion asks first (cudaClaims).
#pragma once

#include <string>
#include <vector>

#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/passes/target_ops.h"

namespace onnxopt::passes {

/// The CUDA kernel table's answer for `op` of ai.onnxopt on these operands' element types (an
/// unknown type is not checked).
inline kernels::Support cudaClaims(const std::string& op,
                                   const std::vector<const ir::Value*>& inputs) {
  kernels::OpQuery q;
  q.domain = kTargetDomain;
  q.op = op;
  q.opset = kTargetDomainVersion;
  for (const ir::Value* v : inputs) {
    q.inputs.push_back(pass::elemTypeOf(v).value_or(DataType::kUndefined));
  }
  return kernels::cudaCapabilities().supports(q);
}

class TargetPatternPass : public pass::PatternPass {
 public:
  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    ASSIGN_OR_RETURN(bool changed, PatternPass::run(model, ctx));
    ASSIGN_OR_RETURN(int64_t added, attachTargetFunctions(model));
    return changed || added > 0;
  }
};

}  // namespace onnxopt::passes
