// Preparing a model that was read for a runner: what `opt run` and `opt check` do between reading
// a model and running it, and what the Python package's run() and check() do.
//
//   auto model = onnxopt::io::loadModel("out.onnx");
//   RETURN_IF_ERROR(onnxopt::prepareForRunner(**model, "cuda"));
//   auto executor = onnxopt::runtime::createExecutor("cuda", **model);
#pragma once

#include <string>

#include "onnxopt/ir/graph.h"
#include "onnxopt/support/status.h"

namespace onnxopt {

/// The executors run standard ops, so a call of a model-local function is inlined as its body,
/// except where the runner runs the call itself: on "cuda" a call of one of our own ops
/// (ai.onnxopt, from -O3 --target cuda) or of a plugin's op that the CUDA kernel table claims
/// (runtime::cudaRunsTargetCall), on "reference" a call of a plugin's op with a reference kernel.
/// For "cuda" the types are inferred too (the CUDA executor plans from them). Errors are the
/// inliner's and shape inference's.
Status prepareForRunner(ir::Model& model, const std::string& runner);

}  // namespace onnxopt
