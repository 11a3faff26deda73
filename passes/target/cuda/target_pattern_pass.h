// The base of the CUDA target's fusions (passes/target/cuda/): a pattern pass that, after its
// patterns ran, gives the model a function for every ai.onnxopt op now called
// (attachTargetFunctions), so the output stays runnable by other tools; and the question every
// such fusion asks first (TargetClaims).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/passes/target_ops.h"

namespace onnxopt::passes {

/// The question every CUDA-target pattern asks before it rewrites: whether the target's kernel
/// table (PassContext::target_kernels of the run) claims `op` of ai.onnxopt on these operands'
/// element types (an unknown type is not checked). Without a table nothing is claimed.
class TargetClaims {
 public:
  explicit TargetClaims(const kernels::Capabilities* table) : table_(table) {}
  kernels::Support operator()(const std::string& op,
                              const std::vector<const ir::Value*>& inputs) const {
    if (table_ == nullptr)
      return kernels::Support::no("no target kernel table in the pass context");
    kernels::OpQuery q;
    q.domain = kTargetDomain;
    q.op = op;
    q.opset = kTargetDomainVersion;
    for (const ir::Value* v : inputs) {
      q.inputs.push_back(pass::elemTypeOf(v).value_or(DataType::kUndefined));
    }
    return table_->supports(q);
  }

 private:
  const kernels::Capabilities* table_;
};

/// A pattern of the CUDA target: it holds the run's TargetClaims.
class TargetPattern : public rewrite::Pattern {
 public:
  template <typename... Args>
  explicit TargetPattern(TargetClaims claims, Args&&... args)
      : Pattern(std::forward<Args>(args)...), claims_(claims) {}

 protected:
  const TargetClaims claims_;
};

/// Its patterns hold the run's kernel table (targetKernels()), so they are built for each run.
class TargetPatternPass : public pass::PatternPass {
 public:
  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    kernels_ = ctx.target_kernels;
    ASSIGN_OR_RETURN(bool changed, PatternPass::run(model, ctx));
    ASSIGN_OR_RETURN(int64_t added, attachTargetFunctions(model));
    return changed || added > 0;
  }

 protected:
  std::optional<std::string> patternKey() const override { return std::nullopt; }
  TargetClaims targetKernels() const { return TargetClaims(kernels_); }

 private:
  const kernels::Capabilities* kernels_ = nullptr;
};

}  // namespace onnxopt::passes
