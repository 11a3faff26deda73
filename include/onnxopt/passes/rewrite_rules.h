// Declarative rewrite rules (`opt --rewrite-rules RULES.onnxtxt`, the rewrite-rules pass): pairs
// of small graphs in ONNX's textual syntax, a pattern and its replacement, read with
// io::loadFunctionFile and compiled here. docs/rewrite_rules.md is the user's guide.
//
//   <domain: "pattern", opset_import: ["" : 18]>
//   swiglu (x, w1, w3) => (y) {
//     a = MatMul(x, w1)
//     s = Sigmoid(a)
//     g = Mul(a, s)
//     b = MatMul(x, w3)
//     y = Mul(g, b)
//   }
//   <domain: "replacement", opset_import: ["example" : 1]>
//   swiglu (x, w1, w3) => (y) {
//     y = example.SwiGLU(x, w1, w3)
//   }
//
// - A rule is a function of domain "pattern" and one of domain "replacement" with the same name.
//   The pattern's inputs are wildcards (a name read twice binds one value), its outputs the
//   values the replacement's outputs take the place of; its attribute parameters (`<alpha>`,
//   read as `alpha = @alpha`) bind attributes that the replacement may pass on.
// - A pattern node matches a node of the same op whose attributes equal the pattern's, where a
//   left-out attribute stands for its schema default on either side. Add, Mul, Max, Min, And,
//   Or, Xor, Equal and Sum of two inputs match their operands in either order.
// - `c = Constant <value = float {0.5}, rtol = 1e-3, atol = 0> ()` matches a constant of the same
//   shape whose elements are within the tolerance (default: exact, or within a float16/bfloat16
//   constant's own rounding).
// - Every value between matched nodes must be read only inside the match and be no graph output;
//   matches do not overlap (a matched node is gone before the next match is sought).
// - A replacement op outside the standard domains needs a function body for portable output: a
//   function of its domain and name in the same file, or, when the op is the replacement's only
//   node, the pattern itself (its inputs in the call's order).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "onnxopt/ir/function_file.h"
#include "onnxopt/pass/pass_manager.h"
#include "onnxopt/support/status.h"

namespace onnxopt::passes {

/// The attributes a rules file may set on a pattern's Constant beyond its schema: give them to
/// io::loadFunctionFile.
const std::vector<std::string>& ruleFileExtraAttributes();

/// Compiled rules: what the rewrite-rules pass applies. Immutable once compiled; shared by
/// every pipeline that runs it.
class RuleSet {
 public:
  struct Rule;
  ~RuleSet();
  /// The file the rules came from.
  const std::string& path() const { return path_; }
  /// The rules' names, in file order.
  std::vector<std::string> names() const;
  const std::vector<std::unique_ptr<Rule>>& rules() const { return rules_; }

 private:
  friend StatusOr<std::shared_ptr<const RuleSet>> compileRewriteRules(ir::FunctionFile file);
  RuleSet() = default;
  std::string path_;
  ir::FunctionFile file_;  ///< owns the functions the rules point into
  std::vector<std::unique_ptr<Rule>> rules_;
};

/// Checks and compiles the rules of a parsed rules file; errors name the file and line.
StatusOr<std::shared_ptr<const RuleSet>> compileRewriteRules(ir::FunctionFile file);

/// Gives `rules` to every rewrite-rules entry of `pipeline` (inside fixpoint groups too).
void setRewriteRules(std::vector<pass::PipelineEntry>& pipeline,
                     const std::vector<std::shared_ptr<const RuleSet>>& rules);

/// `pipeline` with the user's rewrites where they should see the graph: the rewrite-rules pass
/// (when `rules`) and then the passes `plugin_passes`, after -O1's cleanup when the pipeline
/// starts with it (so they match canonical chains, before the built-in fusions could take their
/// nodes), else first after infer-shapes; then a fixed point of cse and dce. Entries the
/// pipeline already names are not added again; with nothing to add, `pipeline` is returned.
std::string withUserRewrites(const std::string& pipeline, bool rules,
                             const std::vector<std::string>& plugin_passes = {});

}  // namespace onnxopt::passes
