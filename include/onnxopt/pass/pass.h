// Passes: named, documented transformations of a model with typed options and statistics.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/rewrite/pattern.h"
#include "onnxopt/support/diagnostics.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels {
class Capabilities;  // kernels/capabilities.h: the pass layer only carries the pointer
}  // namespace onnxopt::kernels

namespace onnxopt::pass {

/// Settings every pass run sees (from the command line or the library caller). What one pass
/// alone reads is an option of that pass (PassOption), set in the pipeline text.
struct PassContext {
  rewrite::DriverConfig driver;  ///< rounds cap, verify-convergence, --debug-patterns stream
  /// Where warnings and notes go (stderr in `opt`); nullptr drops them.
  DiagnosticSink* diagnostics = nullptr;
  /// What the execution target's kernels run: the target's passes (passes/target/cuda) rewrite
  /// only to ops it claims. Set by whoever runs the pipeline (onnxopt::optimize: the CUDA kernel
  /// table); nullptr: those passes rewrite nothing.
  const kernels::Capabilities* target_kernels = nullptr;
  /// Values whose type shape inference changed while passes ran (ShapeInferenceStats::refined),
  /// summed: a pass that infers shapes adds its run's count. Types are not graph changes (a pass
  /// that only refines them reports no change), but a pass may rewrite differently once they
  /// are known, so the pass manager skips a pass only while neither changed since it last did
  /// nothing.
  int64_t type_refinements = 0;
  /// The graph changes so far (pass runs that changed the model), set by the pass manager before
  /// each pass runs; unset when a pass runs alone, without one.
  std::optional<int64_t> graph_changes;
  /// What the last whole-model shape inference found (inferShapesOnce) and when: the integer
  /// contents of shape tensors, valid while neither the graph nor a type changed since.
  struct InferredShapes {
    std::optional<std::pair<int64_t, int64_t>> at;  ///< (graph_changes, type_refinements)
    std::unordered_map<const ir::Value*, ir::ShapeValue> values;
  } inferred;
};

/// Runs shape inference over the model (counting its refinements in ctx.type_refinements) and
/// returns what it knew of shape tensors, or returns what the last inference in this pass
/// manager's run found when nothing changed since (infer-shapes then fold-constants infers once).
/// Call it before the calling pass changes the graph: a change within the same pass run is not
/// yet counted.
/// `stats`, when given, receives the run's statistics (left as they are when the last one's
/// results were reused).
StatusOr<const std::unordered_map<const ir::Value*, ir::ShapeValue>*> inferShapesOnce(
    ir::Model& model, PassContext& ctx, ir::ShapeInferenceStats* stats = nullptr);

/// A pass option: its name, type and default, for --list-passes and option parsing.
struct PassOption {
  std::string name;
  std::string type;  ///< "bool", "int"
  std::string default_value;
  std::string help;
};

class Pass {
 public:
  virtual ~Pass() = default;
  /// The kebab-case id used on the command line.
  virtual std::string id() const = 0;
  virtual std::string summary() const = 0;
  virtual std::string description() const { return summary(); }
  virtual std::vector<PassOption> options() const { return {}; }
  /// Sets an option given as text; unknown names and bad values are errors.
  virtual Status setOption(const std::string& name, const std::string& value);

  /// Runs the pass; returns whether the model changed.
  virtual StatusOr<bool> run(ir::Model& model, PassContext& ctx) = 0;

  /// Counters the pass keeps (e.g. "nodes-removed"), summed over runs.
  const std::map<std::string, int64_t>& statistics() const { return stats_; }

 protected:
  void bump(const std::string& stat, int64_t by = 1) { stats_[stat] += by; }
  void setStat(const std::string& stat, int64_t value) { stats_[stat] = value; }
  static StatusOr<bool> parseBool(const std::string& name, const std::string& value);
  static StatusOr<int64_t> parseInt(const std::string& name, const std::string& value);

 private:
  std::map<std::string, int64_t> stats_;
};

/// A pass made of patterns applied greedily to a fixed point by the driver, over every graph.
class PatternPass : public Pass {
 public:
  StatusOr<bool> run(ir::Model& model, PassContext& ctx) override;

 protected:
  /// The patterns (options may shape them).
  virtual rewrite::PatternList patterns() const = 0;
  /// What the patterns depend on besides the pass id: patterns() then runs once per process for
  /// each distinct (id, key), and every run, in any thread, shares that list (patterns are
  /// immutable: matchAndRewrite is const, matchers are values). Building them cost about half of
  /// optimizing an empty model at -O2. The default is "" for a pass without options and nullopt
  /// (patterns built per run) for one with options: such a pass returns its options' values.
  virtual std::optional<std::string> patternKey() const;

 private:
  std::shared_ptr<const rewrite::PatternList> sharedPatterns() const;
};

/// A pass that works on one graph at a time; the pass manager's helper visits every graph
/// (subgraphs before their parents, function bodies too), so the pass itself never recurses.
class GraphPass : public Pass {
 public:
  StatusOr<bool> run(ir::Model& model, PassContext& ctx) override;

 protected:
  virtual StatusOr<bool> runOnGraph(ir::Graph& graph, ir::Model& model, rewrite::Rewriter& rewriter,
                                    PassContext& ctx) = 0;
  /// Model-level work after every graph was visited (e.g. unused functions).
  virtual StatusOr<bool> runOnModel(ir::Model& /*model*/, PassContext& /*ctx*/) { return false; }
};

}  // namespace onnxopt::pass
