// `opt check ORIGINAL OPTIMIZED` and `opt IN -o OUT --check`: run both models on the same inputs
// and compare every output (and, with --per-layer, every value both graphs name alike). The
// comparison is the library's (runtime::checkModels); this reads the command line's inputs and
// formats the report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/runtime/check.h"
#include "onnxopt/support/status.h"

namespace onnxopt::tools {

struct CheckOptions {
  std::vector<std::string> inputs;  ///< NAME=FILE
  std::vector<std::string> shapes;  ///< NAME=d0,d1,...
  uint64_t seed = 0;
  std::optional<double> atol;  ///< overrides the per-type default for every output
  std::optional<double> rtol;
  std::string runner = "reference";  ///< a registered runner (runtime::runnerNames())
  std::string against;  ///< the original's runner, when not `runner` (runtime::CheckOptions)
  bool per_layer = false;
  runtime::RunLimits limits;  ///< --max-iterations, --max-memory
  /// The TF32 policy of a cuda runner among runner and against: TF32 rounds float32 operands to
  /// float16's 10-bit mantissa, so a float32 model it touches is compared at float16's tolerance.
  kernels::Tf32 cuda_tf32 = kernels::Tf32::kConvolutions;
};

using runtime::CheckResult;

/// Reads the input files and shapes of `options`, checks them against `original` (errors name the
/// file or flag), and runs runtime::checkModels. Errors: a runner that cannot run a model (naming
/// the node), bad input specs, inputs that differ between the models.
StatusOr<CheckResult> checkModels(const std::string& original_path, const ir::Model& original,
                                  const std::string& optimized_path, const ir::Model& optimized,
                                  const CheckOptions& options);

/// The human-readable report: inputs, one line per output (and per layer), and the verdict.
std::string formatCheck(const CheckResult& result);

}  // namespace onnxopt::tools
