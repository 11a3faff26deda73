// `opt check ORIGINAL OPTIMIZED`: both models on the same inputs, every output compared.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/stats.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "report.h"

namespace onnxopt::tools {

int checkCommand(const CheckCommandOptions& opts) {
  // Loaded as `opt run` loads a model: function calls inlined, and types inferred where the CUDA
  // runner plans from them.
  const bool cuda = opts.check.runner == "cuda" || opts.check.against == "cuda";
  auto original = loadModelFor(opts.original, cuda ? "cuda" : "reference");
  if (!original.isOk()) return fail(original.status());
  // One model: compared with itself, across runners (--runner X --against Y).
  const std::string& optimized_path = opts.optimized.empty() ? opts.original : opts.optimized;
  auto optimized = loadModelFor(optimized_path, cuda ? "cuda" : "reference");
  if (!optimized.isOk()) return fail(optimized.status());
  if (Status st = checkSpecNames(**original, opts.check.inputs, "--input", opts.check.shapes);
      !st.isOk()) {
    return usage(st.withContext(opts.original));
  }
  CheckOptions check = opts.check;
  if (opts.no_cuda_graph || !opts.cuda.given().empty()) {
    if (check.runner != "cuda" && check.against != "cuda") {
      return usage(invalidArgument("{} needs --runner cuda or --against cuda",
                                   opts.no_cuda_graph ? "--no-cuda-graph" : opts.cuda.given()));
    }
    // The cuda runner with these options, under a name of its own for this process.
    std::string name = "cuda";
    if (opts.no_cuda_graph) name += "-no-graph";
    if (opts.cuda.none) name += "-no-tf32";
    if (opts.cuda.all) name += "-tf32";
    if (!opts.cuda.tuning_cache.empty()) name += "-tuned";
    if (!runtime::hasRunner(name)) {
      runtime::CudaOptions options = cudaOptions(opts.no_cuda_graph, opts.cuda);
      Status st = runtime::registerRunner(name, [options](const runtime::ExecutorSource& s) {
        return runtime::createCudaExecutor(*s.model, options);
      });
      if (!st.isOk()) return fail(st);
    }
    if (check.runner == "cuda") check.runner = name;
    if (check.against == "cuda") check.against = name;
  }
  check.cuda_tf32 = opts.cuda.policy();
  auto checked = checkModels(opts.original, **original, optimized_path, **optimized, check);
  if (!checked.isOk()) return fail(checked.status());
  std::fputs(formatCheck(*checked).c_str(), stdout);
  if (!opts.report.empty()) {
    ir::ModelStats before = ir::computeStats(**original);
    ir::ModelStats after = ir::computeStats(**optimized);
    ReportData report;
    report.command = "check";
    report.input = opts.original;
    report.output = optimized_path;
    report.before = &before;
    report.after = &after;
    report.check = &*checked;
    Status st = io::writeFileAtomically(opts.report, reportJson(report));
    if (!st.isOk()) return fail(st.withContext(opts.report));
  }
  return checked->passed ? 0 : kExitCheckFailed;
}

/// The options `opt check` and `opt IN -o OUT --check` share.

}  // namespace onnxopt::tools
