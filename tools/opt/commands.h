// The opt subcommands: their options, their entry points, and what they share. main.cc builds the
// command line and dispatches; each command lives in its own file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "check.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/runtime/generator.h"
#include "onnxopt/support/status.h"

namespace onnxopt::tools {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitCheckFailed = 3;

/// `opt IN [-o OUT]`: read, optimize, write (optimize_command.cc).
struct OptimizeCommandOptions {
  std::string input;
  int level = 2;
  std::string target;  ///< --target: "" (portable ONNX) or "cuda"
  std::string passes;
  bool passes_given = false;
  std::vector<std::string> disabled_passes;  ///< --disable-pass
  std::vector<std::string> pass_options;     ///< --pass-option PASS.OPTION=VALUE
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
  bool fold_grow_weights = false;
  int target_opset = 0;
  std::string precision;                        ///< --precision: "" (none), fp16 or bf16
  bool keep_io_types = true;                    ///< --keep-io-types
  std::vector<std::string> keep_ops;            ///< --keep-op
  std::vector<std::string> keep_nodes;          ///< --keep-node
  std::vector<std::string> calibration_inputs;  ///< --calibration-input NAME=FILE.npy
  bool range_analysis = true;                   ///< --range-analysis
  /// The --calibration-input values, read and checked (optimizeCommand).
  std::map<std::string, kernels::HostTensor> calibration_feeds;
  std::vector<std::string> keep_values;  ///< the range analysis' findings (not a flag)
  std::vector<std::string> safe_values;  ///< the precision analysis' findings (not a flag)
  std::string quantize;                  ///< --quantize: "" (none), weights=int4 or weights=int8
  passes::WeightQuantization
      quantization;                        ///< --block-size, --quantize-* (weights from --quantize)
  std::vector<std::string> rewrite_rules;  ///< --rewrite-rules FILE
  bool no_function_bodies = false;         ///< --no-function-bodies
  int64_t fold_size_limit = int64_t{1} << 20;
  bool fold_size_limit_given = false;
  bool max_nodes_given = false;  ///< --max-nodes: also the inline-functions pass's limit
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
  CheckOptions check_opts;
  std::string report;
};

/// --no-tf32 / --allow-tf32 (run, check, bench): which float32 products the cuda runner may
/// compute with TF32 tensor cores (kernels::Tf32); neither: torch's default, convolutions only.
/// The CUDA runtime's math and tuning flags (addCudaFlags): --no-tf32, --allow-tf32,
/// --tuning-cache FILE.
struct CudaFlags {
  bool none = false;         // --no-tf32
  bool all = false;          // --allow-tf32
  std::string tuning_cache;  // --tuning-cache FILE
  kernels::Tf32 policy() const {
    return none ? kernels::Tf32::kNone : all ? kernels::Tf32::kAll : kernels::Tf32::kConvolutions;
  }
  /// The first of the flags given ("" for none), for "FLAG needs --device cuda".
  std::string given() const {
    return none ? "--no-tf32" : all ? "--allow-tf32" : tuning_cache.empty() ? "" : "--tuning-cache";
  }
};

/// `opt check ORIGINAL OPTIMIZED` (check_command.cc).
struct CheckCommandOptions {
  std::string original;
  std::string optimized;
  CheckOptions check;
  std::string report;
  bool no_cuda_graph = false;  // --no-cuda-graph: the cuda runner without CUDA graphs
  CudaFlags cuda;
};

/// `opt check ORIGINAL OPTIMIZED`: both models on the same inputs, every output compared.

/// `opt run MODEL` (run_command.cc).
struct RunCommandOptions {
  std::string model;
  std::string batch;  // --batch FILE: the cases of FILE instead of one model (run_batch.h)
  std::vector<std::string> inputs;  // NAME=FILE
  std::vector<std::string> shapes;  // NAME=d0,d1,...
  uint64_t seed = 0;
  std::string save_outputs;          // folder for <output>.npy files
  std::string save_format = "npy";   // or "pb": TensorProto files, for types .npy cannot hold
  std::string device = "reference";  // or "cuda": the runner that runs it
  bool stats = false;                // --stats: the cuda runner's plan summary
  bool no_cuda_graph = false;        // --no-cuda-graph: every cuda run eager
  CudaFlags cuda;
  runtime::RunLimits limits;  // --max-iterations, --max-memory
};

/// `opt bench MODEL` (bench_command.cc).
struct BenchCommandOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE
  std::vector<std::string> shapes;  // NAME=d0,d1,...
  uint64_t seed = 0;
  std::string device = "cuda";  // or "reference"
  int warmup = 10;
  int iters = 100;
  bool no_cuda_graph = false;
  CudaFlags cuda;
  bool profile = false;
  std::string json;           // --json FILE: the results as JSON
  runtime::RunLimits limits;  // --max-iterations, --max-memory
};

/// `opt generate MODEL` (generate_command.cc).
struct GenerateCommandOptions {
  std::string model;
  std::vector<std::string> input_ids;       // --input-ids, one row each
  std::vector<std::string> attention_mask;  // --attention-mask, one row each
  runtime::GenerationOptions options;
  std::string device = "reference";
  bool stream = false;
};

/// `opt run`: the reference (or, with --device cuda, the CUDA) executor on given or seeded random
/// inputs; prints output summaries.

int optimizeCommand(const OptimizeCommandOptions& opts);
int checkCommand(const CheckCommandOptions& opts);
int runCommand(const RunCommandOptions& opts);
int benchCommand(const BenchCommandOptions& opts);
int generateCommand(const GenerateCommandOptions& opts);
/// `opt generate`'s command line (its options into `opts`).
CLI::App* addGenerateCommand(CLI::App& app, GenerateCommandOptions& opts);
/// `opt bench`'s command line (its options into `opts`).
CLI::App* addBenchCommand(CLI::App& app, BenchCommandOptions& opts);

/// The model at `path`, with inferred types when `device` is "cuda" (its plans need them).
StatusOr<std::unique_ptr<ir::Model>> loadModelFor(const std::string& path,
                                                  const std::string& device);
/// The inputs of `opt run` and `opt bench`: --input files, the rest seeded random (shapes from
/// --input-shape); printed when `print`. 0, or the exit status of the error it printed.
int prepareFeeds(const ir::Model& model, const std::string& path,
                 const std::vector<std::string>& inputs, const std::vector<std::string>& shapes,
                 uint64_t seed, bool print, std::map<std::string, kernels::HostTensor>* feeds);
/// The NAME=FILE values of `inputs`, each checked against its model input. 0, or the exit status
/// of the error it printed.
int readGivenFeeds(const ir::Model& model, const std::vector<std::string>& inputs,
                   std::map<std::string, kernels::HostTensor>* feeds);
/// The CUDA runtime's options that --no-cuda-graph, --no-tf32 and --allow-tf32 set.
runtime::CudaOptions cudaOptions(bool no_cuda_graph, const CudaFlags& flags);
/// The runner `device` ("reference", "cuda", ...) for `model`; the cuda one with `cuda`.
StatusOr<std::unique_ptr<runtime::Executor>> createRunner(const std::string& device,
                                                          const ir::Model& model,
                                                          const std::string& path,
                                                          const runtime::CudaOptions& cuda);

/// Prints `opt: error: MESSAGE` (on one line); returns kExitError.
int fail(const Status& status);
/// Like fail, for a command line that asks for something the model does not have: kExitUsage.
int usage(const Status& status);
/// --input / --input-shape NAME=... must name inputs of the model.
Status checkSpecNames(const ir::Model& model, const std::vector<std::string>& inputs,
                      const char* input_flag, const std::vector<std::string>& shapes);
/// The options `opt check` and `opt IN -o OUT --check` share.
void addCheckOptions(CLI::App* app, CheckOptions& c, const char* input_flag);
/// --no-tf32, --allow-tf32 and --tuning-cache (`needs`: the flag that must come with them, for
/// their help).
void addCudaFlags(CLI::App* app, CudaFlags& flags, const char* needs);
/// --max-iterations and --max-memory: what one run may spend on the host (runtime::RunLimits).
void addRunLimitOptions(CLI::App* app, runtime::RunLimits& limits);
/// Runs a command; an exception that escapes it becomes an error naming `subject`.
int guarded(const std::string& subject, const std::function<int()>& command);

}  // namespace onnxopt::tools
