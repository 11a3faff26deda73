// The onnxopt graph IR: Model, Graph, Node, Value, Attribute.
//
// Connectivity is recorded in one place only: each Value's use-list ({node, operand index}). A
// Node's inputs are Value pointers; there is no edge table and no name lookup at pass time. Tensor
// names are import/export metadata. Nodes live in an intrusive list kept in topological order.
// Graph outputs are the inputs of a hidden return node, so "used as a graph output" is an ordinary
// use.
//
// Subgraphs (If/Loop/Scan bodies) are nested Graphs owned by a graph attribute; their nodes may use
// values of enclosing graphs directly, and those uses appear in the outer values' use-lists.
//
// Mutation: every setter is private. Passes change the IR through rewrite::Rewriter, which keeps
// the pattern driver's worklist current; code that builds or annotates IR outside a pass (the
// importer, shape inference, tests) uses ir::Builder (builder.h), which passes may not include
// (tools/check_layers.py).
//
// Erasing is safe while iterating: an erased node is unlinked at once but stays allocated (its
// `next` pointer intact) until Graph::collectGarbage(), and iteration skips erased nodes.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/ir/tensor.h"
#include "onnxopt/ir/types.h"

namespace onnxopt::ir {

class Graph;
class Node;
class Value;

/// One use of a value: operand `index` of node `user`.
struct Use {
  Node* user;
  size_t index;
  bool operator==(const Use& other) const = default;
};

/// Fields that most values and nodes leave empty, held out of line (64 bytes per object saved on
/// graphs of a million nodes).
struct RareFields {
  std::string doc_string;
  std::string unknown_fields;
};
using RarePtr = std::unique_ptr<RareFields>;
const std::string& emptyString();

/// An SSA value: a node output, a graph input, or an initializer (constant data).
class Value {
 public:
  enum class Kind : uint8_t { kNodeOutput, kGraphInput, kInitializer };

  Kind kind() const { return kind_; }
  /// The node that produces this value; nullptr for graph inputs and initializers.
  Node* producer() const { return producer_; }
  size_t outputIndex() const { return output_index_; }
  /// The graph in which this value is defined.
  Graph* owningGraph() const { return graph_; }

  const std::string& name() const { return name_; }
  const Type& type() const { return type_; }

  /// The uses, in no particular order (removing a use moves the last one into its place).
  const std::vector<Use>& uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }
  /// True when every recorded use is an operand of its user holding this value and pointing back
  /// at its entry (the verifier's check; with Node::inputIsRecorded, the use-list is exact).
  bool usesPointBack() const;
  /// True when the value is one of its graph's outputs (a use by the graph's return node).
  bool isGraphOutput() const;
  /// True for graph inputs, including inputs that have a default initializer.
  bool isGraphInput() const { return kind_ == Kind::kGraphInput; }

  /// Constant data of an initializer, or the default of a graph input that has one; else nullptr.
  const Tensor* initializer() const { return initializer_.get(); }
  const SparseTensor* sparseInitializer() const { return sparse_.get(); }

  const std::string& docString() const { return rare_ ? rare_->doc_string : emptyString(); }
  /// Unmodelled fields of the value's ValueInfoProto (e.g. metadata_props), kept verbatim.
  const std::string& unknownFields() const { return rare_ ? rare_->unknown_fields : emptyString(); }
  /// True when the imported model declared a value_info entry for this intermediate value.
  bool hasValueInfo() const { return has_value_info_; }

  /// Values and nodes come from per-type slabs (graph.cc says why).
  static void* operator new(size_t size);
  static void operator delete(void* p, size_t size);

 private:
  // Mutators are private: passes change the IR through rewrite::Rewriter (which tells the driver
  // what changed); the importer, shape inference and tests through ir::Builder (builder.h).
  friend class Graph;
  friend class Node;
  friend class Builder;

  void setName(std::string name);  // graph.cc: counts as a name change of the root graph
  void setType(Type type) { type_ = std::move(type); }
  void setInitializer(std::optional<Tensor> tensor) {
    initializer_ = tensor ? std::make_unique<Tensor>(std::move(*tensor)) : nullptr;
  }
  void setSparseInitializer(std::optional<SparseTensor> tensor) {
    sparse_ = tensor ? std::make_unique<SparseTensor>(std::move(*tensor)) : nullptr;
  }
  void setDocString(std::string doc) { setRare(&RareFields::doc_string, std::move(doc)); }
  void setUnknownFields(std::string fields) {
    setRare(&RareFields::unknown_fields, std::move(fields));
  }
  void setHasValueInfo(bool v) { has_value_info_ = v; }
  /// Points every use of this value at `other` instead.
  /// Given:   %y = A(%x); %z = B(%y)      Execute: y->replaceAllUsesWith(w)
  /// Result:  %y = A(%x); %z = B(%w)      (%y now has no uses)
  void replaceAllUsesWith(Value* other);

  Value(Kind kind, Graph* graph, Node* producer, size_t index)
      : kind_(kind),
        output_index_(static_cast<uint32_t>(index)),
        graph_(graph),
        producer_(producer) {}

  Kind kind_;
  bool has_value_info_ = false;
  uint32_t output_index_;  ///< a node has far fewer than 2^32 outputs (the importer's limits)
  Graph* graph_;
  Node* producer_;
  std::string name_;
  Type type_;
  std::vector<Use> uses_;
  // Held out of line: most values are node outputs without data, and a Value is allocated per
  // output (inline, the two would make every Value about 1 KB).
  std::unique_ptr<Tensor> initializer_;
  std::unique_ptr<SparseTensor> sparse_;
  RarePtr rare_;  ///< doc string and unknown fields: set on few values and nodes
  void setRare(std::string RareFields::*field, std::string text) {
    if (!rare_ && text.empty()) return;
    if (!rare_) rare_ = std::make_unique<RareFields>();
    (*rare_).*field = std::move(text);
  }
};

/// A node attribute (AttributeProto). Graph-valued attributes own their subgraphs.
struct Attribute {
  /// AttributeProto.AttributeType codes.
  enum class Kind : int32_t {
    kUndefined = 0,
    kFloat = 1,
    kInt = 2,
    kString = 3,
    kTensor = 4,
    kGraph = 5,
    kFloats = 6,
    kInts = 7,
    kStrings = 8,
    kTensors = 9,
    kGraphs = 10,
    kSparseTensor = 11,
    kSparseTensors = 12,
    kTypeProto = 13,
    kTypeProtos = 14,
  };

  std::string name;
  Kind kind = Kind::kUndefined;
  std::string ref_attr_name;  ///< set inside function bodies: the value comes from the caller
  std::string doc_string;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;                 ///< kTensor holds exactly one
  std::vector<std::unique_ptr<Graph>> graphs;  ///< kGraph holds exactly one
  std::vector<SparseTensor> sparse_tensors;    ///< kSparseTensor holds exactly one
  std::vector<Type> types;                     ///< kTypeProto holds exactly one
  std::string unknown_fields;

  static const char* kindName(Kind kind);
};

/// An operator application. Inputs may be nullptr (an omitted optional input, "" in ONNX); so may
/// outputs (an omitted optional output).
class Node {
 public:
  ~Node();
  Node(const Node&) = delete;
  static void* operator new(size_t size);
  static void operator delete(void* p, size_t size);
  Node& operator=(const Node&) = delete;

  const std::string& opType() const { return op_type_; }
  /// The operator domain; "" is the default ONNX domain ("ai.onnx").
  const std::string& domain() const { return domain_; }
  const std::string& name() const { return name_; }
  const std::string& docString() const { return rare_ ? rare_->doc_string : emptyString(); }
  const std::string& unknownFields() const { return rare_ ? rare_->unknown_fields : emptyString(); }

  Graph* owningGraph() const { return graph_; }
  bool isErased() const { return erased_; }
  /// The next / previous live node in the graph's order, or nullptr.
  Node* next() const;
  Node* prev() const;

  // --- inputs ---
  const std::vector<Value*>& inputs() const { return inputs_; }
  size_t numInputs() const { return inputs_.size(); }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  /// True when operand `i` is absent or recorded in its value's use-list (the verifier's check).
  bool inputIsRecorded(size_t i) const;

  // --- outputs ---
  size_t numOutputs() const { return outputs_.size(); }
  Value* output(size_t i = 0) const { return i < outputs_.size() ? outputs_[i].get() : nullptr; }
  /// The output slots as Value* (nullptr for an absent one), viewed without a copy: do not add
  /// or remove outputs while iterating.
  class OutputRange {
   public:
    class iterator {
     public:
      using iterator_category = std::forward_iterator_tag;
      using value_type = Value*;
      using difference_type = std::ptrdiff_t;
      using pointer = Value**;
      using reference = Value*;
      explicit iterator(const std::unique_ptr<Value>* p) : p_(p) {}
      Value* operator*() const { return p_->get(); }
      iterator& operator++() {
        ++p_;
        return *this;
      }
      iterator operator++(int) {
        iterator old = *this;
        ++p_;
        return old;
      }
      bool operator==(const iterator& other) const { return p_ == other.p_; }

     private:
      const std::unique_ptr<Value>* p_;
    };
    OutputRange(const std::unique_ptr<Value>* data, size_t size) : data_(data), size_(size) {}
    iterator begin() const { return iterator(data_); }
    iterator end() const { return iterator(data_ + size_); }
    size_t size() const { return size_; }
    Value* operator[](size_t i) const { return data_[i].get(); }

   private:
    const std::unique_ptr<Value>* data_;
    size_t size_;
  };
  OutputRange outputs() const { return OutputRange(outputs_.data(), outputs_.size()); }

  // --- attributes ---
  const std::vector<Attribute>& attributes() const { return attributes_; }
  const Attribute* findAttribute(const std::string& name) const;
  /// Every subgraph held by this node's attributes.
  std::vector<Graph*> subgraphs() const;

 private:
  // Mutators are private (see Value): rewrite::Rewriter for passes, ir::Builder otherwise.
  friend class Graph;
  friend class Value;
  friend class NodeIterator;
  friend class Builder;

  void setOpType(std::string op) { op_type_ = std::move(op); }
  void setDomain(std::string domain) { domain_ = std::move(domain); }
  void setName(std::string name) { name_ = std::move(name); }
  void setDocString(std::string doc) { setRare(&RareFields::doc_string, std::move(doc)); }
  void setUnknownFields(std::string fields) {
    setRare(&RareFields::unknown_fields, std::move(fields));
  }
  /// Given: %y = A(%a, %b)   Execute: node->setInput(1, c)   Result: %y = A(%a, %c)
  void setInput(size_t i, Value* value);
  /// Given: %y = A(%a)       Execute: node->addInput(b)      Result: %y = A(%a, %b)
  void addInput(Value* value);
  /// Given: %y = A(%a, %b)   Execute: node->removeInput(0)   Result: %y = A(%b)
  void removeInput(size_t i);
  /// Drops every input (and, recursively, the inputs of nodes in subgraphs).
  void dropAllReferences();
  /// Given: A(%a)            Execute: node->addOutput()     Result: %new = A(%a)
  Value* addOutput();
  /// Appends an absent (omitted optional) output slot.
  void addAbsentOutput() { outputs_.emplace_back(); }
  /// Removes output `i`, which must have no uses. Later outputs shift down.
  void removeOutput(size_t i);
  std::vector<Attribute>& mutableAttributes() { return attributes_; }
  Attribute* findMutableAttribute(const std::string& name);
  /// Adds or replaces an attribute; subgraphs in it become owned by this node.
  void setAttribute(Attribute attr);
  /// Appends an attribute whose name the caller knows is not yet present (the importer, which
  /// checks names itself: a lookup per attribute would be quadratic in their number).
  void appendAttribute(Attribute attr);
  bool removeAttribute(const std::string& name);
  /// Moves this node to just before `other` (in the same graph).
  void moveBefore(Node* other);

  Node(Graph* graph, std::string op_type, std::string domain)
      : graph_(graph), op_type_(std::move(op_type)), domain_(std::move(domain)) {}

  friend class WorklistMarks;
  friend class NodeMarks;
  /// Records operand `i` (holding a value) at the end of that value's use-list.
  void attachUse(size_t i);
  /// Removes operand `i`'s entry from its value's use-list in O(1): the last entry takes its place.
  void detachUse(size_t i);

  // Fields in the order walks touch them: every walk reads the links and `erased_`, most read the
  // op type and look for subgraphs in the attributes; names and docs come last. A walk over a
  // million nodes then reads one or two cache lines per node.
  Node* next_ = nullptr;
  Node* prev_ = nullptr;
  Graph* graph_;
  std::vector<Attribute> attributes_;
  bool erased_ = false;
  std::string op_type_;
  std::string domain_;
  std::vector<Value*> inputs_;
  std::vector<std::unique_ptr<Value>> outputs_;
  // 64-bit epochs: they never wrap, so a stale mark never reads as current.
  uint64_t queued_mark_ = 0;        ///< WorklistMarks: the worklist pass that queued this node
  uint64_t visited_mark_ = 0;       ///< WorklistMarks: the worklist pass that visited this node
  mutable uint64_t walk_mark_ = 0;  ///< NodeMarks: the read-only walk that marked this node
  /// For each operand holding a value, the position of its entry in that value's use-list, so
  /// that removing a use costs O(1) however many uses the value has.
  std::vector<size_t> use_positions_;
  std::string name_;
  RarePtr rare_;  ///< doc string and unknown fields: set on few values and nodes
  void setRare(std::string RareFields::*field, std::string text) {
    if (!rare_ && text.empty()) return;
    if (!rare_) rare_ = std::make_unique<RareFields>();
    (*rare_).*field = std::move(text);
  }
};

/// Queued / visited marks that a worklist keeps in the nodes themselves instead of in hash sets
/// (the rewrite driver visits every node of every graph once per round; sets of pointers cost it
/// more than the patterns). Each `reset()` starts a new epoch, so old marks need no clearing.
class WorklistMarks {
 public:
  void reset() { epoch_ = ++next_epoch_; }
  bool queued(const Node* n) const { return n->queued_mark_ == epoch_; }
  void setQueued(Node* n, bool queued) { n->queued_mark_ = queued ? epoch_ : 0; }
  bool visited(const Node* n) const { return n->visited_mark_ == epoch_; }
  void setVisited(Node* n) { n->visited_mark_ = epoch_; }

 private:
  static inline thread_local uint64_t next_epoch_ = 0;
  uint64_t epoch_ = 0;
};

/// One mark per node for a read-only walk (the verifier's "already seen"), kept in the nodes so
/// that a walk over a million nodes needs no set. Each NodeMarks is a new epoch, so marks of
/// earlier walks read as unmarked. Walks that use NodeMarks must not run concurrently on a graph.
class NodeMarks {
 public:
  NodeMarks() : epoch_(++next_epoch_) {}
  bool marked(const Node* n) const { return n->walk_mark_ == epoch_; }
  void mark(const Node* n) const { n->walk_mark_ = epoch_; }

 private:
  static inline thread_local uint64_t next_epoch_ = 0;
  uint64_t epoch_;
};

/// Iterates the live nodes of a graph in order. Erasing the current node is safe.
class NodeIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = Node*;
  using difference_type = std::ptrdiff_t;
  using pointer = Node**;
  using reference = Node*;

  explicit NodeIterator(Node* node) : node_(node) {}
  Node* operator*() const { return node_; }
  NodeIterator& operator++();
  NodeIterator operator++(int) {
    NodeIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const NodeIterator& other) const { return node_ == other.node_; }

 private:
  Node* node_;
};

/// A graph (GraphProto): inputs, initializers, nodes in topological order, outputs.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  const std::string& docString() const { return doc_string_; }
  const std::string& unknownFields() const { return unknown_fields_; }
  /// Serialized TensorAnnotation messages (quantization_annotation), kept verbatim.
  const std::vector<std::string>& quantizationAnnotations() const {
    return quantization_annotations_;
  }
  /// Serialized ValueInfoProto entries naming no value of this graph, kept verbatim.
  const std::vector<std::string>& orphanValueInfos() const { return orphan_value_infos_; }

  /// The node whose attribute holds this graph; nullptr for a top-level graph or function body.
  Node* parentNode() const { return parent_node_; }
  /// The graph enclosing this one, or nullptr.
  Graph* parentGraph() const;
  /// A counter of the changes to the set of value names in this graph's outermost graph
  /// (Value::setName, nodes erased, inputs, initializers, outputs and subgraphs removed or
  /// attached): equal numbers mean the same names. rewrite::Rewriter keeps a name index that it
  /// rebuilds when the counter moved by more than its own changes.
  uint64_t nameEpoch() const;

  // --- nodes ---
  NodeIterator begin() const;
  NodeIterator end() const { return NodeIterator(nullptr); }
  Node* firstNode() const;
  Node* lastNode() const;
  size_t numNodes() const { return num_nodes_; }
  bool empty() const { return num_nodes_ == 0; }
  /// Frees erased nodes. Call only when no NodeIterator points at an erased node. (Not a change
  /// of the IR: erased nodes are already out of every list and use-list.)
  void collectGarbage();

  // --- inputs, initializers, outputs ---
  const std::vector<Value*>& inputs() const { return inputs_; }
  /// Values with constant data, in declaration order (initializers, and inputs with defaults).
  const std::vector<Value*>& initializers() const { return initializers_; }
  std::vector<Value*> outputs() const;
  size_t numOutputs() const;
  Value* output(size_t i) const;
  /// The hidden node whose inputs are the graph outputs.
  Node* returnNode() const { return return_node_.get(); }

  /// Every node of this graph and of its subgraphs, recursively, in pre-order.
  std::vector<Node*> allNodesRecursive() const;

 private:
  // Mutators are private (see Value): rewrite::Rewriter for passes, ir::Builder otherwise.
  friend class Node;
  friend class Value;
  friend class Builder;

  void setName(std::string name) { name_ = std::move(name); }
  void setDocString(std::string doc) { doc_string_ = std::move(doc); }
  void setUnknownFields(std::string fields) { unknown_fields_ = std::move(fields); }
  std::vector<std::string>& mutableQuantizationAnnotations() { return quantization_annotations_; }
  std::vector<std::string>& mutableOrphanValueInfos() { return orphan_value_infos_; }

  /// Creates a node with `num_outputs` fresh outputs, inserted before `before` (at the end if
  /// nullptr).
  /// Given:   %a = X(); %c = Z(%a)
  /// Execute: createNode("Y", "", {a}, 1, /*before=*/Z)
  /// Result:  %a = X(); %new = Y(%a); %c = Z(%a)
  Node* createNode(std::string op_type, std::string domain, const std::vector<Value*>& inputs,
                   size_t num_outputs, Node* before = nullptr);
  /// Unlinks `node`, which must not have used outputs; it is freed by collectGarbage().
  /// Given:   %a = X(); %b = Y(%a)        Execute: eraseNode(Y)      Result: %a = X()
  void eraseNode(Node* node);

  /// Given: graph (%x)    Execute: addInput("y", t)    Result: graph (%x, %y)
  Value* addInput(std::string name, Type type);
  /// Removes graph input `value`, which must have no uses.
  void removeInput(Value* value);
  /// Given: graph {}      Execute: addInitializer("w", t)  Result: graph { %w = <t> }
  Value* addInitializer(std::string name, Tensor tensor);
  /// Adds a sparse initializer (SparseTensorProto).
  Value* addSparseInitializer(std::string name, SparseTensor tensor);
  /// Gives graph input `value` a default value (an initializer of the same name, IR < 4 style).
  void setInputDefault(Value* value, Tensor tensor);
  /// Removes several initializers (or inputs' defaults) that have no uses, in time linear in the
  /// graph's initializers.
  void removeInitializers(const std::vector<Value*>& values);
  /// Turns graph input `value`, which has a default, into a plain initializer (no longer an input).
  /// Given:   graph (%x, %w) { %w = <t> }
  /// Execute: freezeInputDefault(w)
  /// Result:  graph (%x) { %w = <t> }
  void freezeInputDefault(Value* value);
  void addOutput(Value* value);
  void setOutput(size_t i, Value* value);
  void removeOutput(size_t i);

  void linkBefore(Node* node, Node* before);
  void unlink(Node* node);

  std::string name_;
  std::string doc_string_;
  std::string unknown_fields_;
  std::vector<std::string> quantization_annotations_;
  std::vector<std::string> orphan_value_infos_;
  Node* parent_node_ = nullptr;
  uint64_t name_epoch_ = 0;  ///< meaningful on the outermost graph (nameEpoch)
  /// Counts a name change on the outermost graph.
  void noteNameChange();

  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  size_t num_nodes_ = 0;
  std::vector<std::unique_ptr<Node>> graveyard_;

  std::vector<std::unique_ptr<Value>> owned_values_;  // graph inputs and initializers
  std::vector<Value*> inputs_;
  std::vector<Value*> initializers_;
  std::unique_ptr<Node> return_node_;
};

/// An opset import: domain ("" is ai.onnx) and version.
struct OpsetImport {
  std::string domain;
  int64_t version = 0;
  bool operator==(const OpsetImport& other) const = default;
};

/// A model-local function (FunctionProto). The body is a Graph whose inputs and outputs are the
/// function's formal parameters (untyped).
struct Function {
  std::string name;
  std::string domain;
  std::string doc_string;
  std::vector<std::string> attribute_names;
  std::vector<OpsetImport> opset_imports;
  std::unique_ptr<Graph> body;
  std::string unknown_fields;
};

/// A model (ModelProto).
struct Model {
  int64_t ir_version = 0;
  std::vector<OpsetImport> opset_imports;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  std::unique_ptr<Graph> graph;
  std::vector<std::unique_ptr<Function>> functions;
  std::vector<std::string> training_info;  ///< serialized TrainingInfoProto, kept opaque
  std::string unknown_fields;

  /// The version imported for `domain` ("" and "ai.onnx" are the same), or nullopt.
  std::optional<int64_t> opsetVersion(const std::string& domain) const;
};

}  // namespace onnxopt::ir
