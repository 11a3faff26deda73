// Checking a rewrite numerically: two models (or two executors) on the same inputs, every output
// compared (and, per layer, every value both name alike), as `opt check` and `opt IN -o OUT
// --check` do. The library functions take models or executors and return the results; reading
// input files, formatting reports and printing are the caller's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/runtime/inputs.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

struct CompareOptions {
  std::optional<double>
      atol;  ///< overrides the per-type default (defaultTolerance) for every value
  std::optional<double> rtol;
  bool per_layer = false;  ///< also compare every value both runs recorded under the same name
  /// The narrowest float type the actual model computes in (float16 or bfloat16 for a
  /// --precision conversion, whose outputs may still be float32): float values are held to that
  /// type's default tolerance. kUndefined: each value's own type. checkModels sets it.
  DataType compute_type = DataType::kUndefined;
};

/// The narrowest of float16, bfloat16 and float that `model`'s main graph holds in an
/// initializer or a node output, or casts to (bfloat16 counts as narrower: its tolerance is the
/// wider); kUndefined when none.
DataType narrowestFloatType(const ir::Model& model);

/// How the run of one model compares with the run of another on the same inputs.
struct ModelComparison {
  /// One per output of the expected run, in its order (missing from the actual run: failed).
  std::vector<TensorComparison> outputs;
  /// per_layer: values recorded by both runs under one name, of one shape and element type (or
  /// both float), in the actual run's order.
  std::vector<TensorComparison> layers;
  /// per_layer: values recorded by both runs under one name but of another shape or element
  /// type (`problem` says which), so not the same value: not compared. The optimizer gives a
  /// value a name only where it holds that name's value; another tool may not.
  std::vector<TensorComparison> unpaired;
  std::string first_failing_layer;  ///< empty when none
  std::string first_failing_op;     ///< the op producing it in the actual run
  bool passed = false;              ///< every output within tolerance
};

/// Compares `actual` against `expected`: outputs by name, and with per_layer the intermediates
/// both recorded (run them with ExecutionOptions::record_intermediates).
ModelComparison compareRuns(const ExecutionResult& expected, const ExecutionResult& actual,
                            const CompareOptions& options);

/// Runs both executors on `feeds` and compares their results (compareRuns). Errors: a run that
/// failed, with context saying which.
StatusOr<ModelComparison> compareModels(Executor& original, Executor& optimized, const Feeds& feeds,
                                        const CompareOptions& options);

struct CheckOptions {
  std::string runner = "reference";  ///< a name of the runner registry (runnerNames())
  /// The runner of the original (the expected side), when not `runner`: `opt check MODEL
  /// --runner cuda --against reference` runs one model on both and compares them.
  std::string against;
  /// Values for inputs by name; the other inputs without a default get seeded random values.
  /// Inputs with a default initializer keep it.
  Feeds inputs;
  /// Shapes of random inputs by name (their dynamic dims otherwise: named 2, unnamed 1, spatial
  /// dims of inputs feeding a Conv or pooling enough for every window).
  std::map<std::string, std::vector<int64_t>> shapes;
  uint64_t seed = 0;
  CompareOptions compare;
  /// Where the models were read from, if files: runners may read them, messages name them.
  std::string original_path;
  std::string optimized_path;
  /// Follows the model's name in the context of an error from running it (opt adds "(the
  /// reference runner; try --runner onnxruntime)").
  std::string failure_note;
  /// What each run may spend (ExecutionOptions::limits).
  RunLimits limits;
};

/// The inputs both models got, then how they compare.
struct CheckResult : ModelComparison {
  std::string runner;  ///< "cuda", or "cuda against reference" with CheckOptions::against
  uint64_t seed = 0;
  std::vector<InputValue> inputs;
};

/// The optimized model must take every input of the original that has no default, with the same
/// element type: otherwise the same inputs cannot be given to both (kInvalidArgument naming it).
Status checkSameInputs(const ir::Model& original, const ir::Model& optimized,
                       const CheckOptions& options);

/// Runs both models with the runner `options.runner` (the original with `options.against` where
/// set) on the same inputs and compares them. A
/// model whose spatial sizes were guessed too small for its windows is retried with larger ones.
/// Errors: an unknown runner, inputs that differ between the models, a given value or pinned
/// shape that does not fit its input, a runner that cannot run a model (naming the node).
StatusOr<CheckResult> checkModels(const ir::Model& original, const ir::Model& optimized,
                                  const CheckOptions& options);

}  // namespace onnxopt::runtime
