// Generating tokens with a model that was read: what `opt generate` and the Python package's
// generate() do between reading a model and printing or returning ids. The policy (preparing the
// model for the runner, creating the executor by name, the Generator's loop) lives here once.
//
//   auto model = onnxopt::io::loadModel("decoder.onnx");
//   onnxopt::GenerateRequest request;
//   request.prompt.input_ids = {{1, 2, 3}};
//   auto result = onnxopt::generate(**model, request);   // result->sequences, result->stats
#pragma once

#include <memory>
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

/// A Generator for `model` (which must outlive it) on `runner`: checks that the model is a decoder
/// with a KV cache, prepares it for the runner (prepareForRunner) and creates that runner's
/// executor. Errors name `model_path`: an unknown runner, a model that is no such decoder, an
/// option out of range.
StatusOr<std::unique_ptr<runtime::Generator>> createGenerator(
    ir::Model& model, const std::string& runner, const runtime::GenerationOptions& options,
    const std::string& model_path = "");

/// createGenerator, then the whole generation of the prompt, calling `callback` after each step.
/// Errors name the model file, as createGenerator's and the Generator's.
StatusOr<GenerateResult> generate(ir::Model& model, const GenerateRequest& request,
                                  const runtime::TokenCallback& callback = {});

}  // namespace onnxopt
