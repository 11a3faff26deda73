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

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/pass/pass_manager.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/passes/rewrite_rules.h"
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
  /// Pass ids left out of the pipeline (the level's or `pipeline`) wherever they occur
  /// (`opt --disable-pass`; passes::removePasses).
  std::vector<std::string> disabled_passes;
  /// Driver limits; where warnings and notes go (context.diagnostics, e.g. a
  /// CollectingDiagnosticSink).
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

/// Optimizes `model` in place. On failure the model may be partly rewritten (it stays valid IR:
/// the verifier ran after every pass that completed) and `result` still says what ran.
Status optimize(ir::Model& model, const OptimizeOptions& options, OptimizeResult* result = nullptr);

}  // namespace onnxopt
