// The library's entry point for optimization: what `opt IN -o OUT` does between reading and
// writing the model, one call for C++ users, the opt tool and the Python package alike.
//
//   auto model = onnxopt::io::loadModel("in.onnx");
//   onnxopt::OptimizeOptions options;          // -O2, the model's opset, no target
//   onnxopt::OptimizeResult result;
//   onnxopt::CollectingDiagnosticSink diagnostics;  // warnings and notes, e.g. a refused fold
//   options.context.diagnostics = &diagnostics;
//   Status st = onnxopt::optimize(**model, options, &result);
//   // result.pipeline is what ran (the text `opt --passes=` takes, to reproduce a failure)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/pass/pass_manager.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/passes/rewrite_rules.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/status.h"

namespace onnxopt {

struct OptimizeOptions {
  /// Optimization level 0-3 (passes/pipelines.cc says what each runs and why).
  int level = 2;
  /// When set, this textual pipeline runs instead of the level's (`opt --passes`).
  std::string pipeline;
  /// Raise the default-domain opset to this version first (0: keep the model's).
  int target_opset = 0;
  /// "fp16" or "bf16": convert-precision runs after -O1's cleanup (passes::withPrecision);
  /// "" converts nothing. keep_io_types, keep_ops and keep_nodes are its options.
  std::string precision;
  bool keep_io_types = true;
  std::vector<std::string> keep_ops;
  std::vector<std::string> keep_nodes;
  /// Weight-only int4/int8 quantization (quantize.weights set): quantize-weights runs after the
  /// portable rewrites (passes::withQuantize); the model must import opset 21+ (target_opset).
  passes::WeightQuantization quantize;
  /// Run --precision's range analysis first (runPrecisionAnalysis): the float32 model on the
  /// reference kernels, with `calibration_inputs` and seeded random values for the other inputs;
  /// its findings join keep_values and safe_values. A model it cannot run is converted without it
  /// (a warning says so); notes say what it found. `label` names the model in those messages.
  bool range_analysis = false;
  runtime::Feeds calibration_inputs;
  std::string label;
  /// Values whose producers and readers stay float32 (the range analysis' findings).
  std::vector<std::string> keep_values;
  /// Nodes (by first output) kept float32 by default that convert: measured within precision
  /// by the analysis (runtime::analyzePrecision), or reading a constant past the type's range
  /// that saturates without changing the output.
  std::vector<std::string> safe_values;
  /// The execution target whose rewrites -O3 adds: "" is portable ONNX, "cuda" adds the fusions
  /// to ai.onnxopt ops the CUDA runtime has kernels for (passes/pipelines.cc).
  std::string target;
  /// Declarative rewrite rules (`opt --rewrite-rules FILE`): read with io::loadFunctionFile
  /// (passing passes::ruleFileExtraAttributes()) and passes::compileRewriteRules. The
  /// rewrite-rules pass runs after -O1's cleanup (passes::withRewriteRules) and applies them all.
  std::vector<std::shared_ptr<const passes::RuleSet>> rewrite_rules;
  /// Write a model-local function for each op of a user's domain that the rules create, whose body
  /// is the subgraph it replaced, and for each op of a plugin that has a registered function body
  /// (false: `opt --no-function-bodies`; the output then runs only where that op has a kernel).
  bool function_bodies = true;
  /// Options for every entry of a pass in the pipeline (the level's or `pipeline`) that does not
  /// set them itself (passes::applyPassOptions), e.g. {"fold-constants", "fold-qdq", "true"};
  /// OptimizeResult::pipeline shows them.
  std::vector<passes::PassOptionSetting> pass_options;
  // The front ends' options that are pass options: each applies after `pass_options` (which win
  // for the same option), as {"pass", "option", value}.
  bool fold_qdq = false;                   ///< fold-constants: fold QuantizeLinear pairs
  bool fold_grow_weights = false;          ///< fold-constants: folds that grow the weights
  std::optional<int64_t> fold_size_limit;  ///< fold-constants: the largest folded output
  std::optional<int64_t>
      inline_max_nodes;  ///< inline-functions: the node limit (`opt --max-nodes`)
  /// freeze-initializer-inputs keeps the initializers that are graph inputs overridable.
  bool keep_initializer_inputs = false;
  /// Pass ids left out of the pipeline (the level's or `pipeline`) wherever they occur
  /// (`opt --disable-pass`; passes::removePasses).
  std::vector<std::string> disabled_passes;
  /// Driver limits; where warnings and notes go (context.diagnostics, e.g. a
  /// CollectingDiagnosticSink); the kernel table the CUDA target's passes ask
  /// (context.target_kernels: the CUDA kernels' when left null).
  pass::PassContext context;
  /// IR dumps, verification after each pass, timing.
  pass::Instrumentation instrumentation;
};

struct OptimizeResult {
  /// The canonical text of the pipeline that ran (set as soon as it is parsed, so also on failure).
  std::string pipeline;
  /// Per-pass runs, time and node counts, in first-run order.
  std::vector<pass::PassRecord> records;
  /// Every pass's statistics, "pass-id.stat" -> value.
  std::vector<std::pair<std::string, int64_t>> statistics;
  /// The --time-passes table (empty unless instrumentation.time_passes).
  std::string timing_report;
  /// Wall time of the passes.
  double seconds = 0;
};

/// The pass options that `options`' front-end fields stand for, after options.pass_options.
std::vector<passes::PassOptionSetting> passOptionSettings(const OptimizeOptions& options);

/// --precision's range analysis (runtime::analyzePrecision) of `model` before any pass: adds its
/// findings to options.keep_values and options.safe_values; warns (a skipped analysis) and notes
/// (what it found) through options.context.diagnostics. Errors: none; a failed run only warns.
void runPrecisionAnalysis(const ir::Model& model, OptimizeOptions& options);

/// Optimizes `model` in place (after the range analysis when options.range_analysis and
/// options.precision are set). On failure the model may be partly rewritten (it stays valid IR:
/// the verifier ran after every pass that completed) and `result` still says what ran.
Status optimize(ir::Model& model, const OptimizeOptions& options, OptimizeResult* result = nullptr);

}  // namespace onnxopt
