#include "onnxopt/rewrite/rewriter.h"

#include <unordered_set>

namespace onnxopt::rewrite {
namespace {

void collectNames(const ir::Graph& graph, std::unordered_set<std::string>& names) {
  for (const ir::Value* v : graph.inputs()) names.insert(v->name());
  for (const ir::Value* v : graph.initializers()) names.insert(v->name());
  for (const ir::Node* n : graph) {
    for (const ir::Value* v : n->outputs()) {
      if (v != nullptr) names.insert(v->name());
    }
    for (const ir::Graph* g : n->subgraphs()) collectNames(*g, names);
  }
}

}  // namespace

bool isNamedOutput(const ir::Value* value) {
  for (const ir::Use& use : value->uses()) {
    const ir::Graph* g = use.user->owningGraph();
    if (use.user == g->returnNode() && g->parentNode() == nullptr) return true;
  }
  return false;
}

std::string uniqueValueName(const ir::Graph& graph, const std::string& base) {
  const ir::Graph* root = &graph;
  while (root->parentGraph() != nullptr) root = root->parentGraph();
  std::unordered_set<std::string> names;
  collectNames(*root, names);
  if (!base.empty() && !names.count(base)) return base;
  for (size_t i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!names.count(candidate)) return candidate;
  }
}

ir::Node* Rewriter::createNode(const std::string& op_type, const std::string& domain,
                               const std::vector<ir::Value*>& inputs, size_t num_outputs) {
  ONNXOPT_CHECK(insert_graph_ != nullptr, "Rewriter::createNode without an insertion point");
  ir::Node* node = insert_graph_->createNode(op_type, domain, inputs, num_outputs, insert_before_);
  changed_ = true;
  if (listener_) listener_->nodeCreated(node);
  return node;
}

ir::Value* Rewriter::createInitializer(ir::Graph& graph, const std::string& base_name,
                                       ir::Tensor tensor) {
  std::string name = uniqueValueName(graph, base_name.empty() ? "const" : base_name);
  tensor.setName(name);
  changed_ = true;
  return graph.addInitializer(name, std::move(tensor));
}

bool Rewriter::canReplaceKeepingNames(const ir::Value* from, const ir::Value* to) const {
  if (!isNamedOutput(from)) return true;
  // Graph inputs keep their names; a value that is already a model output has its own name.
  return to->kind() != ir::Value::Kind::kGraphInput && to->owningGraph() == from->owningGraph() &&
         !isNamedOutput(to);
}

void Rewriter::notifyUsers(ir::Value* value) {
  if (listener_ == nullptr) return;
  listener_->valueUsersChanged(value);
  for (const ir::Use& use : value->uses()) {
    if (use.user != use.user->owningGraph()->returnNode()) listener_->nodeModified(use.user);
  }
}

void Rewriter::replaceAllUsesWith(ir::Value* from, ir::Value* to) {
  ONNXOPT_CHECK(from != to, "replacing a value with itself");
  changed_ = true;
  if (isNamedOutput(from)) {
    if (canReplaceKeepingNames(from, to)) {
      // `to` takes over the output's name; `from` is left unnamed (it is about to be dead).
      std::string name = from->name();
      from->setName(to->name());
      to->setName(name);
      if (!to->type().isKnown()) to->setType(from->type());
    } else {
      // Keep the name with an Identity: the graph output stays `from`'s name.
      ir::Graph* g = from->owningGraph();
      // At the end: graph outputs are read after every node, and `to` is surely defined by then.
      ir::Node* id = g->createNode("Identity", "", {to}, 1);
      if (listener_) listener_->nodeCreated(id);
      ir::Value* named = id->output();
      named->setName(from->name());
      named->setType(from->type().isKnown() ? from->type() : to->type());
      from->setName("");
      // Only the top-level output uses go to the Identity; every other use goes to `to`.
      std::vector<ir::Use> uses = from->uses();
      for (const ir::Use& use : uses) {
        bool top_output = use.user == use.user->owningGraph()->returnNode() &&
                          use.user->owningGraph()->parentNode() == nullptr;
        use.user->setInput(use.index, top_output ? named : to);
      }
      notifyUsers(to);
      return;
    }
  }
  from->replaceAllUsesWith(to);
  notifyUsers(to);
}

void Rewriter::replaceNode(ir::Node* node, const std::vector<ir::Value*>& values) {
  ONNXOPT_CHECK(values.size() == node->numOutputs(), "replaceNode needs one value per output");
  for (size_t i = 0; i < values.size(); ++i) {
    ir::Value* out = node->output(i);
    if (out == nullptr || !out->hasUses()) continue;
    ONNXOPT_CHECK(values[i] != nullptr, "replacing a used output with nothing");
    replaceAllUsesWith(out, values[i]);
  }
  eraseNode(node);
}

void Rewriter::eraseNode(ir::Node* node) {
  std::vector<ir::Value*> inputs;
  for (ir::Value* v : node->inputs()) {
    if (v != nullptr) inputs.push_back(v);
  }
  if (listener_) listener_->nodeErased(node);
  node->owningGraph()->eraseNode(node);
  changed_ = true;
  // Producers of the inputs may now be dead or newly matchable.
  if (listener_) {
    for (ir::Value* v : inputs) {
      listener_->valueUsersChanged(v);
      if (v->producer() != nullptr) listener_->nodeModified(v->producer());
    }
  }
}

void Rewriter::setInput(ir::Node* node, size_t index, ir::Value* value) {
  ir::Value* old = node->input(index);
  node->setInput(index, value);
  changed_ = true;
  if (listener_) {
    listener_->nodeModified(node);
    if (old != nullptr) {
      listener_->valueUsersChanged(old);
      if (old->producer() != nullptr) listener_->nodeModified(old->producer());
    }
  }
}

void Rewriter::addInput(ir::Node* node, ir::Value* value) {
  node->addInput(value);
  changed_ = true;
  if (listener_) listener_->nodeModified(node);
}

void Rewriter::removeInput(ir::Node* node, size_t index) {
  ir::Value* old = node->input(index);
  node->removeInput(index);
  changed_ = true;
  if (listener_) {
    listener_->nodeModified(node);
    if (old != nullptr && old->producer() != nullptr) listener_->nodeModified(old->producer());
  }
}

void Rewriter::setAttribute(ir::Node* node, ir::Attribute attribute) {
  node->setAttribute(std::move(attribute));
  changed_ = true;
  if (listener_) listener_->nodeModified(node);
}

void Rewriter::removeAttribute(ir::Node* node, const std::string& name) {
  if (node->removeAttribute(name)) {
    changed_ = true;
    if (listener_) listener_->nodeModified(node);
  }
}

void Rewriter::eraseInitializer(ir::Value* value) {
  value->owningGraph()->removeInitializer(value);
  changed_ = true;
}

}  // namespace onnxopt::rewrite
