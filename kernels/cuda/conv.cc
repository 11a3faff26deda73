// Conv and ConvTranspose through cuDNN (conv.h): parsing the node, the cuDNN-level geometry (4-D
// or 5-D descriptors, staging buffers in the workspace), the cached algorithm choice, the launch.
#include "conv.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "conv_device.h"
#include "conv_graph.h"
#include "cudnn.h"
#include "matmul.h"

namespace onnxopt::kernels::cuda {

namespace {

constexpr size_t kAlign = 256;
/// The largest algorithm workspace accepted; cheaper algorithms are taken over faster ones above.
constexpr size_t kMaxAlgoWorkspace = size_t{256} << 20;

size_t alignUp(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

size_t elementBytes(DataType t) {
  return static_cast<size_t>(dataTypeBits(t) / 8);
}

std::vector<int64_t> spatialOf(const std::vector<int64_t>& dims) {
  return std::vector<int64_t>(dims.begin() + 2, dims.end());
}

/// [n, c] followed by `spatial`, with a unit dim appended when `unit` (1-D as 2-D).
std::vector<int64_t> withSpatial(int64_t n, int64_t c, const std::vector<int64_t>& spatial,
                                 bool unit) {
  std::vector<int64_t> d = {n, c};
  d.insert(d.end(), spatial.begin(), spatial.end());
  if (unit) d.push_back(1);
  return d;
}

std::vector<int64_t> withUnit(std::vector<int64_t> v, bool unit, int64_t value) {
  if (unit) v.push_back(value);
  return v;
}

/// What cuDNN is asked for one node.
struct Geometry {
  bool transpose = false;
  std::vector<int64_t> x, w, y;  ///< the descriptors cuDNN computes with (staged buffers' dims)
  std::vector<int64_t> x_view, y_view;  ///< X's and Y's own dims (a 1-D conv's with a unit dim)
  std::vector<int64_t> pads, strides, dilations;
  bool staged_x = false;     ///< Conv: X copied into a zero-padded buffer of dims `x`
  bool staged_y = false;     ///< ConvTranspose: computed into a buffer of dims `y`, then copied
  int64_t stage_offset = 0;  ///< elements from the staged buffer's start to X's (the block's) start
  size_t stage_bytes = 0;
  /// ConvTranspose staged: the block of the buffer copied into Y (its dims, with the unit dim),
  /// where it starts in Y (elements), and whether it covers less than Y (the rest is bias only).
  std::vector<int64_t> block;
  int64_t y_offset = 0;
  bool partial = false;
  bool bias_only = false;  ///< ConvTranspose: no element of Y receives a tap (Y is the bias)

  bool channels_last = false;

  std::string key(DataType t, int64_t group) const {
    return fmt::format("{}{}|{}|x{}|w{}|y{}|p{}|s{}|d{}|g{}", transpose ? "bwd" : "fwd",
                       channels_last ? "|nhwc" : "", dataTypeName(t), fmt::join(x, ","),
                       fmt::join(w, ","), fmt::join(y, ","), fmt::join(pads, ","),
                       fmt::join(strides, ","), fmt::join(dilations, ","), group);
  }
};

StatusOr<Geometry> convGeometry(const ConvArgs& args) {
  const Window& win = args.window;
  bool unit = win.in.size() == 1;
  Geometry g;
  g.channels_last = args.channels_last;
  g.x_view = withUnit(args.x.dims, unit, 1);
  g.w = withUnit(args.w.dims, unit, 1);
  g.y_view = withUnit(args.y.dims, unit, 1);
  g.y = g.y_view;
  g.strides = withUnit(win.strides, unit, 1);
  g.dilations = withUnit(win.dilations, unit, 1);
  if (win.symmetric()) {
    g.x = g.x_view;
    g.pads = withUnit(win.pad_begin, unit, 0);
    return g;
  }
  // cuDNN pads both ends alike: pad X explicitly and convolve without padding.
  std::vector<int64_t> padded = win.in;
  for (size_t d = 0; d < padded.size(); ++d) padded[d] += win.pad_begin[d] + win.pad_end[d];
  g.x = withSpatial(args.x.dims[0], args.x.dims[1], padded, unit);
  g.pads.assign(g.strides.size(), 0);
  g.staged_x = true;
  std::vector<int64_t> strides = contiguousStrides(g.x);
  for (size_t d = 0; d < win.in.size(); ++d) g.stage_offset += win.pad_begin[d] * strides[d + 2];
  g.stage_bytes = static_cast<size_t>(product(g.x)) * elementBytes(args.x.dtype);
  return g;
}

// ConvTranspose as the adjoint of the Conv from Y to X. The full scatter has nonzero values at
// [0, E), E = s * (in - 1) + eff, and Y[o] = full[o + pad_begin]. With symmetric pads q and an
// output padding t < s, the adjoint's output (cuDNN's dx) is dx[o'] = full[o' + q] for
// o' < T = E + t - 2q. When q = min(pad_begin, pad_end) and t = output_padding + q - pad_end fit,
// dx is Y itself. Otherwise dx is computed with q = 0 (it then holds every nonzero value) into the
// workspace, and the block of it that Y needs is copied there; the part of Y outside the full
// output (output_shape beyond it, on either side) holds the bias alone.
StatusOr<Geometry> transposeGeometry(const ConvTransposeArgs& args) {
  const Window& win = args.window;
  bool unit = win.in.size() == 1;
  Geometry g;
  g.transpose = true;
  g.x_view = withUnit(args.x.dims, unit, 1);
  g.x = g.x_view;
  g.w = withUnit(args.w.dims, unit, 1);
  g.y_view = withUnit(args.y.dims, unit, 1);
  g.strides = withUnit(win.strides, unit, 1);
  g.dilations = withUnit(win.dilations, unit, 1);
  size_t rank = win.in.size();
  std::vector<int64_t> result(rank), pads(rank), src(rank), dst(rank), block(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t s = win.strides[d], pb = win.pad_begin[d], pe = win.pad_end[d];
    int64_t op = args.output_padding[d], out = win.out[d];
    int64_t full = s * (win.in[d] - 1) + (win.kernel[d] - 1) * win.dilations[d] + 1;
    int64_t q = std::max<int64_t>(0, std::min(pb, pe));
    int64_t t = std::max<int64_t>(0, op + q - pe);
    if (pb < 0 || t >= s || full + t - 2 * q != out) {
      q = 0;
      t = std::min(std::max<int64_t>(0, op - pe), s - 1);
    }
    result[d] = full + t - 2 * q;
    pads[d] = q;
    src[d] = std::max<int64_t>(0, pb - q);
    dst[d] = std::max<int64_t>(0, -pb);
    block[d] = std::min(out - dst[d], result[d] - src[d]);
    if (block[d] < 1) g.bias_only = true;  // Y lies outside the full output (in this dim)
    if (result[d] != out || src[d] != 0) g.staged_y = true;
    if (block[d] != out) g.partial = true;
  }
  g.pads = withUnit(pads, unit, 0);
  g.y = withSpatial(args.y.dims[0], args.y.dims[1], result, unit);
  if (g.staged_y) {
    g.block = withSpatial(args.y.dims[0], args.y.dims[1], block, unit);
    std::vector<int64_t> stage_strides = contiguousStrides(g.y);
    std::vector<int64_t> y_strides = contiguousStrides(g.y_view);
    for (size_t d = 0; d < rank; ++d) {
      g.stage_offset += src[d] * stage_strides[d + 2];
      g.y_offset += dst[d] * y_strides[d + 2];
    }
    g.stage_bytes = static_cast<size_t>(product(g.y)) * elementBytes(args.y.dtype);
  }
  return g;
}

StatusOr<Geometry> geometryOf(const ConvArgs& args, bool transpose) {
  if (transpose) return transposeGeometry(static_cast<const ConvTransposeArgs&>(args));
  return convGeometry(args);
}

/// The algorithm chosen for one geometry, its math type and workspace, and whether a cuDNN graph
/// plan (conv_graph.h) won over it.
struct AlgoChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t bytes = 0;
  int graph = -1;              ///< the winning plan's index among convGraphPlans'; -1: none
  bool graph_reduced = false;  ///< that plan is of reducedSpec (Z and ReLU in our epilogue)
  size_t graph_bytes = 0;      ///< that plan's workspace
};

/// The descriptors of one geometry.
struct Descriptors {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
};

cudnnMathType_t initialMath(DataType t) {
  // No tensor cores for float (they would round to TF32); fp16/bf16 use them (CUDNN_DEFAULT_MATH
  // does not permit them: it left resnet50 in fp16 on CUDA cores).
  return t == DataType::kFloat ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

StatusOr<Descriptors> descriptorsOf(const ConvArgs& args, const Geometry& g) {
  Descriptors d;
  DataType t = args.x.dtype;
  // Channels-last: the views' strides (NHWC memory under NCHW dims; never staged).
  bool nhwc = args.channels_last;
  ASSIGN_OR_RETURN(d.x,
                   makeTensorDesc(t, g.x, nhwc ? args.x.strides : std::vector<int64_t>{}, args.op));
  ASSIGN_OR_RETURN(d.y,
                   makeTensorDesc(t, g.y, nhwc ? args.y.strides : std::vector<int64_t>{}, args.op));
  ASSIGN_OR_RETURN(d.w,
                   makeFilterDesc(t, g.w, args.op, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW));
  std::vector<int64_t> pads(g.pads.begin(), g.pads.end());
  ASSIGN_OR_RETURN(d.conv,
                   makeConvDesc(pads, g.strides, g.dilations, args.group, initialMath(t), args.op));
  return d;
}

/// The graph path's spec for a channels-last forward convolution (none for the rest, or where
/// convGraphApplies refuses it).
std::optional<ConvGraphSpec> graphSpecOf(const ConvArgs& args, const Geometry& g, bool transpose) {
  if (!args.channels_last || transpose || g.staged_x || args.group != 1) return std::nullopt;
  ConvGraphSpec s;
  s.op = args.op;
  s.dtype = args.x.dtype;
  s.x_dims = g.x;
  s.x_strides = args.x.strides;
  s.w_dims = g.w;
  s.w_strides = args.w.strides;
  s.y_dims = g.y;
  s.y_strides = args.y.strides;
  s.pad_begin = g.pads;
  s.pad_end = g.pads;
  s.strides = g.strides;
  s.dilations = g.dilations;
  s.bias = args.b.dtype != DataType::kUndefined;
  s.z = args.z.dtype != DataType::kUndefined;
  s.relu = args.relu;
  if (!convGraphApplies(s)) return std::nullopt;
  return s;
}

/// The spec less Z and the ReLU (conv + B alone, our epilogue kernel then adding Z and applying
/// the ReLU): cuDNN's heuristics may offer no precompiled engine for conv + B + Z + ReLU (every
/// one listed compiles at run time) where they do for conv + B (docs/gpu_benchmarks.md).
ConvGraphSpec reducedSpec(ConvGraphSpec spec) {
  spec.z = false;
  spec.relu = false;
  return spec;
}

/// Our epilogue kernel's arguments over a channels-last Y of `args`' shape: + bias (null: none),
/// + z (null: none), then the ReLU where `args` has one.
ConvEpilogueArgs epilogueOf(const ConvArgs& args, const void* bias, const void* z, void* y) {
  ConvEpilogueArgs e;
  e.dtype = args.y.dtype;
  e.count = args.y.numElements();
  e.channels = args.out_channels;
  e.inner = 1;  // channels-last: the channel is the fastest dim
  e.bias = bias;
  e.z = z;
  e.y = y;
  e.relu = args.relu;
  return e;
}

/// The epilogue on args' own Y and Z (where it has one), with `bias` (null: B is in Y already).
Status launchEpilogue(const ConvArgs& args, const void* bias, CudaStream stream) {
  const void* z = args.z.dtype != DataType::kUndefined ? args.z.data : nullptr;
  ONNXOPT_CUDA_CHECK(launchConvEpilogue(epilogueOf(args, bias, z, args.y.data), streamOf(stream)),
                     args.op);
  return Status::ok();
}

/// Whether a launch of `plan` leaves Z or the ReLU to our epilogue kernel.
bool needsEpilogue(const ConvArgs& args, const ConvGraphPlan& plan) {
  return (args.z.dtype != DataType::kUndefined && !plan.fusesZ()) ||
         (args.relu && !plan.fusesRelu());
}

/// Whether a perf result's math type is allowed for `t` (no tensor-core math for float).
bool mathAllowed(DataType t, cudnnMathType_t math) {
  return t != DataType::kFloat || math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH;
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
/// the type (tensor-op and default for fp16/bf16, FMA only for float; for float no
/// transform-domain algorithm, algoAllowed), each that cuDNN gives a workspace size for and that
/// fits kMaxAlgoWorkspace.
template <typename Perf>
std::vector<Candidate> candidatesOf(const ConvArgs& args, const Geometry& g, Descriptors& d,
                                    cudnnHandle_t handle, const Perf* perfs, int count,
                                    int algo_count) {
  DataType t = args.x.dtype;
  std::vector<std::pair<int, cudnnMathType_t>> order;
  auto add = [&](int algo, cudnnMathType_t math) {
    if (!mathAllowed(t, math) || !algoAllowed(t, g.transpose, algo)) return;
    if (t == DataType::kFloat) math = CUDNN_FMA_MATH;
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
    if (t == DataType::kFloat) {
      add(algo, CUDNN_FMA_MATH);
    } else {
      add(algo, CUDNN_TENSOR_OP_MATH);
      add(algo, CUDNN_DEFAULT_MATH);
    }
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
                                                  Descriptors& d, cudnnHandle_t handle) {
  if (g.transpose) {
    cudnnConvolutionBwdDataAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;
    ONNXOPT_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                           handle, d.w.get(), d.x.get(), d.conv.get(), d.y.get(),
                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perfs),
                       args.op);
    return candidatesOf(args, g, d, handle, perfs, count, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
  }
  cudnnConvolutionFwdAlgoPerf_t perfs[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  ONNXOPT_CUDA_CHECK(
      cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perfs),
      args.op);
  return candidatesOf(args, g, d, handle, perfs, count, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
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
             std::vector<Candidate>& cands,
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
        0.0f, timer.median([&] { return launchConvEpilogue(e, stream) == cudaSuccess; }, -1.0f));
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
                          cudnnHandle_t handle, bool transpose, const std::string& key) {
  ASSIGN_OR_RETURN(std::vector<Candidate> cands, legacyCandidates(args, g, d, handle));
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
  timeAll(args, g, d, handle, cands, plans, plan_ms, epilogue_ms);
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

/// The key of one geometry and epilogue on one device (the graph plans differ by B, Z and ReLU).
std::string decisionKey(const ConvArgs& args, const Geometry& g, int device) {
  return fmt::format("{}|dev{}|b{}z{}r{}", g.key(args.x.dtype, args.group), device,
                     args.b.dtype != DataType::kUndefined, args.z.dtype != DataType::kUndefined,
                     args.relu);
}

/// The choice for this geometry and epilogue: on first use (planning: workspaceOf, never inside
/// a CUDA graph capture) every legacy algorithm and math type cuDNN accepts for it, and each
/// graph plan, is timed as the launch will run it (decide, timeAll: not cudnnFind*, whose
/// choice was slower, see there), and the fastest is cached for the process (the plan asks for
/// the same shapes on every run).
StatusOr<Decision> algoFor(const ConvArgs& args, const Geometry& g, Descriptors& d,
                           cudnnHandle_t handle, bool transpose) {
  static std::mutex mutex;
  static std::map<std::string, AlgoChoice> cache;
  int device = 0;
  ONNXOPT_CUDA_CHECK(cudaGetDevice(&device), args.op);
  std::string key = decisionKey(args, g, device);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      ONNXOPT_CUDA_CHECK(cudnnSetConvolutionMathType(d.conv.get(), it->second.math), args.op);
      return Decision{it->second, nullptr};
    }
  }
  ASSIGN_OR_RETURN(Decision decision, decide(args, g, d, handle, transpose, key));
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, decision.choice);
  return decision;
}

/// What a launch of one geometry needs from cuDNN besides the data: its descriptors (the chosen
/// algorithm's math type set), the algorithm, B's descriptor, and the graph plan where one won
/// (the legacy algorithm then stays as the fallback for unaligned data).
struct Prepared {
  Descriptors d;
  AlgoChoice choice;
  TensorDesc bias;  ///< null without B
  std::unique_ptr<ConvGraphPlan> graph;
};

StatusOr<TensorDesc> biasDesc(const ConvArgs& args, const Geometry& g);

/// The Prepared of this geometry, built once per thread (descriptors are not shared between
/// threads): a repeated launch makes no descriptor or algorithm calls. A thread other than the
/// one that chose builds the chosen graph plan again (the heuristics list it in the same place).
StatusOr<const Prepared*> preparedFor(const ConvArgs& args, const Geometry& g, cudnnHandle_t handle,
                                      bool transpose) {
  thread_local std::map<std::string, std::unique_ptr<Prepared>> cache;
  int device = 0;
  ONNXOPT_CUDA_CHECK(cudaGetDevice(&device), args.op);
  bool has_b = args.b.dtype != DataType::kUndefined;
  std::string key = decisionKey(args, g, device);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  auto p = std::make_unique<Prepared>();
  ASSIGN_OR_RETURN(p->d, descriptorsOf(args, g));
  ASSIGN_OR_RETURN(Decision decision, algoFor(args, g, p->d, handle, transpose));
  p->choice = decision.choice;
  p->graph = std::move(decision.plan);
  if (p->choice.graph >= 0 && p->graph == nullptr) {
    std::optional<ConvGraphSpec> spec = graphSpecOf(args, g, transpose);
    if (spec) {
      ASSIGN_OR_RETURN(auto plans,
                       convGraphPlans(p->choice.graph_reduced ? reducedSpec(*spec) : *spec, handle,
                                      kMaxAlgoWorkspace, static_cast<size_t>(p->choice.graph) + 1));
      if (plans.size() == static_cast<size_t>(p->choice.graph) + 1 &&
          plans.back()->workspaceBytes() <= p->choice.graph_bytes) {
        p->graph = std::move(plans.back());
      }
    }
  }
  if (has_b) {
    ASSIGN_OR_RETURN(p->bias, biasDesc(args, g));
  }
  const Prepared* raw = p.get();
  cache.emplace(std::move(key), std::move(p));
  return raw;
}

/// Checks both families share: types, ranks, device memory, Y's shape, cuDNN's int limits.
Support commonSupport(const ConvArgs& args) {
  DataType t = args.x.dtype;
  if (!isFloatType(t)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(t)));
  }
  bool has_b = args.b.dtype != DataType::kUndefined;
  if (args.w.dtype != t || args.y.dtype != t || (has_b && args.b.dtype != t)) {
    return Support::no(fmt::format("{}: X, W, B and Y must share one type", args.op));
  }
  size_t rank = args.window.in.size();
  if (rank < 1 || rank > 3) {
    return Support::no(
        fmt::format("{}: cuDNN convolves 1 to 3 spatial dims, not {}", args.op, rank));
  }
  bool nhwc = args.channels_last;
  if (nhwc && rank != 2) {
    return Support::no(fmt::format("{}: channels-last convolutions have 2 spatial dims", args.op));
  }
  // X, W, Y and Z contiguous in their layout; B a plain vector.
  auto laidOut = [&](const ConstTensorView& v, bool is_bias) {
    return is_bias || !nhwc ? v.isContiguous() : storedChannelsLast(v);
  };
  for (const auto& [view, what] : {std::pair{&args.x, "X"}, std::pair{&args.w, "W"},
                                   std::pair{&args.b, "B"}, std::pair{&args.z, "Z"}}) {
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
    if (view->dtype != DataType::kUndefined && !laidOut(*view, view == &args.b)) {
      return Support::no(fmt::format("{}: the CUDA kernel reads a contiguous {}", args.op, what));
    }
  }
  if (Support s = requireDevice(args.op, args.y, "Y"); !s) return s;
  if (!laidOut(args.y, false)) {
    return Support::no(fmt::format("{}: the CUDA kernel writes a contiguous Y", args.op));
  }
  if (args.z.dtype != DataType::kUndefined && (args.z.dtype != t || args.z.dims != args.y.dims)) {
    return Support::no(fmt::format("{}: Z must have Y's type and shape", args.op));
  }
  std::vector<int64_t> want = {args.x.dims[0], args.out_channels};
  want.insert(want.end(), args.window.out.begin(), args.window.out.end());
  if (args.y.dims != want) {
    return Support::no(fmt::format("{}: the output is {}; the convolution gives {}", args.op,
                                   dimsText(args.y.dims), dimsText(want)));
  }
  if (args.y.numElements() > 0 && args.x.numElements() == 0) {
    return Support::no(fmt::format("{}: X is empty but Y is not", args.op));
  }
  for (int64_t n : {args.x.numElements(), args.w.numElements(), args.y.numElements()}) {
    if (n > INT_MAX) {
      return Support::no(fmt::format("{}: {} elements exceed cuDNN's int sizes", args.op, n));
    }
  }
  return Support::yes();
}

Support supportOf(const ConvArgs& args, bool transpose) {
  if (Support s = commonSupport(args); !s) return s;
  if (args.y.numElements() == 0) return Support::yes();
  StatusOr<Geometry> g = geometryOf(args, transpose);
  if (!g.isOk()) return Support::no(g.status().message());
  if (args.channels_last && g->staged_x) {
    return Support::no(fmt::format(
        "{}: pads of unequal ends, which the channels-last kernel does not stage", args.op));
  }
  if (g->stage_bytes / elementBytes(args.x.dtype) > static_cast<size_t>(INT_MAX)) {
    return Support::no(fmt::format("{}: the staged tensor {} exceeds cuDNN's int sizes", args.op,
                                   dimsText(transpose ? g->y : g->x)));
  }
  return Support::yes();
}

/// Whether a channels-last convolution is a plain product: a 1x1 window, unit strides and
/// dilations, no pads, one group. Then X is a [N*H*W, C] row-major matrix, W (stored [M, 1, 1, C])
/// a [M, C] one, and Y = X W^T + B runs through cuBLASLt with the bias (and, without Z, the ReLU)
/// in its epilogue. cuDNN's legacy API runs these as implicit_convolve_sgemm kernels many times
/// slower than cuBLASLt's GEMMs (docs/gpu_benchmarks.md, "Measurements behind design choices").
bool isChannelsLastProduct(const ConvArgs& args, const Geometry& g, bool transpose) {
  if (!args.channels_last || transpose || g.staged_x || args.group != 1) return false;
  for (size_t d = 2; d < g.w.size(); ++d) {
    if (g.w[d] != 1) return false;
  }
  for (int64_t v : g.strides) {
    if (v != 1) return false;
  }
  for (int64_t v : g.dilations) {
    if (v != 1) return false;
  }
  for (int64_t v : g.pads) {
    if (v != 0) return false;
  }
  return true;
}

/// The product form of isChannelsLastProduct: A = X [P, C], B = W [M, C] transposed, Y [P, M].
MatMulArgs productArgs(const ConvArgs& args) {
  int64_t c = args.x.dims[1], m = args.out_channels;
  int64_t p = args.x.numElements() / c;
  MatMulArgs mm;
  mm.op = "Gemm";  // matmul.cc reads trans_b for Gemm only
  mm.a = ConstTensorView(args.x.dtype, {p, c}, {c, 1}, args.x.data, args.x.memory);
  mm.b = ConstTensorView(args.w.dtype, {m, c}, {c, 1}, args.w.data, args.w.memory);
  mm.y = TensorView(args.y.dtype, {p, m}, {m, 1}, args.y.data, args.y.memory);
  mm.trans_b = true;
  bool has_b = args.b.dtype != DataType::kUndefined;
  bool has_z = args.z.dtype != DataType::kUndefined;
  if (has_b) {
    // With B, Z is cuBLASLt's C: Y = ReLU(X W^T + Z + B) in the one call.
    mm.bias = args.b;
    mm.epilogue = args.relu ? Epilogue::kBiasRelu : Epilogue::kBias;
    if (has_z) {
      mm.c = ConstTensorView(args.z.dtype, {p, m}, {m, 1}, args.z.data, args.z.memory);
      mm.beta = 1.0f;
    }
  }
  mm.workspace = args.workspace;
  mm.workspace_bytes = args.workspace_bytes;
  return mm;
}

StatusOr<size_t> workspaceOf(const ConvArgs& args, bool transpose) {
  if (Support s = supportOf(args, transpose); !s) return refused(s);
  if (args.y.numElements() == 0) return size_t{0};
  ASSIGN_OR_RETURN(Geometry g, geometryOf(args, transpose));
  if (g.bias_only) return size_t{0};
  if (isChannelsLastProduct(args, g, transpose)) {
    MatMulArgs mm = productArgs(args);
    if (Support s = canImplement(mm); !s) return refused(s);
    return workspaceBytes(mm);
  }
  ASSIGN_OR_RETURN(cudnnHandle_t handle, cudnnHandleFor(nullptr, args.op));
  ASSIGN_OR_RETURN(const Prepared* p, preparedFor(args, g, handle, transpose));
  return alignUp(std::max(p->choice.bytes, p->choice.graph_bytes)) + g.stage_bytes;
}

/// B as a [1, M, 1, ...] tensor of Y's rank (as cuDNN sees Y).
StatusOr<TensorDesc> biasDesc(const ConvArgs& args, const Geometry& g) {
  std::vector<int64_t> dims(g.y_view.size(), 1);
  dims[1] = args.out_channels;
  return makeTensorDesc(args.b.dtype, dims, {}, args.op);
}

/// Y = B broadcast over it (zeros without B): the part of a ConvTranspose's Y that no tap reaches.
Status fillBias(const ConvArgs& args, const Geometry& g, cudnnHandle_t handle, CudaStream stream) {
  if (args.b.dtype == DataType::kUndefined) {
    ONNXOPT_CUDA_CHECK(
        cudaMemsetAsync(args.y.data, 0,
                        static_cast<size_t>(args.y.numElements()) * elementBytes(args.y.dtype),
                        streamOf(stream)),
        args.op);
    return Status::ok();
  }
  const float one = 1.0f, zero = 0.0f;
  ASSIGN_OR_RETURN(TensorDesc bias, biasDesc(args, g));
  ASSIGN_OR_RETURN(TensorDesc whole, makeTensorDesc(args.y.dtype, g.y_view, {}, args.op));
  ONNXOPT_CUDA_CHECK(
      cudnnAddTensor(handle, &one, bias.get(), args.b.data, &zero, whole.get(), args.y.data),
      args.op);
  return Status::ok();
}

Status launchOf(const ConvArgs& args, bool transpose, CudaStream stream) {
  if (Support s = supportOf(args, transpose); !s) return refused(s);
  if (args.y.numElements() == 0) return Status::ok();
  // A constant without bytes (weights stripped from the model) must not reach cuDNN.
  auto missing = [](const void* data, int64_t n) { return data == nullptr && n > 0; };
  if (missing(args.x.data, args.x.numElements()) || missing(args.w.data, args.w.numElements()) ||
      missing(args.y.data, args.y.numElements()) ||
      (args.b.dtype != DataType::kUndefined && missing(args.b.data, args.b.numElements())) ||
      (args.z.dtype != DataType::kUndefined && missing(args.z.data, args.z.numElements()))) {
    return invalidArgument("{}: X, W, B, Z or Y has elements but no device data", args.op);
  }
  ASSIGN_OR_RETURN(Geometry g, geometryOf(args, transpose));
  if (isChannelsLastProduct(args, g, transpose)) {
    RETURN_IF_ERROR(launch(productArgs(args), stream));
    bool has_b = args.b.dtype != DataType::kUndefined;
    bool has_z = args.z.dtype != DataType::kUndefined;
    if (has_b || (!has_z && !args.relu)) return Status::ok();  // cuBLASLt did it all
    return launchEpilogue(args, nullptr, stream);              // no B: Z and the ReLU after
  }
  ASSIGN_OR_RETURN(cudnnHandle_t handle, cudnnHandleFor(stream, args.op));
  if (g.bias_only) return fillBias(args, g, handle, stream);
  ASSIGN_OR_RETURN(const Prepared* p, preparedFor(args, g, handle, transpose));
  const Descriptors& d = p->d;
  const AlgoChoice& choice = p->choice;
  size_t algo_bytes = alignUp(std::max(choice.bytes, choice.graph_bytes));
  if (args.workspace_bytes < algo_bytes + g.stage_bytes ||
      (args.workspace == nullptr && algo_bytes + g.stage_bytes > 0)) {
    return makeError(StatusCode::kInvalidArgument, "{}: the workspace has {} bytes, {} needed",
                     args.op, args.workspace_bytes, algo_bytes + g.stage_bytes);
  }
  auto* stage = static_cast<char*>(args.workspace) + algo_bytes;
  size_t bytes = elementBytes(args.x.dtype);
  const float one = 1.0f, zero = 0.0f;
  const void* x = args.x.data;
  if (g.staged_x) {
    ONNXOPT_CUDA_CHECK(cudaMemsetAsync(stage, 0, g.stage_bytes, streamOf(stream)), args.op);
    ASSIGN_OR_RETURN(TensorDesc src, makeTensorDesc(args.x.dtype, g.x_view, {}, args.op));
    ASSIGN_OR_RETURN(TensorDesc interior,
                     makeTensorDesc(args.x.dtype, g.x_view, contiguousStrides(g.x), args.op));
    ONNXOPT_CUDA_CHECK(
        cudnnTransformTensor(handle, &one, src.get(), args.x.data, &zero, interior.get(),
                             stage + static_cast<size_t>(g.stage_offset) * bytes),
        args.op);
    x = stage;
  }
  void* target = g.staged_y ? static_cast<void*>(stage) : args.y.data;
  bool has_b = args.b.dtype != DataType::kUndefined;
  if (g.partial) RETURN_IF_ERROR(fillBias(args, g, handle, stream));
  if (p->graph != nullptr &&
      convGraphAligned({x, args.w.data, args.b.data, args.z.data, args.y.data, args.workspace})) {
    // The cuDNN graph plan that won the timing: the convolution with B inside, and Z and the
    // ReLU unless it is a reduced plan (then our epilogue after it).
    RETURN_IF_ERROR(p->graph->execute(handle, x, args.w.data, args.b.data, args.z.data, args.y.data,
                                      args.workspace));
    if (!needsEpilogue(args, *p->graph)) return Status::ok();
    return launchEpilogue(args, nullptr, stream);  // Z and the ReLU after a reduced plan
  }
  if (args.channels_last) {
    // The convolution alone (beta 0: the algorithm cudnnFind timed), then B, Z and the ReLU in
    // one pass of our own over Y (conv_epilogue.cu). The bias-first form below (then the ReLU
    // and the residual through cudnnConvolutionBiasActivationForward) made resnet50 fp16 about
    // twice as slow; for NCHW the bias-first form is the faster (the epilogue then an extra pass
    // before the separate Relu). Figures: docs/gpu_benchmarks.md.
    ONNXOPT_CUDA_CHECK(
        cudnnConvolutionForward(handle, &one, d.x.get(), x, d.w.get(), args.w.data, d.conv.get(),
                                static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), args.workspace,
                                choice.bytes, &zero, d.y.get(), target),
        args.op);
    bool has_z = args.z.dtype != DataType::kUndefined;
    if (!has_b && !has_z && !args.relu) return Status::ok();
    return launchEpilogue(args, has_b ? args.b.data : nullptr, stream);
  }
  float beta = 0.0f;
  if (has_b) {
    // The bias first; the convolution accumulates into it (one rounding of the sum).
    ONNXOPT_CUDA_CHECK(
        cudnnAddTensor(handle, &one, p->bias.get(), args.b.data, &zero, d.y.get(), target),
        args.op);
    beta = 1.0f;
  }
  if (transpose) {
    ONNXOPT_CUDA_CHECK(cudnnConvolutionBackwardData(
                           handle, &one, d.w.get(), args.w.data, d.x.get(), x, d.conv.get(),
                           static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo), args.workspace,
                           choice.bytes, &beta, d.y.get(), target),
                       args.op);
  } else {
    ONNXOPT_CUDA_CHECK(
        cudnnConvolutionForward(handle, &one, d.x.get(), x, d.w.get(), args.w.data, d.conv.get(),
                                static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), args.workspace,
                                choice.bytes, &beta, d.y.get(), target),
        args.op);
  }
  if (g.staged_y) {
    // Y's block from the adjoint's output (strides of the staged buffer into those of Y).
    ASSIGN_OR_RETURN(TensorDesc from,
                     makeTensorDesc(args.y.dtype, g.block, contiguousStrides(g.y), args.op));
    ASSIGN_OR_RETURN(TensorDesc to,
                     makeTensorDesc(args.y.dtype, g.block, contiguousStrides(g.y_view), args.op));
    ONNXOPT_CUDA_CHECK(
        cudnnTransformTensor(
            handle, &one, from.get(), stage + static_cast<size_t>(g.stage_offset) * bytes, &zero,
            to.get(), static_cast<char*>(args.y.data) + static_cast<size_t>(g.y_offset) * bytes),
        args.op);
  }
  return Status::ok();
}

/// X, W, the optional B and Y, with the ranks checked.
Status parseTensors(const CudaKernelCall& call, ConvArgs* args) {
  // ai.onnxopt's channels-last forms: NhwcConv(X, W, B), NhwcConvRelu(X, W, B),
  // NhwcConvAddRelu(X, W, B, Z).
  bool nhwc = call.op.rfind("NhwcConv", 0) == 0;
  bool with_z = call.op == "NhwcConvAddRelu";
  if (nhwc && call.op != "NhwcConv" && call.op != "NhwcConvRelu" && !with_z) {
    return invalidArgument("{}: not a channels-last convolution", call.op);
  }
  RETURN_IF_ERROR(checkArity(call, with_z ? 4 : 2, with_z ? 4 : 3, 1));
  args->op = call.op;
  args->x = call.inputs[0];
  args->w = call.inputs[1];
  args->b = inputOf(call, 2);
  args->y = call.outputs[0];
  if (with_z) args->z = inputOf(call, 3);
  args->channels_last = nhwc;
  args->relu = nhwc && call.op != "NhwcConv";
  if (nhwc) {
    for (ConstTensorView* v : {&args->x, &args->w, &args->z}) *v = channelsFirstView(*v);
    args->y = channelsFirstView(args->y);
  }
  args->workspace = call.workspace;
  args->workspace_bytes = call.workspace_bytes;
  if (args->x.dims.size() < 3) {
    return invalidArgument("{}: X must have rank 3 or more, not {}", call.op, args->x.dims.size());
  }
  if (args->w.dims.size() != args->x.dims.size()) {
    return invalidArgument("{}: W has rank {}, X has rank {}", call.op, args->w.dims.size(),
                           args->x.dims.size());
  }
  std::vector<int64_t> kernel = spatialOf(args->w.dims);
  if (auto ks = attrsOf(call).getInts("kernel_shape"); ks && *ks != kernel) {
    return invalidArgument("{}: kernel_shape {} does not match W {}", call.op, dimsText(*ks),
                           dimsText(args->w.dims));
  }
  args->group = attrsOf(call).getInt("group", 1);
  return Status::ok();
}

Status checkBias(const ConvArgs& args) {
  if (args.b.dtype != DataType::kUndefined &&
      (args.b.dims.size() != 1 || args.b.dims[0] != args.out_channels)) {
    return invalidArgument("{}: B must have shape [{}], not {}", args.op, args.out_channels,
                           dimsText(args.b.dims));
  }
  return Status::ok();
}

}  // namespace

template <>
StatusOr<ConvArgs> argsFromCall<ConvArgs>(const CudaKernelCall& call) {
  ConvArgs args;
  RETURN_IF_ERROR(parseTensors(call, &args));
  int64_t c = args.x.dims[1], m = args.w.dims[0], cg = args.w.dims[1], group = args.group;
  if (group < 1 || group > c || c % group != 0 || cg != c / group) {
    return invalidArgument("{}: group {} does not fit {} input channels and W's {} per group",
                           call.op, group, c, cg);
  }
  if (m % group != 0) {
    return invalidArgument("{}: group {} does not divide the {} output channels", call.op, group,
                           m);
  }
  args.out_channels = m;
  RETURN_IF_ERROR(checkBias(args));
  ASSIGN_OR_RETURN(args.window, windowOf(call.op, attrsOf(call), spatialOf(args.x.dims),
                                         spatialOf(args.w.dims), false));
  return args;
}

template <>
StatusOr<ConvTransposeArgs> argsFromCall<ConvTransposeArgs>(const CudaKernelCall& call) {
  ConvTransposeArgs args;
  RETURN_IF_ERROR(parseTensors(call, &args));
  const KernelAttrs& attrs = attrsOf(call);
  int64_t c = args.x.dims[1], group = args.group;
  if (args.w.dims[0] != c) {
    return invalidArgument("{}: W has {} input channels, X has {}", call.op, args.w.dims[0], c);
  }
  if (group < 1 || group > c || c % group != 0) {
    return invalidArgument("{}: group {} does not divide {} channels", call.op, group, c);
  }
  int64_t mg = args.w.dims[1];
  if (mg > INT_MAX / group) return invalidArgument("{}: too many output channels", call.op);
  args.out_channels = mg * group;
  RETURN_IF_ERROR(checkBias(args));
  Window& w = args.window;
  w.in = spatialOf(args.x.dims);
  w.kernel = spatialOf(args.w.dims);
  size_t rank = w.in.size();
  for (int64_t k : w.kernel) {
    if (k < 1 || k > INT_MAX) return invalidArgument("{}: kernel size {}", call.op, k);
  }
  for (int64_t d : w.in) {
    if (d > INT_MAX) return invalidArgument("{}: spatial dimension {}", call.op, d);
  }
  ASSIGN_OR_RETURN(w.strides, windowAttr(call.op, attrs, "strides", rank, 1, 1));
  ASSIGN_OR_RETURN(w.dilations, windowAttr(call.op, attrs, "dilations", rank, 1, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, windowAttr(call.op, attrs, "pads", 2 * rank, 0, 0));
  ASSIGN_OR_RETURN(args.output_padding, windowAttr(call.op, attrs, "output_padding", rank, 0, 0));
  ASSIGN_OR_RETURN(std::string auto_pad, autoPadOf(call.op, attrs));
  auto out_shape = attrs.getInts("output_shape");
  if (out_shape) {
    // Either the spatial dims or the full shape.
    if (out_shape->size() == rank + 2) out_shape->erase(out_shape->begin(), out_shape->begin() + 2);
    if (out_shape->size() != rank) {
      return invalidArgument("{}: output_shape has the wrong rank", call.op);
    }
    for (int64_t d : *out_shape) {
      if (d < 0 || d > INT_MAX) return invalidArgument("{}: output_shape {}", call.op, d);
    }
  }
  w.pad_begin.assign(rank, 0);
  w.pad_end.assign(rank, 0);
  w.out.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t full = w.strides[d] * (std::max<int64_t>(w.in[d], 1) - 1) + args.output_padding[d] +
                   (w.kernel[d] - 1) * w.dilations[d] + 1;
    if (out_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out[d] = out_shape ? (*out_shape)[d] : w.in[d] * w.strides[d];
      int64_t total = full - w.out[d];
      // A larger output_shape makes total negative: halve with floor division, as the spec does.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
    } else {
      if (auto_pad == "NOTSET") w.pad_begin[d] = pads[d];
      int64_t pad_end = auto_pad == "NOTSET" ? pads[d + rank] : 0;
      w.out[d] = full - w.pad_begin[d] - pad_end;
      if (w.out[d] < 0) return invalidArgument("{}: pads exceed the output size", call.op);
    }
    w.pad_end[d] = full - w.pad_begin[d] - w.out[d];
  }
  return args;
}

Support canImplement(const ConvArgs& args) {
  return supportOf(args, false);
}

Support canImplement(const ConvTransposeArgs& args) {
  return supportOf(args, true);
}

StatusOr<size_t> workspaceBytes(const ConvArgs& args) {
  return workspaceOf(args, false);
}

StatusOr<size_t> workspaceBytes(const ConvTransposeArgs& args) {
  return workspaceOf(args, true);
}

Status launch(const ConvArgs& args, CudaStream stream) {
  return launchOf(args, false, stream);
}

Status launch(const ConvTransposeArgs& args, CudaStream stream) {
  return launchOf(args, true, stream);
}

}  // namespace onnxopt::kernels::cuda
