#include <cstdio>
#include <exception>
#include <new>

#include <fmt/format.h>

#include "commands.h"
#include "inputs.h"
#include "onnxopt/runtime/executor.h"

namespace onnxopt::tools {

int fail(const Status& status) {
  std::string msg = status.message();
  for (char& c : msg) {
    if (c == '\n') c = ' ';
  }
  fmt::print(stderr, "opt: error: {}\n", msg);
  return kExitError;
}

int usage(const Status& status) {
  fail(status);
  return kExitUsage;
}

Status checkSpecNames(const ir::Model& model, const std::vector<std::string>& inputs,
                      const char* input_flag, const std::vector<std::string>& shapes) {
  RETURN_IF_ERROR(checkInputNames(*model.graph, inputs, input_flag));
  return checkInputNames(*model.graph, shapes, "--input-shape");
}

void addCheckOptions(CLI::App* app, CheckOptions& c, const char* input_flag) {
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
                  "reference (the CPU reference kernels, default), cuda (the CUDA executor on "
                  "device 0) or onnxruntime (through tools/opt/ort_runner.py; ONNXOPT_PYTHON "
                  "picks the interpreter)")
      ->check(CLI::IsMember(runtime::runnerNames()));
  app->add_option("--against", c.against,
                  "The runner of the original (the expected side), when not --runner: "
                  "`opt check MODEL --runner cuda --against reference` compares two runners on one "
                  "model")
      ->check(CLI::IsMember(runtime::runnerNames()));
  app->add_flag("--per-layer", c.per_layer,
                "Also compare every value both models name alike and report the first past "
                "tolerance");
  addRunLimitOptions(app, c.limits);
}

void addCudaFlags(CLI::App* app, CudaFlags& flags, const char* needs) {
  CLI::Option* none = app->add_flag(
      "--no-tf32", flags.none,
      fmt::format("With {}: float32 convolutions and matrix products in float32 throughout (by "
                  "default convolutions may use TF32 tensor cores, as torch's defaults allow)",
                  needs));
  app->add_flag("--allow-tf32", flags.all,
                fmt::format("With {}: float32 matrix products may use TF32 tensor cores too (as "
                            "torch.backends.cuda.matmul.allow_tf32)",
                            needs))
      ->excludes(none);
  app->add_option("--tuning-cache", flags.tuning_cache,
                  fmt::format("With {}: reuse the timed kernel choices (convolution algorithms) "
                              "kept in FILE by earlier runs on this card, and add new ones to it",
                              needs));
}

void addRunLimitOptions(CLI::App* app, runtime::RunLimits& limits) {
  app->add_option("--max-iterations", limits.max_iterations,
                  "Loop, Scan and SequenceMap iterations one run may make on the host, nested "
                  "ones counted each time (default 16777216); a loop whose trip count already "
                  "shows more is refused before it starts")
      ->check(CLI::PositiveNumber);
  app->add_option("--max-memory", limits.max_memory,
                  "Bytes (or 512MB, 4GB, ...) the values one run computes may hold at once on the "
                  "host, weights and inputs not counted (default: three quarters of the memory "
                  "the process may use); a scan output whose trip count and shape already show "
                  "more is refused before its loop starts")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::PositiveNumber);
}

int guarded(const std::string& subject, const std::function<int()>& command) {
  try {
    return command();
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "opt: error: {}: out of memory\n", subject);
  } catch (const std::exception&) {
    fmt::print(stderr, "opt: error: {}: internal error (an unexpected exception)\n", subject);
  }
  return kExitError;
}

}  // namespace onnxopt::tools
