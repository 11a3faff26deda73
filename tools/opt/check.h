// `opt check ORIGINAL OPTIMIZED` and `opt IN -o OUT --check`: run both models on the same inputs
// and compare every output (and, with --per-layer, every value both graphs name alike).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/support/status.h"

namespace onnxopt::tools {

struct CheckOptions {
  std::vector<std::string> inputs;  ///< NAME=FILE
  std::vector<std::string> shapes;  ///< NAME=d0,d1,...
  uint64_t seed = 0;
  std::optional<double> atol;  ///< overrides the per-type default for every output
  std::optional<double> rtol;
  std::string runner = "reference";  ///< or "onnxruntime"
  bool per_layer = false;
};

struct CheckInput {
  std::string name;
  std::string summary;       ///< type, shape and value range, for the report
  std::string dynamic_dims;  ///< sizes chosen for its dynamic dims ("batch=2, H=32"), or empty
};

struct CheckResult {
  std::string runner;
  uint64_t seed = 0;
  std::vector<CheckInput> inputs;
  std::vector<runtime::TensorComparison> outputs;
  /// --per-layer: values present in both models, in the optimized model's topological order.
  std::vector<runtime::TensorComparison> layers;
  std::string first_failing_layer;  ///< empty when none
  std::string first_failing_op;     ///< the op producing it in the optimized model
  bool passed = false;
};

/// Runs both models (read from the given paths, already loaded) and compares them. Errors: a
/// runner that cannot run a model (naming the node), bad input specs, inputs that differ between
/// the models.
StatusOr<CheckResult> checkModels(const std::string& original_path, const ir::Model& original,
                                  const std::string& optimized_path, const ir::Model& optimized,
                                  const CheckOptions& options);

/// The human-readable report: inputs, one line per output (and per layer), and the verdict.
std::string formatCheck(const CheckResult& result);

}  // namespace onnxopt::tools
