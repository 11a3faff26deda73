// Inlining of model-local functions (the inline-functions pass, passes/cleanup/inline_functions.cc),
// also called by the runners before they run a model.
#pragma once

#include <cstdint>
#include <functional>

#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/limits.h"
#include "onnxopt/support/status.h"

namespace onnxopt::passes {

/// Which calls to leave as calls: a runtime with its own kernel for an op of ai.onnxopt keeps it.
using KeepCall = std::function<bool(const ir::Node& call)>;

/// Replaces each call of a model-local function in `model` (main graph and subgraphs, calls made
/// by inlined bodies too) by the function's body where the pass's conditions hold and `keep` (when
/// given) does not claim the call; returns how many calls were inlined. Functions stay in the
/// model (dce removes those no one calls). The nodes the model's graphs would hold after it are
/// counted first: more than `max_nodes` (the model node limit, opt --max-nodes) is
/// kResourceExhausted, naming the call that expands most, and nothing is inlined.
StatusOr<int64_t> inlineFunctionCalls(ir::Model& model, const KeepCall& keep = {},
                                      int64_t max_nodes = ir::kDefaultMaxNodes);

}  // namespace onnxopt::passes
