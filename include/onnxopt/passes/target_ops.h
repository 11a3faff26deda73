// The ops of our own domain, ai.onnxopt (version 1): what the CUDA target's fusions rewrite to
// (passes/target/cuda/). Each is written to the model as a model-local function whose body is the
// standard-op decomposition, so onnxruntime, Netron and the reference executor read and run the
// file; a runtime with a kernel for the op keeps the call (docs/target_ops.md lists them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/support/status.h"

namespace onnxopt::passes {

inline constexpr const char* kTargetDomain = "ai.onnxopt";
inline constexpr int64_t kTargetDomainVersion = 1;

/// The ops of ai.onnxopt, sorted.
const std::vector<std::string>& targetOps();

/// Whether `domain`/`op` is one of ours.
bool isTargetOp(const std::string& domain, const std::string& op);

/// For each op of ai.onnxopt that a graph of `model` calls (main graph and subgraphs) and that
/// has no function in the model yet: adds its function, the decomposition at the model's default
/// opset, and imports ai.onnxopt. Returns how many functions were added. An op the model's opset
/// cannot decompose (Gelu before opset 20) is kInvalidArgument naming it: the fusions create
/// such calls only where the decomposition exists.
StatusOr<int64_t> attachTargetFunctions(ir::Model& model);

}  // namespace onnxopt::passes
