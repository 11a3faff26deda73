// opt: the onnxopt command-line driver.
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "check.h"
#include "inputs.h"
#include "onnxopt/api/optimize.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/printer.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/ir/stats.h"
#include "onnxopt/pass/pass_manager.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/runtime/reference_executor.h"
#include "onnxopt/support/diagnostic_stream.h"
#include "opt_main.h"
#include "report.h"

namespace {

using namespace onnxopt;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitCheckFailed = 3;

constexpr const char* kExamples = R"(
Examples:
  opt model.onnx -o out.onnx                 optimize at -O2 (the default)
  opt model.onnx -o out.onnx -O0             read, verify and re-write only
  opt model.onnx -o out.onnx --passes='lift-constants,fixpoint(cse,dce)'
  opt model.onnx -o out.onnx --time-passes --stats
  opt test.onnxtxt --emit text --passes=eliminate-noop --verify-each
  opt --list-passes                          every pass with its summary and options
  opt run model.onnx                         run on the CPU reference kernels with seeded random inputs
  opt run model.onnx --input x=x.npy --input-shape y=1,3,224,224 --seed 7
  opt check model.onnx out.onnx              compare the outputs of two models on seeded inputs
  opt check model.onnx out.onnx --per-layer --runner onnxruntime --report check.json
  opt model.onnx -o out.onnx --check --report report.json
                                             optimize, then check the result against the input
  opt model.onnx --emit text                 print the IR as text (the format of pass tests)
  opt model.onnx --emit text --elide-constants
                                             ... with tensors over 16 elements shown as {...}
  opt test.onnxtxt -o model.onnx             compile ONNX textual syntax to a binary model
  opt big.onnx -o out.onnx --external-data   weights to out.onnx.data beside out.onnx
  opt big.onnx -o out.onnx --external-data=weights.bin
  opt model.onnx --stats                     op histogram, node and initializer counts, opsets
  opt model.onnx -O0 --infer-shapes -o out.onnx
                                             add inferred (symbolic) shapes as value_info

Input is the binary ONNX format, or ONNX textual syntax for *.onnxtxt / *.txt files.
Output is written atomically: on any error no output file is created and an existing one is
left untouched. Exit status: 0 on success, 1 when the input or output fails, 2 on bad usage,
3 when a check (`opt check`, `--check`) finds an output past tolerance.
)";

struct Options {
  std::string input;
  int level = 2;
  std::string passes;
  bool passes_given = false;
  bool list_passes = false;
  bool print_ir_after_all = false;
  bool print_ir_after_change = false;
  bool verify_each = false;
  bool verify_convergence = false;
  bool time_passes = false;
  bool debug_patterns = false;
  bool include_functions = false;
  bool infer_shapes = false;
  bool fold_qdq = false;
  int target_opset = 0;
  int64_t fold_size_limit = int64_t{1} << 20;
  bool keep_initializer_inputs = false;
  int max_rounds = 10;
  std::string output;
  std::string emit = "onnx";
  std::string external_data;
  bool external_data_given = false;
  int64_t elide = -1;
  bool stats = false;
  bool check = false;
  io::LoadLimits limits;
  tools::CheckOptions check_opts;
  std::string report;
};

int fail(const Status& status) {
  std::string msg = status.message();
  for (char& c : msg) {
    if (c == '\n') c = ' ';
  }
  fmt::print(stderr, "opt: error: {}\n", msg);
  return kExitError;
}

/// Like fail, for a command line that asks for something the model does not have.
int usage(const Status& status) {
  fail(status);
  return kExitUsage;
}

/// --input / --input-shape NAME=... must name inputs of the model.
Status checkSpecNames(const ir::Model& model, const std::vector<std::string>& inputs,
                      const char* input_flag, const std::vector<std::string>& shapes) {
  RETURN_IF_ERROR(tools::checkInputNames(*model.graph, inputs, input_flag));
  return tools::checkInputNames(*model.graph, shapes, "--input-shape");
}

io::SaveOptions saveOptions(const Options& opts) {
  io::SaveOptions save;
  if (opts.external_data_given) {
    save.external_data = io::SaveOptions::ExternalData::kAlways;
    save.external_file = opts.external_data;
  }
  return save;
}

/// Whether two paths name the same file (existing or not).
bool samePath(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(fs::absolute(a, ec), ec) ==
         fs::weakly_canonical(fs::absolute(b, ec), ec);
}

/// The external data files a graph's tensors are read from.
void collectDataFiles(const ir::Graph& graph, std::set<std::string>& files) {
  auto add = [&](const ir::Tensor& t) {
    if (t.externalSource()) files.insert(t.externalSource()->path);
  };
  for (const ir::Value* v : graph.initializers()) {
    if (v->initializer() != nullptr) add(*v->initializer());
    if (v->sparseInitializer() != nullptr) {
      add(v->sparseInitializer()->values);
      add(v->sparseInitializer()->indices);
    }
  }
  for (const ir::Node* n : graph) {
    for (const ir::Attribute& a : n->attributes()) {
      for (const ir::Tensor& t : a.tensors) add(t);
    }
    for (const ir::Graph* g : n->subgraphs()) collectDataFiles(*g, files);
  }
}

/// Up front, before the passes run: every file opt would write must be writable, and none may be
/// one the input still needs (its model file, unless the output replaces it, or its data files,
/// unless the output model replaces the input and takes the data file's place with it).
Status checkOutputPaths(const Options& opts, const ir::Model& input) {
  std::set<std::string> input_data;
  collectDataFiles(*input.graph, input_data);
  for (const auto& f : input.functions) collectDataFiles(*f->body, input_data);
  const bool file_output = !opts.output.empty() && opts.output != "-";
  const bool binary = file_output && opts.emit == "onnx";
  std::string data_path;
  if (binary && (opts.external_data_given || !input_data.empty())) {
    data_path = io::externalDataPath(opts.output, saveOptions(opts));
  }
  if (file_output) RETURN_IF_ERROR(io::checkOutputPath(opts.output, data_path));
  const bool replaces_input = file_output && samePath(opts.output, opts.input);
  for (const std::string& f : input_data) {
    if (file_output && samePath(opts.output, f)) {
      return invalidArgument("{}: is the external data file of the input {}, which still needs it",
                             opts.output, opts.input);
    }
    if (!data_path.empty() && !replaces_input && samePath(data_path, f)) {
      return invalidArgument(
          "{}: the external data file '{}' is the input's, which {} still needs; give "
          "--external-data another name",
          opts.output, data_path, opts.input);
    }
  }
  if (!data_path.empty() && samePath(data_path, opts.input)) {
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
      if (samePath(opts.report, f)) {
        return invalidArgument("{}: the report would overwrite '{}'", opts.report, f);
      }
    }
  }
  return Status::ok();
}

int run(const Options& opts) {
  // Warnings quote names from the model: this stream escapes their control characters.
  DiagnosticStream warnings(std::cerr);
  io::LoadLimits limits = opts.limits;
  limits.warnings = &warnings;
  auto model = io::loadModel(opts.input, limits);
  if (!model.isOk()) return fail(model.status());
  if (Status st = checkOutputPaths(opts, **model); !st.isOk()) return fail(st);
  if (opts.check) {
    Status st =
        checkSpecNames(**model, opts.check_opts.inputs, "--check-input", opts.check_opts.shapes);
    if (!st.isOk()) return usage(st.withContext(opts.input));
  }

  OptimizeOptions optimize_options;
  optimize_options.level = opts.level;
  // An explicit empty --passes runs nothing, as -O0 does.
  optimize_options.pipeline = opts.passes_given ? opts.passes : "";
  if (opts.passes_given && opts.passes.empty()) optimize_options.level = 0;
  optimize_options.target_opset = opts.target_opset;
  pass::PassContext& ctx = optimize_options.context;
  ctx.driver.max_rounds = opts.max_rounds;
  ctx.driver.verify_convergence = opts.verify_convergence;
  ctx.driver.debug = opts.debug_patterns ? &std::cerr : nullptr;
  ctx.driver.include_functions = opts.include_functions;
  ctx.fold_qdq = opts.fold_qdq;
  ctx.fold_size_limit = static_cast<uint64_t>(opts.fold_size_limit);
  ctx.keep_initializer_inputs = opts.keep_initializer_inputs;
  ctx.warnings = &warnings;
  pass::Instrumentation& inst = optimize_options.instrumentation;
  inst.print_ir_after_all = opts.print_ir_after_all;
  inst.print_ir_after_change = opts.print_ir_after_change;
  inst.verify_each = opts.verify_each;
  inst.time_passes = opts.time_passes;
  inst.count_nodes = !opts.report.empty();
  inst.ir_out = &std::cerr;
  ir::ModelStats before = ir::computeStats(**model);
  OptimizeResult optimized;
  Status ran = optimize(**model, optimize_options, &optimized);
  if (!ran.isOk()) {
    // A pipeline that does not parse is a usage error, not the model's: no file context.
    if (optimized.pipeline.empty()) return fail(ran);
    fail(ran.withContext(opts.input));
    fmt::print(stderr, "opt: note: reproduce with: opt {} --passes='{}'{}\n", opts.input,
               optimized.pipeline, opts.verify_each ? " --verify-each" : "");
    return kExitError;
  }
  if (opts.infer_shapes) {
    ir::ShapeInferenceOptions infer;
    infer.write_value_info = true;
    infer.warnings = &warnings;
    auto inferred = ir::inferShapes(**model, infer);
    if (!inferred.isOk()) return fail(inferred.status().withContext(opts.input));
  }
  if (opts.time_passes) std::fputs(optimized.timing_report.c_str(), stderr);
  if (opts.stats) {
    ir::ModelStats after = ir::computeStats(**model);
    fmt::print("nodes: {} -> {}, initializers: {} -> {}\n", before.nodes, after.nodes,
               before.initializers, after.initializers);
    for (const auto& [name, value] : optimized.statistics)
      fmt::print("  {:<48} {:>8}\n", name, value);
    std::fputs(ir::formatStats(**model, after).c_str(), stdout);
  }
  // Nothing is committed until every step succeeded: the output is staged under a temporary name
  // (and --check reads that), the report is written, and only then is the output renamed into
  // place. A failing check, report or rename leaves every existing file as it was.
  io::OutputTransaction transaction;
  std::string text;
  bool text_to_stdout = false;
  std::string checked_path = "(optimized)";
  if (opts.emit == "text") {
    ir::PrintOptions print;
    print.elide_above = opts.elide;
    text = ir::printModel(**model, print);
    if (opts.output.empty() || opts.output == "-") {
      text_to_stdout = true;
    } else {
      Status st = transaction.addFile(opts.output, text);
      if (!st.isOk()) return fail(st);
    }
  } else if (!opts.output.empty()) {
    auto staged = transaction.addModel(**model, opts.output, saveOptions(opts));
    if (!staged.isOk()) return fail(staged.status().withContext(opts.output));
    checked_path = *staged;
  }

  // --check: the original (read again: the passes changed it in place) against the result.
  std::optional<tools::CheckResult> check;
  if (opts.check) {
    auto original = io::loadModel(opts.input);
    if (!original.isOk()) return fail(original.status());
    auto checked =
        tools::checkModels(opts.input, **original, checked_path, **model, opts.check_opts);
    if (!checked.isOk()) return fail(checked.status());
    check = std::move(checked).value();
    std::string table = tools::formatCheck(*check);
    std::fputs(table.c_str(), text_to_stdout ? stderr : stdout);
  }
  std::string report_json;
  if (!opts.report.empty()) {
    ir::ModelStats after = ir::computeStats(**model);
    tools::ReportData report;
    report.command = "optimize";
    report.input = opts.input;
    report.output = opts.output;
    report.pipeline = optimized.pipeline;
    report.before = &before;
    report.after = &after;
    report.passes = &optimized.records;
    report.statistics = optimized.statistics;
    report.seconds = optimized.seconds;
    report.check = check ? &*check : nullptr;
    report_json = tools::reportJson(report);
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
  if (text_to_stdout) std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

struct CheckCommandOptions {
  std::string original;
  std::string optimized;
  tools::CheckOptions check;
  std::string report;
};

/// `opt check ORIGINAL OPTIMIZED`: both models on the same inputs, every output compared.
int checkCommand(const CheckCommandOptions& opts) {
  auto original = io::loadModel(opts.original);
  if (!original.isOk()) return fail(original.status());
  auto optimized = io::loadModel(opts.optimized);
  if (!optimized.isOk()) return fail(optimized.status());
  if (Status st = checkSpecNames(**original, opts.check.inputs, "--input", opts.check.shapes);
      !st.isOk()) {
    return usage(st.withContext(opts.original));
  }
  auto checked =
      tools::checkModels(opts.original, **original, opts.optimized, **optimized, opts.check);
  if (!checked.isOk()) return fail(checked.status());
  std::fputs(tools::formatCheck(*checked).c_str(), stdout);
  if (!opts.report.empty()) {
    ir::ModelStats before = ir::computeStats(**original);
    ir::ModelStats after = ir::computeStats(**optimized);
    tools::ReportData report;
    report.command = "check";
    report.input = opts.original;
    report.output = opts.optimized;
    report.before = &before;
    report.after = &after;
    report.check = &*checked;
    Status st = io::writeFileAtomically(opts.report, tools::reportJson(report));
    if (!st.isOk()) return fail(st.withContext(opts.report));
  }
  return checked->passed ? 0 : kExitCheckFailed;
}

/// The options `opt check` and `opt IN -o OUT --check` share.
void addCheckOptions(CLI::App* app, tools::CheckOptions& c, const char* input_flag) {
  app->add_option(input_flag, c.inputs, "NAME=FILE: an input from .npy or TensorProto .pb");
  app->add_option(
      "--input-shape", c.shapes,
      "NAME=d0,d1,...: the shape of a random input (named dynamic dims default to 2; spatial "
      "dims of inputs feeding a Conv or pooling get enough for every window)");
  app->add_option("--seed", c.seed, "Seed of the random inputs (default 0)");
  app->add_option("--atol", c.atol,
                  "Absolute tolerance for every output (default per type: float 1e-5, float16 "
                  "1e-3, bfloat16 1e-2)");
  app->add_option("--rtol", c.rtol,
                  "Relative tolerance for every output (default per type: float 1e-4, float16 "
                  "1e-2, bfloat16 2e-2)");
  app->add_option("--runner", c.runner,
                  "reference (the CPU reference kernels, default) or onnxruntime (through "
                  "tools/opt/ort_runner.py; ONNXOPT_PYTHON picks the interpreter)")
      ->check(CLI::IsMember({"reference", "onnxruntime"}));
  app->add_flag("--per-layer", c.per_layer,
                "Also compare every value both models name alike and report the first past "
                "tolerance");
}

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE
  std::vector<std::string> shapes;  // NAME=d0,d1,...
  uint64_t seed = 0;
  std::string save_outputs;  // folder for <output>.npy files
};

/// `opt run`: the reference executor on given or seeded random inputs; prints output summaries.
int runCommand(const RunOptions& opts) {
  auto model = io::loadModel(opts.model);
  if (!model.isOk()) return fail(model.status());
  const ir::Graph& graph = *(*model)->graph;
  if (Status st = checkSpecNames(**model, opts.inputs, "--input", opts.shapes); !st.isOk()) {
    return usage(st.withContext(opts.model));
  }
  tools::RandomInputOptions random;
  random.seed = opts.seed;
  auto shapes = tools::parseShapeSpecs(opts.shapes);
  if (!shapes.isOk()) return fail(shapes.status());
  random.shapes = std::move(shapes).value();
  random.int_ranges = tools::inferIntRanges(graph);
  random.spatial = tools::spatialInputSizes(graph);
  auto given = tools::readInputSpecs(opts.inputs);
  if (!given.isOk()) return fail(given.status());
  std::map<std::string, kernels::HostTensor> feeds = std::move(given).value();
  for (const ir::Value* in : graph.inputs()) {
    if (auto it = feeds.find(in->name()); it != feeds.end()) {
      Status st =
          tools::checkGivenInput(*in, it->second, tools::inputFileOf(opts.inputs, in->name()));
      if (!st.isOk()) return fail(st);
      continue;
    }
    if (auto it = random.shapes.find(in->name()); it != random.shapes.end()) {
      if (Status st = tools::checkPinnedShape(*in, it->second); !st.isOk()) return fail(st);
    }
    if (in->initializer() != nullptr) continue;
    std::vector<std::string> chosen;
    auto t = tools::randomInput(*in, random, &chosen);
    if (!t.isOk()) return fail(t.status().withContext(opts.model));
    fmt::print("input  {}\n", tools::summarize(in->name(), *t));
    if (!chosen.empty()) {
      fmt::print("dims   {}: {} (dynamic; pin with --input-shape)\n", in->name(),
                 fmt::join(chosen, ", "));
    }
    feeds[in->name()] = std::move(t).value();
  }
  auto result = runtime::runModel(**model, feeds);
  if (!result.isOk()) return fail(result.status().withContext(opts.model));
  for (size_t i = 0; i < result->names.size(); ++i) {
    fmt::print("output {}\n", tools::summarize(result->names[i], result->outputs[i]));
    if (!opts.save_outputs.empty()) {
      std::string file = result->names[i];
      for (char& c : file) {
        if (c == '/' || c == '\\' || c == ':') c = '_';
      }
      Status st = tools::writeNpy(opts.save_outputs + "/" + file + ".npy", result->outputs[i]);
      if (!st.isOk()) return fail(st);
    }
  }
  return 0;
}

}  // namespace

int onnxopt::tools::optMain(int argc, char** argv) {
  CLI::App app{"opt: the onnxopt ONNX graph optimizer"};
  app.footer(kExamples);
  app.set_version_flag("--version", std::string("onnxopt ") + ONNXOPT_VERSION);
  Options opts;
  app.add_option("input", opts.input, "Model to read (.onnx, or .onnxtxt textual syntax)");
  app.add_option("-O", opts.level,
                 "Optimization level 0-3 (default 2): 0 none, 1 cleanup and "
                 "folding, 2 plus fusions, 3 plus target-specific rewrites")
      ->check(CLI::Range(0, 3));
  auto* passes_opt = app.add_option(
      "--passes", opts.passes, "Run this pipeline instead of -O, e.g. 'fixpoint(cse,dce),dce'");
  app.add_flag("--list-passes", opts.list_passes, "List every pass with its summary and options");
  app.add_flag("--print-ir-after-all", opts.print_ir_after_all,
               "Print the IR after each pass (stderr)");
  app.add_flag("--print-ir-after-change", opts.print_ir_after_change,
               "Print the IR after each pass that changed it (stderr)");
  app.add_flag("--verify-each", opts.verify_each, "Run the IR verifier after every pass");
  app.add_flag("--verify-convergence", opts.verify_convergence,
               "Make a fixed point that is not reached within --max-rounds an error");
  app.add_option("--max-rounds", opts.max_rounds, "Cap on fixed-point rounds (default 10)")
      ->check(CLI::Range(1, 1000));
  app.add_flag("--infer-shapes", opts.infer_shapes,
               "Infer types and symbolic shapes after the pipeline and write them as value_info");
  app.add_flag("--fold-qdq", opts.fold_qdq,
               "Constant folding also folds QuantizeLinear/DequantizeLinear");
  app.add_option("--fold-size-limit", opts.fold_size_limit,
                 "Bytes: folded tensors larger than this and than their inputs are not created "
                 "(default 1048576)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--keep-initializer-inputs", opts.keep_initializer_inputs,
               "Keep graph inputs that have an initializer (IR 4+) as overridable inputs; by "
               "default -O1 and up treat them as constants");
  app.add_option("--target-opset", opts.target_opset,
                 "Raise the ai.onnx opset to N first (ops whose signature changed are converted; "
                 "if one cannot be, the model keeps its opset and a warning says why)")
      ->check(CLI::Range(7, 23));
  app.add_flag("--include-functions", opts.include_functions,
               "Also optimize the bodies of model-local functions");
  app.add_flag("--time-passes", opts.time_passes, "Print a table of time and node counts per pass");
  app.add_flag("--debug-patterns", opts.debug_patterns,
               "Print which pattern tried which node and why it did not apply (stderr)");
  app.add_option("-o,--output", opts.output, "Where to write the result ('-' for stdout text)");
  app.add_option("--emit", opts.emit, "Output format: onnx (default) or text")
      ->check(CLI::IsMember({"onnx", "text"}));
  auto* ext =
      app.add_option("--external-data", opts.external_data,
                     "Store tensor data in FILE beside the output (default: OUT.data); also "
                     "chosen automatically past 2 GB or when the input used external data")
          ->expected(0, 1);
  auto* elide = app.add_option("--elide-constants", opts.elide,
                               "In text output, show tensors over N elements (default 16) as {...}")
                    ->expected(0, 1);
  app.add_flag("--stats", opts.stats, "Print op histogram, node/initializer counts and opsets");
  app.add_option("--max-nodes", opts.limits.max_nodes,
                 "Refuse models with more nodes than this (default 16777216)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-initializers", opts.limits.max_initializers,
                 "Refuse models with more initializers than this (default 4194304)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--check", opts.check,
               "After optimizing, run the original and the result on the same inputs and compare "
               "every output (exit 3 when one is past tolerance)");
  addCheckOptions(&app, opts.check_opts, "--check-input");
  app.add_option("--report", opts.report,
                 "Write a JSON report: pipeline, per-pass statistics and timings, counts before "
                 "and after, check results (docs/check.md)");
  CheckCommandOptions check_cmd_opts;
  auto* check_cmd = app.add_subcommand(
      "check",
      "Run ORIGINAL and OPTIMIZED on the same inputs and compare every output: max abs/rel "
      "error, mean abs error, cosine similarity, pass/fail. Exit 0 when all pass, 3 when not");
  check_cmd->add_option("original", check_cmd_opts.original, "The reference model")->required();
  check_cmd->add_option("optimized", check_cmd_opts.optimized, "The model to check")->required();
  addCheckOptions(check_cmd, check_cmd_opts.check, "--input");
  check_cmd->add_option("--report", check_cmd_opts.report, "Write the results as JSON");
  RunOptions run_opts;
  auto* run_cmd = app.add_subcommand(
      "run",
      "Run a model on the CPU reference kernels (given or seeded random inputs) and print "
      "a summary of each output");
  run_cmd->add_option("model", run_opts.model, "Model to run")->required();
  run_cmd->add_option("--input", run_opts.inputs,
                      "NAME=FILE: an input from .npy or TensorProto .pb");
  run_cmd->add_option("--input-shape", run_opts.shapes,
                      "NAME=d0,d1,...: the shape of a random input with dynamic dims");
  run_cmd->add_option("--seed", run_opts.seed, "Seed of the random inputs (default 0)");
  run_cmd->add_option("--save-outputs", run_opts.save_outputs,
                      "Folder to write each output to as OUTPUT_NAME.npy");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  if (*check_cmd) {
    try {
      return checkCommand(check_cmd_opts);
    } catch (const std::bad_alloc&) {
      fmt::print(stderr, "opt: error: {}: out of memory\n", check_cmd_opts.optimized);
    } catch (const std::exception&) {
      fmt::print(stderr, "opt: error: {}: internal error (an unexpected exception)\n",
                 check_cmd_opts.optimized);
    }
    return kExitError;
  }
  if (*run_cmd) {
    try {
      return runCommand(run_opts);
    } catch (const std::bad_alloc&) {
      fmt::print(stderr, "opt: error: {}: out of memory\n", run_opts.model);
    } catch (const std::exception&) {
      fmt::print(stderr, "opt: error: {}: internal error (an unexpected exception)\n",
                 run_opts.model);
    }
    return kExitError;
  }
  opts.external_data_given = ext->count() > 0;
  opts.passes_given = passes_opt->count() > 0;
  if (opts.list_passes) {
    for (const auto& p : passes::allPasses()) {
      fmt::print("{:<22} {}\n", p->id(), p->summary());
      for (const auto& o : p->options()) {
        fmt::print("{:<22}   {{{}={}}} ({}): {}\n", "", o.name, o.default_value, o.type, o.help);
      }
    }
    return 0;
  }
  if (opts.input.empty()) {
    fmt::print(stderr, "opt: error: no input model (see --help)\n");
    return kExitUsage;
  }
  if (elide->count() > 0 && opts.elide < 0) opts.elide = 16;
  if (opts.emit == "onnx" && opts.output.empty() && !opts.stats) {
    fmt::print(stderr, "opt: error: no output: give -o OUT, --emit text or --stats (see --help)\n");
    return kExitUsage;
  }
  if (opts.emit == "onnx" && opts.output == "-") {
    fmt::print(stderr, "opt: error: binary output cannot go to stdout; give a file with -o\n");
    return kExitUsage;
  }
  try {
    return run(opts);
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "opt: error: {}: out of memory\n", opts.input);
  } catch (const std::exception&) {
    fmt::print(stderr, "opt: error: {}: internal error (an unexpected exception)\n", opts.input);
  }
  return kExitError;
}
