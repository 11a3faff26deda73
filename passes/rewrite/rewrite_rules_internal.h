// The parts of rewrite-rules its two files share (rewrite_rules_compile.cc compiles a rules file,
// rewrite_rules.cc matches and applies the compiled rules): the compiled Rule and domain helpers.
#pragma once

#include "onnxopt/passes/rewrite_rules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "../opset/op_versions.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/passes/target_ops.h"
#include "onnxopt/rewrite/pattern.h"

namespace onnxopt::passes {
namespace rules_detail {

constexpr const char* kPatternDomain = "pattern";
constexpr const char* kReplacementDomain = "replacement";

inline std::string canonical(const std::string& domain) {
  return domain == "ai.onnx" ? "" : domain;
}

/// The since-version a default-domain `op` resolves to at `opset`; 0 when the op does not exist
/// there (or the table does not know it).
inline int64_t sinceVersion(const std::string& op, int64_t opset) {
  const OpVersion* v = resolveOpVersion(op, opset);
  return v == nullptr ? 0 : v->since;
}

}  // namespace rules_detail

/// A compiled rule: the pattern in match order, its constants and the replacement.
struct RuleSet::Rule {
  std::string name;
  std::string location;  ///< "rules.onnxtxt:12"
  const ir::FunctionFile* file = nullptr;
  const ir::Function* pattern = nullptr;
  const ir::Function* replacement = nullptr;
  /// Pattern nodes that match graph nodes (not Constants), in the order the match visits them:
  /// the anchor first, then each node's producers.
  std::vector<const ir::Node*> order;
  const ir::Node* anchor = nullptr;
  struct Constant {
    ir::Tensor value;
    double rtol = 0;
    double atol = 0;
  };
  std::unordered_map<const ir::Node*, Constant> constants;
  /// Pattern input (wildcard) of each replacement input.
  std::unordered_map<const ir::Value*, const ir::Value*> wildcard_of;
  /// Default-domain ops of both sides with their since-version at the rules' opset: the rule
  /// applies to a model whose opset resolves every one to the same version.
  std::vector<std::pair<std::string, int64_t>> ops;
  int64_t rules_opset = 0;
  /// Function bodies for the replacement's ops of the user's domains, and those domains' versions.
  std::vector<const ir::Function*> bodies;
  std::vector<std::unique_ptr<ir::Function>> derived_bodies;
  std::map<std::string, int64_t> domains;
};

}  // namespace onnxopt::passes
