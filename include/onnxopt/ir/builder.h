// ir::Builder: raw mutation of the IR, for code that builds or annotates a graph outside a pass.
//
// The setters of Value, Node and Graph are private; this class is the one door to them. Its users
// are the importer (building a graph from a file), shape inference (annotating value types), the
// Rewriter's own implementation and tests. Passes never include this header
// (tools/check_layers.py refuses it): they mutate through rewrite::Rewriter, which keeps use-lists
// and order valid and tells the pattern driver what changed, so its worklist never goes stale.
//
// Each member forwards to the private method of the same name, whose comment in graph.h gives the
// Given / Execute / Result example.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/ir/graph.h"

namespace onnxopt::ir {

class Builder {
 public:
  Builder() = delete;

  // --- values ---
  static void setName(Value* v, std::string name) { v->setName(std::move(name)); }
  static void setType(Value* v, Type type) { v->setType(std::move(type)); }
  static void setInitializer(Value* v, std::optional<Tensor> t) { v->setInitializer(std::move(t)); }
  static void setSparseInitializer(Value* v, std::optional<SparseTensor> t) {
    v->setSparseInitializer(std::move(t));
  }
  static void setDocString(Value* v, std::string doc) { v->setDocString(std::move(doc)); }
  static void setUnknownFields(Value* v, std::string f) { v->setUnknownFields(std::move(f)); }
  static void setHasValueInfo(Value* v, bool has) { v->setHasValueInfo(has); }
  static void replaceAllUsesWith(Value* from, Value* to) { from->replaceAllUsesWith(to); }

  // --- nodes ---
  static void setOpType(Node* n, std::string op) { n->setOpType(std::move(op)); }
  static void setDomain(Node* n, std::string domain) { n->setDomain(std::move(domain)); }
  static void setName(Node* n, std::string name) { n->setName(std::move(name)); }
  static void setDocString(Node* n, std::string doc) { n->setDocString(std::move(doc)); }
  static void setUnknownFields(Node* n, std::string f) { n->setUnknownFields(std::move(f)); }
  static void setInput(Node* n, size_t i, Value* v) { n->setInput(i, v); }
  static void addInput(Node* n, Value* v) { n->addInput(v); }
  static void removeInput(Node* n, size_t i) { n->removeInput(i); }
  static void dropAllReferences(Node* n) { n->dropAllReferences(); }
  static Value* addOutput(Node* n) { return n->addOutput(); }
  static void addAbsentOutput(Node* n) { n->addAbsentOutput(); }
  static void removeOutput(Node* n, size_t i) { n->removeOutput(i); }
  static std::vector<Attribute>& mutableAttributes(Node* n) { return n->mutableAttributes(); }
  static Attribute* findMutableAttribute(Node* n, const std::string& name) {
    return n->findMutableAttribute(name);
  }
  static void setAttribute(Node* n, Attribute a) { n->setAttribute(std::move(a)); }
  static void appendAttribute(Node* n, Attribute a) { n->appendAttribute(std::move(a)); }
  static bool removeAttribute(Node* n, const std::string& name) { return n->removeAttribute(name); }
  static void moveBefore(Node* n, Node* other) { n->moveBefore(other); }

  // --- graphs ---
  static void setName(Graph& g, std::string name) { g.setName(std::move(name)); }
  static void setDocString(Graph& g, std::string doc) { g.setDocString(std::move(doc)); }
  static void setUnknownFields(Graph& g, std::string f) { g.setUnknownFields(std::move(f)); }
  static std::vector<std::string>& mutableQuantizationAnnotations(Graph& g) {
    return g.mutableQuantizationAnnotations();
  }
  static std::vector<std::string>& mutableOrphanValueInfos(Graph& g) {
    return g.mutableOrphanValueInfos();
  }
  static Node* createNode(Graph& g, std::string op_type, std::string domain,
                          const std::vector<Value*>& inputs, size_t num_outputs,
                          Node* before = nullptr) {
    return g.createNode(std::move(op_type), std::move(domain), inputs, num_outputs, before);
  }
  static void eraseNode(Graph& g, Node* n) { g.eraseNode(n); }
  static Value* addInput(Graph& g, std::string name, Type type) {
    return g.addInput(std::move(name), std::move(type));
  }
  static void removeInput(Graph& g, Value* v) { g.removeInput(v); }
  static Value* addInitializer(Graph& g, std::string name, Tensor t) {
    return g.addInitializer(std::move(name), std::move(t));
  }
  static Value* addSparseInitializer(Graph& g, std::string name, SparseTensor t) {
    return g.addSparseInitializer(std::move(name), std::move(t));
  }
  static void setInputDefault(Graph& g, Value* v, Tensor t) { g.setInputDefault(v, std::move(t)); }
  static void removeInitializers(Graph& g, const std::vector<Value*>& values) {
    g.removeInitializers(values);
  }
  static void freezeInputDefault(Graph& g, Value* v) { g.freezeInputDefault(v); }
  static void addOutput(Graph& g, Value* v) { g.addOutput(v); }
  static void setOutput(Graph& g, size_t i, Value* v) { g.setOutput(i, v); }
  static void removeOutput(Graph& g, size_t i) { g.removeOutput(i); }
};

/// A copy of attribute `a` under `name` (its ref_attr_name dropped). `a` must hold no graph: a
/// graph attribute owns its body.
Attribute copyPlainAttribute(const Attribute& a, const std::string& name);

}  // namespace onnxopt::ir
