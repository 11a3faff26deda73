// Model statistics for `opt --stats` and reports.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "onnxopt/ir/graph.h"

namespace onnxopt::ir {

struct ModelStats {
  uint64_t nodes = 0;            ///< every node, subgraphs and function bodies included
  uint64_t top_level_nodes = 0;  ///< nodes of the main graph only
  uint64_t subgraphs = 0;
  uint64_t initializers = 0;  ///< initializers of every graph
  uint64_t initializer_bytes = 0;
  uint64_t external_bytes = 0;  ///< of which read from external data
  uint64_t functions = 0;
  std::map<std::string, uint64_t> op_histogram;  ///< "domain.Op" (or "Op") -> count
};

ModelStats computeStats(const Model& model);
/// A fixed-layout, human-readable table of the stats.
std::string formatStats(const Model& model, const ModelStats& stats);

}  // namespace onnxopt::ir
