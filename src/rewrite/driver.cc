#include <algorithm>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "onnxopt/rewrite/pattern.h"

namespace onnxopt::rewrite {

int64_t PatternContext::opset(const std::string& domain) const {
  return model_.opsetVersion(domain).value_or(0);
}

void PatternContext::failImpl(const std::string& reason) {
  if (debug_ == nullptr || pattern_ == nullptr || node_ == nullptr) return;
  std::string where = node_->name().empty() && node_->output(0) != nullptr
                          ? "'" + node_->output(0)->name() + "'"
                          : "'" + node_->name() + "'";
  *debug_ << fmt::format("[pattern] {} on {} {}: no match: {}\n", pattern_->name(), node_->opType(),
                         where, reason);
}

bool Pattern::anchorsOn(const ir::Node& node, const PatternContext& ctx) const {
  return anchorsOn(node, ctx.opset(node.domain()));
}

bool Pattern::anchorsOn(const ir::Node& node, int64_t opset) const {
  if (root_op_ != "*" && (node.opType() != root_op_ || node.domain() != domain_)) return false;
  return opset >= min_opset_ && opset <= max_opset_;
}

bool isAlive(const ir::Node* node) {
  while (node != nullptr) {
    if (node->isErased()) return false;
    node = node->owningGraph()->parentNode();
  }
  return true;
}

namespace {

void postOrder(ir::Graph& graph, std::vector<ir::Graph*>& out) {
  for (ir::Node* n : graph) {
    for (ir::Graph* g : n->subgraphs()) postOrder(*g, out);
  }
  out.push_back(&graph);
}

/// Calls `f` on every node of `graph` and its subgraphs, a node before its subgraphs' nodes.
template <typename F>
void forEachNodePreOrder(ir::Graph& graph, F&& f) {
  for (ir::Node* n : graph) {
    f(n);
    for (ir::Graph* g : n->subgraphs()) forEachNodePreOrder(*g, f);
  }
}

/// The worklist of one round, fed by the rewriter's notifications.
class Worklist final : public RewriteListener {
 public:
  /// Root op types of the patterns; empty when some pattern anchors on any op ("*").
  explicit Worklist(std::vector<std::string> roots) : roots_(std::move(roots)) {}

  /// Queues every node that some pattern may anchor on. A node of another op type can never
  /// match, so a pass whose patterns root at ops the graph lacks costs one walk.
  void seed(ir::Model& model, bool include_functions) {
    queue_.clear();
    marks_.reset();
    auto add = [this](ir::Node* n) {
      if (!mayAnchor(*n)) return;
      marks_.setQueued(n, true);
      queue_.push_back(n);
    };
    if (include_functions) {
      for (auto& f : model.functions) forEachNodePreOrder(*f->body, add);
    }
    forEachNodePreOrder(*model.graph, add);
    seeded_ = queue_.size();
  }
  /// How many nodes the last seed queued.
  size_t seeded() const { return seeded_; }

  ir::Node* pop() {
    while (!queue_.empty()) {
      ir::Node* n = queue_.front();
      queue_.pop_front();
      // An erased node stays allocated until the round ends (collectGarbage), so its marks can
      // still be read here.
      if (!isAlive(n) || marks_.visited(n)) continue;
      marks_.setQueued(n, false);
      marks_.setVisited(n);
      return n;
    }
    return nullptr;
  }

  void nodeCreated(ir::Node* node) override {
    push(node);
    for (ir::Graph* g : node->subgraphs()) {
      forEachNodePreOrder(*g, [this](ir::Node* n) { push(n); });
    }
  }
  void nodeModified(ir::Node* node) override { push(node); }
  void valueUsersChanged(ir::Value* value) override {
    if (value->producer() != nullptr) push(value->producer());
    for (const Use& use : value->uses()) {
      if (use.user != use.user->owningGraph()->returnNode()) push(use.user);
    }
  }

 private:
  using Use = ir::Use;
  void push(ir::Node* node) {
    if (marks_.visited(node) || marks_.queued(node)) return;  // next round sees it
    marks_.setQueued(node, true);
    queue_.push_back(node);
  }

  bool mayAnchor(const ir::Node& n) const {
    if (roots_.empty()) return true;
    return std::find(roots_.begin(), roots_.end(), n.opType()) != roots_.end();
  }

  std::vector<std::string> roots_;
  std::deque<ir::Node*> queue_;
  ir::WorklistMarks marks_;
  size_t seeded_ = 0;
};

/// The patterns that may anchor on each op type, in the given order: those rooted at it and those
/// rooted at any op ("*", also the list for other op types).
class PatternIndex {
 public:
  explicit PatternIndex(const std::vector<const Pattern*>& ordered) {
    for (const Pattern* p : ordered) {
      if (p->rootOp() == "*") {
        any_.push_back(p);
        for (auto& [op, list] : by_op_) list.push_back(p);
      } else if (by_op_.find(p->rootOp()) == by_op_.end()) {
        std::vector<const Pattern*> list = any_;
        list.push_back(p);
        by_op_.emplace(p->rootOp(), std::move(list));
      } else {
        by_op_[p->rootOp()].push_back(p);
      }
    }
  }
  const std::vector<const Pattern*>& candidates(const std::string& op) const {
    auto it = by_op_.find(op);
    return it == by_op_.end() ? any_ : it->second;
  }

 private:
  std::unordered_map<std::string, std::vector<const Pattern*>> by_op_;
  std::vector<const Pattern*> any_;
};

/// The distinct root ops of `patterns`, or none when one of them anchors on any op.
std::vector<std::string> rootOps(const std::vector<const Pattern*>& patterns) {
  std::vector<std::string> roots;
  for (const Pattern* p : patterns) {
    if (p->rootOp() == "*") return {};
    if (std::find(roots.begin(), roots.end(), p->rootOp()) == roots.end()) {
      roots.push_back(p->rootOp());
    }
  }
  return roots;
}

}  // namespace

std::vector<ir::Graph*> allGraphs(ir::Model& model, bool include_functions) {
  std::vector<ir::Graph*> out;
  if (include_functions) {
    for (auto& f : model.functions) postOrder(*f->body, out);
  }
  postOrder(*model.graph, out);
  return out;
}

StatusOr<DriverResult> applyPatternsGreedily(ir::Model& model,
                                             const std::vector<const Pattern*>& patterns,
                                             const DriverConfig& config) {
  // Highest benefit first; ties keep the given order.
  std::vector<const Pattern*> ordered = patterns;
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Pattern* a, const Pattern* b) { return a->benefit() > b->benefit(); });

  DriverResult result;
  const PatternIndex index(ordered);
  Worklist worklist(rootOps(ordered));
  Rewriter rewriter(&worklist);
  PatternContext ctx(rewriter, model, config.debug);
  bool round_changed = true;
  while (round_changed && result.rounds < config.max_rounds) {
    ++result.rounds;
    round_changed = false;
    std::map<std::string, int64_t> this_round;
    worklist.seed(model, config.include_functions);
    // Nodes a rewrite creates are visited in the same round, so a pattern whose result it
    // matches again (a user's rule, say) would never end a round: past this many rewrites the
    // round ends, and the rounds cap bounds the rest.
    const int64_t budget = 8 * static_cast<int64_t>(worklist.seeded()) + 1000;
    int64_t rewrites = 0;
    while (rewrites < budget) {
      ir::Node* node = worklist.pop();
      if (node == nullptr) break;
      // The patterns of the node's op type, and its domain's opset once (not once per pattern).
      const int64_t opset = ctx.opset(node->domain());
      for (const Pattern* p : index.candidates(node->opType())) {
        if (!p->anchorsOn(*node, opset)) continue;
        ctx.setCurrent(p, node);
        rewriter.setInsertionPoint(node);
        if (!p->matchAndRewrite(node, ctx)) continue;
        round_changed = true;
        ++rewrites;
        ++this_round[p->name()];
        ++result.applied[p->name()];
        if (config.debug != nullptr) {
          *config.debug << fmt::format("[pattern] {} applied\n", p->name());
        }
        break;  // the node may be gone; what it became is on the worklist
      }
    }
    result.changed |= round_changed;
    result.last_round_patterns.clear();
    for (const auto& [name, count] : this_round) result.last_round_patterns.push_back(name);
  }
  // Nothing applied means nothing was erased: a large graph is not walked again for garbage.
  if (result.changed) {
    for (auto& f : model.functions) f->body->collectGarbage();
    model.graph->collectGarbage();  // recurses into subgraphs
  }
  result.converged = !round_changed;
  if (!result.converged && config.verify_convergence) {
    return makeError(StatusCode::kResourceExhausted,
                     "patterns did not converge in {} rounds; still applying: {}",
                     config.max_rounds, fmt::join(result.last_round_patterns, ", "));
  }
  return result;
}

}  // namespace onnxopt::rewrite
