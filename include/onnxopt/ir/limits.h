// Limits on the size of a model that hold across the layers.
#pragma once

#include <cstdint>

namespace onnxopt::ir {

/// The most nodes a model may hold, over every graph, subgraph and function, unless the caller
/// says otherwise: what a model file may ask for (io::LoadLimits::max_nodes) and what inlining its
/// functions may make of it (the inline-functions pass's max-nodes); `opt --max-nodes`.
inline constexpr int64_t kDefaultMaxNodes = int64_t{1} << 24;

}  // namespace onnxopt::ir
