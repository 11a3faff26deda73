// `opt IN [-o OUT]`: read a model, optimize it (onnxopt::optimize), write it, optionally check
// the result against the input and write a report. Nothing is written unless every step succeeds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "onnxopt/api/optimize.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/printer.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/ir/stats.h"
#include "onnxopt/passes/inline_functions.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/plugin/plugin.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/diagnostics.h"
#include "report.h"

namespace onnxopt::tools {
namespace {

io::SaveOptions saveOptions(const OptimizeCommandOptions& opts) {
  io::SaveOptions save;
  if (opts.external_data_given) {
    save.external_data = io::SaveOptions::ExternalData::kAlways;
    save.external_file = opts.external_data;
  }
  return save;
}

/// Up front, before the passes run: every file opt would write must be writable, and none may be
/// one the input still needs (its model file, unless the output replaces it, or its data files,
/// unless the output model replaces the input and takes the data file's place with it).
Status checkOutputPaths(const OptimizeCommandOptions& opts, const ir::Model& input) {
  const std::set<std::string> input_data = io::externalDataFiles(input);
  const bool file_output = !opts.output.empty() && opts.output != "-";
  const bool binary = file_output && opts.emit == "onnx";
  std::string data_path;
  if (binary && (opts.external_data_given || !input_data.empty())) {
    data_path = io::externalDataPath(opts.output, saveOptions(opts));
  }
  if (file_output) RETURN_IF_ERROR(io::checkOutputPath(opts.output, data_path));
  const bool replaces_input = file_output && io::samePath(opts.output, opts.input);
  for (const std::string& f : input_data) {
    if (file_output && io::samePath(opts.output, f)) {
      return invalidArgument("{}: is the external data file of the input {}, which still needs it",
                             opts.output, opts.input);
    }
    if (!data_path.empty() && !replaces_input && io::samePath(data_path, f)) {
      return invalidArgument(
          "{}: the external data file '{}' is the input's, which {} still needs; give "
          "--external-data another name",
          opts.output, data_path, opts.input);
    }
  }
  if (!data_path.empty() && io::samePath(data_path, opts.input)) {
    return invalidArgument("{}: the external data file '{}' is the input model", opts.output,
                           data_path);
  }
  if (!opts.report.empty()) {
    RETURN_IF_ERROR(io::checkOutputPath(opts.report));
    std::vector<std::string> taken{opts.input};
    if (file_output) taken.push_back(opts.output);
    if (!data_path.empty()) taken.push_back(data_path);
    taken.insert(taken.end(), input_data.begin(), input_data.end());
    for (const std::string& f : taken) {
      if (io::samePath(opts.report, f)) {
        return invalidArgument("{}: the report would overwrite '{}'", opts.report, f);
      }
    }
  }
  return Status::ok();
}

/// One --pass-option PASS.OPTION=VALUE, or why it is not one (an unknown pass or option, a value
/// the pass refuses).
StatusOr<passes::PassOptionSetting> parsePassOption(const std::string& text) {
  size_t dot = text.find('.');
  size_t eq = text.find('=');
  if (dot == std::string::npos || eq == std::string::npos || dot == 0 || eq < dot + 2) {
    return invalidArgument(
        "--pass-option '{}': expected PASS.OPTION=VALUE, e.g. "
        "convert-nhwc.grouped=true",
        text);
  }
  passes::PassOptionSetting s{text.substr(0, dot), text.substr(dot + 1, eq - dot - 1),
                              text.substr(eq + 1)};
  std::unique_ptr<pass::Pass> p = passes::createPass(s.pass);
  if (p == nullptr) {
    return invalidArgument("--pass-option '{}': no pass '{}' (opt --list-passes lists them)", text,
                           s.pass);
  }
  // The name and the value, on a scratch instance: a typo is an error even where the pipeline
  // does not run the pass.
  if (Status st = p->setOption(s.option, s.value); !st.isOk()) {
    return invalidArgument("--pass-option '{}': {}", text, st.message());
  }
  return s;
}

/// The --pass-option settings (checked by optimizeCommand before).
std::vector<passes::PassOptionSetting> flagPassOptions(const OptimizeCommandOptions& opts) {
  std::vector<passes::PassOptionSetting> settings;
  for (const std::string& text : opts.pass_options) {
    if (auto s = parsePassOption(text); s.isOk()) settings.push_back(*s);
  }
  return settings;
}

/// What onnxopt::optimize gets from the command line.
OptimizeOptions optimizeOptions(const OptimizeCommandOptions& opts, DiagnosticSink& diagnostics,
                                const std::vector<std::shared_ptr<const passes::RuleSet>>& rules) {
  OptimizeOptions options;
  options.rewrite_rules = rules;
  options.level = opts.level;
  options.target = opts.target;
  // An explicit empty --passes runs nothing, as -O0 does.
  options.pipeline = opts.passes_given ? opts.passes : "";
  if (opts.passes_given && opts.passes.empty()) options.level = 0;
  options.target_opset = opts.target_opset;
  options.precision = opts.precision;
  options.keep_io_types = opts.keep_io_types;
  options.keep_ops = opts.keep_ops;
  options.keep_nodes = opts.keep_nodes;
  options.keep_values = opts.keep_values;
  options.safe_values = opts.safe_values;
  options.quantize = opts.quantization;
  // --quantize weights=TYPE: the type after "weights=" (the flag's check allows no other form).
  options.quantize.weights =
      opts.quantize.empty() ? "" : opts.quantize.substr(opts.quantize.find('=') + 1);
  options.pass_options = flagPassOptions(opts);
  options.fold_qdq = opts.fold_qdq;
  options.fold_grow_weights = opts.fold_grow_weights;
  if (opts.fold_size_limit_given) options.fold_size_limit = opts.fold_size_limit;
  if (opts.max_nodes_given) options.inline_max_nodes = opts.limits.max_nodes;
  options.keep_initializer_inputs = opts.keep_initializer_inputs;
  options.range_analysis = opts.range_analysis;
  options.calibration_inputs = opts.calibration_feeds;
  options.label = opts.input;
  options.disabled_passes = opts.disabled_passes;
  options.function_bodies = !opts.no_function_bodies;
  pass::PassContext& ctx = options.context;
  ctx.driver.max_rounds = opts.max_rounds;
  ctx.driver.verify_convergence = opts.verify_convergence;
  ctx.driver.debug = opts.debug_patterns ? &std::cerr : nullptr;
  ctx.driver.include_functions = opts.include_functions;
  ctx.diagnostics = &diagnostics;
  pass::Instrumentation& inst = options.instrumentation;
  inst.print_ir_after_all = opts.print_ir_after_all;
  inst.print_ir_after_change = opts.print_ir_after_change;
  inst.verify_each = opts.verify_each;
  inst.time_passes = opts.time_passes;
  inst.count_nodes = !opts.report.empty();
  inst.ir_out = &std::cerr;
  return options;
}

/// Runs the pipeline, then --infer-shapes. 0, or the exit status (a failing pass prints the
/// one-line reproducer).
int runPipeline(const OptimizeCommandOptions& opts, ir::Model& model, DiagnosticSink& diagnostics,
                const std::vector<std::shared_ptr<const passes::RuleSet>>& rules,
                OptimizeResult& optimized) {
  Status ran = optimize(model, optimizeOptions(opts, diagnostics, rules), &optimized);
  if (!ran.isOk()) {
    // A pipeline that does not parse is a usage error, not the model's: no file context.
    if (optimized.pipeline.empty()) return fail(ran);
    fail(ran.withContext(opts.input));
    std::string rule_flags;
    for (const std::string& r : opts.rewrite_rules) rule_flags += " --rewrite-rules " + r;
    fmt::print(stderr, "opt: note: reproduce with: opt {} --passes='{}'{}{}\n", opts.input,
               optimized.pipeline, rule_flags, opts.verify_each ? " --verify-each" : "");
    return kExitError;
  }
  if (opts.infer_shapes) {
    ir::ShapeInferenceOptions infer;
    infer.write_value_info = true;
    infer.diagnostics = &diagnostics;
    auto inferred = ir::inferShapes(model, infer);
    if (!inferred.isOk()) return fail(inferred.status().withContext(opts.input));
  }
  return 0;
}

/// --time-passes and --stats.
void printSummaries(const OptimizeCommandOptions& opts, const ir::Model& model,
                    const ir::ModelStats& before, const OptimizeResult& optimized) {
  if (opts.time_passes) std::fputs(optimized.timing_report.c_str(), stderr);
  if (opts.stats) {
    ir::ModelStats after = ir::computeStats(model);
    fmt::print("nodes: {} -> {}, initializers: {} -> {}\n", before.nodes, after.nodes,
               before.initializers, after.initializers);
    for (const auto& [name, value] : optimized.statistics)
      fmt::print("  {:<48} {:>8}\n", name, value);
    std::fputs(ir::formatStats(model, after).c_str(), stdout);
  }
}

/// The output as staged in the transaction (text for stdout is held until the commit).
struct StagedOutput {
  std::string text;
  bool text_to_stdout = false;
  std::string checked_path = "(optimized)";  ///< what --check reads: the staged file, if any
};

Status stageOutput(const OptimizeCommandOptions& opts, const ir::Model& model,
                   io::OutputTransaction& transaction, StagedOutput& out) {
  if (opts.emit == "text") {
    ir::PrintOptions print;
    print.elide_above = opts.elide;
    out.text = ir::printModel(model, print);
    if (opts.output.empty() || opts.output == "-") {
      out.text_to_stdout = true;
      return Status::ok();
    }
    return transaction.addFile(opts.output, out.text);
  }
  if (opts.output.empty()) return Status::ok();
  auto staged = transaction.addModel(model, opts.output, saveOptions(opts));
  if (!staged.isOk()) return staged.status().withContext(opts.output);
  out.checked_path = *staged;
  return Status::ok();
}

/// --check: the original (read again: the passes changed it in place) against the result.
StatusOr<CheckResult> checkOutput(const OptimizeCommandOptions& opts, const ir::Model& model,
                                  const std::string& checked_path) {
  // Its warnings were printed when it was first read.
  auto original = io::loadModel(opts.input);
  if (!original.isOk()) return original.status();
  // The executors run standard ops: a call of a model-local function runs as its body.
  if (Status s = passes::inlineFunctionCalls(**original, {}, opts.limits.max_nodes).status();
      !s.isOk()) {
    return s.withContext(opts.input);
  }
  return checkModels(opts.input, **original, checked_path, model, opts.check_opts);
}

std::string reportFor(const OptimizeCommandOptions& opts, const ir::Model& model,
                      const ir::ModelStats& before, const OptimizeResult& optimized,
                      const CheckResult* check) {
  ir::ModelStats after = ir::computeStats(model);
  ReportData report;
  report.command = "optimize";
  report.input = opts.input;
  report.output = opts.output;
  report.pipeline = optimized.pipeline;
  report.before = &before;
  report.after = &after;
  report.passes = &optimized.records;
  report.statistics = optimized.statistics;
  report.seconds = optimized.seconds;
  report.check = check;
  return reportJson(report);
}

/// Stages the output, checks it (--check), writes the report and commits. Nothing is committed
/// until every step succeeded: the output is staged under a temporary name (and --check reads
/// that), the report is written, and only then is the output renamed into place. A failing check,
/// report or rename leaves every existing file as it was.
int writeOutputs(const OptimizeCommandOptions& opts, const ir::Model& model,
                 const ir::ModelStats& before, const OptimizeResult& optimized) {
  io::OutputTransaction transaction;
  StagedOutput out;
  if (Status st = stageOutput(opts, model, transaction, out); !st.isOk()) return fail(st);
  std::optional<CheckResult> check;
  if (opts.check) {
    auto checked = checkOutput(opts, model, out.checked_path);
    if (!checked.isOk()) return fail(checked.status());
    check = std::move(checked).value();
    std::string table = formatCheck(*check);
    std::fputs(table.c_str(), out.text_to_stdout ? stderr : stdout);
  }
  std::string report_json;
  if (!opts.report.empty()) {
    report_json = reportFor(opts, model, before, optimized, check ? &*check : nullptr);
  }
  if (check && !check->passed) {
    // The report records the failure; the output is not written.
    if (!opts.report.empty()) {
      Status st = io::writeFileAtomically(opts.report, report_json);
      if (!st.isOk()) return fail(st);
    }
    fmt::print(stderr,
               "opt: error: {}: the optimized model's outputs differ, so {} was not written "
               "(write it without --check and run `opt check` with --per-layer to find where)\n",
               opts.input, opts.output.empty() ? "the output" : opts.output);
    return kExitCheckFailed;
  }
  if (!opts.report.empty()) {
    Status st = transaction.addFile(opts.report, report_json);
    if (!st.isOk()) return fail(st);
  }
  Status committed = transaction.commit();
  if (!committed.isOk()) return fail(committed);
  if (out.text_to_stdout) std::fwrite(out.text.data(), 1, out.text.size(), stdout);
  return 0;
}

}  // namespace

int optimizeCommand(const OptimizeCommandOptions& opts) {
  // Warnings quote names from the model: the sink escapes their control characters.
  StreamDiagnosticSink diagnostics(std::cerr);
  for (const std::string& text : opts.pass_options) {
    if (auto s = parsePassOption(text); !s.isOk()) return usage(s.status());
  }
  if (opts.no_function_bodies && opts.rewrite_rules.empty() && plugin::loadedPlugins().empty()) {
    return usage(Status(StatusCode::kInvalidArgument,
                        "--no-function-bodies needs --rewrite-rules or --plugin"));
  }
  // The rules first: a mistake in them is found before a large model is read.
  std::vector<std::shared_ptr<const passes::RuleSet>> rules;
  for (const std::string& path : opts.rewrite_rules) {
    auto file = io::loadFunctionFile(path, passes::ruleFileExtraAttributes());
    if (!file.isOk()) return fail(file.status());
    auto compiled = passes::compileRewriteRules(std::move(file).value());
    if (!compiled.isOk()) return fail(compiled.status());
    rules.push_back(std::move(compiled).value());
  }
  io::LoadLimits limits = opts.limits;
  limits.diagnostics = &diagnostics;
  auto model = io::loadModel(opts.input, limits);
  if (!model.isOk()) return fail(model.status());
  if (Status st = checkOutputPaths(opts, **model); !st.isOk()) return fail(st);
  if (opts.check) {
    Status st =
        checkSpecNames(**model, opts.check_opts.inputs, "--check-input", opts.check_opts.shapes);
    if (!st.isOk()) return usage(st.withContext(opts.input));
  }
  if (!opts.calibration_inputs.empty() && (opts.precision.empty() || !opts.range_analysis)) {
    return usage(Status(StatusCode::kInvalidArgument,
                        "--calibration-input needs --precision with the range analysis on"));
  }
  // The analysis (onnxopt::optimize) gives the other inputs seeded random values.
  OptimizeCommandOptions run_opts = opts;
  if (Status st = checkSpecNames(**model, opts.calibration_inputs, "--input", {}); !st.isOk()) {
    return usage(st.withContext(opts.input));
  }
  if (int status = readGivenFeeds(**model, opts.calibration_inputs, &run_opts.calibration_feeds);
      status != 0) {
    return status;
  }
  ir::ModelStats before = ir::computeStats(**model);
  OptimizeResult optimized;
  if (int status = runPipeline(run_opts, **model, diagnostics, rules, optimized); status != 0) {
    return status;
  }
  printSummaries(opts, **model, before, optimized);
  return writeOutputs(opts, **model, before, optimized);
}

}  // namespace onnxopt::tools
