// dce: dead code elimination.
//
//   %t = Op(...)   with no use of any output of Op        ==>   (Op removed)
//   initializer %w with no use, not a graph input          ==>   (removed)
//   value_info naming no value                             ==>   (removed)
//   function F never called (main graph, subgraphs, other functions)  ==>  (removed)
//   opset import of a domain no node uses (never the default domain)  ==>  (removed)
//
// Graph inputs and outputs are never removed; subgraph outputs bind by position and stay too.
// Nodes are visited in reverse order so a whole dead chain goes in one sweep; subgraphs are visited
// before the graph holding them, so inner uses of outer values are gone first.
#include <set>
#include <unordered_set>

#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

class DeadCodeEliminationPass final : public pass::GraphPass {
 public:
  std::string id() const override { return "dce"; }
  std::string summary() const override {
    return "Remove unused nodes, initializers, value_info, functions and opset imports";
  }

 protected:
  StatusOr<bool> runOnGraph(ir::Graph& graph, ir::Model& /*model*/, rewrite::Rewriter& rewriter,
                            pass::PassContext& /*ctx*/) override {
    bool changed = false;
    for (ir::Node* n = graph.lastNode(); n != nullptr;) {
      ir::Node* prev = n->prev();
      bool dead = true;
      for (ir::Value* out : n->outputs()) {
        if (out != nullptr && out->hasUses()) dead = false;
      }
      if (dead) {
        rewriter.eraseNode(n);
        bump("nodes-removed");
        changed = true;
      }
      n = prev;
    }
    std::vector<ir::Value*> unused;
    for (ir::Value* v : graph.initializers()) {
      if (!v->hasUses() && v->kind() == ir::Value::Kind::kInitializer) unused.push_back(v);
    }
    for (ir::Value* v : unused) {
      rewriter.eraseInitializer(v);
      bump("initializers-removed");
      changed = true;
    }
    if (!graph.orphanValueInfos().empty()) {
      bump("value-info-removed", static_cast<int64_t>(graph.orphanValueInfos().size()));
      graph.orphanValueInfos().clear();
      changed = true;
    }
    return changed;
  }

  StatusOr<bool> runOnModel(ir::Model& model, pass::PassContext& /*ctx*/) override {
    bool changed = false;
    // Functions reachable from the main graph, transitively through function bodies.
    std::set<std::pair<std::string, std::string>> called;
    std::vector<const ir::Graph*> todo{model.graph.get()};
    std::unordered_set<std::string> domains;
    while (!todo.empty()) {
      const ir::Graph* g = todo.back();
      todo.pop_back();
      for (const ir::Node* n : g->allNodesRecursive()) {
        domains.insert(n->domain() == "ai.onnx" ? "" : n->domain());
        if (!called.insert({n->domain(), n->opType()}).second) continue;
        for (const auto& f : model.functions) {
          if (f->domain == n->domain() && f->name == n->opType()) todo.push_back(f->body.get());
        }
      }
    }
    auto& fns = model.functions;
    for (auto it = fns.begin(); it != fns.end();) {
      if (called.count({(*it)->domain, (*it)->name})) {
        ++it;
        continue;
      }
      it = fns.erase(it);
      bump("functions-removed");
      changed = true;
    }
    auto& ops = model.opset_imports;
    for (auto it = ops.begin(); it != ops.end();) {
      std::string d = it->domain == "ai.onnx" ? "" : it->domain;
      if (d.empty() || domains.count(d)) {
        ++it;
        continue;
      }
      it = ops.erase(it);
      bump("opset-imports-removed");
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeEliminationPass>();
}

}  // namespace onnxopt::passes
