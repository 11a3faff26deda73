// opt: the onnxopt command-line driver. This file builds the command line and dispatches to the
// subcommands, each in its own file (commands.h): optimize (the default), check, run, bench,
// generate.
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/plugin/plugin.h"
#include "opt_main.h"
#include "ort_executor.h"
#include "run_batch.h"

namespace onnxopt::tools {
namespace {

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
  opt run model.onnx --device cuda --stats   run on GPU 0; print the plan (arena, fallbacks)
  opt check model.onnx out.onnx              compare the outputs of two models on seeded inputs
  opt check model.onnx out.onnx --per-layer --runner onnxruntime --report check.json
  opt check model.onnx --runner cuda --against reference   the GPU against the CPU on one model
  opt bench model.onnx --iters 200 --profile  latency on GPU 0, and a per-node time table
  opt generate decoder.onnx --input-ids 1,2,3 --max-new-tokens 64
                                             greedy tokens from a decoder with a KV cache
  opt model.onnx -o out.onnx --check --report report.json
                                             optimize, then check the result against the input
  opt model.onnx --emit text                 print the IR as text (the format of pass tests)
  opt model.onnx --emit text --elide-constants
                                             ... with tensors over 16 elements shown as {...}
  opt test.onnxtxt -o model.onnx             compile ONNX textual syntax to a binary model
  opt big.onnx -o out.onnx --external-data   weights to out.onnx.data beside out.onnx
  opt big.onnx -o out.onnx --external-data=weights.bin
  opt model.onnx -O3 --target cuda -o out.onnx
                                             also fuse for the CUDA runtime (ai.onnxopt ops)
  opt model.onnx -o out.onnx --rewrite-rules swiglu.onnxtxt
                                             replace subgraphs by the rules of a file
  opt model.onnx -o out.onnx --plugin libswiglu.so
                                             load a plugin: its passes join -O1 and up
  opt model.onnx --stats                     op histogram, node and initializer counts, opsets
  opt model.onnx -O0 --infer-shapes -o out.onnx
                                             add inferred (symbolic) shapes as value_info

Input is the binary ONNX format, or ONNX textual syntax for *.onnxtxt / *.txt files.
Output is written atomically: on any error no output file is created and an existing one is
left untouched. Exit status: 0 on success, 1 when the input or output fails, 2 on bad usage,
3 when a check (`opt check`, `--check`) finds an output past tolerance.
)";

/// Options whose presence (not only value) matters.
struct OptimizeFlags {
  CLI::Option* passes = nullptr;
  CLI::Option* external_data = nullptr;
  CLI::Option* elide = nullptr;
  CLI::Option* fold_size_limit = nullptr;
  CLI::Option* max_nodes = nullptr;
};

/// The pipeline and pass options of `opt IN ...`.
void addPipelineOptions(CLI::App& app, OptimizeCommandOptions& opts, OptimizeFlags& flags) {
  app.add_option("-O", opts.level,
                 "Optimization level 0-3 (default 2): 0 none, 1 cleanup and "
                 "folding, 2 plus fusions, 3 plus target-specific rewrites")
      ->check(CLI::Range(0, 3));
  app.add_option("--target", opts.target,
                 "Execution target whose rewrites -O3 adds: cuda (ops of the ai.onnxopt domain the "
                 "CUDA runtime has kernels for, written with their decompositions as model-local "
                 "functions, so other tools still run the file); default: portable ONNX")
      ->check(CLI::IsMember({"cuda"}));
  flags.passes = app.add_option("--passes", opts.passes,
                                "Run this pipeline instead of -O, e.g. 'fixpoint(cse,dce),dce'");
  app.add_option("--disable-pass", opts.disabled_passes,
                 "Leave this pass out of the pipeline wherever it occurs (repeatable), e.g. "
                 "--disable-pass convert-nhwc");
  app.add_option("--pass-option", opts.pass_options,
                 "PASS.OPTION=VALUE: set an option of every entry of that pass in the pipeline "
                 "(repeatable; --list-passes shows them), e.g. --pass-option "
                 "convert-nhwc.grouped=true");
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
  // These set pass options on every entry of their pass in the pipeline, -O or --passes, that
  // does not set that option itself (the pipeline text wins); reproducers and reports show them.
  app.add_flag("--fold-qdq", opts.fold_qdq,
               "Constant folding also folds QuantizeLinear/DequantizeLinear (sets "
               "fold-constants{fold-qdq=true} in the pipeline, -O or --passes, where an entry "
               "does not set it itself)");
  app.add_flag("--fold-grow-weights", opts.fold_grow_weights,
               "Constant folding also creates results larger than the stored constants they read "
               "(over 4 KiB), such as int8 weights dequantized to float (sets "
               "fold-constants{grow-weights=true} likewise)");
  flags.fold_size_limit =
      app.add_option("--fold-size-limit", opts.fold_size_limit,
                     "Bytes: folded tensors larger than this and than their inputs are not "
                     "created (default 1048576; sets fold-constants{size-limit=N} likewise)")
          ->check(CLI::NonNegativeNumber);
  app.add_flag("--keep-initializer-inputs", opts.keep_initializer_inputs,
               "Keep graph inputs that have an initializer (IR 4+) as overridable inputs; by "
               "default -O1 and up treat them as constants (sets "
               "freeze-initializer-inputs{keep-overridable=true} likewise)");
  app.add_option("--target-opset", opts.target_opset,
                 "Raise the ai.onnx opset to N first (ops whose signature changed are converted; "
                 "if one cannot be, the model keeps its opset and a warning says why)")
      ->check(CLI::Range(7, 23));
  app.add_option("--precision", opts.precision,
                 "Convert float32 compute to fp16 or bf16 (convert-precision, after -O1's "
                 "cleanup and before the fusions), keeping in float32 what is unsafe or not "
                 "allowed at the model's opset")
      ->check(CLI::IsMember({"fp16", "bf16"}));
  app.add_option("--keep-io-types", opts.keep_io_types,
                 "With --precision: keep the graph's float inputs and outputs float32 (default "
                 "true; false converts them too)");
  app.add_option("--keep-op", opts.keep_ops,
                 "With --precision: keep this op type in float32 (repeatable)");
  app.add_option("--keep-node", opts.keep_nodes,
                 "With --precision: keep the node of this name in float32 (repeatable)");
  app.add_option("--calibration-input", opts.calibration_inputs,
                 "With --precision: NAME=FILE.npy, an input for the range analysis "
                 "(repeatable; inputs not given are seeded random, as opt check makes them)");
  app.add_option("--range-analysis", opts.range_analysis,
                 "With --precision: run the float32 model on the reference kernels first and "
                 "measure each node in the type: values past half of its largest finite value "
                 "(or, for float16, wholly under its smallest normal), "
                 "and the inputs and outputs of nodes losing more than 16 units of its rounding, "
                 "stay float32 (with producers and readers); reductions, and nodes with a "
                 "constant past the range (saturated), convert where within it (default true; "
                 "false: none of this, reductions stay float32)");
  CLI::Option* quantize =
      app.add_option(
             "--quantize", opts.quantize,
             "weights=int4 or weights=int8: weight-only quantization of constant MatMul/Gemm "
             "weights, round to nearest per block along the reduction axis, written as "
             "DequantizeLinear-21 blocked quantization (needs opset 21+: --target-opset 21; "
             "quantize-weights, after the portable rewrites)")
          ->check(CLI::IsMember({"weights=int4", "weights=int8"}));
  app.add_option("--block-size", opts.quantization.block_size,
                 "With --quantize: elements per scale along the reduction axis (default 32); "
                 "weights whose reduction dim is not a multiple stay float (a warning names them)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 30))
      ->needs(quantize);
  app.add_flag("--quantize-symmetric,!--quantize-asymmetric", opts.quantization.symmetric,
               "With --quantize: signed values and no zero point (the default), or "
               "(--quantize-asymmetric) unsigned values with a zero point per block")
      ->needs(quantize);
  app.add_option("--quantize-exclude", opts.quantization.exclude,
                 "With --quantize: leave float the weights whose name, or whose reader's node "
                 "name, matches this glob (* and ?; repeatable)")
      ->needs(quantize);
  app.add_option("--quantize-lm-head", opts.quantization.lm_head,
                 "With --quantize: quantize the main graph's last MatMul/Gemm, an LLM's lm_head "
                 "(default true)")
      ->needs(quantize);
  app.add_flag("--quantize-embeddings", opts.quantization.embeddings,
               "With --quantize: also quantize Gather<axis=0> embedding tables along their "
               "hidden dim")
      ->needs(quantize);
  app.add_option("--rewrite-rules", opts.rewrite_rules,
                 "Apply the rewrite rules of this file (repeatable): pairs of a pattern and a "
                 "replacement graph in ONNX textual syntax (docs/rewrite_rules.md); they run after "
                 "-O1's cleanup, before the fusions")
      ->check(CLI::ExistingFile);
  app.add_flag("--no-function-bodies", opts.no_function_bodies,
               "With --rewrite-rules or --plugin: do not write a model-local function for the "
               "ops of the user's or plugins' domains that the rules and plugin passes create "
               "(the output then runs only where they have kernels)");
  app.add_flag("--include-functions", opts.include_functions,
               "Also optimize the bodies of model-local functions");
  app.add_flag("--time-passes", opts.time_passes, "Print a table of time and node counts per pass");
  app.add_flag("--debug-patterns", opts.debug_patterns,
               "Print which pattern tried which node and why it did not apply (stderr)");
}

/// The output, limit, check and report options of `opt IN ...`.
void addOutputOptions(CLI::App& app, OptimizeCommandOptions& opts, OptimizeFlags& flags) {
  app.add_option("-o,--output", opts.output, "Where to write the result ('-' for stdout text)");
  app.add_option("--emit", opts.emit, "Output format: onnx (default) or text")
      ->check(CLI::IsMember({"onnx", "text"}));
  flags.external_data =
      app.add_option("--external-data", opts.external_data,
                     "Store tensor data in FILE beside the output (default: OUT.data); also "
                     "chosen automatically past 2 GB or when the input used external data")
          ->expected(0, 1);
  flags.elide = app.add_option("--elide-constants", opts.elide,
                               "In text output, show tensors over N elements (default 16) as {...}")
                    ->expected(0, 1);
  app.add_flag("--stats", opts.stats, "Print op histogram, node/initializer counts and opsets");
  flags.max_nodes = app.add_option("--max-nodes", opts.limits.max_nodes,
                                   "Refuse models with more nodes than this, as read or once "
                                   "their functions are inlined (default 16777216)")
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
}

/// `opt check ORIGINAL OPTIMIZED ...`
CLI::App* addCheckCommand(CLI::App& app, CheckCommandOptions& opts) {
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Run ORIGINAL and OPTIMIZED on the same inputs and compare every output: max abs/rel "
      "error, mean abs error, cosine similarity, pass/fail. Exit 0 when all pass, 3 when not");
  cmd->add_option("original", opts.original, "The reference model")->required();
  cmd->add_option("optimized", opts.optimized,
                  "The model to check (default: ORIGINAL again, to compare --runner with "
                  "--against)");
  addCheckOptions(cmd, opts.check, "--input");
  cmd->add_option("--report", opts.report, "Write the results as JSON");
  cmd->add_flag("--no-cuda-graph", opts.no_cuda_graph,
                "With --runner cuda or --against cuda: run every step eagerly (no CUDA graph "
                "capture and replay; the runner is then named cuda-no-graph)");
  addCudaFlags(cmd, opts.cuda, "--runner cuda or --against cuda");
  return cmd;
}

/// `opt run MODEL ...`
CLI::App* addRunCommand(CLI::App& app, RunCommandOptions& opts) {
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a model on the CPU reference kernels, or on a GPU with --device cuda (given or "
      "seeded random inputs), and print a summary of each output");
  CLI::Option* model = cmd->add_option("model", opts.model, "Model to run");
  cmd->add_option("--batch", opts.batch,
                  "FILE: run its cases (one a line: MODEL, then --input, --input-shape, --seed and "
                  "--save-outputs, tab-separated) in this one process, each framed by '== case N' "
                  "and '== case N: exit RC' lines on stdout and stderr; the other options apply to "
                  "every case")
      ->excludes(model);
  cmd->add_option("--input", opts.inputs, "NAME=FILE: an input from .npy or TensorProto .pb");
  cmd->add_option("--input-shape", opts.shapes,
                  "NAME=d0,d1,...: the shape of a random input with dynamic dims");
  cmd->add_option("--seed", opts.seed, "Seed of the random inputs (default 0)");
  cmd->add_option("--save-outputs", opts.save_outputs,
                  "Folder to write each output to as OUTPUT_NAME.npy (or .pb); a sequence output "
                  "as the folder OUTPUT_NAME/ of 0.npy, 1.npy, ... (one per element, in order); "
                  "an optional output that holds a value as that value, and an empty one as no "
                  "file (printed 'optional, empty')");
  cmd->add_option("--save-format", opts.save_format,
                  "npy (default) or pb: TensorProto files, which hold every element type "
                  "(.npy has no bfloat16, float8, int4 or strings)")
      ->check(CLI::IsMember({"npy", "pb"}));
  cmd->add_option("--device", opts.device,
                  "reference (the CPU reference kernels, default) or cuda (the CUDA executor on "
                  "device 0; no device or a build without CUDA: exit 1)")
      ->check(CLI::IsMember({"reference", "cuda"}));
  cmd->add_flag("--stats", opts.stats,
                "With --device cuda: print the plan summary (placements, arena, intermediate and "
                "weight bytes, each node that runs on the CPU and why)");
  cmd->add_flag("--no-cuda-graph", opts.no_cuda_graph,
                "With --device cuda: run every step eagerly (no CUDA graph capture and replay)");
  addCudaFlags(cmd, opts.cuda, "--device cuda");
  addRunLimitOptions(cmd, opts.limits);
  return cmd;
}

void listPasses() {
  for (const auto& p : passes::allPasses()) {
    fmt::print("{:<22} {}\n", p->id(), p->summary());
    for (const auto& o : p->options()) {
      fmt::print("{:<22}   {{{}={}}} ({}): {}\n", "", o.name, o.default_value, o.type, o.help);
    }
  }
}

/// What the options of `opt IN ...` need of each other; 0 when they fit, else the exit status.
int checkOptimizeUsage(const OptimizeCommandOptions& opts) {
  if (opts.input.empty()) {
    fmt::print(stderr, "opt: error: no input model (see --help)\n");
    return kExitUsage;
  }
  if (opts.emit == "onnx" && opts.output.empty() && !opts.stats) {
    fmt::print(stderr, "opt: error: no output: give -o OUT, --emit text or --stats (see --help)\n");
    return kExitUsage;
  }
  if (opts.emit == "onnx" && opts.output == "-") {
    fmt::print(stderr, "opt: error: binary output cannot go to stdout; give a file with -o\n");
    return kExitUsage;
  }
  return 0;
}

}  // namespace

int optMain(int argc, char** argv) {
  registerOnnxruntimeRunner();  // before the command line lists the runners
  CLI::App app{"opt: the onnxopt ONNX graph optimizer"};
  app.footer(kExamples);
  app.set_version_flag("--version", std::string("onnxopt ") + ONNXOPT_VERSION);
  OptimizeCommandOptions opts;
  OptimizeFlags flags;
  app.add_option("input", opts.input, "Model to read (.onnx, or .onnxtxt textual syntax)");
  addPipelineOptions(app, opts, flags);
  addOutputOptions(app, opts, flags);
  CheckCommandOptions check_opts;
  CLI::App* check_cmd = addCheckCommand(app, check_opts);
  RunCommandOptions run_opts;
  CLI::App* run_cmd = addRunCommand(app, run_opts);
  BenchCommandOptions bench_opts;
  CLI::App* bench_cmd = addBenchCommand(app, bench_opts);
  GenerateCommandOptions generate_opts;
  CLI::App* generate_cmd = addGenerateCommand(app, generate_opts);
  // --plugin on the command and on each subcommand (`opt run --plugin X.so m.onnx`).
  std::vector<std::vector<std::string>> plugin_lists(5);
  const char* plugin_help =
      "Load this plugin (a shared library: passes, op schemas, reference and CUDA kernels; "
      "docs/plugins.md) before anything else (repeatable)";
  app.add_option("--plugin", plugin_lists[0], plugin_help);
  check_cmd->add_option("--plugin", plugin_lists[1], plugin_help);
  run_cmd->add_option("--plugin", plugin_lists[2], plugin_help);
  bench_cmd->add_option("--plugin", plugin_lists[3], plugin_help);
  generate_cmd->add_option("--plugin", plugin_lists[4], plugin_help);
  // A repeatable option takes one value per occurrence: `--plugin a.so model.onnx` leaves the
  // model to the positional argument.
  for (CLI::App* a : {&app, check_cmd, run_cmd, bench_cmd, generate_cmd}) {
    for (CLI::Option* o : a->get_options()) {
      if (!o->get_lnames().empty() && o->get_items_expected_max() > 1) o->allow_extra_args(false);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  for (const auto& list : plugin_lists) {
    for (const std::string& path : list) {
      auto loaded = plugin::loadPlugin(path);
      if (!loaded.isOk()) return fail(loaded.status());
    }
  }
  if (*run_cmd && !run_opts.batch.empty()) return runBatchCommand(run_opts);
  if (*run_cmd && run_opts.model.empty()) {
    fmt::print(stderr, "opt: error: opt run: no model (give MODEL or --batch FILE)\n");
    return kExitUsage;
  }
  if (*check_cmd) {
    const std::string& checked =
        check_opts.optimized.empty() ? check_opts.original : check_opts.optimized;
    return guarded(checked, [&] { return checkCommand(check_opts); });
  }
  if (*run_cmd) return guarded(run_opts.model, [&] { return runCommand(run_opts); });
  if (*bench_cmd) return guarded(bench_opts.model, [&] { return benchCommand(bench_opts); });
  if (*generate_cmd) {
    return guarded(generate_opts.model, [&] { return generateCommand(generate_opts); });
  }
  opts.external_data_given = flags.external_data->count() > 0;
  opts.passes_given = flags.passes->count() > 0;
  opts.fold_size_limit_given = flags.fold_size_limit->count() > 0;
  opts.max_nodes_given = flags.max_nodes->count() > 0;
  if (flags.elide->count() > 0 && opts.elide < 0) opts.elide = 16;
  if (opts.list_passes) {
    listPasses();
    return 0;
  }
  if (int status = checkOptimizeUsage(opts); status != 0) return status;
  return guarded(opts.input, [&] { return optimizeCommand(opts); });
}

}  // namespace onnxopt::tools
