#include "onnxopt/api/run.h"

#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/passes/inline_functions.h"
#include "onnxopt/runtime/cuda_executor.h"

namespace onnxopt {

Status prepareForRunner(ir::Model& model, const std::string& runner) {
  passes::KeepCall keep;
  const ir::Model* m = &model;
  if (runner == "cuda") {
    keep = [m](const ir::Node& call) { return runtime::cudaRunsTargetCall(*m, call); };
  } else if (runner == "reference") {
    keep = [m](const ir::Node& call) {
      if (call.domain().empty() || call.domain() == "ai.onnx") return false;
      int64_t opset = m->opsetVersion(call.domain()).value_or(0);
      return kernels::hasReferenceKernel(kernels::referenceOpName(call.domain(), call.opType()),
                                         opset);
    };
  }
  RETURN_IF_ERROR(passes::inlineFunctionCalls(model, keep).status());
  if (runner == "cuda") RETURN_IF_ERROR(ir::inferShapes(model).status());
  return Status::ok();
}

}  // namespace onnxopt
