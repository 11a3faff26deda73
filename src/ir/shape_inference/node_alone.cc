// Inference of one node on given input types (shape_inference.h: inferNodeAlone): the same rules
// as inferShapes, run over a one-node model, so that a caller knowing more of the inputs than the
// model's types (concrete dims, known shape data) needs no shape rules of its own.
#include <fmt/format.h>

#include "onnxopt/ir/builder.h"
#include "onnxopt/ir/shape_inference.h"

namespace onnxopt::ir {

std::optional<std::vector<Type>> inferNodeAlone(
    const Model& model, const Node& node, const std::vector<std::optional<NodeInput>>& inputs) {
  if (!node.subgraphs().empty()) return std::nullopt;  // a body is not copied
  Model alone;
  alone.ir_version = model.ir_version;
  alone.opset_imports = model.opset_imports;
  alone.graph = std::make_unique<Graph>();
  Graph& g = *alone.graph;
  std::vector<Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      ins.push_back(nullptr);
      continue;
    }
    std::string name = fmt::format("in{}", i);
    if (inputs[i]->data) {
      // Known data: inference reads it as a constant, as it reads an initializer.
      ins.push_back(Builder::addInitializer(g, name, *inputs[i]->data));
    } else {
      ins.push_back(Builder::addInput(g, name, inputs[i]->type));
    }
  }
  Node* copy = Builder::createNode(g, node.opType(), node.domain(), ins, node.numOutputs());
  for (const Attribute& a : node.attributes()) {
    Builder::appendAttribute(copy, copyPlainAttribute(a, a.name));
  }
  if (!inferShapes(alone).isOk()) return std::nullopt;
  std::vector<Type> types;
  for (size_t i = 0; i < copy->numOutputs(); ++i) types.push_back(copy->output(i)->type());
  return types;
}

}  // namespace onnxopt::ir
