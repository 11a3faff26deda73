// Bundled models for the CUDA executor tests: loaded with inferred types (what the executor plans
// from), and seeded random feeds as `opt run` makes them, at pinned shapes where asked.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/runtime/inputs.h"

namespace onnxopt::runtime::test {

/// models/... under the source tree, with ir::inferShapes run (nullptr and a failure if not).
inline std::unique_ptr<ir::Model> loadInferred(const std::string& rel) {
  std::string path = std::string(ONNXOPT_SOURCE_DIR) + "/" + rel;
  auto model = io::loadModel(path);
  EXPECT_TRUE(model.isOk()) << model.status().toString();
  if (!model.isOk()) return nullptr;
  auto st = ir::inferShapes(**model);
  EXPECT_TRUE(st.isOk()) << st.status().toString();
  return st.isOk() ? std::move(model).value() : nullptr;
}

/// Random feeds for every input without a default; `symbols` sizes named dims ("batch": 2).
inline Feeds randomFeeds(const ir::Model& model, uint64_t seed,
                         const std::map<std::string, int64_t>& symbols = {}) {
  const ir::Graph& graph = *model.graph;
  RandomInputOptions options;
  options.seed = seed;
  options.spatial = spatialInputSizes(graph);
  options.symbols = symbolSizes(graph, options);
  for (const auto& [name, size] : symbols) options.symbols[name] = size;
  options.int_ranges = inferIntRanges(graph, options);
  Feeds feeds;
  for (const ir::Value* in : graph.inputs()) {
    if (in->initializer() != nullptr) continue;
    auto t = randomInput(*in, options);
    EXPECT_TRUE(t.isOk()) << in->name() << ": " << t.status().toString();
    if (t.isOk()) feeds[in->name()] = std::move(t).value();
  }
  return feeds;
}

/// Small models that plan for the CUDA device without run-time shapes or subgraph fallbacks.
inline const std::vector<std::string>& cudaTestModels() {
  static const std::vector<std::string> models = {
      "models/tiny_cnn/model.onnx",
      "models/tiny_unet/model.onnx",
      "models/tiny_quant/model.onnx",
      "models/speech_rnn/model.onnx",
      "models/transformers/bert_legacy/model.onnx",
      "models/transformers/gpt2_legacy/model.onnx",
  };
  return models;
}

}  // namespace onnxopt::runtime::test
