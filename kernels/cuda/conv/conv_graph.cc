// The channels-last convolution as a cuDNN operation graph (conv_graph.h): backend descriptors
// for the tensors, the convolution and its pointwise epilogue, the heuristics' engine
// configurations filtered by their notes, finalized plans, and the variant pack of one launch.
#include "kernels/cuda/conv/conv_graph.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "kernels/cuda/conv/cudnn.h"

namespace onnxopt::kernels::cuda {

namespace {

// The plan's and operation graph's handle attributes are deprecated in cuDNN 9 (for a device
// property descriptor) but still honoured, and the GPU machine's cuDNN may predate the
// replacement: set them through their values.
constexpr auto kOperationGraphHandle = static_cast<cudnnBackendAttributeName_t>(800);
constexpr auto kExecutionPlanHandle = static_cast<cudnnBackendAttributeName_t>(400);

/// Unique ids of the graph's tensors.
enum Uid : int64_t { kX = 1, kW = 2, kB = 3, kZ = 4, kY = 5, kVirtual = 10 };

/// The declared alignment of every real tensor (the arena's is 256).
constexpr int64_t kTensorAlignment = 16;

/// Descriptors created while building; those handed to a plan move there, the rest are destroyed.
class Owned {
 public:
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    for (auto it = descs_.rbegin(); it != descs_.rend(); ++it) {
      (void)cudnnBackendDestroyDescriptor(*it);
    }
  }
  StatusOr<cudnnBackendDescriptor_t> create(cudnnBackendDescriptorType_t type,
                                            const std::string& op) {
    cudnnBackendDescriptor_t d = nullptr;
    ONNXOPT_CUDA_CHECK(cudnnBackendCreateDescriptor(type, &d), op);
    descs_.push_back(d);
    return d;
  }
  std::vector<cudnnBackendDescriptor_t> release() {
    std::vector<cudnnBackendDescriptor_t> out;
    out.swap(descs_);
    return out;
  }

 private:
  std::vector<cudnnBackendDescriptor_t> descs_;
};

/// cudnnBackendSetAttribute of one value or an array.
template <typename T>
cudnnStatus_t setAttr(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                      cudnnBackendAttributeType_t type, const T* values, int64_t count = 1) {
  return cudnnBackendSetAttribute(d, name, type, count, values);
}

#define GRAPH_CHECK(call) ONNXOPT_CUDA_CHECK(call, spec.op)

/// A tensor descriptor: real (the data type of the spec) or virtual (fp32, inside the graph).
StatusOr<cudnnBackendDescriptor_t> tensorOf(Owned& owned, const ConvGraphSpec& spec, int64_t uid,
                                            const std::vector<int64_t>& dims,
                                            const std::vector<int64_t>& strides, bool is_virtual) {
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t d,
                   owned.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, spec.op));
  cudnnDataType_t type = is_virtual ? CUDNN_DATA_FLOAT : cudnnTypeOf(spec.dtype);
  GRAPH_CHECK(setAttr(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type));
  GRAPH_CHECK(setAttr(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(),
                      static_cast<int64_t>(dims.size())));
  GRAPH_CHECK(setAttr(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(),
                      static_cast<int64_t>(strides.size())));
  GRAPH_CHECK(setAttr(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid));
  GRAPH_CHECK(setAttr(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &kTensorAlignment));
  GRAPH_CHECK(setAttr(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual));
  GRAPH_CHECK(cudnnBackendFinalize(d));
  return d;
}

/// out = mode(in, other) (other null: unary) as a pointwise operation with fp32 math.
StatusOr<cudnnBackendDescriptor_t> pointwiseOf(Owned& owned, const ConvGraphSpec& spec,
                                               cudnnPointwiseMode_t mode,
                                               cudnnBackendDescriptor_t in,
                                               cudnnBackendDescriptor_t other,
                                               cudnnBackendDescriptor_t out) {
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t pw,
                   owned.create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, spec.op));
  cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  GRAPH_CHECK(setAttr(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode));
  GRAPH_CHECK(setAttr(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &prec));
  GRAPH_CHECK(cudnnBackendFinalize(pw));
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t node,
                   owned.create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, spec.op));
  GRAPH_CHECK(setAttr(node, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, &pw));
  GRAPH_CHECK(
      setAttr(node, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, &in));
  if (other != nullptr) {
    GRAPH_CHECK(
        setAttr(node, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, &other));
  }
  GRAPH_CHECK(
      setAttr(node, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, &out));
  GRAPH_CHECK(cudnnBackendFinalize(node));
  return node;
}

/// The operation graph of the spec (conv, then +B, +Z, ReLU as asked) and its tensors' uids.
StatusOr<cudnnBackendDescriptor_t> graphOf(Owned& owned, const ConvGraphSpec& spec,
                                           cudnnHandle_t handle, std::vector<int64_t>* uids) {
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t x,
                   tensorOf(owned, spec, kX, spec.x_dims, spec.x_strides, false));
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t w,
                   tensorOf(owned, spec, kW, spec.w_dims, spec.w_strides, false));
  uids->assign({kX, kW});
  int stages = int{spec.bias} + int{spec.z} + int{spec.relu};
  int64_t next_virtual = kVirtual;
  // The output of each stage: virtual fp32 until the last, which is Y.
  auto stageOut = [&](bool last) {
    return last ? tensorOf(owned, spec, kY, spec.y_dims, spec.y_strides, false)
                : tensorOf(owned, spec, next_virtual++, spec.y_dims, spec.y_strides, true);
  };

  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t conv,
                   owned.create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, spec.op));
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t spatial = static_cast<int64_t>(spec.strides.size());
  GRAPH_CHECK(setAttr(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &comp));
  GRAPH_CHECK(setAttr(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode));
  GRAPH_CHECK(setAttr(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &spatial));
  GRAPH_CHECK(setAttr(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64,
                      spec.dilations.data(), spatial));
  GRAPH_CHECK(setAttr(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64,
                      spec.strides.data(), spatial));
  GRAPH_CHECK(setAttr(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64,
                      spec.pad_begin.data(), spatial));
  GRAPH_CHECK(setAttr(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64,
                      spec.pad_end.data(), spatial));
  GRAPH_CHECK(cudnnBackendFinalize(conv));

  std::vector<cudnnBackendDescriptor_t> ops;
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t acc, stageOut(stages == 0));
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t fprop,
                   owned.create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, spec.op));
  const float one = 1.0f, zero = 0.0f;
  GRAPH_CHECK(setAttr(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, &x));
  GRAPH_CHECK(setAttr(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, &w));
  GRAPH_CHECK(setAttr(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, &acc));
  GRAPH_CHECK(setAttr(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, &conv));
  GRAPH_CHECK(
      setAttr(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, &one));
  GRAPH_CHECK(
      setAttr(fprop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, &zero));
  GRAPH_CHECK(cudnnBackendFinalize(fprop));
  ops.push_back(fprop);

  // Each stage: out = mode(cur, operand), its output the next stage's input.
  cudnnBackendDescriptor_t cur = acc;
  int done = 0;
  auto stage = [&](cudnnPointwiseMode_t pw, cudnnBackendDescriptor_t operand) -> Status {
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t out, stageOut(++done == stages));
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t node,
                     pointwiseOf(owned, spec, pw, cur, operand, out));
    ops.push_back(node);
    cur = out;
    return Status::ok();
  };
  if (spec.bias) {
    std::vector<int64_t> dims = {1, spec.y_dims[1], 1, 1};
    std::vector<int64_t> strides = {spec.y_dims[1], 1, spec.y_dims[1], spec.y_dims[1]};
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t b, tensorOf(owned, spec, kB, dims, strides, false));
    uids->push_back(kB);
    RETURN_IF_ERROR(stage(CUDNN_POINTWISE_ADD, b));
  }
  if (spec.z) {
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t z,
                     tensorOf(owned, spec, kZ, spec.y_dims, spec.y_strides, false));
    uids->push_back(kZ);
    RETURN_IF_ERROR(stage(CUDNN_POINTWISE_ADD, z));
  }
  if (spec.relu) RETURN_IF_ERROR(stage(CUDNN_POINTWISE_RELU_FWD, nullptr));
  uids->push_back(kY);

  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t graph,
                   owned.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, spec.op));
  GRAPH_CHECK(setAttr(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                      ops.data(), static_cast<int64_t>(ops.size())));
  GRAPH_CHECK(setAttr(graph, kOperationGraphHandle, CUDNN_TYPE_HANDLE, &handle));
  GRAPH_CHECK(cudnnBackendFinalize(graph));
  return graph;
}

/// Whether ONNXOPT_CONV_TRACE is set (conv.cc prints the timings; here, the engines left out).
bool tracing() {
  static const bool on = convEnvFlag("ONNXOPT_CONV_TRACE");
  return on;
}

/// Whether ONNXOPT_CONV_GRAPH_RTC is set: engines that compile at run time are kept (for
/// diagnosis: NVRTC at planning costs time per geometry).
bool runtimeCompilationAllowed() {
  static const bool on = convEnvFlag("ONNXOPT_CONV_GRAPH_RTC");
  return on;
}

/// Why an engine's notes rule it out (empty: they do not): run-time compilation (NVRTC at
/// planning), fp16 accumulation, or inputs converted down.
std::string exclusionOf(cudnnBackendDescriptor_t engine) {
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  int64_t n = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n,
                               behavior) != CUDNN_STATUS_SUCCESS) {
    return "no behavior notes";
  }
  for (int64_t i = 0; i < n; ++i) {
    if (behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION && !runtimeCompilationAllowed()) {
      return "compiles at run time";
    }
  }
  cudnnBackendNumericalNote_t numeric[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                               numeric) != CUDNN_STATUS_SUCCESS) {
    return "no numerical notes";
  }
  for (int64_t i = 0; i < n; ++i) {
    if (numeric[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) return "fp16 accumulation";
    if (numeric[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return "inputs converted down";
  }
  return "";
}

/// The engine's global index, for traces (-1 where cuDNN does not say).
int64_t engineIndex(cudnnBackendDescriptor_t engine) {
  int64_t index = -1, n = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                               &index) != CUDNN_STATUS_SUCCESS) {
    return -1;
  }
  return index;
}

}  // namespace

bool convGraphApplies(const ConvGraphSpec& spec) {
  return (spec.dtype == DataType::kFloat16 || spec.dtype == DataType::kBfloat16) &&
         spec.x_dims.size() == 4 && spec.w_dims.size() == 4 && spec.y_dims.size() == 4 &&
         spec.w_dims[1] == spec.x_dims[1] && spec.strides.size() == 2;
}

bool convEnvFlag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

bool convGraphAligned(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) {
    if (reinterpret_cast<uintptr_t>(p) % kTensorAlignment != 0) return false;
  }
  return true;
}

ConvGraphPlan::~ConvGraphPlan() {
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) {
    (void)cudnnBackendDestroyDescriptor(*it);
  }
}

StatusOr<std::vector<std::unique_ptr<ConvGraphPlan>>> convGraphPlans(const ConvGraphSpec& spec,
                                                                     cudnnHandle_t handle,
                                                                     size_t max_workspace,
                                                                     size_t max_plans) {
  std::vector<std::unique_ptr<ConvGraphPlan>> plans;
  if (!convGraphApplies(spec)) return plans;
  // The tensors, operations, graph, heuristics and engine configurations: shared by every plan
  // built on them and destroyed with the last.
  auto shared = std::make_shared<Owned>();
  std::vector<int64_t> uids;
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t graph, graphOf(*shared, spec, handle, &uids));

  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t heur,
                   shared->create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, spec.op));
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  GRAPH_CHECK(
      setAttr(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, &graph));
  GRAPH_CHECK(setAttr(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode));
  if (cudnnStatus_t st = cudnnBackendFinalize(heur); st != CUDNN_STATUS_SUCCESS) {
    if (tracing()) {
      fmt::print(stderr, "onnxopt conv graph {}: heuristics: {}\n", spec.op,
                 cudnnGetErrorString(st));
    }
    return plans;  // no engine for it
  }
  int64_t count = 0;
  GRAPH_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  if (count == 0 && tracing()) {
    fmt::print(stderr, "onnxopt conv graph {}: the heuristics list no engine\n", spec.op);
  }
  std::vector<cudnnBackendDescriptor_t> cfgs;
  for (int64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t cfg,
                     shared->create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, spec.op));
    cfgs.push_back(cfg);
  }
  if (count > 0) {
    GRAPH_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                                         cfgs.data()));
  }
  for (int64_t i = 0; i < count && plans.size() < max_plans; ++i) {
    Owned engine_owned;
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t engine,
                     engine_owned.create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, spec.op));
    int64_t n = 0;
    if (cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                 &engine) != CUDNN_STATUS_SUCCESS) {
      continue;
    }
    if (std::string why = exclusionOf(engine); !why.empty()) {
      if (tracing()) {
        fmt::print(stderr, "onnxopt conv graph {}: engine {} (rank {}) left out: {}\n", spec.op,
                   engineIndex(engine), i, why);
      }
      continue;
    }
    Owned plan_owned;
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t plan,
                     plan_owned.create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, spec.op));
    GRAPH_CHECK(setAttr(plan, kExecutionPlanHandle, CUDNN_TYPE_HANDLE, &handle));
    GRAPH_CHECK(setAttr(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, &cfgs[i]));
    auto started = std::chrono::steady_clock::now();
    if (cudnnStatus_t st = cudnnBackendFinalize(plan); st != CUDNN_STATUS_SUCCESS) {
      if (tracing()) {
        fmt::print(stderr, "onnxopt conv graph {}: engine {} (rank {}) does not finalize: {}\n",
                   spec.op, engineIndex(engine), i, cudnnGetErrorString(st));
      }
      continue;
    }
    int64_t ws = 0;
    if (cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                 1, &n, &ws) != CUDNN_STATUS_SUCCESS ||
        ws < 0 || static_cast<size_t>(ws) > max_workspace) {
      continue;
    }
    std::unique_ptr<ConvGraphPlan> p(new ConvGraphPlan());
    p->op_ = spec.op;
    p->plan_ = plan;
    p->shared_ = shared;
    p->owned_ = engine_owned.release();
    std::vector<cudnnBackendDescriptor_t> own = plan_owned.release();
    p->owned_.insert(p->owned_.end(), own.begin(), own.end());
    p->uids_ = uids;
    p->workspace_bytes_ = static_cast<size_t>(ws);
    p->fuses_z_ = spec.z;
    p->fuses_relu_ = spec.relu;
    double finalize_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    p->name_ = fmt::format("engine {} (heuristic rank {}, finalized in {:.1f} ms)",
                           engineIndex(engine), i, finalize_ms);
    plans.push_back(std::move(p));
  }
  (void)cudaGetLastError();
  return plans;
}

Status ConvGraphPlan::execute(cudnnHandle_t handle, const void* x, const void* w, const void* b,
                              const void* z, void* y, void* workspace) const {
  void* data[5];
  size_t n = 0;
  for (int64_t uid : uids_) {
    switch (uid) {
      case kX:
        data[n++] = const_cast<void*>(x);
        break;
      case kW:
        data[n++] = const_cast<void*>(w);
        break;
      case kB:
        data[n++] = const_cast<void*>(b);
        break;
      case kZ:
        data[n++] = const_cast<void*>(z);
        break;
      default:
        data[n++] = y;
        break;
    }
  }
  Owned owned;
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t pack,
                   owned.create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, op_));
  ONNXOPT_CUDA_CHECK(setAttr(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                             uids_.data(), static_cast<int64_t>(n)),
                     op_);
  ONNXOPT_CUDA_CHECK(setAttr(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, data,
                             static_cast<int64_t>(n)),
                     op_);
  ONNXOPT_CUDA_CHECK(
      setAttr(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace), op_);
  ONNXOPT_CUDA_CHECK(cudnnBackendFinalize(pack), op_);
  ONNXOPT_CUDA_CHECK(cudnnBackendExecute(handle, plan_, pack), op_);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
