// `opt run MODEL`: the reference executor on given or seeded random inputs; prints output
// summaries and optionally saves the outputs as .npy (or TensorProto .pb with --save-format=pb).
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "inputs.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/diagnostics.h"

namespace onnxopt::tools {

int runCommand(const RunCommandOptions& opts) {
  StreamDiagnosticSink diagnostics(std::cerr);
  io::LoadLimits limits;
  limits.diagnostics = &diagnostics;
  auto model = io::loadModel(opts.model, limits);
  if (!model.isOk()) return fail(model.status());
  const ir::Graph& graph = *(*model)->graph;
  if (Status st = checkSpecNames(**model, opts.inputs, "--input", opts.shapes); !st.isOk()) {
    return usage(st.withContext(opts.model));
  }
  RandomInputOptions random;
  random.seed = opts.seed;
  auto shapes = parseShapeSpecs(opts.shapes);
  if (!shapes.isOk()) return fail(shapes.status());
  random.shapes = std::move(shapes).value();
  random.int_ranges = inferIntRanges(graph);
  random.spatial = spatialInputSizes(graph);
  auto given = readInputSpecs(opts.inputs);
  if (!given.isOk()) return fail(given.status());
  std::map<std::string, kernels::HostTensor> feeds = std::move(given).value();
  for (const ir::Value* in : graph.inputs()) {
    if (auto it = feeds.find(in->name()); it != feeds.end()) {
      Status st = checkGivenInput(*in, it->second, inputFileOf(opts.inputs, in->name()));
      if (!st.isOk()) return fail(st);
      continue;
    }
    if (auto it = random.shapes.find(in->name()); it != random.shapes.end()) {
      if (Status st = checkPinnedShape(*in, it->second); !st.isOk()) return fail(st);
    }
    if (in->initializer() != nullptr) continue;
    std::vector<std::string> chosen;
    auto t = randomInput(*in, random, &chosen);
    if (!t.isOk()) return fail(t.status().withContext(opts.model));
    fmt::print("input  {}\n", summarize(in->name(), *t));
    if (!chosen.empty()) {
      fmt::print("dims   {}: {} (dynamic; pin with --input-shape)\n", in->name(),
                 fmt::join(chosen, ", "));
    }
    feeds[in->name()] = std::move(t).value();
  }
  auto executor = runtime::createExecutor("reference", {&**model, opts.model});
  if (!executor.isOk()) return fail(executor.status());
  auto result = (*executor)->run(feeds);
  if (!result.isOk()) return fail(result.status().withContext(opts.model));
  for (size_t i = 0; i < result->names.size(); ++i) {
    fmt::print("output {}\n", summarize(result->names[i], result->outputs[i]));
    if (!opts.save_outputs.empty()) {
      std::string file = result->names[i];
      for (char& c : file) {
        if (c == '/' || c == '\\' || c == ':') c = '_';
      }
      Status st = opts.save_format == "pb"
                      ? writeTensorPb(opts.save_outputs + "/" + file + ".pb", result->outputs[i])
                      : writeNpy(opts.save_outputs + "/" + file + ".npy", result->outputs[i]);
      if (!st.isOk()) return fail(st);
    }
  }
  return 0;
}

}  // namespace onnxopt::tools
