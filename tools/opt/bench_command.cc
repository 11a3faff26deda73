// `opt bench MODEL`: latency of a model as given (nothing is optimized: run `opt` first) on the
// CUDA executor or the reference kernels: warmup runs, then timed runs of run() with the inputs
// prepared beforehand (each time covers upload, compute and download), printed as percentiles,
// throughput, device memory, plan cache and CUDA graph state, and on CUDA the device time of the
// node steps alone (events after the uploads and before the downloads: "compute"); with
// --profile, eager runs with an event pair around each step and a per-node table. --json FILE
// writes the same as JSON.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench_peaks.h"
#include "bench_stats.h"
#include "commands.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "report.h"

namespace onnxopt::tools {
namespace {

constexpr const char* kBenchExamples = R"(
Examples:
  opt bench model.onnx                          GPU 0: 10 warmup runs, 100 timed runs
  opt bench model.onnx --input-shape x=8,3,224,224 --warmup 20 --iters 500
  opt bench model.onnx --no-cuda-graph          every run eager (no CUDA graph replay)
  opt bench model.onnx --profile                ... and a per-node time table (eager runs)
  opt bench model.onnx --device reference --iters 5 --json bench.json

The model is benchmarked as given: optimize it first (opt model.onnx -o out.onnx). Each timed run
is the wall time of one run() call with the inputs already on the host: it includes uploading
the inputs, the compute and downloading the outputs. On CUDA, "compute ms" is the device time
of the same runs' node steps alone (CUDA events after the uploads and before the downloads):
the figure to compare with a framework's forward timed on tensors already on the GPU.
)";

/// "x: float[1,3,224,224], y: int64[2]".
std::string describeFeeds(const runtime::Feeds& feeds) {
  std::vector<std::string> parts;
  for (const auto& [name, t] : feeds) {
    parts.push_back(fmt::format("{}: {}[{}]", name, dataTypeName(t.dtype), fmt::join(t.dims, ",")));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string latencyJson(const LatencyStats& s) {
  return fmt::format(
      "{{\"runs\": {}, \"p50\": {}, \"p90\": {}, \"p99\": {}, \"mean\": {}, \"min\": {}, "
      "\"max\": {}}}",
      s.runs, jsonNumber(s.p50), jsonNumber(s.p90), jsonNumber(s.p99), jsonNumber(s.mean),
      jsonNumber(s.min), jsonNumber(s.max));
}

ProfileSample profileSample(const runtime::CudaExecutor::StepTime& t) {
  ProfileSample s;
  s.name = t.name;
  s.op = t.op;
  s.placement = t.placement;
  s.ms = t.ms;
  s.variant = t.variant;
  s.bytes = t.cost.bytes;
  s.flops = t.cost.flops;
  s.half = t.cost.dtype == DataType::kFloat16 || t.cost.dtype == DataType::kBfloat16;
  return s;
}

std::string peaksJson(const std::optional<DevicePeaks>& p) {
  if (!p) return "null";
  return fmt::format(
      "{{\"bytes_per_s\": {}, \"float16_flops_per_s\": {}, \"float32_flops_per_s\": {}}}",
      jsonNumber(p->bytes_per_s), jsonNumber(p->half_flops_per_s),
      jsonNumber(p->float_flops_per_s));
}

}  // namespace

CLI::App* addBenchCommand(CLI::App& app, BenchCommandOptions& opts) {
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Time a model (as given: nothing is optimized) on a GPU or the CPU reference kernels: "
      "latency percentiles, throughput, device memory, optionally a per-node profile");
  cmd->footer(kBenchExamples);
  cmd->add_option("model", opts.model, "Model to benchmark")->required();
  cmd->add_option("--device", opts.device,
                  "cuda (the CUDA executor on device 0, default) or reference (the CPU "
                  "reference kernels)")
      ->check(CLI::IsMember({"reference", "cuda"}));
  cmd->add_option("--input", opts.inputs, "NAME=FILE: an input from .npy or TensorProto .pb");
  cmd->add_option("--input-shape", opts.shapes,
                  "NAME=d0,d1,...: the shape of a random input with dynamic dims");
  cmd->add_option("--seed", opts.seed, "Seed of the random inputs (default 0)");
  cmd->add_option("--warmup", opts.warmup, "Untimed runs first (default 10)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--iters", opts.iters, "Timed runs (default 100)")->check(CLI::Range(1, 1000000));
  cmd->add_flag("--no-cuda-graph", opts.no_cuda_graph,
                "With --device cuda: run every step eagerly (no CUDA graph capture and replay)");
  addCudaFlags(cmd, opts.cuda, "--device cuda");
  cmd->add_flag("--profile", opts.profile,
                "With --device cuda: after the timed runs, --iters eager runs with a CUDA event "
                "pair around each step; print the top 30 steps by mean time and the per-op totals");
  cmd->add_option("--json", opts.json, "Also write the results to FILE as one JSON object");
  addRunLimitOptions(cmd, opts.limits);
  return cmd;
}

int benchCommand(const BenchCommandOptions& opts) {
  if (opts.profile && opts.device != "cuda") {
    return usage(invalidArgument("--profile needs --device cuda"));
  }
  if (opts.no_cuda_graph && opts.device != "cuda") {
    return usage(invalidArgument("--no-cuda-graph needs --device cuda"));
  }
  if (!opts.cuda.given().empty() && opts.device != "cuda") {
    return usage(invalidArgument("{} needs --device cuda", opts.cuda.given()));
  }
  auto model = loadModelFor(opts.model, opts.device);
  if (!model.isOk()) return fail(model.status());
  runtime::Feeds feeds;
  if (int status =
          prepareFeeds(**model, opts.model, opts.inputs, opts.shapes, opts.seed, false, &feeds);
      status != 0) {
    return status;
  }
  runtime::CudaOptions cuda_options = cudaOptions(opts.no_cuda_graph, opts.cuda);
  cuda_options.time_compute = true;
  auto executor = createRunner(opts.device, **model, opts.model, cuda_options);
  if (!executor.isOk()) return fail(executor.status());
  auto* cuda = dynamic_cast<runtime::CudaExecutor*>(executor->get());

  runtime::ExecutionOptions exec;
  exec.limits = opts.limits;
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < opts.warmup; ++i) {
    auto r = (*executor)->run(feeds, exec);
    if (!r.isOk()) return fail(r.status().withContext(fmt::format("{}: warmup run", opts.model)));
  }
  std::vector<double> ms;
  std::vector<double> compute_ms;  // CUDA: the node steps' device time of each timed run
  ms.reserve(static_cast<size_t>(opts.iters));
  for (int i = 0; i < opts.iters; ++i) {
    Clock::time_point start = Clock::now();
    auto r = (*executor)->run(feeds, exec);
    Clock::time_point end = Clock::now();
    if (!r.isOk()) return fail(r.status().withContext(fmt::format("{}: timed run", opts.model)));
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    if (cuda != nullptr) {
      if (auto c = cuda->lastComputeMs()) compute_ms.push_back(*c);
    }
  }
  LatencyStats stats = latencyStats(ms);
  // Only when every timed run has it (a run on the reference executor has none).
  std::optional<LatencyStats> compute;
  if (!compute_ms.empty() && compute_ms.size() == ms.size()) compute = latencyStats(compute_ms);
  // The state after the timed runs, before profiling runs (eager) add to the counters.
  std::string graph_state = cuda != nullptr ? cuda->cudaGraphState() : "";
  int64_t hits = cuda != nullptr ? cuda->planHits() : 0;
  int64_t misses = cuda != nullptr ? cuda->planMisses() : 0;

  std::vector<ProfileRow> rows;
  std::optional<DevicePeaks> peaks;
  if (opts.profile && cuda != nullptr) {
    auto measured = measurePeaks(cuda_options);
    if (!measured.isOk()) return fail(measured.status().withContext("device peaks"));
    peaks = *measured;
    std::vector<std::vector<ProfileSample>> runs;
    for (int i = 0; i < opts.iters; ++i) {
      std::vector<runtime::CudaExecutor::StepTime> times;
      auto r = cuda->runProfiled(feeds, &times);
      if (!r.isOk()) {
        return fail(r.status().withContext(fmt::format("{}: profiled run", opts.model)));
      }
      std::vector<ProfileSample> samples;
      for (const auto& t : times) samples.push_back(profileSample(t));
      runs.push_back(std::move(samples));
    }
    rows = profileRows(runs, &*peaks);
  }

  std::string device = "reference (CPU reference kernels)";
  if (cuda != nullptr) {
    device = fmt::format("cuda {} ({}, compute {}.{})", cuda->device().id, cuda->device().name,
                         cuda->device().major, cuda->device().minor);
  }
  fmt::print("bench: {} on {}\n", opts.model, device);
  fmt::print("inputs: {}\n", describeFeeds(feeds));
  // What one timed run() covers.
  std::string includes = cuda != nullptr ? "upload+compute+download" : "compute";
  fmt::print(
      "runs: {} warmup, {} timed; each is one run() call: {} (inputs prepared on the host "
      "beforehand)\n",
      opts.warmup, opts.iters,
      cuda != nullptr ? "upload + compute + download" : "the reference kernels on the host");
  fmt::print(
      "latency ms: p50 {:.4f}  p90 {:.4f}  p99 {:.4f}  mean {:.4f}  min {:.4f}  max {:.4f}\n",
      stats.p50, stats.p90, stats.p99, stats.mean, stats.min, stats.max);
  fmt::print("throughput: {:.2f} runs/s\n", stats.throughput);
  if (compute) {
    fmt::print(
        "compute ms (device time of the node steps): p50 {:.4f}  p90 {:.4f}  p99 {:.4f}  mean "
        "{:.4f}  min {:.4f}  max {:.4f}\n",
        compute->p50, compute->p90, compute->p99, compute->mean, compute->min, compute->max);
  }
  std::string memory_json = "null";
  if (cuda != nullptr) {
    auto plan = cuda->lastPlan();
    int64_t arena = plan ? plan->arena_bytes : 0;
    int64_t host_arena = plan ? plan->host_arena_bytes : 0;
    fmt::print(
        "device memory: arena {} bytes, weights {} bytes, workspace {} bytes; host arena {} "
        "bytes\n",
        arena, cuda->uploadedWeightBytes(), cuda->workspaceBytes(), host_arena);
    fmt::print("plan cache: {} miss(es), {} hit(s)\n", misses, hits);
    fmt::print("cuda graph: {}\n", graph_state);
    memory_json = fmt::format(
        "{{\"arena_bytes\": {}, \"weight_bytes\": {}, \"workspace_bytes\": {}, "
        "\"host_arena_bytes\": {}}}",
        arena, cuda->uploadedWeightBytes(), cuda->workspaceBytes(), host_arena);
  }
  if (!rows.empty()) std::fputs(formatProfile(rows, 30, peaks ? &*peaks : nullptr).c_str(), stdout);

  if (!opts.json.empty()) {
    std::vector<std::string> profile;
    for (const ProfileRow& r : rows) {
      profile.push_back(fmt::format(
          "{{\"name\": {}, \"op\": {}, \"placement\": {}, \"variant\": {}, \"mean_ms\": {}, "
          "\"percent\": {}, \"bytes\": {}, \"flops\": {}, \"bound\": {}, \"roof_percent\": {}}}",
          jsonString(r.name), jsonString(r.op), jsonString(r.placement), jsonString(r.variant),
          jsonNumber(r.mean_ms), jsonNumber(r.percent), r.bytes, jsonNumber(r.flops),
          r.bound.empty() ? "null" : jsonString(r.bound), jsonNumber(r.roof_percent)));
    }
    std::string json = fmt::format(
        "{{\"model\": {}, \"device\": {}, \"inputs\": {}, \"warmup\": {}, \"iters\": {}, "
        "\"includes\": {}, \"latency_ms\": {}, \"compute_ms\": {}, \"throughput_per_s\": {}, "
        "\"memory\": {}, \"plan_cache\": {}, \"cuda_graph\": {}, \"peaks\": {}, "
        "\"profile\": [{}]}}\n",
        jsonString(opts.model), jsonString(opts.device), jsonString(describeFeeds(feeds)),
        opts.warmup, opts.iters, jsonString(includes), latencyJson(stats),
        compute ? latencyJson(*compute) : "null", jsonNumber(stats.throughput), memory_json,
        cuda != nullptr ? fmt::format("{{\"hits\": {}, \"misses\": {}}}", hits, misses) : "null",
        cuda != nullptr ? jsonString(graph_state) : "null", peaksJson(peaks),
        fmt::join(profile, ", "));
    Status st = io::writeFileAtomically(opts.json, json);
    if (!st.isOk()) return fail(st.withContext(opts.json));
  }
  return 0;
}

}  // namespace onnxopt::tools
