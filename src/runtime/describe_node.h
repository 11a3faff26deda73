// How the runtime names a node in its messages: "node 'NAME' (OP)", or by its first output when
// it has no name.
#pragma once

#include <string>

#include <fmt/format.h>

#include "onnxopt/ir/graph.h"

namespace onnxopt::runtime {

inline std::string describeNode(const ir::Node& n) {
  if (!n.name().empty()) return fmt::format("node '{}' ({})", n.name(), n.opType());
  if (n.numOutputs() > 0 && n.output(0) != nullptr) {
    return fmt::format("node {} producing '{}'", n.opType(), n.output(0)->name());
  }
  return "node " + n.opType();
}

}  // namespace onnxopt::runtime
