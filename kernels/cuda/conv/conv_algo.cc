// Choosing and caching each convolution geometry's algorithm (conv_algo.h).
#include "kernels/cuda/conv/conv_algo.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "kernels/cuda/device_context.h"
#include "onnxopt/kernels/tuning_cache.h"

namespace onnxopt::kernels::cuda::conv_detail {

namespace {

/// Whether a perf result's math type is allowed for `t` (no tensor-core math for float).
bool mathAllowed(DataType t, cudnnMathType_t math) {
  return t != DataType::kFloat || math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH;
}

/// The math types a candidate algorithm is tried under: for fp16/bf16 tensor-op and default; for
/// float FMA (exact float32), and default too where the context allows TF32 for convolutions
/// (cuDNN's default math lets float32 convolutions use TF32 tensor cores, as torch's
/// allow_tf32 does).
std::vector<cudnnMathType_t> mathTypesFor(DataType t, bool tf32) {
  if (t != DataType::kFloat) return {CUDNN_TENSOR_OP_MATH, CUDNN_DEFAULT_MATH};
  if (tf32) return {CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH};
  return {CUDNN_FMA_MATH};
}

/// ONNXOPT_CONV_ALGOS, for diagnosis: "all" keeps the transform-domain algorithms for float too;
/// an algorithm id (cuDNN's forward or backward-data enum value, by the op) is the only candidate
/// wherever cuDNN accepts it.
struct AlgoOverride {
  bool all = false;
  int only = -1;
};
AlgoOverride algoOverride() {
  static const AlgoOverride o = [] {
    const char* v = std::getenv("ONNXOPT_CONV_ALGOS");
    std::string s = v != nullptr ? v : "";
    AlgoOverride r;
    r.all = s == "all";
    if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) r.only = std::stoi(s);
    return r;
  }();
  return o;
}

/// Whether `algo` may compute a convolution of `t`: for float not the transform-domain ones (FFT,
/// FFT tiling, non-fused Winograd), whose rounding error is spread over a whole transformed tile,
/// so an output whose exact value is 0 comes out near eps * max|Y|. Direct, GEMM-based and fused
/// Winograd F(2x2, 3x3) algorithms err by the rounding of each output's own terms. Float16 and
/// bfloat16 keep every algorithm: their own rounding dominates.
bool algoAllowed(DataType t, bool transpose, int algo) {
  AlgoOverride o = algoOverride();
  if (o.only >= 0) return algo == o.only;
  if (t != DataType::kFloat || o.all) return true;
  if (transpose) {
    auto a = static_cast<cudnnConvolutionBwdDataAlgo_t>(algo);
    return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT &&
           a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
  }
  auto a = static_cast<cudnnConvolutionFwdAlgo_t>(algo);
  return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

/// Device memory freed when it goes out of scope (planning's timing buffers).
struct DeviceBuffer {
  void* ptr = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr != nullptr) (void)cudaFree(ptr);
  }
  /// False when the memory is not available; filled with a finite pattern (0x3c bytes: fp16
  /// 1.06, bf16 and float 0.0115).
  bool allocate(size_t n) {
    if (n == 0) return true;
    if (cudaMalloc(&ptr, n) != cudaSuccess) {
      (void)cudaGetLastError();
      ptr = nullptr;
      return false;
    }
    return cudaMemset(ptr, 0x3c, n) == cudaSuccess;
  }
};

/// Whether ONNXOPT_CONV_TRACE is set: each geometry's candidates and their times go to stderr.
bool traceAlgos() {
  static const bool on = convEnvFlag("ONNXOPT_CONV_TRACE");
  return on;
}

/// ONNXOPT_CONV_PATH: "graph" takes a graph plan wherever one finalizes, "legacy" never; unset
/// (or anything else), the timing decides. For tests of each path and for diagnosis.
enum class ForcedPath { kNone, kGraph, kLegacy };
ForcedPath forcedPath() {
  static const ForcedPath path = [] {
    const char* v = std::getenv("ONNXOPT_CONV_PATH");
    std::string s = v != nullptr ? v : "";
    return s == "graph"    ? ForcedPath::kGraph
           : s == "legacy" ? ForcedPath::kLegacy
                           : ForcedPath::kNone;
  }();
  return path;
}

/// CUDA events on one stream around launches made the way the plan makes them.
class LaunchTimer {
 public:
  explicit LaunchTimer(cudaStream_t stream) : stream_(stream) {
    ok_ = cudaEventCreate(&start_) == cudaSuccess && cudaEventCreate(&stop_) == cudaSuccess;
    if (!ok_) (void)cudaGetLastError();
  }
  LaunchTimer(const LaunchTimer&) = delete;
  LaunchTimer& operator=(const LaunchTimer&) = delete;
  ~LaunchTimer() {
    if (start_ != nullptr) (void)cudaEventDestroy(start_);
    if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
    (void)cudaGetLastError();
  }
  bool ok() const { return ok_; }

  /// The median of kTimedRuns launches of `launch` (returning whether it launched) after a
  /// timed warm-up; the warm-up's time alone where it is over 4x `bound` (when bound > 0: the
  /// fallback kernels take milliseconds at large batches); negative where a launch failed.
  template <typename F>
  float median(F&& launch, float bound) {
    constexpr int kTimedRuns = 5;
    float warm = once(launch);
    if (warm < 0.0f || (bound > 0.0f && warm > 4.0f * bound)) return warm;
    std::vector<float> times;
    for (int i = 0; i < kTimedRuns; ++i) {
      float ms = once(launch);
      if (ms < 0.0f) return ms;
      times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

 private:
  template <typename F>
  float once(F& launch) {
    (void)cudaEventRecord(start_, stream_);
    bool launched = launch();
    (void)cudaEventRecord(stop_, stream_);
    float ms = 0.0f;
    if (!launched || cudaEventSynchronize(stop_) != cudaSuccess ||
        cudaEventElapsedTime(&ms, start_, stop_) != cudaSuccess) {
      (void)cudaGetLastError();
      return -1.0f;
    }
    return ms;
  }

  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  bool ok_ = false;
};

/// One candidate: the algorithm, its math type and workspace, and our time of it.
struct Candidate {
  AlgoChoice choice;
  float ms = -1.0f;  ///< median of our timed launches; negative where a launch failed
};

/// The candidates for this geometry: cuDNN's heuristic list first (in its order, the choice
/// where nothing can be timed), then every other algorithm id under each math type allowed for
/// the type (mathTypesFor; for float no transform-domain algorithm, algoAllowed), each that cuDNN
/// gives a workspace size for and that fits kMaxAlgoWorkspace.
template <typename Perf>
std::vector<Candidate> candidatesOf(const ConvArgs& args, const Geometry& g, Descriptors& d,
                                    cudnnHandle_t handle, const Perf* perfs, int count,
                                    int algo_count, bool tf32) {
  DataType t = args.x.dtype;
  std::vector<std::pair<int, cudnnMathType_t>> order;
  auto add = [&](int algo, cudnnMathType_t math) {
    if (!mathAllowed(t, math) || !algoAllowed(t, g.transpose, algo)) return;
    // Without TF32, a float heuristic entry runs under FMA math whatever cuDNN reported.
    if (t == DataType::kFloat && !tf32) math = CUDNN_FMA_MATH;
    for (const auto& [a, m] : order) {
      if (a == algo && m == math) return;
    }
    order.emplace_back(algo, math);
  };
  for (int i = 0; i < count; ++i) {
    if (perfs[i].status == CUDNN_STATUS_SUCCESS)
      add(static_cast<int>(perfs[i].algo), perfs[i].mathType);
  }
  for (int algo = 0; algo < algo_count; ++algo) {
    for (cudnnMathType_t math : mathTypesFor(t, tf32)) add(algo, math);
  }
  std::vector<Candidate> out;
  for (const auto& [algo, math] : order) {
    if (cudnnSetConvolutionMathType(d.conv.get(), math) != CUDNN_STATUS_SUCCESS) continue;
    size_t bytes = 0;
    cudnnStatus_t st;
    if (g.transpose) {
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, d.w.get(), d.x.get(), d.conv.get(), d.y.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes);
    } else {
      st = cudnnGetConvolutionForwardWorkspaceSize(
          handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
          static_cast<cudnnConvolutionFwdAlgo_t>(algo), &bytes);
    }
    if (st != CUDNN_STATUS_SUCCESS || bytes > kMaxAlgoWorkspace) continue;
    out.push_back(Candidate{AlgoChoice{algo, math, bytes}});
  }
  (void)cudaGetLastError();
  return out;
}

/// The legacy API's candidates for this geometry (candidatesOf over cuDNN's heuristic list).
StatusOr<std::vector<Candidate>> legacyCandidates(const ConvArgs& args, const Geometry& g,
                                                  Descriptors& d, cudnnHandle_t handle, bool tf32) {
  if (g.transpose) {
    cudnnConvolutionBwdDataAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;
    ONNXOPT_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                           handle, d.w.get(), d.x.get(), d.conv.get(), d.y.get(),
                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perfs),
                       args.op);
    return candidatesOf(args, g, d, handle, perfs, count, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                        tf32);
  }
  cudnnConvolutionFwdAlgoPerf_t perfs[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  ONNXOPT_CUDA_CHECK(
      cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perfs),
      args.op);
  return candidatesOf(args, g, d, handle, perfs, count, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, tf32);
}

/// At most this many graph plans are finalized and timed per geometry (cuDNN's heuristic order).
constexpr size_t kMaxGraphPlans = 8;

/// A geometry's choice, with the winning graph plan where it was built now.
struct Decision {
  AlgoChoice choice;
  std::unique_ptr<ConvGraphPlan> plan;
};

/// Times every candidate the way the plan will launch it, on buffers of the geometry's sizes:
/// each legacy algorithm (cudnnConvolutionForward or BackwardData with its math type set; for
/// channels-last plus our epilogue kernel's time when there is an epilogue) and each graph plan
/// (which has its epilogue inside): cudnnFind's choice, timed otherwise, is not the fastest as
/// launched (docs/gpu_benchmarks.md, "Kernel measurements"). Leaves the times in `cands` and
/// `plan_ms` (negative where a launch failed or nothing was timed) and the epilogue's in
/// `epilogue_ms`.
void timeAll(const ConvArgs& args, const Geometry& g, Descriptors& d, cudnnHandle_t handle,
             int sm_count, std::vector<Candidate>& cands,
             const std::vector<std::unique_ptr<ConvGraphPlan>>& plans, std::vector<float>& plan_ms,
             float& epilogue_ms) {
  plan_ms.assign(plans.size(), -1.0f);
  epilogue_ms = 0.0f;
  if (cands.size() + plans.size() < 2) return;
  size_t bytes = elementBytes(args.x.dtype);
  size_t ws_bytes = 0;
  for (const Candidate& c : cands) ws_bytes = std::max(ws_bytes, c.choice.bytes);
  for (const auto& p : plans) ws_bytes = std::max(ws_bytes, p->workspaceBytes());
  bool has_b = args.b.dtype != DataType::kUndefined;
  bool has_z = args.z.dtype != DataType::kUndefined;
  size_t y_bytes = static_cast<size_t>(product(g.y)) * bytes;
  DeviceBuffer x, w, y, b, z, ws;
  if (!x.allocate(static_cast<size_t>(product(g.x)) * bytes) ||
      !w.allocate(static_cast<size_t>(product(g.w)) * bytes) || !y.allocate(y_bytes) ||
      !b.allocate(has_b ? static_cast<size_t>(args.out_channels) * bytes : 0) ||
      !z.allocate(has_z ? y_bytes : 0) || !ws.allocate(ws_bytes)) {
    return;
  }
  cudaStream_t stream = nullptr;
  if (cudnnGetStream(handle, &stream) != CUDNN_STATUS_SUCCESS) return;
  LaunchTimer timer(stream);
  if (!timer.ok()) return;
  const float one = 1.0f, zero = 0.0f;
  float best = -1.0f;
  auto keep = [&best](float ms) {
    if (ms >= 0.0f && (best < 0.0f || ms < best)) best = ms;
    return ms;
  };
  for (Candidate& c : cands) {
    if (cudnnSetConvolutionMathType(d.conv.get(), c.choice.math) != CUDNN_STATUS_SUCCESS) continue;
    c.ms = keep(timer.median(
        [&] {
          if (g.transpose) {
            return cudnnConvolutionBackwardData(
                       handle, &one, d.w.get(), w.ptr, d.x.get(), x.ptr, d.conv.get(),
                       static_cast<cudnnConvolutionBwdDataAlgo_t>(c.choice.algo), ws.ptr,
                       c.choice.bytes, &zero, d.y.get(), y.ptr) == CUDNN_STATUS_SUCCESS;
          }
          return cudnnConvolutionForward(
                     handle, &one, d.x.get(), x.ptr, d.w.get(), w.ptr, d.conv.get(),
                     static_cast<cudnnConvolutionFwdAlgo_t>(c.choice.algo), ws.ptr, c.choice.bytes,
                     &zero, d.y.get(), y.ptr) == CUDNN_STATUS_SUCCESS;
        },
        best));
  }
  if (args.channels_last && (has_b || has_z || args.relu)) {
    ConvEpilogueArgs e = epilogueOf(args, b.ptr, z.ptr, y.ptr);
    epilogue_ms = std::max(
        0.0f, timer.median([&] { return launchConvEpilogue(e, sm_count, stream) == cudaSuccess; },
                           -1.0f));
    if (best >= 0.0f) best += epilogue_ms;
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    // A reduced plan's time with the epilogue's (our kernel adding Z and the ReLU after it).
    float extra = needsEpilogue(args, *plans[i]) ? epilogue_ms : 0.0f;
    float ms = timer.median(
        [&] { return plans[i]->execute(handle, x.ptr, w.ptr, b.ptr, z.ptr, y.ptr, ws.ptr).isOk(); },
        best - extra);
    plan_ms[i] = keep(ms < 0.0f ? ms : ms + extra);
  }
}

/// The choice among the legacy candidates and the graph plans: the fastest by our timing (a
/// legacy algorithm's time with its epilogue), else the legacy list's first.
StatusOr<Decision> decide(const ConvArgs& args, const Geometry& g, Descriptors& d,
                          cudnnHandle_t handle, bool transpose, const std::string& key,
                          const CudaDeviceContext& ctx) {
  const int sm_count = ctx.smCount();
  ASSIGN_OR_RETURN(std::vector<Candidate> cands,
                   legacyCandidates(args, g, d, handle, ctx.tf32Convolutions()));
  if (cands.empty()) {
    return makeError(StatusCode::kUnimplemented,
                     "{}: cuDNN has no algorithm for X {}, W {}, Y {} in {}", args.op,
                     dimsText(g.x), dimsText(g.w), dimsText(g.y), dataTypeName(args.x.dtype));
  }
  // The graph plans: of the whole spec, then (with Z) of the reduced one.
  std::vector<std::unique_ptr<ConvGraphPlan>> plans;
  size_t full_count = 0;
  std::optional<ConvGraphSpec> spec = graphSpecOf(args, g, transpose);
  if (spec && forcedPath() != ForcedPath::kLegacy) {
    ASSIGN_OR_RETURN(plans, convGraphPlans(*spec, handle, kMaxAlgoWorkspace, kMaxGraphPlans));
    full_count = plans.size();
    if (spec->z) {
      ASSIGN_OR_RETURN(auto reduced, convGraphPlans(reducedSpec(*spec), handle, kMaxAlgoWorkspace,
                                                    kMaxGraphPlans));
      for (auto& p : reduced) plans.push_back(std::move(p));
    }
  }
  std::vector<float> plan_ms;
  float epilogue_ms = 0.0f;
  timeAll(args, g, d, handle, sm_count, cands, plans, plan_ms, epilogue_ms);
  const Candidate* best = &cands.front();
  for (const Candidate& c : cands) {
    if (c.ms >= 0.0f && (best->ms < 0.0f || c.ms < best->ms)) best = &c;
  }
  Decision out;
  out.choice = best->choice;
  int graph = -1;
  for (size_t i = 0; i < plans.size(); ++i) {
    bool beats_legacy = best->ms < 0.0f || plan_ms[i] < best->ms + epilogue_ms ||
                        forcedPath() == ForcedPath::kGraph;
    if (plan_ms[i] >= 0.0f && beats_legacy && (graph < 0 || plan_ms[i] < plan_ms[graph])) {
      graph = static_cast<int>(i);
    }
  }
  if (traceAlgos()) {
    std::string lines;
    for (const Candidate& c : cands) {
      lines += fmt::format("  algo {} math {} workspace {} B: {:.4f} ms{}\n", c.choice.algo,
                           static_cast<int>(c.choice.math), c.choice.bytes, c.ms,
                           &c == best && graph < 0 ? "  <- chosen" : "");
    }
    if (epilogue_ms > 0.0f) lines += fmt::format("  + epilogue kernel: {:.4f} ms\n", epilogue_ms);
    for (size_t i = 0; i < plans.size(); ++i) {
      lines += fmt::format("  graph{} {} workspace {} B: {:.4f} ms{}\n",
                           needsEpilogue(args, *plans[i]) ? " + epilogue" : "", plans[i]->name(),
                           plans[i]->workspaceBytes(), plan_ms[i],
                           static_cast<int>(i) == graph ? "  <- chosen" : "");
    }
    fmt::print(stderr, "onnxopt conv algos {}: {}\n{}", args.op, key, lines);
  }
  if (graph >= 0) {
    bool reduced = static_cast<size_t>(graph) >= full_count;
    out.choice.graph = reduced ? graph - static_cast<int>(full_count) : graph;
    out.choice.graph_reduced = reduced;
    out.choice.graph_bytes = plans[graph]->workspaceBytes();
    out.plan = std::move(plans[graph]);
  }
  ONNXOPT_CUDA_CHECK(cudnnSetConvolutionMathType(d.conv.get(), out.choice.math), args.op);
  return out;
}

/// The key of one geometry and epilogue (the graph plans differ by B, Z and ReLU).
std::string epilogueKey(const ConvArgs& args, const Geometry& g) {
  return fmt::format("{}|b{}z{}r{}", g.key(args.x.dtype, args.group),
                     args.b.dtype != DataType::kUndefined, args.z.dtype != DataType::kUndefined,
                     args.relu);
}

/// ... on one device of this process.
std::string decisionKey(const ConvArgs& args, const Geometry& g, int device) {
  return fmt::format("{}|dev{}", epilogueKey(args, g), device);
}

// --- the tuning cache (onnxopt/kernels/tuning_cache.h) ----------------------------------------

/// Whether decisions may come from and go to the tuning cache: not under the diagnostic
/// overrides, whose choices are not the timing's.
bool tuningApplies(const CudaDeviceContext& ctx) {
  AlgoOverride o = algoOverride();
  return ctx.tuning() != nullptr && !o.all && o.only < 0 && forcedPath() == ForcedPath::kNone;
}

/// The tuning cache's key: the card (its name and compute capability, not this process's device
/// index), cuDNN's version and the TF32 policy, then the geometry and epilogue.
std::string tuningKey(const ConvArgs& args, const Geometry& g, const CudaDeviceContext& ctx) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ctx.device()) != cudaSuccess) (void)cudaGetLastError();
  return fmt::format("conv|{}|sm{}{}|cudnn{}|tf32:{}|{}", prop.name, prop.major, prop.minor,
                     cudnnGetVersion(), ctx.tf32Convolutions() ? 1 : 0, epilogueKey(args, g));
}

std::string choiceText(const Decision& d) {
  return fmt::format("algo={} math={} graph={} reduced={} plan={}", d.choice.algo,
                     static_cast<int>(d.choice.math), d.choice.graph,
                     d.choice.graph_reduced ? 1 : 0, d.plan ? d.plan->name() : "");
}

/// recordedDecision's "no applicable entry".
std::optional<Decision> notRecorded() {
  return std::nullopt;
}

/// The decision a tuning cache entry records, rebuilt without timing, or nullopt when the entry
/// no longer applies: its legacy algorithm must still be a candidate under its math type, and
/// its graph plan, if one won, the same plan at the same place in cuDNN's list.
StatusOr<std::optional<Decision>> recordedDecision(const ConvArgs& args, const Geometry& g,
                                                   Descriptors& d, cudnnHandle_t handle,
                                                   bool transpose, const CudaDeviceContext& ctx,
                                                   const std::string& text) {
  int algo = 0, math = 0, graph = 0, reduced = 0, used = 0;
  if (std::sscanf(text.c_str(), "algo=%d math=%d graph=%d reduced=%d plan=%n", &algo, &math, &graph,
                  &reduced, &used) != 4 ||
      used == 0) {
    return notRecorded();
  }
  ASSIGN_OR_RETURN(std::vector<Candidate> cands,
                   legacyCandidates(args, g, d, handle, ctx.tf32Convolutions()));
  auto it = std::find_if(cands.begin(), cands.end(), [&](const Candidate& c) {
    return c.choice.algo == algo && static_cast<int>(c.choice.math) == math;
  });
  if (it == cands.end()) return notRecorded();
  Decision out;
  out.choice = it->choice;
  if (graph >= 0) {
    std::optional<ConvGraphSpec> spec = graphSpecOf(args, g, transpose);
    if (!spec || (reduced != 0 && !spec->z)) return notRecorded();
    auto plans = convGraphPlans(reduced != 0 ? reducedSpec(*spec) : *spec, handle,
                                kMaxAlgoWorkspace, static_cast<size_t>(graph) + 1);
    auto at = static_cast<size_t>(graph);
    if (!plans.isOk() || plans->size() <= at || (*plans)[at]->name() != text.substr(used)) {
      return notRecorded();
    }
    out.choice.graph = graph;
    out.choice.graph_reduced = reduced != 0;
    out.choice.graph_bytes = (*plans)[at]->workspaceBytes();
    out.plan = std::move((*plans)[at]);
  }
  ONNXOPT_CUDA_CHECK(cudnnSetConvolutionMathType(d.conv.get(), out.choice.math), args.op);
  return std::optional<Decision>(std::move(out));
}

/// The decision for this geometry: the tuning cache's where it holds one that applies, else
/// timed now (decide) and recorded there.
StatusOr<Decision> decideOrRecall(const ConvArgs& args, const Geometry& g, Descriptors& d,
                                  cudnnHandle_t handle, bool transpose, const std::string& key,
                                  CudaDeviceContext& ctx) {
  if (!tuningApplies(ctx)) return decide(args, g, d, handle, transpose, key, ctx);
  std::string tuning_key = tuningKey(args, g, ctx);
  if (std::optional<std::string> text = ctx.tuning()->find(tuning_key)) {
    ASSIGN_OR_RETURN(std::optional<Decision> recalled,
                     recordedDecision(args, g, d, handle, transpose, ctx, *text));
    if (recalled) return std::move(*recalled);
  }
  ASSIGN_OR_RETURN(Decision decision, decide(args, g, d, handle, transpose, key, ctx));
  RETURN_IF_ERROR(ctx.tuning()->record(tuning_key, choiceText(decision)));
  return decision;
}

/// The conv family's cache in a device context: the Prepared of each geometry and epilogue.
struct ConvCache : CudaContextCache {
  std::map<std::string, std::unique_ptr<Prepared>> prepared;
};

}  // namespace

/// The Prepared of this geometry, built once per device context: on first use (planning:
/// workspaceOf, never inside a CUDA graph capture) every legacy algorithm and math type cuDNN
/// accepts for it, and each graph plan, is timed as the launch will run it (decide, timeAll: not
/// cudnnFind*, whose choice was slower, see there), and the fastest is kept with its descriptors:
/// a repeated launch makes no descriptor or algorithm calls.
StatusOr<const Prepared*> preparedFor(const ConvArgs& args, const Geometry& g,
                                      CudaDeviceContext& ctx, cudnnHandle_t handle,
                                      bool transpose) {
  ConvCache& cache = cuda::contextCache<ConvCache>(ctx.libraries().conv);
  std::string key = decisionKey(args, g, ctx.device());
  auto it = cache.prepared.find(key);
  if (it != cache.prepared.end()) return it->second.get();
  auto p = std::make_unique<Prepared>();
  ASSIGN_OR_RETURN(p->d, descriptorsOf(args, g));
  ASSIGN_OR_RETURN(Decision decision, decideOrRecall(args, g, p->d, handle, transpose, key, ctx));
  p->choice = decision.choice;
  p->graph = std::move(decision.plan);
  if (args.b.dtype != DataType::kUndefined) {
    ASSIGN_OR_RETURN(p->bias, biasDesc(args, g));
  }
  const Prepared* raw = p.get();
  cache.prepared.emplace(std::move(key), std::move(p));
  return raw;
}

}  // namespace onnxopt::kernels::cuda::conv_detail
