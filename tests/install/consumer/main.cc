// Builds a model through the public API, optimizes it with onnxopt::optimize, writes it, reads it
// back and checks it survived.
#include <cstdio>
#include <filesystem>

#include "onnxopt/api/optimize.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/printer.h"
#include "onnxopt/ir/verifier.h"

int main() {
  using namespace onnxopt;
  constexpr char kText[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    consumer (float[2] x) => (float[2] y) { t = Identity(x)  y = Relu(t) }
  )";
  auto model = io::parseModelText(kText);
  if (!model.isOk()) {
    std::fprintf(stderr, "parse: %s\n", model.status().message().c_str());
    return 1;
  }
  // -O2: the Identity goes.
  OptimizeResult result;
  if (auto st = optimize(**model, OptimizeOptions{}, &result); !st.isOk()) {
    std::fprintf(stderr, "optimize: %s\n", st.message().c_str());
    return 1;
  }
  if ((*model)->graph->numNodes() != 1 || result.pipeline.empty()) {
    std::fprintf(stderr, "optimize left %zu nodes\n", (*model)->graph->numNodes());
    return 1;
  }
  auto path = (std::filesystem::temp_directory_path() / "onnxopt_consumer.onnx").string();
  if (auto st = io::saveModel(**model, path); !st.isOk()) {
    std::fprintf(stderr, "save: %s\n", st.message().c_str());
    return 1;
  }
  auto back = io::loadModel(path);
  std::filesystem::remove(path);
  if (!back.isOk() || (*back)->graph->numNodes() != 1 ||
      (*back)->graph->firstNode()->opType() != "Relu") {
    std::fprintf(stderr, "round trip failed\n");
    return 1;
  }
  std::printf("%s", ir::printModel(**back).c_str());
  return 0;
}
