// The Rewriter: the only API passes use to change the IR. It keeps use-lists and topological order
// valid, keeps the names of the model's outputs, and tells a listener (the driver) what changed so
// that affected nodes are revisited.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "onnxopt/ir/graph.h"

namespace onnxopt::rewrite {

/// Notified of every change a Rewriter makes.
class RewriteListener {
 public:
  virtual ~RewriteListener() = default;
  virtual void nodeCreated(ir::Node* /*node*/) {}
  /// Called just before `node` is erased.
  virtual void nodeErased(ir::Node* /*node*/) {}
  /// An input or attribute of `node` changed.
  virtual void nodeModified(ir::Node* /*node*/) {}
  /// `value` gained uses (its users may now match patterns they did not before).
  virtual void valueUsersChanged(ir::Value* /*value*/) {}
};

class Rewriter {
 public:
  explicit Rewriter(RewriteListener* listener = nullptr) : listener_(listener) {}

  /// Where createNode inserts: before `node` (its graph is the target graph).
  void setInsertionPoint(ir::Node* node) {
    insert_graph_ = node->owningGraph();
    insert_before_ = node;
  }
  /// Inserts at the end of `graph`.
  void setInsertionPointToEnd(ir::Graph& graph) {
    insert_graph_ = &graph;
    insert_before_ = nullptr;
  }

  /// Creates a node at the insertion point.
  /// Given:   %y = Relu(%x)          (insertion point: Relu)
  /// Execute: createNode("Neg", "", {x}, 1)
  /// Result:  %n = Neg(%x); %y = Relu(%x)
  ir::Node* createNode(const std::string& op_type, const std::string& domain,
                       const std::vector<ir::Value*>& inputs, size_t num_outputs = 1);
  /// Creates a node with one output per entry of `output_types`, typed so.
  /// Given:   %y = Relu(%x)          (insertion point: Relu)
  /// Execute: createNode("Neg", "", {x}, {float[N]})
  /// Result:  %n: float[N] = Neg(%x); %y = Relu(%x)
  ir::Node* createNode(const std::string& op_type, const std::string& domain,
                       const std::vector<ir::Value*>& inputs, std::vector<ir::Type> output_types);
  /// createNode with the output types of `like`, which takes over the name of node `like` too
  /// (the usual fusion: the new node stands for the chain that ended in `like`).
  /// Given:   %t = Mul(%x, %w); %y = Add(%t, %b)
  /// Execute: createNodeLike("Gemm", "", {x, w, b}, Add)
  /// Result:  %g = Gemm(%x, %w, %b) (named as Add, typed as %y); ...
  ir::Node* createNodeLike(const std::string& op_type, const std::string& domain,
                           const std::vector<ir::Value*>& inputs, const ir::Node* like);

  /// Adds an initializer to `graph` with a name unique in that graph, derived from `base_name`.
  ir::Value* createInitializer(ir::Graph& graph, const std::string& base_name, ir::Tensor tensor);
  /// Adds an initializer to `value`'s graph that takes `value`'s name over (`value` is left
  /// unnamed): the name is unique and was just freed, so none is searched for (createInitializer
  /// indexes every name of the model first). Not for a model output (isNamedOutput), whose value
  /// keeps its name: use createInitializer and replaceAllUsesWith there.
  ir::Value* createInitializerNamedAs(ir::Value* value, ir::Tensor tensor);

  /// Whether `from` can be replaced by `to` without an Identity standing in for it as a graph
  /// output. Where `from` is an output of graph G, `to` must be produced by a node of G (for the
  /// main graph an initializer also does) and must not be an output of G already; for the main
  /// graph (and function bodies) `to` then takes over the output's name.
  bool canReplaceWithoutIdentity(const ir::Value* from, const ir::Value* to) const;

  /// Points every use of `from` at `to`. Where `from` is a graph output: `to` takes its place (and,
  /// in the main graph, its name) when canReplaceWithoutIdentity says so, else an Identity of `to`
  /// appended to that graph stands in, named like `from` in the main graph.
  /// Given:   %t = A(%x); %y = B(%t); output %y     Execute: replaceAllUsesWith(y, t)
  /// Result:  %y = A(%x); output %y                 (A's output renamed; B is now unused)
  ///
  /// Elsewhere a rewrite's result takes the name of the value it replaces, so that a name means
  /// one value before and after (a per-layer check pairs values by name): where `to` is an output
  /// of a node this Rewriter created or changed (setInput, setAttribute, setOpType, ...), a
  /// value it markChanged, or an unnamed value, `to` takes `from`'s name and `from` is left
  /// unnamed; the name `to` had said what it held before the rewrite, so it goes (a created
  /// node's fresh name stays where `from` has none). A value left as it was (a graph input, an
  /// initializer, an untouched node's output, as cse or eliminate-noop forward to) keeps its
  /// name. A model output keeps its name.
  /// Given:   %c = Conv(%x, %w); %y = BN(%c, ...); %z = Relu(%y)
  /// Execute: setInput(Conv, 1, %w2); replaceAllUsesWith(y, c)
  /// Result:  %y = Conv(%x, %w2); %z = Relu(%y)     (the Conv's output renamed; BN now unused)
  void replaceAllUsesWith(ir::Value* from, ir::Value* to);

  /// `value` now holds something other than what its name said: a rewrite changed in place how
  /// it is computed (a link of a fused chain rescaled or re-laid-out) and it replaces no value.
  /// Its name is freed (export names it afresh) so that nothing pairs it with the value it was;
  /// a later replaceAllUsesWith onto it gives it the replaced value's name. Not for a model
  /// output (isNamedOutput): a rewrite keeps what those hold.
  /// Given:   %m = MatMul(%x, %w); %r = Reshape(%m, %s); %y = Mul(%r, 2)
  /// Execute: setInput(MatMul, 1, %w2); markChanged(m); markChanged(r); replaceAllUsesWith(y, r)
  /// Result:  %_0 = MatMul(%x, %w2); %y = Reshape(%_0, %s)
  void markChanged(ir::Value* value);

  /// replaceAllUsesWith for each output of `node`, then erases it. An output nothing reads still
  /// gives its name to its replacement, where replaceAllUsesWith would.
  void replaceNode(ir::Node* node, const std::vector<ir::Value*>& values);

  /// Erases a node whose outputs have no uses.
  void eraseNode(ir::Node* node);
  /// Erases, in order, those of `nodes` (nullptr allowed) whose outputs have no uses and are no
  /// graph outputs: a fusion's matched chain, users first, where some links may still be read.
  void eraseDeadNodes(const std::vector<ir::Node*>& nodes);

  void setInput(ir::Node* node, size_t index, ir::Value* value);
  void addInput(ir::Node* node, ir::Value* value);
  void removeInput(ir::Node* node, size_t index);
  void setAttribute(ir::Node* node, ir::Attribute attribute);
  /// Sets on `to` a copy of `from`'s attribute `name`, if `from` has it (not a graph attribute);
  /// returns whether it did.
  /// Given: %a = Gelu<approximate="tanh">(%x); %b = F(%y)
  /// Execute: copyAttribute(Gelu, F, "approximate")   Result: %b = F<approximate="tanh">(%y)
  bool copyAttribute(const ir::Node& from, ir::Node* to, const std::string& name);
  void removeAttribute(ir::Node* node, const std::string& name);
  /// Removes an initializer that has no uses (or the default of a graph input).
  void eraseInitializer(ir::Value* value) { eraseInitializers({value}); }
  /// Removes several initializers of one graph at once (linear time, however many).
  void eraseInitializers(const std::vector<ir::Value*>& values);
  /// Makes a graph input's default a constant: the input goes, an initializer stays.
  void freezeInputDefault(ir::Value* value);

  /// Drops the value_info entries of `graph` that name no value (kept verbatim from import).
  void dropOrphanValueInfos(ir::Graph& graph);

  /// Sets the type of `value` (its users may now match patterns they did not before).
  /// Given: %y: float[?] = A(%x)     Execute: setType(y, float[4])   Result: %y: float[4] = A(%x)
  void setType(ir::Value* value, ir::Type type);
  /// Renames a value; "" frees its name (a later value may take it). Names are metadata: no
  /// pattern sees them, so no node is revisited.
  void setName(ir::Value* value, std::string name);
  void setName(ir::Node* node, std::string name);

  /// Moves the body of `branch`, a graph held by an attribute of `node`, into node's graph just
  /// before `node`: its initializers become initializers there, its nodes are recreated in order
  /// (names, doc strings, attributes and nested subgraphs kept; value names kept where free in
  /// the model, else made unique). Returns the values that the branch's outputs now are, one per
  /// output; `node` is left in place (replaceNode(node, result) is the usual next step).
  /// Given:   %y = If(%c) { then: %a = F(%x) -> %a ; else: ... }
  /// Execute: inlineBranch(If, then)
  /// Result:  %a = F(%x); %y = If(%c) { then: -> %a ; ... }     (returns {%a})
  std::vector<ir::Value*> inlineBranch(ir::Node* node, ir::Graph& branch);

  /// Recreates the body of model-local function `fn` just before `call`, a node calling it: the
  /// body's inputs stand for the call's inputs (absent ones for missing optional inputs), an
  /// attribute that refers to the caller's (ref_attr_name) takes the call's value or is left out
  /// when the call has none, and each body value gets a fresh name under the call's (or the
  /// function's) name. Returns the values the function's outputs now are, one per output; `call`
  /// is left in place (replaceNode(call, result) is the usual next step). The body must hold no
  /// graph attribute (subgraphs are not copied) and read only its inputs and earlier body values.
  /// Given:   f(a) => (r) { t = Exp(a); r = Neg(t) };   %y = local.f(%x)    (node named n)
  /// Execute: inlineFunctionCall(call, f)
  /// Result:  %n/t = Exp(%x); %n/r = Neg(%n/t); %y = local.f(%x)      (returns {%n/r})
  std::vector<ir::Value*> inlineFunctionCall(ir::Node* call, const ir::Function& fn);

  /// Changes the operator of `node` in place (inputs, outputs and attributes stay).
  /// Given: %y = A(%x)    Execute: setOpType(node, "B", "")    Result: %y = B(%x)
  void setOpType(ir::Node* node, std::string op_type, std::string domain);

  /// Appends an input to `graph` (a function body being built, say).
  /// Given: graph (%x)    Execute: addGraphInput(graph, "y", float[2])    Result: graph (%x, %y)
  ir::Value* addGraphInput(ir::Graph& graph, std::string name, ir::Type type);
  /// Appends `value`, a value of `graph`, to its outputs.
  /// Given: graph () => (%a)    Execute: addGraphOutput(graph, b)    Result: graph () => (%a, %b)
  void addGraphOutput(ir::Graph& graph, ir::Value* value);

  /// Adds model-local function `fn` to `model` (no function of that domain and name may exist),
  /// and an import of each domain its body imports that the model does not import yet.
  /// Given:   model { functions: [] }
  /// Execute: addFunction(model, ai.onnxopt.MatMulBias(A, B, bias) => (Y) { ... })
  /// Result:  model { functions: [ai.onnxopt.MatMulBias] }
  void addFunction(ir::Model& model, std::unique_ptr<ir::Function> fn);
  /// Imports `domain` at `version` in `model` where it is not imported yet (an existing import,
  /// of any version, stays).
  /// Given: opset_import ["": 20]  Execute: addOpsetImport(model, "ai.onnxopt", 1)
  /// Result: opset_import ["": 20, "ai.onnxopt": 1]
  void addOpsetImport(ir::Model& model, const std::string& domain, int64_t version);

  /// True once any change was made.
  bool changed() const { return changed_; }
  void resetChanged() { changed_ = false; }
  RewriteListener* listener() const { return listener_; }

  /// A name no value of `graph`'s outermost graph has, derived from `base`: what
  /// uniqueValueName returns, from an index of the names that this Rewriter keeps up to date with
  /// its own changes (amortized O(1) where uniqueValueName collects every name, O(values)).
  std::string uniqueName(const ir::Graph& graph, const std::string& base);

 private:
  void notifyUsers(ir::Value* value);
  /// Records that `node`'s outputs may no longer hold what their names said (see
  /// replaceAllUsesWith).
  void noteRewritten(ir::Node* node) { rewritten_.insert(node); }
  /// replaceAllUsesWith's naming where `from` is no model output.
  void nameReplacement(ir::Value* from, ir::Value* to);
  /// B::setName through the name index.
  void renameValue(ir::Value* value, std::string name);
  /// After one change of this Rewriter's that moved `graph`'s name epoch by one: the names it
  /// removed and added, so that the index stays exact (any other change invalidates it).
  void noteNames(const ir::Graph& graph, const std::vector<std::string>& removed,
                 const std::string& added);

  /// The value names of one outermost graph (with multiplicity), exact while that graph's
  /// nameEpoch() equals `epoch`, kept as 64-bit hashes: collecting them allocates nothing per
  /// name. A name whose hash another name shares counts as taken, so a name said to be free is
  /// free; the rare collision only costs a suffix.
  struct NameIndex {
    const ir::Graph* root = nullptr;
    uint64_t epoch = 0;
    std::vector<uint64_t> collected;            ///< sorted, when the index was built
    std::unordered_map<uint64_t, int> changes;  ///< names added (+1) and removed (-1) since

    static uint64_t hash(const std::string& name);
    bool taken(const std::string& name) const;
    void note(const std::string& name, int delta);
  };
  NameIndex names_;

  /// Nodes this Rewriter created, or changed the inputs, attributes or operator of; and values
  /// it was told changed (markChanged). Erased nodes stay allocated until the pass collects
  /// garbage, after this Rewriter's work, so their addresses are not reused meanwhile.
  std::unordered_set<const ir::Node*> created_;
  std::unordered_set<const ir::Node*> rewritten_;
  std::unordered_set<const ir::Value*> changed_values_;

  RewriteListener* listener_;
  ir::Graph* insert_graph_ = nullptr;
  ir::Node* insert_before_ = nullptr;
  bool changed_ = false;
};

/// True when `value` is an output whose name the outside world sees: an output of a top-level graph
/// (the model's graph or a function body). Subgraph outputs bind by position and may be renamed.
bool isNamedOutput(const ir::Value* value);

/// A copy of attribute `a` under `name` (its ref_attr_name dropped). `a` must hold no graph.
/// ir::copyPlainAttribute for passes, which may not include ir/builder.h (the layering check).
ir::Attribute copyPlainAttribute(const ir::Attribute& a, const std::string& name);

/// A model-local function `domain`.`name` whose body copies the nodes of `body` (which hold no
/// graph attribute), in order, with formal inputs `inputs` and outputs `outputs` (values of
/// `body`; values the body reads that are not among `inputs` must not exist). An attribute
/// reference @r becomes @rename[r] where `rename` lists r; attributes for which `drop` is true
/// are left out. The function's attribute names are `attribute_names`, its imports `imports`.
/// Given:   body { %t = Exp(%x); %y = Neg(%t) }, inputs [%x], outputs [%y]
/// Execute: copyToFunction(body, "example", "NegExp", ...)
/// Result:  example.NegExp (x) => (y) { t = Exp(x); y = Neg(t) }
std::unique_ptr<ir::Function> copyToFunction(
    const ir::Graph& body, const std::string& domain, const std::string& name,
    const std::vector<const ir::Value*>& inputs, const std::vector<const ir::Value*>& outputs,
    std::vector<std::string> attribute_names, std::vector<ir::OpsetImport> imports,
    const std::map<std::string, std::string>& rename = {},
    const std::function<bool(const ir::Node&, const ir::Attribute&)>& drop = {});

/// A name not used by any value of `graph` (nor its enclosing graphs), derived from `base`.
std::string uniqueValueName(const ir::Graph& graph, const std::string& base);

}  // namespace onnxopt::rewrite
