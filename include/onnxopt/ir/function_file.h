// A file of model-local functions in ONNX's textual syntax, as the importer reads it: the input
// of rewrite rules (passes/rewrite/rewrite_rules.cc) and of plugin ops' function bodies. Besides
// the functions it keeps where each one and each of its nodes was written, and the attribute
// defaults of the nodes' schemas, so that a rule's errors name the line and its matcher can
// compare an attribute a node leaves out with the value the schema gives it.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnxopt/ir/graph.h"

namespace onnxopt::ir {

struct FunctionFile {
  /// Where the text came from, for messages ("rules.onnxtxt").
  std::string path;
  /// The functions in file order, imported into a model whose main graph is empty (the model
  /// owns them; its opset_imports are the union of the functions').
  std::unique_ptr<Model> model;

  struct NodeInfo {
    int line = 0;  ///< where the node's first output is defined
    /// Every attribute the node's schema (at the function's opset) gives a default for, set on
    /// the node or not (default-domain ops that libonnx knows).
    std::vector<Attribute> defaults;
  };
  /// Per function of `model`: the line its header starts on.
  std::unordered_map<const Function*, int> function_lines;
  /// Per node of the function bodies.
  std::unordered_map<const Node*, NodeInfo> nodes;

  int lineOf(const Function& fn) const {
    auto it = function_lines.find(&fn);
    return it == function_lines.end() ? 0 : it->second;
  }
  int lineOf(const Node& node) const {
    auto it = nodes.find(&node);
    return it == nodes.end() ? 0 : it->second.line;
  }
  const std::vector<Attribute>* defaultsOf(const Node& node) const {
    auto it = nodes.find(&node);
    return it == nodes.end() ? nullptr : &it->second.defaults;
  }
};

}  // namespace onnxopt::ir
