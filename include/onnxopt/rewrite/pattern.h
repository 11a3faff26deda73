// Patterns: small match-and-rewrite objects anchored on an op type, and the greedy driver that
// applies a set of them to a fixed point.
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnxopt/ir/graph.h"
#include "onnxopt/rewrite/rewriter.h"
#include "onnxopt/support/status.h"

namespace onnxopt::rewrite {

class Pattern;

/// What a pattern sees besides the node: the rewriter, the model (for opsets) and the debug log.
class PatternContext {
 public:
  PatternContext(Rewriter& rewriter, const ir::Model& model, std::ostream* debug)
      : rewriter_(rewriter), model_(model), debug_(debug) {}

  Rewriter& rewriter() { return rewriter_; }
  const ir::Model& model() const { return model_; }
  /// The imported opset version of `domain`, or 0 when it is not imported.
  int64_t opset(const std::string& domain = "") const;

  /// Records why the current pattern did not apply (printed under --debug-patterns) and returns
  /// false, so a pattern can write `return ctx.fail("input is not constant");`.
  template <typename... Args>
  bool fail(fmt::format_string<Args...> format, Args&&... args) {
    if (debug_ != nullptr) failImpl(fmt::format(format, std::forward<Args>(args)...));
    return false;
  }
  bool debugging() const { return debug_ != nullptr; }

  // Set by the driver around each attempt.
  void setCurrent(const Pattern* pattern, const ir::Node* node) {
    pattern_ = pattern;
    node_ = node;
  }
  std::ostream* debugStream() const { return debug_; }

 private:
  void failImpl(const std::string& reason);

  Rewriter& rewriter_;
  const ir::Model& model_;
  std::ostream* debug_;
  const Pattern* pattern_ = nullptr;
  const ir::Node* node_ = nullptr;
};

/// A local rewrite anchored on one op type. Subclasses open their file with the rule as algebra.
class Pattern {
 public:
  /// `root_op` "*" anchors on every op. The pattern is tried only when the root domain's imported
  /// opset lies in [min_opset, max_opset].
  Pattern(std::string name, std::string root_op, std::string domain = "", int benefit = 1,
          int64_t min_opset = 1, int64_t max_opset = INT64_MAX)
      : name_(std::move(name)),
        root_op_(std::move(root_op)),
        domain_(std::move(domain)),
        benefit_(benefit),
        min_opset_(min_opset),
        max_opset_(max_opset) {}
  virtual ~Pattern() = default;

  const std::string& name() const { return name_; }
  const std::string& rootOp() const { return root_op_; }
  const std::string& domain() const { return domain_; }
  int benefit() const { return benefit_; }
  int64_t minOpset() const { return min_opset_; }
  int64_t maxOpset() const { return max_opset_; }
  bool anchorsOn(const ir::Node& node, const PatternContext& ctx) const;
  /// The same, given the opset the model imports for the node's domain.
  bool anchorsOn(const ir::Node& node, int64_t opset) const;

  /// Tries to rewrite at `node`; returns true when it changed the IR (through ctx.rewriter() only).
  virtual bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const = 0;

 private:
  std::string name_;
  std::string root_op_;
  std::string domain_;
  int benefit_;
  int64_t min_opset_;
  int64_t max_opset_;
};

using PatternList = std::vector<std::unique_ptr<Pattern>>;

struct DriverConfig {
  int max_rounds = 10;              ///< XLA uses 25, MLIR 10
  bool verify_convergence = false;  ///< non-convergence is an error instead of a warning
  bool include_functions = false;   ///< also rewrite model-local function bodies
  std::ostream* debug = nullptr;    ///< --debug-patterns output
};

struct DriverResult {
  bool changed = false;
  bool converged = true;
  int rounds = 0;
  std::map<std::string, int64_t> applied;        ///< pattern name -> times applied
  std::vector<std::string> last_round_patterns;  ///< patterns that still applied in the last round
};

/// Applies `patterns` to every node of the model's graphs (subgraphs included, and function bodies
/// when configured) until a round changes nothing, for at most `max_rounds` rounds. Each round
/// visits every live node once; nodes created or modified during a round are visited in it if not
/// yet visited, else in the next round; a round ends after 8 rewrites per node it started with
/// (plus 1000), so a pattern that matches its own result cannot hold one round forever.
/// Non-convergence is reported in the result (and is an error
/// under verify_convergence).
StatusOr<DriverResult> applyPatternsGreedily(ir::Model& model,
                                             const std::vector<const Pattern*>& patterns,
                                             const DriverConfig& config);

/// Every graph of the model in post-order (subgraphs before the graph that holds them), main graph
/// last; function bodies first when `include_functions`.
std::vector<ir::Graph*> allGraphs(ir::Model& model, bool include_functions = true);

/// True when `node` is live: neither it nor any node holding its enclosing subgraphs is erased.
bool isAlive(const ir::Node* node);

}  // namespace onnxopt::rewrite
