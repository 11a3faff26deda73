#include "onnxopt/pass/pass.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace onnxopt::pass {

StatusOr<const std::unordered_map<const ir::Value*, ir::ShapeValue>*> inferShapesOnce(
    ir::Model& model, PassContext& ctx, ir::ShapeInferenceStats* stats) {
  std::optional<std::pair<int64_t, int64_t>> now;
  if (ctx.graph_changes) now = std::pair(*ctx.graph_changes, ctx.type_refinements);
  if (now && ctx.inferred.at == now) return &ctx.inferred.values;
  ctx.inferred.at.reset();
  ctx.inferred.values.clear();
  ir::ShapeInferenceOptions options;
  options.diagnostics = ctx.diagnostics;
  options.values = &ctx.inferred.values;
  ASSIGN_OR_RETURN(ir::ShapeInferenceStats ran, ir::inferShapes(model, options));
  ctx.type_refinements += ran.refined;
  if (stats != nullptr) *stats = std::move(ran);
  if (now) ctx.inferred.at = std::pair(now->first, ctx.type_refinements);
  return &ctx.inferred.values;
}

Status Pass::setOption(const std::string& name, const std::string& /*value*/) {
  std::string known;
  for (const PassOption& o : options()) known += (known.empty() ? "" : ", ") + o.name;
  return invalidArgument("pass '{}' has no option '{}'{}", id(), name,
                         known.empty() ? " (it takes none)" : " (options: " + known + ")");
}

StatusOr<bool> Pass::parseBool(const std::string& name, const std::string& value) {
  if (value == "true" || value == "1" || value.empty()) return true;
  if (value == "false" || value == "0") return false;
  return invalidArgument("option '{}' takes true or false, not '{}'", name, value);
}

StatusOr<int64_t> Pass::parseInt(const std::string& name, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE) {
    return invalidArgument("option '{}' takes an integer, not '{}'", name, value);
  }
  return static_cast<int64_t>(v);
}

std::optional<std::string> PatternPass::patternKey() const {
  return options().empty() ? std::optional<std::string>("") : std::nullopt;
}

std::shared_ptr<const rewrite::PatternList> PatternPass::sharedPatterns() const {
  std::optional<std::string> key = patternKey();
  if (!key) return std::make_shared<const rewrite::PatternList>(patterns());
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const rewrite::PatternList>> built;
  std::string full = id() + '\n' + *key;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = built[full];
  if (slot == nullptr) slot = std::make_shared<const rewrite::PatternList>(patterns());
  return slot;
}

StatusOr<bool> PatternPass::run(ir::Model& model, PassContext& ctx) {
  std::shared_ptr<const rewrite::PatternList> list = sharedPatterns();
  std::vector<const rewrite::Pattern*> raw;
  for (const auto& p : *list) {
    raw.push_back(p.get());
    // Say why a pattern cannot apply at all: its operator needs a newer opset (--target-opset).
    int64_t have = model.opsetVersion(p->domain()).value_or(0);
    if (have > 0 && have < p->minOpset()) {
      setStat("skipped." + p->name() + ".needs-opset-" + std::to_string(p->minOpset()), 1);
    }
  }
  ASSIGN_OR_RETURN(rewrite::DriverResult result,
                   rewrite::applyPatternsGreedily(model, raw, ctx.driver));
  for (const auto& [name, count] : result.applied) bump(name, count);
  if (!result.converged) {
    report(ctx.diagnostics,
           {Severity::kWarning, "",
            fmt::format("pass '{}' did not converge in {} rounds; still applying: {}", id(),
                        result.rounds, fmt::join(result.last_round_patterns, ", "))});
  }
  return result.changed;
}

StatusOr<bool> GraphPass::run(ir::Model& model, PassContext& ctx) {
  bool changed = false;
  rewrite::Rewriter rewriter;
  for (ir::Graph* g : rewrite::allGraphs(model, ctx.driver.include_functions)) {
    ASSIGN_OR_RETURN(bool c, runOnGraph(*g, model, rewriter, ctx));
    changed |= c;
  }
  ASSIGN_OR_RETURN(bool c, runOnModel(model, ctx));
  changed |= c;
  // A pass that changed nothing erased nothing: a large graph is not walked again for garbage.
  if (changed) {
    for (auto& f : model.functions) f->body->collectGarbage();
    model.graph->collectGarbage();  // recurses into subgraphs
  }
  return changed;
}

}  // namespace onnxopt::pass
