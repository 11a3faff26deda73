// The reference executor: runs a model's main graph on the CPU reference kernels, node by node. It
// is the numeric oracle inside onnxopt (`opt run`, `opt check`), not a fast runtime.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

struct ExecutionResult {
  std::vector<std::string> names;  ///< graph output names, in order
  std::vector<kernels::HostTensor> outputs;
  /// With ExecutionOptions::record_intermediates: every named node output of the main graph, in
  /// execution (topological) order.
  std::vector<std::pair<std::string, kernels::HostTensor>> intermediates;
};

struct ExecutionOptions {
  bool record_intermediates = false;  ///< keep every main-graph value (`opt check --per-layer`)
};

/// Runs the model with `inputs` (by graph input name; inputs with a default initializer may be
/// left out). If with a constant or computed condition runs the taken branch; Loop and Scan are
/// not supported yet (kUnimplemented, naming the node). Errors name the node that failed.
StatusOr<ExecutionResult> runModel(const ir::Model& model,
                                   const std::map<std::string, kernels::HostTensor>& inputs,
                                   const ExecutionOptions& options = {});

}  // namespace onnxopt::runtime
