// Pipelines of passes: textual form, parsing, and running with instrumentation.
//
//   pipeline := entry (',' entry)*
//   entry    := 'fixpoint' '(' pipeline ')'      repeat until nothing changes (capped)
//             | pass-id ['{' key '=' value (',' key '=' value)* '}']
//
// e.g. --passes='lift-constants,fixpoint(cse,dce),eliminate-noop{strict-signed-zero=false}'
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/pass/pass.h"

namespace onnxopt::pass {

/// Creates a pass by id; nullptr when unknown. Provided by the passes library (passes/registry.cc).
using PassFactory = std::unique_ptr<Pass> (*)(const std::string& id);

struct PipelineEntry {
  std::unique_ptr<Pass> pass;        ///< set for a pass entry
  std::vector<PipelineEntry> group;  ///< set for a fixpoint(...) entry
  /// The options given to the pass, as written ({key=value,...}), for pipelineToString.
  std::vector<std::pair<std::string, std::string>> options;
  bool isFixpoint() const { return pass == nullptr; }
  /// The pass manager's generation (PassManager::generation) right after this pass last ran and
  /// changed nothing, not even a type; unset once anything changed since. A pass is a function of
  /// the model, so running it again at that generation would do nothing: it is skipped.
  std::optional<int64_t> clean_at;
};

/// Parses a textual pipeline; errors name the offending position and the known pass ids.
StatusOr<std::vector<PipelineEntry>> parsePipeline(const std::string& text, PassFactory factory);
/// The canonical text of a pipeline (options included), for reproducers and reports.
std::string pipelineToString(const std::vector<PipelineEntry>& pipeline);

struct Instrumentation {
  bool print_ir_after_all = false;
  bool print_ir_after_change = false;
  bool verify_each = false;
  bool time_passes = false;
  bool count_nodes = false;        ///< record node counts per pass without printing (`--report`)
  std::ostream* ir_out = nullptr;  ///< where IR dumps go
};

/// Per-pass timing and counts gathered while running.
struct PassRecord {
  std::string id;
  int64_t runs = 0;
  int64_t changed_runs = 0;
  int64_t skipped_runs = 0;  ///< not run: nothing changed since it last changed nothing
  double seconds = 0;
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
};

class PassManager {
 public:
  PassManager(std::vector<PipelineEntry> pipeline, PassContext ctx, Instrumentation inst)
      : pipeline_(std::move(pipeline)), ctx_(std::move(ctx)), inst_(inst) {}

  /// Runs the pipeline. A fixpoint group repeats until a whole pass over it changes nothing, at
  /// most ctx.driver.max_rounds times (a warning, or an error under verify_convergence, past that).
  StatusOr<bool> run(ir::Model& model);

  /// Per-pass timing and node counts, in first-run order.
  const std::vector<PassRecord>& records() const { return records_; }
  /// Statistics of every pass, "pass-id.stat" -> value.
  std::vector<std::pair<std::string, int64_t>> statistics() const;
  /// The --time-passes table.
  std::string timingReport() const;
  const std::vector<PipelineEntry>& pipeline() const { return pipeline_; }

 private:
  StatusOr<bool> runEntries(std::vector<PipelineEntry>& entries, ir::Model& model);
  StatusOr<bool> runPass(Pass& pass, ir::Model& model);
  /// Runs a pass entry unless its clean_at says it would change nothing.
  StatusOr<bool> runPassEntry(PipelineEntry& entry, ir::Model& model);
  PassRecord& record(const std::string& id);
  /// Counts every change a pass could see: the pass runs that changed the graph, plus the values
  /// whose types inference changed (PassContext::type_refinements).
  int64_t generation() const { return changed_runs_ + ctx_.type_refinements; }

  std::vector<PipelineEntry> pipeline_;
  PassContext ctx_;
  Instrumentation inst_;
  std::vector<PassRecord> records_;
  int64_t changed_runs_ = 0;
};

}  // namespace onnxopt::pass
