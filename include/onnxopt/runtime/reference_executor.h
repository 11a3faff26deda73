// The reference executor: runs a model's main graph on the CPU reference kernels, node by node. It
// is the numeric oracle inside onnxopt (`opt run`, `opt check`), not a fast runtime, and the
// built-in runner "reference" of the runner registry (executor.h).
#pragma once

#include <memory>

#include "onnxopt/ir/graph.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

/// Runs the model with `inputs` (by graph input name; inputs with a default initializer may be
/// left out). If with a constant or computed condition runs the taken branch; Loop and Scan are
/// not supported yet (kUnimplemented, naming the node). Errors name the node that failed.
StatusOr<ExecutionResult> runModel(const ir::Model& model, const Feeds& inputs,
                                   const ExecutionOptions& options = {});

/// runModel behind the Executor interface: the runner "reference". `model` must outlive it.
std::unique_ptr<Executor> createReferenceExecutor(const ir::Model& model);

}  // namespace onnxopt::runtime
