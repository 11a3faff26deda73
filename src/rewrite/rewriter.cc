#include "onnxopt/rewrite/rewriter.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "onnxopt/ir/builder.h"

namespace onnxopt::rewrite {
namespace {

using B = ir::Builder;

/// Calls `add` with the name of every value of `graph` and its subgraphs.
template <typename Add>
void forEachName(const ir::Graph& graph, const Add& add) {
  for (const ir::Value* v : graph.inputs()) add(v->name());
  for (const ir::Value* v : graph.initializers()) add(v->name());
  for (const ir::Node* n : graph) {
    for (const ir::Value* v : n->outputs()) {
      if (v != nullptr) add(v->name());
    }
    for (const ir::Graph* g : n->subgraphs()) forEachName(*g, add);
  }
}

const ir::Graph* outermost(const ir::Graph& graph) {
  const ir::Graph* root = &graph;
  while (root->parentGraph() != nullptr) root = root->parentGraph();
  return root;
}

/// `base` when it is free, else the first free `base_N` (N = 1, 2, ...).
template <typename Taken>
std::string firstFreeName(const std::string& base, const Taken& taken) {
  if (!base.empty() && !taken(base)) return base;
  for (size_t i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!taken(candidate)) return candidate;
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
  std::unordered_set<std::string> names;
  forEachName(*outermost(graph), [&](const std::string& n) { names.insert(n); });
  return firstFreeName(base, [&](const std::string& n) { return names.count(n) != 0; });
}

uint64_t Rewriter::NameIndex::hash(const std::string& name) {
  return std::hash<std::string>{}(name);
}

bool Rewriter::NameIndex::taken(const std::string& name) const {
  const uint64_t h = hash(name);
  auto [lo, hi] = std::equal_range(collected.begin(), collected.end(), h);
  int count = static_cast<int>(hi - lo);
  if (auto it = changes.find(h); it != changes.end()) count += it->second;
  return count > 0;
}

void Rewriter::NameIndex::note(const std::string& name, int delta) {
  if (name.empty()) return;  // (never asked for: firstFreeName gives a nonempty name)
  changes[hash(name)] += delta;
}

std::string Rewriter::uniqueName(const ir::Graph& graph, const std::string& base) {
  const ir::Graph* root = outermost(graph);
  if (names_.root != root || names_.epoch != root->nameEpoch()) {
    names_.root = root;
    names_.epoch = root->nameEpoch();
    names_.changes.clear();
    names_.collected.clear();
    forEachName(*root, [&](const std::string& n) {
      if (!n.empty()) names_.collected.push_back(NameIndex::hash(n));
    });
    std::sort(names_.collected.begin(), names_.collected.end());
  }
  return firstFreeName(base, [&](const std::string& n) { return names_.taken(n); });
}

void Rewriter::noteNames(const ir::Graph& graph, const std::vector<std::string>& removed,
                         const std::string& added) {
  const ir::Graph* root = outermost(graph);
  if (names_.root != root || root->nameEpoch() != names_.epoch + 1) {
    names_.root = nullptr;  // collected again at the next uniqueName
    return;
  }
  names_.epoch = root->nameEpoch();
  for (const std::string& n : removed) names_.note(n, -1);
  names_.note(added, +1);
}

void Rewriter::renameValue(ir::Value* value, std::string name) {
  std::string old = value->name();
  std::string added = name;
  B::setName(value, std::move(name));
  noteNames(*value->owningGraph(), {old}, added);
}

ir::Node* Rewriter::createNode(const std::string& op_type, const std::string& domain,
                               const std::vector<ir::Value*>& inputs, size_t num_outputs) {
  ONNXOPT_CHECK(insert_graph_ != nullptr, "Rewriter::createNode without an insertion point");
  ir::Node* node =
      B::createNode(*insert_graph_, op_type, domain, inputs, num_outputs, insert_before_);
  changed_ = true;
  created_.insert(node);
  if (listener_) listener_->nodeCreated(node);
  return node;
}

ir::Node* Rewriter::createNode(const std::string& op_type, const std::string& domain,
                               const std::vector<ir::Value*>& inputs,
                               std::vector<ir::Type> output_types) {
  ir::Node* node = createNode(op_type, domain, inputs, output_types.size());
  for (size_t i = 0; i < output_types.size(); ++i) {
    B::setType(node->output(i), std::move(output_types[i]));
  }
  return node;
}

ir::Node* Rewriter::createNodeLike(const std::string& op_type, const std::string& domain,
                                   const std::vector<ir::Value*>& inputs, const ir::Node* like) {
  std::vector<ir::Type> types;
  for (const ir::Value* out : like->outputs()) types.push_back(out ? out->type() : ir::Type());
  ir::Node* node = createNode(op_type, domain, inputs, std::move(types));
  B::setName(node, like->name());
  return node;
}

ir::Value* Rewriter::createInitializer(ir::Graph& graph, const std::string& base_name,
                                       ir::Tensor tensor) {
  std::string name = uniqueName(graph, base_name.empty() ? "const" : base_name);
  tensor.setName(name);
  changed_ = true;
  ir::Value* v = B::addInitializer(graph, name, std::move(tensor));
  noteNames(graph, {}, name);
  return v;
}

ir::Value* Rewriter::createInitializerNamedAs(ir::Value* value, ir::Tensor tensor) {
  ONNXOPT_CHECK(!isNamedOutput(value), "createInitializerNamedAs on a model output");
  ir::Graph& graph = *value->owningGraph();
  std::string name = value->name();
  if (name.empty()) return createInitializer(graph, "", std::move(tensor));
  renameValue(value, "");
  tensor.setName(name);
  changed_ = true;
  ir::Value* v = B::addInitializer(graph, name, std::move(tensor));
  noteNames(graph, {}, name);
  return v;
}

namespace {

bool isOutputOf(const ir::Value* v, const ir::Graph* g) {
  for (const ir::Use& use : v->uses()) {
    if (use.user == g->returnNode()) return true;
  }
  return false;
}

/// Whether `to` may stand as an output of graph `g` in place of another value. onnx.checker wants a
/// subgraph's outputs produced by its own nodes (the main graph may also output an initializer);
/// onnxruntime computes Scan/Loop bodies wrongly when one value is two outputs, so it must not be
/// an output of `g` already. Graph inputs keep their own names, so they never take an output's.
bool canStandAsOutput(const ir::Graph* g, const ir::Value* to) {
  if (to->owningGraph() != g || isOutputOf(to, g)) return false;
  if (to->kind() == ir::Value::Kind::kNodeOutput) return true;
  return to->kind() == ir::Value::Kind::kInitializer && g->parentNode() == nullptr;
}

bool isReturn(const ir::Use& use) {
  return use.user == use.user->owningGraph()->returnNode();
}

}  // namespace

bool Rewriter::canReplaceWithoutIdentity(const ir::Value* from, const ir::Value* to) const {
  for (const ir::Use& use : from->uses()) {
    if (isReturn(use) && !canStandAsOutput(use.user->owningGraph(), to)) return false;
  }
  return true;
}

void Rewriter::notifyUsers(ir::Value* value) {
  if (listener_ == nullptr) return;
  listener_->valueUsersChanged(value);
  for (const ir::Use& use : value->uses()) {
    if (!isReturn(use)) listener_->nodeModified(use.user);
  }
}

void Rewriter::replaceAllUsesWith(ir::Value* from, ir::Value* to) {
  ONNXOPT_CHECK(from != to, "replacing a value with itself");
  changed_ = true;
  const bool named = isNamedOutput(from);
  bool to_takes_name = false;
  std::vector<ir::Use> uses = from->uses();
  // A value listed as several outputs of one graph gets one stand-in there, listed as often: the
  // second listing must not create a second definition of the output's name.
  std::unordered_map<const ir::Graph*, ir::Value*> stand_in;
  for (const ir::Use& use : uses) {
    if (!isReturn(use)) {
      B::setInput(use.user, use.index, to);
      continue;
    }
    ir::Graph* g = use.user->owningGraph();
    if (auto it = stand_in.find(g); it != stand_in.end()) {
      B::setInput(use.user, use.index, it->second);
      continue;
    }
    if (canStandAsOutput(g, to)) {
      stand_in[g] = to;
      B::setInput(use.user, use.index, to);
      if (g->parentNode() == nullptr) to_takes_name = true;
      // The same value, so the same type: a model output keeps its declared type (the interface);
      // elsewhere the more informative of the two is kept.
      bool from_richer = from->type().isKnown() &&
                         (!to->type().isKnown() || (from->type().shape && !to->type().shape));
      if (from_richer || (g->parentNode() == nullptr && from->type().isKnown())) {
        B::setType(to, from->type());
      }
      continue;
    }
    // An Identity at the end of g (everything is defined there) stands in as the output.
    ir::Node* id = B::createNode(*g, "Identity", "", {to}, 1);
    if (listener_) listener_->nodeCreated(id);
    ir::Value* out = id->output();
    B::setType(out, from->type().isKnown() ? from->type() : to->type());
    if (g->parentNode() == nullptr) B::setName(out, from->name());
    stand_in[g] = out;
    B::setInput(use.user, use.index, out);
  }
  if (named) {
    // The model output keeps its name: `to` takes it over, or the Identity above has it.
    std::string name = from->name();
    B::setName(from, to_takes_name ? to->name() : std::string());
    if (to_takes_name) B::setName(to, name);
  } else {
    nameReplacement(from, to);
  }
  notifyUsers(to);
}

void Rewriter::nameReplacement(ir::Value* from, ir::Value* to) {
  if (to->kind() != ir::Value::Kind::kNodeOutput || isNamedOutput(to)) return;
  const ir::Node* producer = to->producer();
  const bool created = created_.count(producer) != 0;
  // An unnamed value (one an earlier pass created) may take a name whatever made it.
  const bool rebuilt = created || rewritten_.count(producer) != 0 || changed_values_.count(to);
  if (!rebuilt && !to->name().empty()) return;
  if (from->name().empty() && (created || to->name().empty())) return;
  std::string name = from->name();
  if (!name.empty()) renameValue(from, "");
  renameValue(to, std::move(name));
}

void Rewriter::markChanged(ir::Value* value) {
  ONNXOPT_CHECK(!isNamedOutput(value), "markChanged on model output '" + value->name() + "'");
  changed_values_.insert(value);
  if (!value->name().empty()) renameValue(value, "");
  changed_ = true;
}

void Rewriter::replaceNode(ir::Node* node, const std::vector<ir::Value*>& values) {
  ONNXOPT_CHECK(values.size() == node->numOutputs(), "replaceNode needs one value per output");
  for (size_t i = 0; i < values.size(); ++i) {
    ir::Value* out = node->output(i);
    if (out == nullptr) continue;
    if (!out->hasUses()) {
      // Nothing reads it, but a value computing it still takes its name.
      if (values[i] != nullptr && values[i] != out) nameReplacement(out, values[i]);
      continue;
    }
    ONNXOPT_CHECK(values[i] != nullptr, "replacing a used output with nothing");
    replaceAllUsesWith(out, values[i]);
  }
  eraseNode(node);
}

void Rewriter::freezeInputDefault(ir::Value* value) {
  B::freezeInputDefault(*value->owningGraph(), value);
  changed_ = true;
  if (listener_) {
    listener_->valueUsersChanged(value);
    for (const ir::Use& u : value->uses()) listener_->nodeModified(u.user);
  }
}

void Rewriter::eraseDeadNodes(const std::vector<ir::Node*>& nodes) {
  for (ir::Node* n : nodes) {
    if (n == nullptr) continue;
    bool used = false;
    for (ir::Value* o : n->outputs()) used |= o != nullptr && (o->hasUses() || o->isGraphOutput());
    if (!used) eraseNode(n);
  }
}

void Rewriter::eraseNode(ir::Node* node) {
  std::vector<ir::Value*> inputs;
  for (ir::Value* v : node->inputs()) {
    if (v != nullptr) inputs.push_back(v);
  }
  if (listener_) listener_->nodeErased(node);
  std::vector<std::string> names;
  for (const ir::Value* out : node->outputs()) {
    if (out != nullptr) names.push_back(out->name());
  }
  // The subgraphs' names go too.
  for (const ir::Graph* g : node->subgraphs()) {
    forEachName(*g, [&](const std::string& n) { names.push_back(n); });
  }
  ir::Graph& graph = *node->owningGraph();
  B::eraseNode(graph, node);
  noteNames(graph, names, "");
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
  B::setInput(node, index, value);
  noteRewritten(node);
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
  B::addInput(node, value);
  noteRewritten(node);
  changed_ = true;
  if (listener_) listener_->nodeModified(node);
}

void Rewriter::removeInput(ir::Node* node, size_t index) {
  ir::Value* old = node->input(index);
  B::removeInput(node, index);
  noteRewritten(node);
  changed_ = true;
  if (listener_) {
    listener_->nodeModified(node);
    if (old != nullptr && old->producer() != nullptr) listener_->nodeModified(old->producer());
  }
}

void Rewriter::setAttribute(ir::Node* node, ir::Attribute attribute) {
  // Names of subgraphs that leave the model (a replaced attribute's) or enter it (graphs from
  // outside this model); subgraphs moved from another node of the model keep their names in it.
  const ir::Graph* root = outermost(*node->owningGraph());
  std::vector<std::string> removed, added;
  if (const ir::Attribute* existing = node->findAttribute(attribute.name)) {
    for (const auto& g : existing->graphs) {
      forEachName(*g, [&](const std::string& n) { removed.push_back(n); });
    }
  }
  for (const auto& g : attribute.graphs) {
    const ir::Node* from = g->parentNode();
    if (from != nullptr && outermost(*from->owningGraph()) == root) continue;
    forEachName(*g, [&](const std::string& n) { added.push_back(n); });
  }
  const uint64_t epoch = root->nameEpoch();
  B::setAttribute(node, std::move(attribute));
  noteRewritten(node);
  if (root->nameEpoch() != epoch) {  // one step is what noteNames follows; more, it rebuilds
    noteNames(*node->owningGraph(), removed, "");
    if (names_.root == root) {
      for (const std::string& n : added) names_.note(n, +1);
    }
  }
  changed_ = true;
  if (listener_) listener_->nodeModified(node);
}

void Rewriter::removeAttribute(ir::Node* node, const std::string& name) {
  if (B::removeAttribute(node, name)) {
    noteRewritten(node);
    changed_ = true;
    if (listener_) listener_->nodeModified(node);
  }
}

void Rewriter::eraseInitializers(const std::vector<ir::Value*>& values) {
  if (values.empty()) return;
  B::removeInitializers(*values.front()->owningGraph(), values);
  changed_ = true;
}

void Rewriter::setType(ir::Value* value, ir::Type type) {
  B::setType(value, std::move(type));
  changed_ = true;
  if (listener_ == nullptr) return;
  for (const ir::Use& use : value->uses()) {
    if (!isReturn(use)) listener_->nodeModified(use.user);
  }
}

void Rewriter::dropOrphanValueInfos(ir::Graph& graph) {
  if (graph.orphanValueInfos().empty()) return;
  B::mutableOrphanValueInfos(graph).clear();
  changed_ = true;
}

void Rewriter::setName(ir::Value* value, std::string name) {
  renameValue(value, std::move(name));
  changed_ = true;
}

void Rewriter::setOpType(ir::Node* node, std::string op_type, std::string domain) {
  B::setOpType(node, std::move(op_type));
  noteRewritten(node);
  B::setDomain(node, std::move(domain));
  changed_ = true;
  if (listener_) listener_->nodeModified(node);
}

ir::Value* Rewriter::addGraphInput(ir::Graph& graph, std::string name, ir::Type type) {
  changed_ = true;
  return B::addInput(graph, std::move(name), std::move(type));
}

void Rewriter::addGraphOutput(ir::Graph& graph, ir::Value* value) {
  B::addOutput(graph, value);
  changed_ = true;
  if (listener_) listener_->valueUsersChanged(value);
}

void Rewriter::addFunction(ir::Model& model, std::unique_ptr<ir::Function> fn) {
  ONNXOPT_CHECK(fn != nullptr && fn->body != nullptr, "addFunction: no function body");
  for (const auto& f : model.functions) {
    ONNXOPT_CHECK(!(f->domain == fn->domain && f->name == fn->name),
                  "addFunction: " + fn->domain + "." + fn->name + " exists");
  }
  for (const ir::OpsetImport& imp : fn->opset_imports) {
    addOpsetImport(model, imp.domain, imp.version);
  }
  model.functions.push_back(std::move(fn));
  changed_ = true;
}

void Rewriter::addOpsetImport(ir::Model& model, const std::string& domain, int64_t version) {
  if (model.opsetVersion(domain)) return;
  model.opset_imports.push_back({domain == "ai.onnx" ? std::string() : domain, version});
  changed_ = true;
}

void Rewriter::setName(ir::Node* node, std::string name) {
  B::setName(node, std::move(name));
  changed_ = true;
}

std::vector<ir::Value*> Rewriter::inlineBranch(ir::Node* node, ir::Graph& branch) {
  ONNXOPT_CHECK(branch.parentNode() == node, "inlineBranch: the branch is not held by the node");
  ir::Graph& outer = *node->owningGraph();
  ir::Graph* saved_graph = insert_graph_;
  ir::Node* saved_before = insert_before_;
  setInsertionPoint(node);
  // Initializers first, so the recreated nodes find them in the outer graph.
  for (ir::Value* init : std::vector<ir::Value*>(branch.initializers())) {
    if (init->initializer() == nullptr) continue;
    std::string name = init->name();
    renameValue(init, "");  // free the name for the moved copy
    replaceAllUsesWith(init, createInitializer(outer, name, *init->initializer()));
  }
  // Each node is recreated before `node`; replacing its outputs redirects later branch nodes,
  // nested subgraphs and the branch's outputs to the new values as we go.
  for (ir::Node* n : branch) {
    ir::Node* copy = createNode(n->opType(), n->domain(), n->inputs(), 0);
    B::setName(copy, n->name());
    B::setDocString(copy, n->docString());
    B::setUnknownFields(copy, n->unknownFields());
    for (ir::Value* old : n->outputs()) {
      if (old == nullptr) {
        B::addAbsentOutput(copy);
        continue;
      }
      ir::Value* v = B::addOutput(copy);
      std::string name = old->name();
      renameValue(old, "");  // free the name for the copy
      renameValue(v, uniqueName(outer, name));
      B::setType(v, old->type());
      B::setHasValueInfo(v, old->hasValueInfo());
      B::replaceAllUsesWith(old, v);
    }
    // Attributes move over whole; setAttribute re-parents their subgraphs.
    std::vector<ir::Attribute> attrs = std::move(B::mutableAttributes(n));
    B::mutableAttributes(n).clear();
    for (ir::Attribute& a : attrs) setAttribute(copy, std::move(a));
  }
  insert_graph_ = saved_graph;
  insert_before_ = saved_before;
  std::vector<ir::Value*> results;
  for (size_t i = 0; i < branch.numOutputs(); ++i) results.push_back(branch.output(i));
  return results;
}

ir::Attribute copyPlainAttribute(const ir::Attribute& a, const std::string& name) {
  return ir::copyPlainAttribute(a, name);
}

std::unique_ptr<ir::Function> copyToFunction(
    const ir::Graph& body, const std::string& domain, const std::string& name,
    const std::vector<const ir::Value*>& inputs, const std::vector<const ir::Value*>& outputs,
    std::vector<std::string> attribute_names, std::vector<ir::OpsetImport> imports,
    const std::map<std::string, std::string>& rename,
    const std::function<bool(const ir::Node&, const ir::Attribute&)>& drop) {
  auto fn = std::make_unique<ir::Function>();
  fn->name = name;
  fn->domain = domain;
  fn->attribute_names = std::move(attribute_names);
  fn->opset_imports = std::move(imports);
  fn->body = std::make_unique<ir::Graph>();
  Rewriter rw;
  rw.setInsertionPointToEnd(*fn->body);
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (const ir::Value* in : inputs) map[in] = rw.addGraphInput(*fn->body, in->name(), {});
  for (const ir::Node* n : body) {
    std::vector<ir::Value*> ins;
    for (const ir::Value* v : n->inputs()) ins.push_back(v == nullptr ? nullptr : map.at(v));
    ir::Node* c = rw.createNode(n->opType(), n->domain(), ins, n->numOutputs());
    for (const ir::Attribute& a : n->attributes()) {
      if (drop && drop(*n, a)) continue;
      ir::Attribute copy = ir::copyPlainAttribute(a, a.name);
      if (!a.ref_attr_name.empty()) {
        auto it = rename.find(a.ref_attr_name);
        copy.ref_attr_name = it == rename.end() ? a.ref_attr_name : it->second;
      }
      rw.setAttribute(c, std::move(copy));
    }
    for (size_t j = 0; j < n->numOutputs(); ++j) {
      if (n->output(j) == nullptr) continue;
      rw.setName(c->output(j), n->output(j)->name());
      map[n->output(j)] = c->output(j);
    }
  }
  for (const ir::Value* out : outputs) rw.addGraphOutput(*fn->body, map.at(out));
  return fn;
}

bool Rewriter::copyAttribute(const ir::Node& from, ir::Node* to, const std::string& name) {
  const ir::Attribute* a = from.findAttribute(name);
  if (a == nullptr) return false;
  setAttribute(to, ir::copyPlainAttribute(*a, a->name));
  return true;
}

std::vector<ir::Value*> Rewriter::inlineFunctionCall(ir::Node* call, const ir::Function& fn) {
  ONNXOPT_CHECK(fn.body != nullptr, "inlineFunctionCall: function " + fn.name + " has no body");
  const ir::Graph& body = *fn.body;
  ir::Graph& outer = *call->owningGraph();
  ir::Graph* saved_graph = insert_graph_;
  ir::Node* saved_before = insert_before_;
  setInsertionPoint(call);
  std::unordered_map<const ir::Value*, ir::Value*> actual;
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    actual[body.inputs()[i]] = i < call->numInputs() ? call->input(i) : nullptr;
  }
  auto lookup = [&](const ir::Value* v) -> ir::Value* {
    if (v == nullptr) return nullptr;
    auto it = actual.find(v);
    ONNXOPT_CHECK(it != actual.end(), "inlineFunctionCall: " + fn.name + " reads '" + v->name() +
                                          "', defined outside it");
    return it->second;
  };
  const std::string& prefix = call->name().empty() ? fn.name : call->name();
  for (const ir::Node* n : body) {
    std::vector<ir::Value*> inputs;
    for (const ir::Value* v : n->inputs()) inputs.push_back(lookup(v));
    // An optional input the call left out: trailing ones go (as the call would have written it).
    while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
    ir::Node* copy = createNode(n->opType(), n->domain(), inputs, 0);
    if (!n->name().empty()) B::setName(copy, prefix + "/" + n->name());
    B::setDocString(copy, n->docString());
    for (const ir::Value* old : n->outputs()) {
      if (old == nullptr) {
        B::addAbsentOutput(copy);
        continue;
      }
      ir::Value* v = B::addOutput(copy);
      renameValue(v, uniqueName(outer, prefix + "/" + old->name()));
      B::setType(v, old->type());
      actual[old] = v;
    }
    for (const ir::Attribute& a : n->attributes()) {
      const ir::Attribute* value = &a;
      if (!a.ref_attr_name.empty()) {
        value = call->findAttribute(a.ref_attr_name);
        if (value == nullptr) continue;  // the caller left it out: so is the body's
      }
      setAttribute(copy, ir::copyPlainAttribute(*value, a.name));
    }
  }
  insert_graph_ = saved_graph;
  insert_before_ = saved_before;
  std::vector<ir::Value*> results;
  for (size_t i = 0; i < body.numOutputs(); ++i) results.push_back(lookup(body.output(i)));
  return results;
}

}  // namespace onnxopt::rewrite
