#include "onnxopt/api/optimize.h"

#include <chrono>

#include "onnxopt/passes/registry.h"

namespace onnxopt {

Status optimize(ir::Model& model, const OptimizeOptions& options, OptimizeResult* result) {
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
  // Plugins' passes join the level pipelines (-O1 and up); a --passes pipeline names them.
  std::vector<std::string> plugin_passes;
  if (options.pipeline.empty() && options.level >= 1) plugin_passes = passes::pipelinePasses();
  text = passes::withUserRewrites(text, !options.rewrite_rules.empty(), plugin_passes);
  text = passes::withTargetOpset(text, options.target_opset);
  ASSIGN_OR_RETURN(auto pipeline, pass::parsePipeline(text, &passes::createPass));
  RETURN_IF_ERROR(passes::removePasses(pipeline, options.disabled_passes));
  std::vector<passes::PassOptionSetting> settings = options.pass_options;
  if (!options.function_bodies) settings.push_back({"rewrite-rules", "function-bodies", "false"});
  RETURN_IF_ERROR(passes::applyPassOptions(pipeline, settings));
  passes::setRewriteRules(pipeline, options.rewrite_rules);
  out.pipeline = pass::pipelineToString(pipeline);
  pass::PassManager manager(std::move(pipeline), options.context, options.instrumentation);
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
