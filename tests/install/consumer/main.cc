// Builds a model through the public API, writes it, reads it back and checks it survived.
#include <cstdio>
#include <filesystem>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/printer.h"
#include "onnxopt/ir/verifier.h"

int main() {
  using namespace onnxopt;
  constexpr char kText[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    consumer (float[2] x) => (float[2] y) { y = Relu(x) }
  )";
  auto model = io::parseModelText(kText);
  if (!model.isOk()) {
    std::fprintf(stderr, "parse: %s\n", model.status().message().c_str());
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
