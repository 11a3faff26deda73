#include "onnxopt/ir/graph.h"

#include "onnxopt/ir/builder.h"

#include "support/big_blocks.h"

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <unordered_set>

namespace onnxopt::ir {

// ---------------------------------------------------------------------------------------------
// Allocation of nodes and values

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kPooled = false;
#else
constexpr bool kPooled = true;
#endif
#else
constexpr bool kPooled = true;
#endif

/// Objects of one size carved from slabs, so that the nodes (and values) of a graph built in
/// order lie next to each other. Walks follow `next_` pointers; with each node allocated alone
/// among strings, vectors and tensors, every step of a walk over a large graph was a cache miss
/// (a third of -O2's time on a 1M-node chain). Freed objects go to a free list for the next
/// ones; slabs stay for the life of the process. Sanitizer builds allocate each object alone, so
/// that a use after free is still caught.
template <size_t kSize, size_t kAlign>
class SlabPool {
 public:
  /// An object of `size` bytes: from the slabs when that is the pool's size (and pooling is on),
  /// else from the global heap, as release() returns it.
  void* allocate(size_t size) {
    if (!kPooled || size != kSize) return ::operator new(size);
    std::lock_guard<std::mutex> lock(mu_);
    if (free_ != nullptr) {
      FreeSlot* slot = free_;
      free_ = slot->next;
      return slot;
    }
    if (left_ == 0) {
      // Slabs are big blocks (huge pages where offered): a slab is 2 MB of nodes touched in order.
      next_ = static_cast<Slot*>(support::allocateBigBlock(support::kBigBlockBytes));
      slabs_.push_back(next_);
      left_ = kSlabObjects;
    }
    --left_;
    return next_++;
  }
  void release(void* p, size_t size) {
    if (p == nullptr) return;
    if (!kPooled || size != kSize) {
      ::operator delete(p);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto* slot = static_cast<FreeSlot*>(p);
    slot->next = free_;
    free_ = slot;
  }

 private:
  struct FreeSlot {
    FreeSlot* next;
  };
  struct alignas(kAlign) Slot {
    std::byte bytes[kSize];
  };
  static_assert(kSize >= sizeof(FreeSlot));
  static constexpr size_t kSlabObjects = support::kBigBlockBytes / sizeof(Slot);

  std::mutex mu_;
  std::vector<Slot*> slabs_;  ///< kept for the life of the process
  Slot* next_ = nullptr;
  size_t left_ = 0;
  FreeSlot* free_ = nullptr;
};

// Never destroyed: a graph held in a static may outlive the pools' static destruction.
SlabPool<sizeof(Node), alignof(Node)>& nodePool() {
  static auto* pool = new SlabPool<sizeof(Node), alignof(Node)>;
  return *pool;
}
SlabPool<sizeof(Value), alignof(Value)>& valuePool() {
  static auto* pool = new SlabPool<sizeof(Value), alignof(Value)>;
  return *pool;
}

}  // namespace

void* Node::operator new(size_t size) {
  return nodePool().allocate(size);
}
void Node::operator delete(void* p, size_t size) {
  nodePool().release(p, size);
}
void* Value::operator new(size_t size) {
  return valuePool().allocate(size);
}
void Value::operator delete(void* p, size_t size) {
  valuePool().release(p, size);
}

const std::string& emptyString() {
  static const std::string empty;
  return empty;
}

// ---------------------------------------------------------------------------------------------
// Value

bool Value::isGraphOutput() const {
  return std::any_of(uses_.begin(), uses_.end(), [](const Use& use) {
    return use.user == use.user->owningGraph()->returnNode();
  });
}

bool Value::usesPointBack() const {
  for (size_t k = 0; k < uses_.size(); ++k) {
    const Use& use = uses_[k];
    if (use.user == nullptr || use.index >= use.user->inputs_.size() ||
        use.user->inputs_[use.index] != this || use.user->use_positions_[use.index] != k) {
      return false;
    }
  }
  return true;
}

void Value::replaceAllUsesWith(Value* other) {
  ONNXOPT_CHECK(other != nullptr && other != this, "replaceAllUsesWith needs another value");
  std::vector<Use> uses = std::move(uses_);
  uses_.clear();
  other->uses_.reserve(other->uses_.size() + uses.size());
  for (const Use& use : uses) {
    use.user->inputs_[use.index] = other;
    use.user->use_positions_[use.index] = other->uses_.size();
    other->uses_.push_back(use);
  }
}

// ---------------------------------------------------------------------------------------------
// Attribute

Attribute copyPlainAttribute(const Attribute& a, const std::string& name) {
  ONNXOPT_CHECK(a.graphs.empty(), "copying a graph attribute");
  Attribute c;
  c.name = name;
  c.kind = a.kind;
  c.doc_string = a.doc_string;
  c.f = a.f;
  c.i = a.i;
  c.s = a.s;
  c.floats = a.floats;
  c.ints = a.ints;
  c.strings = a.strings;
  c.tensors = a.tensors;
  c.sparse_tensors = a.sparse_tensors;
  c.types = a.types;
  c.unknown_fields = a.unknown_fields;
  return c;
}

const char* Attribute::kindName(Kind kind) {
  switch (kind) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kFloat:
      return "float";
    case Kind::kInt:
      return "int";
    case Kind::kString:
      return "string";
    case Kind::kTensor:
      return "tensor";
    case Kind::kGraph:
      return "graph";
    case Kind::kFloats:
      return "floats";
    case Kind::kInts:
      return "ints";
    case Kind::kStrings:
      return "strings";
    case Kind::kTensors:
      return "tensors";
    case Kind::kGraphs:
      return "graphs";
    case Kind::kSparseTensor:
      return "sparse_tensor";
    case Kind::kSparseTensors:
      return "sparse_tensors";
    case Kind::kTypeProto:
      return "type_proto";
    case Kind::kTypeProtos:
      return "type_protos";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------------
// Node

Node::~Node() = default;

Node* Node::next() const {
  Node* n = next_;
  while (n != nullptr && n->erased_) n = n->next_;
  return n;
}

Node* Node::prev() const {
  Node* n = prev_;
  while (n != nullptr && n->erased_) n = n->prev_;
  return n;
}

bool Node::inputIsRecorded(size_t i) const {
  const Value* v = input(i);
  if (v == nullptr) return true;
  size_t pos = use_positions_[i];
  return pos < v->uses_.size() && v->uses_[pos] == Use{const_cast<Node*>(this), i};
}

void Node::attachUse(size_t i) {
  Value* v = inputs_[i];
  use_positions_[i] = v->uses_.size();
  v->uses_.push_back({this, i});
}

void Node::detachUse(size_t i) {
  Value* v = inputs_[i];
  std::vector<Use>& uses = v->uses_;
  size_t pos = use_positions_[i];
  ONNXOPT_CHECK(pos < uses.size() && uses[pos] == (Use{this, i}),
                "use-list out of sync: use not found on value '" + v->name_ + "'");
  const Use last = uses.back();
  uses[pos] = last;
  last.user->use_positions_[last.index] = pos;
  uses.pop_back();
}

void Node::setInput(size_t i, Value* value) {
  ONNXOPT_CHECK(i < inputs_.size(), "setInput index out of range");
  if (inputs_[i] != nullptr) detachUse(i);
  inputs_[i] = value;
  if (value != nullptr) attachUse(i);
}

void Node::addInput(Value* value) {
  inputs_.push_back(value);
  use_positions_.push_back(0);
  if (value != nullptr) attachUse(inputs_.size() - 1);
}

void Node::removeInput(size_t i) {
  ONNXOPT_CHECK(i < inputs_.size(), "removeInput index out of range");
  if (inputs_[i] != nullptr) detachUse(i);
  // Later operands shift down by one: renumber their uses.
  for (size_t j = i + 1; j < inputs_.size(); ++j) {
    if (inputs_[j] != nullptr) inputs_[j]->uses_[use_positions_[j]].index = j - 1;
  }
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
  use_positions_.erase(use_positions_.begin() + static_cast<std::ptrdiff_t>(i));
}

void Node::dropAllReferences() {
  for (size_t i = inputs_.size(); i-- > 0;) {
    if (inputs_[i] != nullptr) detachUse(i);
  }
  inputs_.clear();
  use_positions_.clear();
  for (Graph* g : subgraphs()) {
    for (Node* n = g->head_; n != nullptr; n = n->next_) n->dropAllReferences();
    for (auto& dead : g->graveyard_) dead->dropAllReferences();
    g->return_node_->dropAllReferences();
  }
}

Value* Node::addOutput() {
  outputs_.push_back(
      std::unique_ptr<Value>(new Value(Value::Kind::kNodeOutput, graph_, this, outputs_.size())));
  return outputs_.back().get();
}

void Node::removeOutput(size_t i) {
  ONNXOPT_CHECK(i < outputs_.size(), "removeOutput index out of range");
  graph_->noteNameChange();
  ONNXOPT_CHECK(!outputs_[i] || !outputs_[i]->hasUses(), "removing an output that has uses");
  outputs_.erase(outputs_.begin() + static_cast<std::ptrdiff_t>(i));
  for (size_t j = i; j < outputs_.size(); ++j) {
    if (outputs_[j]) outputs_[j]->output_index_ = j;
  }
}

const Attribute* Node::findAttribute(const std::string& name) const {
  for (const Attribute& a : attributes_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

Attribute* Node::findMutableAttribute(const std::string& name) {
  for (Attribute& a : attributes_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

void Node::setAttribute(Attribute attr) {
  for (auto& g : attr.graphs) g->parent_node_ = this;
  Attribute* existing = findMutableAttribute(attr.name);
  if (!attr.graphs.empty() || existing != nullptr) graph_->noteNameChange();
  if (existing != nullptr) {
    // The old subgraphs die with the old attribute: their uses of outer values must go first.
    for (auto& g : existing->graphs) {
      for (Node* n = g->head_; n != nullptr; n = n->next_) n->dropAllReferences();
      g->return_node_->dropAllReferences();
    }
    *existing = std::move(attr);
    return;
  }
  attributes_.push_back(std::move(attr));
}

void Node::appendAttribute(Attribute attr) {
  for (auto& g : attr.graphs) g->parent_node_ = this;
  if (!attr.graphs.empty()) graph_->noteNameChange();
  attributes_.push_back(std::move(attr));
}

bool Node::removeAttribute(const std::string& name) {
  for (auto it = attributes_.begin(); it != attributes_.end(); ++it) {
    if (it->name != name) continue;
    if (!it->graphs.empty()) graph_->noteNameChange();
    for (auto& g : it->graphs) {
      for (Node* n = g->head_; n != nullptr; n = n->next_) n->dropAllReferences();
      g->return_node_->dropAllReferences();
    }
    attributes_.erase(it);
    return true;
  }
  return false;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> result;
  for (const Attribute& a : attributes_) {
    for (const auto& g : a.graphs) result.push_back(g.get());
  }
  return result;
}

void Node::moveBefore(Node* other) {
  ONNXOPT_CHECK(other != nullptr && other->graph_ == graph_ && !erased_ && !other->erased_,
                "moveBefore needs a live node of the same graph");
  if (other == this) return;
  graph_->unlink(this);
  graph_->linkBefore(this, other);
}

// ---------------------------------------------------------------------------------------------
// NodeIterator

NodeIterator& NodeIterator::operator++() {
  // An erased node keeps its `next_`, so advancing from it is safe; skip successors erased since.
  node_ = node_->next_;
  while (node_ != nullptr && node_->erased_) node_ = node_->next_;
  return *this;
}

// ---------------------------------------------------------------------------------------------
// Graph

Graph::Graph() : return_node_(new Node(this, "<return>", "")) {}

Graph::~Graph() {
  // Drop every use first (ours and our subgraphs' uses of outer values) so no use-list is left
  // pointing at a freed node, whatever the destruction order.
  for (Node* n = head_; n != nullptr; n = n->next_) n->dropAllReferences();
  for (auto& dead : graveyard_) dead->dropAllReferences();
  return_node_->dropAllReferences();
  Node* n = head_;
  while (n != nullptr) {
    Node* next = n->next_;
    delete n;
    n = next;
  }
}

void Value::setName(std::string name) {
  name_ = std::move(name);
  if (graph_ != nullptr) graph_->noteNameChange();
}

uint64_t Graph::nameEpoch() const {
  const Graph* g = this;
  while (g->parentGraph() != nullptr) g = g->parentGraph();
  return g->name_epoch_;
}

void Graph::noteNameChange() {
  Graph* g = this;
  while (g->parentGraph() != nullptr) g = g->parentGraph();
  ++g->name_epoch_;
}

Graph* Graph::parentGraph() const {
  return parent_node_ != nullptr ? parent_node_->owningGraph() : nullptr;
}

NodeIterator Graph::begin() const {
  return NodeIterator(head_);
}
Node* Graph::firstNode() const {
  return head_;
}
Node* Graph::lastNode() const {
  return tail_;
}

void Graph::linkBefore(Node* node, Node* before) {
  if (before == nullptr) {
    node->prev_ = tail_;
    node->next_ = nullptr;
    if (tail_ != nullptr) tail_->next_ = node;
    tail_ = node;
    if (head_ == nullptr) head_ = node;
  } else {
    ONNXOPT_CHECK(before->graph_ == this && !before->erased_, "insertion point not in this graph");
    node->next_ = before;
    node->prev_ = before->prev_;
    if (before->prev_ != nullptr) {
      before->prev_->next_ = node;
    } else {
      head_ = node;
    }
    before->prev_ = node;
  }
  ++num_nodes_;
}

void Graph::unlink(Node* node) {
  if (node->prev_ != nullptr) {
    node->prev_->next_ = node->next_;
  } else {
    head_ = node->next_;
  }
  if (node->next_ != nullptr) {
    node->next_->prev_ = node->prev_;
  } else {
    tail_ = node->prev_;
  }
  --num_nodes_;
  // `next_` is deliberately left as it was so that an iterator on this node can still advance.
}

Node* Graph::createNode(std::string op_type, std::string domain, const std::vector<Value*>& inputs,
                        size_t num_outputs, Node* before) {
  Node* node = new Node(this, std::move(op_type), std::move(domain));
  linkBefore(node, before);
  for (Value* v : inputs) node->addInput(v);
  for (size_t i = 0; i < num_outputs; ++i) node->addOutput();
  return node;
}

void Graph::eraseNode(Node* node) {
  ONNXOPT_CHECK(node->graph_ == this && !node->erased_, "erasing a node not live in this graph");
  for (const auto& out : node->outputs_) {
    ONNXOPT_CHECK(!out || !out->hasUses(), "erasing node '" + node->name_ + "' (" + node->op_type_ +
                                               ") whose output '" + out->name() +
                                               "' still has uses");
  }
  node->dropAllReferences();
  unlink(node);
  node->erased_ = true;
  graveyard_.emplace_back(node);
  noteNameChange();
}

void Graph::collectGarbage() {
  graveyard_.clear();
  for (Node* n = head_; n != nullptr; n = n->next_) {
    for (Graph* g : n->subgraphs()) g->collectGarbage();
  }
}

Value* Graph::addInput(std::string name, Type type) {
  owned_values_.push_back(
      std::unique_ptr<Value>(new Value(Value::Kind::kGraphInput, this, nullptr, 0)));
  Value* v = owned_values_.back().get();
  v->setName(std::move(name));
  v->setType(std::move(type));
  inputs_.push_back(v);
  return v;
}

void Graph::removeInput(Value* value) {
  ONNXOPT_CHECK(!value->hasUses(), "removing a graph input that has uses");
  noteNameChange();
  inputs_.erase(std::remove(inputs_.begin(), inputs_.end(), value), inputs_.end());
  initializers_.erase(std::remove(initializers_.begin(), initializers_.end(), value),
                      initializers_.end());
  owned_values_.erase(std::remove_if(owned_values_.begin(), owned_values_.end(),
                                     [&](const auto& p) { return p.get() == value; }),
                      owned_values_.end());
}

Value* Graph::addInitializer(std::string name, Tensor tensor) {
  owned_values_.push_back(
      std::unique_ptr<Value>(new Value(Value::Kind::kInitializer, this, nullptr, 0)));
  Value* v = owned_values_.back().get();
  v->setName(std::move(name));
  v->setType(Type::tensor(tensor.dtype(), [&] {
    std::vector<Dim> dims;
    for (int64_t d : tensor.dims()) dims.push_back(Dim::known(d));
    return dims;
  }()));
  v->setInitializer(std::move(tensor));
  initializers_.push_back(v);
  return v;
}

Value* Graph::addSparseInitializer(std::string name, SparseTensor tensor) {
  owned_values_.push_back(
      std::unique_ptr<Value>(new Value(Value::Kind::kInitializer, this, nullptr, 0)));
  Value* v = owned_values_.back().get();
  v->setName(std::move(name));
  std::vector<Dim> dims;
  for (int64_t d : tensor.dims) dims.push_back(Dim::known(d));
  Type type = Type::tensor(tensor.values.dtype(), std::move(dims));
  v->setType(std::move(type));
  v->setSparseInitializer(std::move(tensor));
  initializers_.push_back(v);
  return v;
}

void Graph::setInputDefault(Value* value, Tensor tensor) {
  ONNXOPT_CHECK(value->kind() == Value::Kind::kGraphInput && value->owningGraph() == this,
                "setInputDefault needs an input of this graph");
  value->setInitializer(std::move(tensor));
  if (std::find(initializers_.begin(), initializers_.end(), value) == initializers_.end()) {
    initializers_.push_back(value);
  }
}

void Graph::freezeInputDefault(Value* value) {
  ONNXOPT_CHECK(value->kind() == Value::Kind::kGraphInput && value->owningGraph() == this &&
                    value->initializer() != nullptr,
                "freezeInputDefault needs an input of this graph with a default");
  inputs_.erase(std::remove(inputs_.begin(), inputs_.end(), value), inputs_.end());
  value->kind_ = Value::Kind::kInitializer;
}

void Graph::removeInitializers(const std::vector<Value*>& values) {
  noteNameChange();
  std::unordered_set<const Value*> doomed;
  for (Value* value : values) {
    ONNXOPT_CHECK(value->owningGraph() == this, "removing another graph's initializer");
    if (value->kind() == Value::Kind::kGraphInput) {
      value->setInitializer(std::nullopt);  // the input stays; only its default goes
    } else {
      ONNXOPT_CHECK(!value->hasUses(), "removing an initializer that has uses");
    }
    doomed.insert(value);
  }
  initializers_.erase(std::remove_if(initializers_.begin(), initializers_.end(),
                                     [&](const Value* v) { return doomed.count(v) != 0; }),
                      initializers_.end());
  owned_values_.erase(std::remove_if(owned_values_.begin(), owned_values_.end(),
                                     [&](const auto& p) {
                                       return p->kind() != Value::Kind::kGraphInput &&
                                              doomed.count(p.get()) != 0;
                                     }),
                      owned_values_.end());
}

std::vector<Value*> Graph::outputs() const {
  return return_node_->inputs();
}
size_t Graph::numOutputs() const {
  return return_node_->numInputs();
}
Value* Graph::output(size_t i) const {
  return return_node_->input(i);
}
void Graph::addOutput(Value* value) {
  return_node_->addInput(value);
}
void Graph::setOutput(size_t i, Value* value) {
  return_node_->setInput(i, value);
}
void Graph::removeOutput(size_t i) {
  return_node_->removeInput(i);
}

std::vector<Node*> Graph::allNodesRecursive() const {
  std::vector<Node*> result;
  for (Node* n : *this) {
    result.push_back(n);
    for (Graph* g : n->subgraphs()) {
      auto inner = g->allNodesRecursive();
      result.insert(result.end(), inner.begin(), inner.end());
    }
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Model

std::optional<int64_t> Model::opsetVersion(const std::string& domain) const {
  auto norm = [](const std::string& d) { return d == "ai.onnx" ? std::string() : d; };
  for (const OpsetImport& op : opset_imports) {
    if (norm(op.domain) == norm(domain)) return op.version;
  }
  return std::nullopt;
}

}  // namespace onnxopt::ir
