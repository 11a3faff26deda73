// Generating tokens with a model that was read: what `opt generate` and the Python package's
// generate() do between reading a model and printing or returning ids. The policy (preparing the
// model for the runner, creating the executor by name, the Generator's loop) lives here once.
//
//   auto model = onnxopt::io::loadModel("decoder.onnx");
//   onnxopt::GenerateRequest request;
//   request.prompt.input_ids = {{1, 2, 3}};
//   auto result = onnxopt::generate(**model, request);   // result->sequences, result->stats
#pragma once

#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/runtime/generator.h"
#include "onnxopt/support/status.h"

namespace onnxopt {

struct GenerateRequest {
  runtime::Prompt prompt;
  runtime::GenerationOptions options;
  std::string runner = "reference";  ///< a name of the runner registry (runtime::runnerNames)
  std::string model_path;            ///< the file the model came from: errors name it
};

struct GenerateResult {
  std::vector<std::vector<int64_t>> sequences;  ///< per row: the prompt, then the new ids
  runtime::GenerationStats stats;
};

/// Prepares `model` for `request.runner` (prepareForRunner), creates that runner's executor and
/// runs the Generator on the prompt, calling `callback` after each step. Errors name the model
/// file: an unknown runner, a model that is no decoder with a KV cache, a bad prompt or option.
StatusOr<GenerateResult> generate(ir::Model& model, const GenerateRequest& request,
                                  const runtime::TokenCallback& callback = {});

}  // namespace onnxopt
