// The deterministic text form of the IR (`opt --emit=text`), the format of all pass tests.
//
//   model ir_version=8 opsets=[ai.onnx:17]
//   graph "g" {
//     input %x: float[N,4]
//     init %w: float[4] = {1, 2, 3, 4}
//     %y: float[N,4] = Mul(%x, %w)  # mul0
//     %z = Split<axis=1, num_outputs=2>(%y)
//     output %y
//   }
//
// Nodes appear in topological order, attributes sorted by name, subgraphs as nested blocks.
#pragma once

#include <cstdint>
#include <string>

#include "onnxopt/ir/graph.h"

namespace onnxopt::ir {

struct PrintOptions {
  /// Tensors with more elements than this print as `{...}`; negative prints every element.
  int64_t elide_above = -1;
};

std::string printModel(const Model& model, const PrintOptions& options = {});
std::string printGraph(const Graph& graph, const PrintOptions& options = {});

}  // namespace onnxopt::ir
