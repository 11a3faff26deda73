// `opt run MODEL`: the reference executor (or the CUDA one, --device cuda, with its plan summary
// under --stats) on given or seeded random inputs; prints output
// summaries and optionally saves the outputs as .npy, or TensorProto .pb with --save-format=pb (a
// sequence as a folder of numbered files, an empty optional as no file).
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "inputs.h"
#include "onnxopt/api/run.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/diagnostics.h"

namespace onnxopt::tools {

int readGivenFeeds(const ir::Model& model, const std::vector<std::string>& inputs,
                   runtime::Feeds* feeds) {
  auto given = readInputSpecs(inputs);
  if (!given.isOk()) return fail(given.status());
  *feeds = std::move(given).value();
  for (const ir::Value* in : model.graph->inputs()) {
    if (auto it = feeds->find(in->name()); it != feeds->end()) {
      Status st = checkGivenInput(*in, it->second, inputFileOf(inputs, in->name()));
      if (!st.isOk()) return fail(st);
    }
  }
  return 0;
}

int prepareFeeds(const ir::Model& model, const std::string& path,
                 const std::vector<std::string>& inputs, const std::vector<std::string>& shapes,
                 uint64_t seed, bool print, runtime::Feeds* feeds) {
  const ir::Graph& graph = *model.graph;
  if (Status st = checkSpecNames(model, inputs, "--input", shapes); !st.isOk()) {
    return usage(st.withContext(path));
  }
  // --input-shape errors name the model, whose input the flag is about.
  auto parsed = parseShapeSpecs(shapes);
  if (!parsed.isOk()) return fail(parsed.status().withContext(path));
  RandomInputOptions random = runtime::randomInputOptions(graph, seed, std::move(parsed).value());
  if (int status = readGivenFeeds(model, inputs, feeds); status != 0) return status;
  for (const ir::Value* in : graph.inputs()) {
    if (feeds->count(in->name()) > 0) continue;
    if (auto it = random.shapes.find(in->name()); it != random.shapes.end()) {
      if (Status st = checkPinnedShape(*in, it->second); !st.isOk()) {
        return fail(st.withContext(path));
      }
    }
    if (in->initializer() != nullptr) continue;
    std::vector<std::string> chosen;
    auto t = randomInput(*in, random, &chosen);
    if (!t.isOk()) return fail(t.status().withContext(path));
    if (print) {
      fmt::print("input  {}\n", summarize(in->name(), *t));
      if (!chosen.empty()) {
        fmt::print("dims   {}: {} (dynamic; pin with --input-shape)\n", in->name(),
                   fmt::join(chosen, ", "));
      }
    }
    (*feeds)[in->name()] = std::move(t).value();
  }
  return 0;
}

runtime::CudaOptions cudaOptions(bool no_cuda_graph, const CudaFlags& flags) {
  runtime::CudaOptions options;
  options.cuda_graphs = !no_cuda_graph;
  options.tf32 = flags.policy();
  options.tuning_cache = flags.tuning_cache;
  return options;
}

StatusOr<std::unique_ptr<runtime::Executor>> createRunner(const std::string& device,
                                                          const ir::Model& model,
                                                          const std::string& path,
                                                          const runtime::CudaOptions& cuda) {
  if (device == "cuda") {
    // The CUDA executor checks the weights as it uploads them: its errors name the file here.
    auto created = runtime::createCudaExecutor(model, cuda);
    if (!created.isOk()) return created.status().withContext(path);
    return created;
  }
  return runtime::createExecutor(device, {&model, path});
}

StatusOr<std::unique_ptr<ir::Model>> loadModelFor(const std::string& path,
                                                  const std::string& device) {
  StreamDiagnosticSink diagnostics(std::cerr);
  io::LoadLimits limits;
  limits.diagnostics = &diagnostics;
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> model, io::loadModel(path, limits));
  // Calls of model-local functions inlined but those the runner runs itself, types inferred for
  // the CUDA runner (onnxopt::prepareForRunner).
  if (Status s = prepareForRunner(*model, device); !s.isOk()) return s.withContext(path);
  return model;
}

int runCommand(const RunCommandOptions& opts) {
  if (!opts.cuda.given().empty() && opts.device != "cuda") {
    return usage(invalidArgument("{} needs --device cuda", opts.cuda.given()));
  }
  auto model = loadModelFor(opts.model, opts.device);
  if (!model.isOk()) return fail(model.status());
  runtime::Feeds feeds;
  if (int status =
          prepareFeeds(**model, opts.model, opts.inputs, opts.shapes, opts.seed, true, &feeds);
      status != 0) {
    return status;
  }
  auto executor =
      createRunner(opts.device, **model, opts.model, cudaOptions(opts.no_cuda_graph, opts.cuda));
  if (!executor.isOk()) return fail(executor.status());
  runtime::ExecutionOptions exec;
  exec.non_tensor_outputs = true;
  exec.limits = opts.limits;
  auto result = (*executor)->run(feeds, exec);
  if (!result.isOk()) return fail(result.status().withContext(opts.model));
  if (opts.stats) {
    if (const auto* cuda = dynamic_cast<const runtime::CudaExecutor*>(executor->get())) {
      fmt::print("device {} (compute {}.{})\n{}", cuda->device().name, cuda->device().major,
                 cuda->device().minor, cuda->lastSummary());
    }
  }
  // One output file, without its extension: .npy, or .pb with --save-format=pb.
  auto save = [&](const std::string& path, const kernels::HostTensor& t) {
    return opts.save_format == "pb" ? writeTensorPb(path + ".pb", t) : writeNpy(path + ".npy", t);
  };
  for (size_t i = 0; i < result->names.size(); ++i) {
    const std::string& name = result->names[i];
    std::string file = name;
    for (char& c : file) {
      if (c == '/' || c == '\\' || c == ':') c = '_';
    }
    file = opts.save_outputs + "/" + file;
    runtime::OutputKind kind =
        i < result->kinds.size() ? result->kinds[i] : runtime::OutputKind::kTensor;
    if (kind == runtime::OutputKind::kNone) {
      // An empty optional: printed as such, and no file is written for it.
      fmt::print("output {}: optional, empty\n", name);
      continue;
    }
    if (kind == runtime::OutputKind::kSequence) {
      // A sequence: its length, then each element; saved as the folder NAME/ of 0.npy, 1.npy, ...
      const auto& elems = result->sequences[i];
      fmt::print("output {}: sequence of {} {}\n", name, elems.size(),
                 dataTypeName(result->outputs[i].dtype));
      if (!opts.save_outputs.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(file, ec);
        if (ec)
          return fail(invalidArgument("{}: cannot create the folder: {}", file, ec.message()));
      }
      for (size_t k = 0; k < elems.size(); ++k) {
        fmt::print("  {}\n", summarize(fmt::format("{}[{}]", name, k), elems[k]));
        if (opts.save_outputs.empty()) continue;
        Status st = save(fmt::format("{}/{}", file, k), elems[k]);
        if (!st.isOk()) return fail(st);
      }
      continue;
    }
    fmt::print("output {}\n", summarize(name, result->outputs[i]));
    if (!opts.save_outputs.empty()) {
      Status st = save(file, result->outputs[i]);
      if (!st.isOk()) return fail(st);
    }
  }
  return 0;
}

}  // namespace onnxopt::tools
