#include "onnxopt/api/optimize.h"

#include <chrono>

#include "onnxopt/kernels/cuda.h"
#include "onnxopt/passes/registry.h"

namespace onnxopt {

std::vector<passes::PassOptionSetting> passOptionSettings(const OptimizeOptions& options) {
  std::vector<passes::PassOptionSetting> settings = options.pass_options;
  if (options.fold_qdq) settings.push_back({"fold-constants", "fold-qdq", "true"});
  if (options.fold_grow_weights) settings.push_back({"fold-constants", "grow-weights", "true"});
  if (options.fold_size_limit) {
    settings.push_back({"fold-constants", "size-limit", std::to_string(*options.fold_size_limit)});
  }
  if (options.inline_max_nodes) {
    settings.push_back(
        {"inline-functions", "max-nodes", std::to_string(*options.inline_max_nodes)});
  }
  if (options.keep_initializer_inputs) {
    settings.push_back({"freeze-initializer-inputs", "keep-overridable", "true"});
  }
  if (!options.function_bodies) settings.push_back({"rewrite-rules", "function-bodies", "false"});
  return settings;
}

Status optimize(ir::Model& model, const OptimizeOptions& options, OptimizeResult* result) {
  if (options.range_analysis && !options.precision.empty()) {
    // The analysis reads the model before any pass; its findings join a copy of the options.
    OptimizeOptions analysed = options;
    analysed.range_analysis = false;
    runPrecisionAnalysis(model, analysed);
    return optimize(model, analysed, result);
  }
  OptimizeResult local;
  OptimizeResult& out = result != nullptr ? *result : local;
  std::string text = options.pipeline;
  if (text.empty()) {
    ASSIGN_OR_RETURN(text, passes::pipelineFor(options.level, 0, options.target));
  }
  if (!options.precision.empty()) {
    ASSIGN_OR_RETURN(text, passes::withPrecision(text, options.precision, options.keep_io_types,
                                                 options.keep_ops, options.keep_nodes,
                                                 options.keep_values, options.safe_values));
  }
  if (!options.quantize.weights.empty()) {
    ASSIGN_OR_RETURN(text, passes::withQuantize(text, options.quantize));
  }
  // Plugins' passes join the level pipelines (-O1 and up); a --passes pipeline names them.
  std::vector<std::string> plugin_passes;
  if (options.pipeline.empty() && options.level >= 1) plugin_passes = passes::pipelinePasses();
  text = passes::withUserRewrites(text, !options.rewrite_rules.empty(), plugin_passes);
  text = passes::withTargetOpset(text, options.target_opset);
  ASSIGN_OR_RETURN(auto pipeline, pass::parsePipeline(text, &passes::createPass));
  RETURN_IF_ERROR(passes::removePasses(pipeline, options.disabled_passes));
  RETURN_IF_ERROR(passes::applyPassOptions(pipeline, passOptionSettings(options)));
  passes::setRewriteRules(pipeline, options.rewrite_rules);
  out.pipeline = pass::pipelineToString(pipeline);
  pass::PassContext context = options.context;
  // The CUDA target's passes run only where the pipeline names them (-O3 --target cuda, or
  // --passes): the table they ask is the CUDA kernels', unless the caller gave another.
  if (context.target_kernels == nullptr) context.target_kernels = &kernels::cudaCapabilities();
  pass::PassManager manager(std::move(pipeline), context, options.instrumentation);
  auto start = std::chrono::steady_clock::now();
  auto ran = manager.run(model);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Status status = ran.status();
  if (status.isOk() && options.function_bodies) {
    // Ops of plugins' domains that any pass created carry their decompositions.
    status = passes::attachRegisteredFunctions(model).status();
  }
  out.records = manager.records();
  out.statistics = manager.statistics();
  if (options.instrumentation.time_passes) out.timing_report = manager.timingReport();
  return status;
}

}  // namespace onnxopt
