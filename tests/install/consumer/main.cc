// Builds a model through the public API, optimizes it with onnxopt::optimize, writes it, reads it
// back and checks it survived; then optimizes a model with a wrong declared type and checks that
// the warning about it reached a collecting diagnostics sink; then creates the runner "cuda", which
// must find the installed CUDA provider (the error it may give is "no device", never "could not be
// loaded").
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "onnxopt/api/optimize.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/printer.h"
#include "onnxopt/ir/verifier.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/diagnostics.h"

namespace {

using namespace onnxopt;

/// Parses `text` and optimizes it with `options`; prints what failed and returns null on failure.
std::unique_ptr<ir::Model> parseAndOptimize(const char* text, const OptimizeOptions& options,
                                            OptimizeResult& result) {
  auto model = io::parseModelText(text);
  if (!model.isOk()) {
    std::fprintf(stderr, "parse: %s\n", model.status().message().c_str());
    return nullptr;
  }
  if (auto st = optimize(**model, options, &result); !st.isOk()) {
    std::fprintf(stderr, "optimize: %s\n", st.message().c_str());
    return nullptr;
  }
  return std::move(model).value();
}

/// -O2 on a model whose value_info declares t float[3] where Relu(x) gives float[2]: shape
/// inference keeps the inferred type and warns about node t, through the caller's sink. The
/// pass option given with the options shows in the pipeline that ran.
int diagnosticsReachTheSink() {
  constexpr char kText[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    diagnosed (float[2] x) => (float[2] y) <float[3] t> { t = Relu(x)  y = Neg(t) }
  )";
  CollectingDiagnosticSink sink;
  OptimizeOptions options;
  options.context.diagnostics = &sink;
  options.pass_options.push_back({"fold-constants", "fold-qdq", "true"});
  OptimizeResult result;
  if (parseAndOptimize(kText, options, result) == nullptr) return 1;
  if (result.pipeline.find("fold-constants{fold-qdq=true}") == std::string::npos) {
    std::fprintf(stderr, "the pass option is not in the pipeline: %s\n", result.pipeline.c_str());
    return 1;
  }
  bool found = false;
  for (const Diagnostic& d : sink.diagnostics()) {
    std::printf("diagnostic (node '%s'): %s\n", d.node.c_str(), formatDiagnostic(d).c_str());
    found |= d.severity == Severity::kWarning && d.node == "t" &&
             d.message.find("declared float[3] but inferred float[2]") != std::string::npos;
  }
  if (!found) {
    std::fprintf(stderr, "no warning about t among %zu diagnostics\n", sink.diagnostics().size());
    return 1;
  }
  return 0;
}

/// The runner "cuda" on `model`: created (a GPU), or the error of a machine without one, or of a
/// build without CUDA; the provider not found is a failure.
int cudaRunnerFindsTheProvider(const ir::Model& model) {
  auto executor = runtime::createExecutor("cuda", model);
  if (executor.isOk()) return 0;
  const std::string& why = executor.status().message();
  std::printf("%s\n", why.c_str());
  const char* expected = CONSUMER_HAVE_CUDA ? "no usable CUDA device" : "built without CUDA";
  if (why.find(expected) == std::string::npos) {
    std::fprintf(stderr, "the runner cuda failed otherwise than with '%s'\n", expected);
    return 1;
  }
  return 0;
}

}  // namespace

int main() {
  constexpr char kText[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    consumer (float[2] x) => (float[2] y) { t = Identity(x)  y = Relu(t) }
  )";
  // -O2: the Identity goes.
  OptimizeResult result;
  auto model = parseAndOptimize(kText, OptimizeOptions{}, result);
  if (model == nullptr) return 1;
  if (model->graph->numNodes() != 1 || result.pipeline.empty()) {
    std::fprintf(stderr, "optimize left %zu nodes\n", model->graph->numNodes());
    return 1;
  }
  auto path = (std::filesystem::temp_directory_path() / "onnxopt_consumer.onnx").string();
  if (auto st = io::saveModel(*model, path); !st.isOk()) {
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
  if (int rc = diagnosticsReachTheSink(); rc != 0) return rc;
  return cudaRunnerFindsTheProvider(**back);
}
