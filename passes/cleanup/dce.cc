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
#include <map>
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
      for (size_t i = 0; i < n->numOutputs() && dead; ++i) {
        if (n->output(i) != nullptr && n->output(i)->hasUses()) dead = false;
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
    if (!unused.empty()) {
      rewriter.eraseInitializers(unused);
      bump("initializers-removed", static_cast<int64_t>(unused.size()));
      changed = true;
    }
    if (!graph.orphanValueInfos().empty()) {
      bump("value-info-removed", static_cast<int64_t>(graph.orphanValueInfos().size()));
      rewriter.dropOrphanValueInfos(graph);
      changed = true;
    }
    return changed;
  }

  StatusOr<bool> runOnModel(ir::Model& model, pass::PassContext& /*ctx*/) override {
    bool changed = false;
    // Functions reachable from the main graph, transitively through function bodies.
    using OpKey = std::pair<std::string, std::string>;  // domain, name
    std::map<OpKey, const ir::Graph*> bodies;
    for (const auto& f : model.functions) bodies.emplace(OpKey{f->domain, f->name}, f->body.get());
    std::set<OpKey> called;
    std::vector<const ir::Graph*> todo{model.graph.get()};
    std::unordered_set<std::string> domains;
    while (!todo.empty()) {
      const ir::Graph* g = todo.back();
      todo.pop_back();
      for (const ir::Node* n : g->allNodesRecursive()) {
        // Only other domains can go, and only calls can reach a function: the usual node (default
        // domain, no functions in the model) costs no set insertion.
        const std::string& d = n->domain();
        if (!d.empty() && d != "ai.onnx") domains.insert(d);
        if (bodies.empty()) continue;
        if (!called.insert({n->domain(), n->opType()}).second) continue;
        auto body = bodies.find({n->domain(), n->opType()});
        if (body != bodies.end()) todo.push_back(body->second);
      }
    }
    // Removed in one sweep each: erasing one at a time is quadratic in the count.
    size_t functions = std::erase_if(model.functions, [&](const auto& f) {
      return called.count({f->domain, f->name}) == 0;
    });
    size_t imports = std::erase_if(model.opset_imports, [&](const ir::OpsetImport& op) {
      std::string d = op.domain == "ai.onnx" ? "" : op.domain;
      return !d.empty() && domains.count(d) == 0;
    });
    if (functions > 0) bump("functions-removed", static_cast<int64_t>(functions));
    if (imports > 0) bump("opset-imports-removed", static_cast<int64_t>(imports));
    return changed || functions > 0 || imports > 0;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeEliminationPass>();
}

}  // namespace onnxopt::passes
