// The CUDA executor (cuda_executor.h): a plain loop over a Plan's steps. Device nodes launch their
// kernel on views into the plan's arena, host and CPU-fallback nodes run the reference kernels on
// host tensors, copy steps move values across, views alias. Everything a step needs (pointers,
// kernel calls, workspace) is prepared once per plan; a run only uploads inputs and launches.
#include "onnxopt/runtime/cuda_executor.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "device_api.h"
#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/kernels/tensor_view.h"
#include "onnxopt/runtime/reference_executor.h"
#include "onnxopt/runtime/weight_data.h"

namespace onnxopt::runtime {

using cuda_detail::DeviceMemory;
using kernels::HostTensor;

StatusOr<InputShapes> checkCudaFeeds(const ir::Model& model, const Feeds& feeds) {
  return checkCudaFeeds(model, feeds, {});
}

StatusOr<InputShapes> checkCudaFeeds(const ir::Model& model, const Feeds& feeds,
                                     const DeviceFeeds& device) {
  if (model.graph == nullptr) return invalidArgument("the model has no graph");
  const ir::Graph& g = *model.graph;
  std::vector<std::string> names;
  for (const ir::Value* in : g.inputs()) names.push_back(in->name());
  auto known = [&](const std::string& name) -> Status {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return invalidArgument("'{}' is not an input of the model (its inputs: {})", name,
                             fmt::join(names, ", "));
    }
    return Status::ok();
  };
  for (const auto& [name, t] : feeds) RETURN_IF_ERROR(known(name));
  for (const auto& [name, t] : device) {
    RETURN_IF_ERROR(known(name));
    if (feeds.count(name) != 0) {
      return invalidArgument("input '{}' is given twice (on the host and on the device)", name);
    }
    if (t.dtype == DataType::kString) {
      return invalidArgument("input '{}': string tensors cannot be given in device memory", name);
    }
  }
  InputShapes shapes;
  for (const ir::Value* in : g.inputs()) {
    auto host = feeds.find(in->name());
    auto dev = device.find(in->name());
    if (host == feeds.end() && dev == device.end()) {
      if (const ir::Tensor* t = in->initializer()) {
        // The default is what the run reads: the create-time check left it to the run.
        RETURN_IF_ERROR(checkTensorData(*t, fmt::format("initializer '{}'", in->name())));
        continue;
      }
      return invalidArgument("input '{}' is missing", in->name());
    }
    DataType dtype = host != feeds.end() ? host->second.dtype : dev->second.dtype;
    const std::vector<int64_t>& dims = host != feeds.end() ? host->second.dims : dev->second.dims;
    const ir::Type& type = in->type();
    if (type.isTensor() && type.elem_type != DataType::kUndefined && dtype != type.elem_type) {
      return invalidArgument("input '{}' is {}, but a {} tensor was given", in->name(),
                             dataTypeName(type.elem_type), dataTypeName(dtype));
    }
    for (int64_t d : dims) {
      if (d < 0) {
        return invalidArgument("input '{}': dims [{}] are not sizes", in->name(),
                               fmt::join(dims, ","));
      }
    }
    if (type.isTensor() && type.shape) {
      const auto& declared = *type.shape;
      if (declared.size() != dims.size()) {
        return invalidArgument("input '{}' has rank {}, but a tensor of dims [{}] was given",
                               in->name(), declared.size(), fmt::join(dims, ","));
      }
      for (size_t d = 0; d < declared.size(); ++d) {
        if (declared[d].isKnown() && declared[d].value != dims[d]) {
          return invalidArgument("input '{}': dim {} is {}, but {} was given", in->name(), d,
                                 declared[d].value, dims[d]);
        }
      }
    }
    if (host != feeds.end()) {
      const HostTensor& t = host->second;
      if (t.dtype == DataType::kString) {
        if (static_cast<int64_t>(t.strings.size()) != t.numElements()) {
          return invalidArgument("input '{}': {} strings for dims [{}]", in->name(),
                                 t.strings.size(), fmt::join(t.dims, ","));
        }
      } else {
        auto bytes = dataTypeStorageBytes(t.dtype, static_cast<uint64_t>(t.numElements()));
        if (!bytes || *bytes != t.bytes.size()) {
          return invalidArgument("input '{}': {} bytes of data for {}[{}]", in->name(),
                                 t.bytes.size(), dataTypeName(t.dtype), fmt::join(t.dims, ","));
        }
      }
    } else {
      uint64_t elements = 1;
      bool overflow = false;
      for (int64_t d : dims) {
        overflow |= __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements);
      }
      auto bytes = overflow ? std::nullopt : dataTypeStorageBytes(dtype, elements);
      if (!bytes) {
        return invalidArgument("input '{}': {}[{}] has no size in bytes", in->name(),
                               dataTypeName(dtype), fmt::join(dims, ","));
      }
      if (*bytes > 0 && dev->second.data == nullptr) {
        return invalidArgument("input '{}': no device memory for {}[{}]", in->name(),
                               dataTypeName(dtype), fmt::join(dims, ","));
      }
    }
    shapes[in->name()] = {dtype, dims};
  }
  return shapes;
}

namespace {

/// The id of the value whose buffer `id` shares (itself when it has its own).
int rootOf(const Plan& plan, int id) {
  while (plan.values[static_cast<size_t>(id)].base >= 0) {
    id = plan.values[static_cast<size_t>(id)].base;
  }
  return id;
}

/// Whether `dims` (a kernel's result) fit value `v`: equal, or for a dynamic value, the dims the
/// plan knows (a rank, and -1 for the dims known only at run time).
bool dimsFit(const PlannedValue& v, const std::vector<int64_t>& dims) {
  if (!v.dynamic) return dims == v.dims;
  if (!v.rank_known || v.dims.empty()) return true;
  if (dims.size() != v.dims.size()) return false;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (v.dims[d] >= 0 && v.dims[d] != dims[d]) return false;
  }
  return true;
}

/// Whether the CPU side must run `pn` through the reference executor's interpreter
/// (runNodeOnHost) rather than one reference kernel: ops with subgraphs, sequence and optional
/// ops, other domains (functions, FlexAttention), and nodes reading or writing values of no
/// tensor type.
bool needsInterpreter(const Plan& plan, const PlannedNode& pn) {
  if (pn.node == nullptr) return false;
  // Ops without a reference kernel: the interpreter runs or refuses them as runModel does.
  if (!kernels::hasReferenceKernel(kernels::referenceOpName(pn.domain, pn.op), pn.opset)) {
    return true;
  }
  if (!pn.node->subgraphs().empty()) return true;
  if (!pn.domain.empty() && pn.domain != "ai.onnx") return true;
  const std::string& op = pn.op;
  if (op.rfind("Sequence", 0) == 0 || op.rfind("Optional", 0) == 0 || op == "SplitToSequence" ||
      op == "ConcatFromSequence") {
    return true;
  }
  auto untyped = [&](int id) {
    return id >= 0 && plan.values[static_cast<size_t>(id)].dtype == DataType::kUndefined;
  };
  return std::any_of(pn.inputs.begin(), pn.inputs.end(), untyped) ||
         std::any_of(pn.outputs.begin(), pn.outputs.end(), untyped);
}

/// A copy of `t` with other dims (a view's data is its base's, in the same order).
HostTensor withDims(HostTensor t, const std::vector<int64_t>& dims) {
  t.dims = dims;
  return t;
}

/// A device node, prepared once per plan.
struct PreparedNode {
  kernels::CudaKernelCall call;
  /// Host data of the node's constant inputs (call.constant_inputs points here).
  std::vector<std::optional<HostTensor>> constants;
  /// The kernel refused the node at its concrete shapes: it runs on the CPU reference kernels,
  /// with its inputs copied down and outputs copied up (`demoted` holds the kernel's reason).
  std::string demoted;
};

/// A plan's CUDA graph: off (CudaOptions::cuda_graphs false), warming up (the first run is
/// eager: lazy initializations such as a library handle cannot be captured), to be captured at
/// the next run, captured and replayed, or eager for good (`graph_reason` says why).
enum class GraphMode { kOff, kWarmUp, kCapture, kReplay, kEager };

/// What a plan needs on the device, kept with the plan.
struct PlanState {
  std::shared_ptr<const Plan> plan;
  DeviceMemory arena;
  DeviceMemory workspace;
  /// Graph inputs, uploaded at each run (by value id of the input).
  std::map<int, DeviceMemory> input_buffers;
  /// Constants read on the device that are not initializers (folded values): by root value id.
  std::map<int, DeviceMemory> plan_constants;
  /// Device pointers of constants (session weights or plan_constants), by root value id.
  std::map<int, void*> constant_ptrs;
  std::map<int, PreparedNode> prepared;  ///< by node index
  std::vector<std::string> demoted;      ///< "node X: reason", for the summary
  size_t workspace_bytes = 0;            ///< the one workspace region all device nodes share
  /// Pinned host staging of the graph inputs and of the device-side graph outputs, by value id
  /// (empty where pinned memory could not be had: the copies then use the caller's memory).
  std::map<int, DeviceMemory> input_staging;
  std::map<int, DeviceMemory> output_staging;
  GraphMode graph_mode = GraphMode::kOff;
  std::string graph_reason;  ///< kEager: why
  std::unique_ptr<cuda_detail::CapturedGraph> graph;
  int64_t replays = 0;
  /// Set when a run of this plan found a host-run node contradicting the planned dims: later runs
  /// at this signature go to the reference executor directly (the reason).
  std::string reference_only;
  uint64_t last_used = 0;
};

/// Why the plan's steps cannot be one CUDA graph ("" when they can): every step between the input
/// uploads and the output downloads must be a device kernel launch or a view.
std::string graphCaptureBlocker(const PlanState& state) {
  const Plan& plan = *state.plan;
  int64_t launches = 0;
  for (const Step& step : plan.steps) {
    if (step.kind != Step::Kind::kNode) {
      return fmt::format("'{}' is copied between host and device",
                         plan.values[static_cast<size_t>(step.src)].name);
    }
    const PlannedNode& pn = plan.nodes[static_cast<size_t>(step.node)];
    if (pn.dynamic) return fmt::format("{} is shaped at run time", pn.name);
    if (pn.placement == Placement::kView || pn.folded) continue;
    if (pn.placement != Placement::kDevice) {
      return fmt::format("{} runs on the host", pn.name);
    }
    auto it = state.prepared.find(step.node);
    if (it != state.prepared.end() && !it->second.demoted.empty()) {
      return fmt::format("{} runs on the CPU", pn.name);
    }
    ++launches;
  }
  if (launches == 0) return "no device kernels";
  return "";
}

/// "captured, replayed N" / "eager (reason)" / ... for summaries.
std::string graphStateText(const PlanState& state) {
  switch (state.graph_mode) {
    case GraphMode::kOff:
      return "off";
    case GraphMode::kWarmUp:
      return "not captured yet (the first run is eager)";
    case GraphMode::kCapture:
      return "to be captured at the next run";
    case GraphMode::kReplay:
      return fmt::format("captured, replayed {}", state.replays);
    case GraphMode::kEager:
      return fmt::format("eager ({})", state.graph_reason);
  }
  return "";
}

}  // namespace

struct CudaExecutor::Impl {
  /// First: every buffer below is released through it.
  std::unique_ptr<cuda_detail::DeviceApi> api;
  const ir::Model* model = nullptr;
  CudaOptions options;
  kernels::CudaDeviceInfo device;
  std::unique_ptr<PlanCache> cache;
  /// The session's weights: initializers uploaded once, by IR value.
  std::unordered_map<const ir::Value*, DeviceMemory> weights;
  int64_t weight_bytes = 0;
  std::map<std::string, PlanState> states;  ///< by input signature
  uint64_t clock = 0;
  std::shared_ptr<const Plan> last_plan;
  std::string last_summary;
  std::string last_graph;
  int64_t last_workspace = 0;
  std::optional<double> last_compute_ms;  ///< CudaOptions::time_compute
  /// Set when the current run failed because a host-run node made other dims or another type
  /// than the plan's (a declared shape the data contradicts): that value's name; nullopt otherwise.
  std::optional<std::string> mismatched_value;
  /// Values whose declared dims a run contradicted, by name: every plan is built with them shaped
  /// at run time (PlanOptions::shaped_at_run_time), and the summary lists them.
  std::set<std::string> shaped_at_run_time;

  /// A device input's data on the host (a synchronous copy on the stream).
  StatusOr<HostTensor> downloadDeviceInput(const std::string& name, const DeviceInput& in) {
    HostTensor t = HostTensor::zeros(in.dtype, in.dims);
    if (t.bytes.empty()) return t;
    RETURN_IF_ERROR(api->copyToHost(t.bytes.data(), in.data, t.bytes.size())
                        .withContext(fmt::format("copying input '{}' to the host", name)));
    RETURN_IF_ERROR(api->synchronize(fmt::format("copying input '{}' to the host", name)));
    return t;
  }

  /// `feeds` with every device input copied to the host (for the reference executor).
  StatusOr<Feeds> withHostCopies(const Feeds& feeds, const DeviceFeeds& device) {
    Feeds all = feeds;
    for (const auto& [name, in] : device) {
      ASSIGN_OR_RETURN(all[name], downloadDeviceInput(name, in));
    }
    return all;
  }

  /// The whole run on the reference executor, where the plan cannot describe it (`why`); the
  /// summary says so. The reference executor's errors are the run's.
  StatusOr<ExecutionResult> runOnReference(const Feeds& feeds, const ExecutionOptions& options,
                                           const Status& why) {
    ASSIGN_OR_RETURN(ExecutionResult result, runModel(*model, feeds, options));
    last_summary = fmt::format(
        "plan: not usable for these inputs ({}): the whole run went to the reference executor "
        "(CPU)\n",
        why.message());
    last_graph = "off (no plan)";
    last_workspace = 0;
    last_compute_ms.reset();
    return result;
  }
  std::thread::id last_thread;
  std::mutex mu;
  /// The limits of the run in progress, for the nodes it runs on the host (runNodeOnHost).
  RunLimits run_limits;

  const PlannedValue& value(const Plan& plan, int id) const {
    return plan.values[static_cast<size_t>(id)];
  }

  /// The host data of a constant value (a view of a constant reads its root's data).
  StatusOr<HostTensor> constantData(const Plan& plan, int id) const {
    const PlannedValue& v = value(plan, id);
    const PlannedValue& root = value(plan, rootOf(plan, id));
    if (root.host_value) return withDims(*root.host_value, v.dims);
    if (root.source != nullptr && root.source->initializer() != nullptr) {
      return withDims(bridge::toHost(*root.source->initializer()), v.dims);
    }
    if (root.source != nullptr && root.source->sparseInitializer() != nullptr) {
      ASSIGN_OR_RETURN(HostTensor dense,
                       densifySparse(*root.source->sparseInitializer(), root.source->name()));
      return withDims(std::move(dense), v.dims);
    }
    return makeError(StatusCode::kInternal, "constant '{}' has no data", v.name);
  }

  /// Uploads the constants the plan's device side reads: initializers once per session, folded
  /// values once per plan.
  Status uploadConstants(PlanState& state) {
    const Plan& plan = *state.plan;
    // The host data of the queued uploads, alive until they are done.
    std::vector<std::shared_ptr<const HostTensor>> sources;
    for (size_t id = 0; id < plan.values.size(); ++id) {
      const PlannedValue& v = plan.values[id];
      if (v.location != Location::kConstant || !v.upload || v.base >= 0) continue;
      const ir::Value* src = v.source;
      bool initializer =
          src != nullptr && (src->initializer() != nullptr || src->sparseInitializer() != nullptr);
      if (initializer) {
        if (auto it = weights.find(src); it != weights.end()) {
          state.constant_ptrs[static_cast<int>(id)] = it->second.data();
          continue;
        }
      }
      ASSIGN_OR_RETURN(HostTensor constant, constantData(plan, static_cast<int>(id)));
      auto source = std::make_shared<const HostTensor>(std::move(constant));
      const HostTensor& data = *source;
      sources.push_back(source);
      if (data.dtype == DataType::kString) {
        return makeError(StatusCode::kUnimplemented,
                         "constant '{}' is a string tensor, which the device cannot read", v.name);
      }
      auto buffer = DeviceMemory::allocate(*api, data.bytes.size());
      if (!buffer.isOk()) {
        return buffer.status().withContext(fmt::format("uploading weight '{}'", v.name));
      }
      if (!data.bytes.empty()) {
        RETURN_IF_ERROR(api->copyToDevice(buffer->data(), data.bytes.data(), data.bytes.size())
                            .withContext(fmt::format("uploading weight '{}'", v.name)));
      }
      state.constant_ptrs[static_cast<int>(id)] = buffer->data();
      if (initializer) {
        weight_bytes += static_cast<int64_t>(data.bytes.size());
        weights.emplace(src, std::move(buffer).value());
      } else {
        state.plan_constants.emplace(static_cast<int>(id), std::move(buffer).value());
      }
    }
    // The uploads read host memory that goes away with `sources`: finish them here.
    return api->synchronize("uploading weights");
  }

  /// The device pointer of value `id` in `state`'s buffers.
  StatusOr<void*> devicePtr(const PlanState& state, int id) const {
    const Plan& plan = *state.plan;
    const PlannedValue& v = value(plan, id);
    int root = rootOf(plan, id);
    switch (v.location) {
      case Location::kArena: {
        int64_t offset = value(plan, root).offset;
        if (offset < 0 || offset + v.bytes > plan.arena_bytes) {
          return makeError(StatusCode::kInternal, "'{}' has no place in the arena", v.name);
        }
        return static_cast<void*>(static_cast<char*>(state.arena.data()) + offset);
      }
      case Location::kInput: {
        auto it = state.input_buffers.find(root);
        if (it == state.input_buffers.end()) {
          return makeError(StatusCode::kInternal, "input '{}' has no device buffer", v.name);
        }
        return it->second.data();
      }
      case Location::kConstant: {
        auto it = state.constant_ptrs.find(root);
        if (it == state.constant_ptrs.end()) {
          return makeError(StatusCode::kInternal, "constant '{}' was not uploaded", v.name);
        }
        return it->second;
      }
      case Location::kHost:
        break;
    }
    return makeError(StatusCode::kInternal, "'{}' is a host value, read on the device", v.name);
  }

  /// Allocates the plan's device memory, uploads its constants and prepares every device node's
  /// call.
  Status prepare(PlanState& state) {
    const Plan& plan = *state.plan;
    if (plan.arena_bytes > 0) {
      auto arena = DeviceMemory::allocate(*api, static_cast<size_t>(plan.arena_bytes));
      if (!arena.isOk()) {
        return arena.status().withContext(
            fmt::format("allocating the device arena of {} bytes", plan.arena_bytes));
      }
      state.arena = std::move(arena).value();
    }
    for (int id : plan.inputs) {
      const PlannedValue& v = value(plan, id);
      if (v.location != Location::kInput) continue;  // an input default: a constant
      if (v.dtype == DataType::kString) continue;    // host only (copied down by the host)
      auto buffer = DeviceMemory::allocate(*api, static_cast<size_t>(v.bytes));
      if (!buffer.isOk()) {
        return buffer.status().withContext(fmt::format("allocating input '{}'", v.name));
      }
      state.input_buffers.emplace(id, std::move(buffer).value());
    }
    RETURN_IF_ERROR(uploadConstants(state));
    size_t workspace = 0;
    for (const Step& step : plan.steps) {
      if (step.kind != Step::Kind::kNode) continue;
      const PlannedNode& pn = plan.nodes[static_cast<size_t>(step.node)];
      // Dynamic nodes run on the CPU at run time (runDynamic): nothing to prepare.
      if (pn.placement != Placement::kDevice || pn.dynamic) continue;
      PreparedNode prepared;
      kernels::CudaKernelCall& call = prepared.call;
      call.domain = pn.domain;
      call.op = pn.op;
      call.opset = pn.opset;
      call.attrs = &pn.attrs;
      for (int id : pn.inputs) {
        if (id < 0) {
          call.inputs.emplace_back();
          continue;
        }
        const PlannedValue& v = value(plan, id);
        auto ptr = devicePtr(state, id);
        if (!ptr.isOk()) return ptr.status().withContext(pn.name);
        call.inputs.emplace_back(v.dtype, v.dims, kernels::contiguousStrides(v.dims), *ptr,
                                 kernels::MemoryKind::kDevice);
      }
      for (int id : pn.outputs) {
        if (id < 0) {
          call.outputs.emplace_back();
          continue;
        }
        const PlannedValue& v = value(plan, id);
        auto ptr = devicePtr(state, id);
        if (!ptr.isOk()) return ptr.status().withContext(pn.name);
        call.outputs.emplace_back(v.dtype, v.dims, kernels::contiguousStrides(v.dims), *ptr,
                                  kernels::MemoryKind::kDevice);
      }
      // Constant inputs are also readable on the host, where kernels take small operands.
      for (int id : pn.inputs) {
        std::optional<HostTensor> data;
        if (id >= 0 && value(plan, rootOf(plan, id)).location == Location::kConstant) {
          if (auto c = constantData(plan, id); c.isOk()) data = std::move(c).value();
        }
        prepared.constants.push_back(std::move(data));
      }
      for (size_t i = 0; i < prepared.constants.size(); ++i) {
        const std::optional<HostTensor>& c = prepared.constants[i];
        call.constant_inputs.push_back(c ? &*c : nullptr);
        // A weight without its data (a model with its weights stripped): the reference kernel's
        // refusal, before anything runs, rather than a kernel reading nothing.
        if (c && c->dtype != DataType::kString) {
          auto expected = dataTypeStorageBytes(c->dtype, static_cast<uint64_t>(c->numElements()));
          if (expected && *expected != c->bytes.size()) {
            return invalidArgument("{}: {}: input {} has {} bytes, expected {}", pn.name, pn.op, i,
                                   c->bytes.size(), *expected);
          }
        }
      }
      kernels::Support support = api->canImplement(call);
      if (!support) {
        prepared.demoted = support.reason.empty() ? "refused by the kernel" : support.reason;
        state.demoted.push_back(fmt::format("{}: {}", pn.name, prepared.demoted));
      } else {
        auto bytes = api->workspaceBytes(call);
        if (!bytes.isOk()) return bytes.status().withContext(pn.name);
        workspace = std::max(workspace, *bytes);
      }
      state.prepared.emplace(step.node, std::move(prepared));
    }
    if (workspace > 0) {
      auto buffer = DeviceMemory::allocate(*api, workspace);
      if (!buffer.isOk()) {
        return buffer.status().withContext(
            fmt::format("allocating {} bytes of kernel workspace", workspace));
      }
      state.workspace = std::move(buffer).value();
    }
    state.workspace_bytes = workspace;
    for (auto& [index, prepared] : state.prepared) {
      prepared.call.workspace = state.workspace.data();
      prepared.call.workspace_bytes = state.workspace.size();
    }
    // Pinned staging: a failure to get it is no error (the copies then read and write the
    // caller's pageable memory, which is slower, not wrong).
    for (int id : plan.inputs) {
      auto buffer = state.input_buffers.find(id);
      if (buffer == state.input_buffers.end() || buffer->second.size() == 0) continue;
      auto staging = DeviceMemory::allocateHost(*api, buffer->second.size());
      if (staging.isOk()) state.input_staging.emplace(id, std::move(staging).value());
    }
    for (int id : plan.outputs) {
      const PlannedValue& v = value(plan, id);
      if (v.location != Location::kArena || v.bytes <= 0 || state.output_staging.count(id))
        continue;
      auto staging = DeviceMemory::allocateHost(*api, static_cast<size_t>(v.bytes));
      if (staging.isOk()) state.output_staging.emplace(id, std::move(staging).value());
    }
    if (options.cuda_graphs) {
      state.graph_reason = graphCaptureBlocker(state);
      state.graph_mode = state.graph_reason.empty() ? GraphMode::kWarmUp : GraphMode::kEager;
    }
    return Status::ok();
  }

  StatusOr<PlanState*> stateFor(const InputShapes& shapes) {
    ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan, cache->get(shapes));
    std::string key = inputSignature(shapes);
    auto it = states.find(key);
    if (it != states.end() && it->second.plan == plan) {
      it->second.last_used = ++clock;
      return &it->second;
    }
    if (it != states.end()) states.erase(it);  // its plan was evicted and built again
    // Keep device state for at most as many plans as the cache holds.
    while (!states.empty() && states.size() >= cache->capacity()) {
      auto oldest = std::min_element(
          states.begin(), states.end(),
          [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
      states.erase(oldest);
    }
    PlanState state;
    state.plan = std::move(plan);
    state.last_used = ++clock;
    RETURN_IF_ERROR(prepare(state));
    return &states.emplace(key, std::move(state)).first->second;
  }

  /// One run of a plan: host values by value id, the host buffers the stream still reads, and
  /// whether a copy to the host is in flight (the host synchronizes before it reads one).
  struct RunState {
    PlanState& state;
    const Feeds& feeds;
    const DeviceFeeds& device;  ///< inputs in device memory (CudaExecutor::run with DeviceFeeds)
    /// Host tensors are held by pointer: a queued copy writes or reads their bytes later, and a
    /// moved HostTensor may not keep its bytes where they were (small strings live inline).
    std::vector<std::shared_ptr<HostTensor>> host;
    /// Host sources of copies to the device: alive until the run's final synchronization.
    std::vector<std::shared_ptr<const HostTensor>> keep;
    /// Sequence and empty-optional values (held on the host), by value id.
    std::map<int, HostValue> others;
    bool pending = false;  ///< a copy to the host was queued since the last synchronization
    /// Profiling: markers around each timed step, read after the final synchronization.
    std::vector<CudaExecutor::StepTime>* profile = nullptr;
    struct Timed {
      int step;
      size_t start, end;
    };
    std::vector<Timed> timed;
  };

  /// What a step is, for the profile: its node, op and placement, or the copy.
  CudaExecutor::StepTime describeStep(const Plan& plan, const Step& step) const {
    CudaExecutor::StepTime t;
    if (step.kind == Step::Kind::kNode) {
      const PlannedNode& pn = plan.nodes[static_cast<size_t>(step.node)];
      t.name = pn.name;
      t.op = pn.op;
      t.placement = placementName(pn.placement);
      return t;
    }
    bool down = step.kind == Step::Kind::kCopyToHost;
    t.name =
        fmt::format("copy '{}' to the {}", value(plan, step.src).name, down ? "host" : "device");
    t.op = down ? "CopyToHost" : "CopyToDevice";
    t.placement = "copy";
    return t;
  }

  /// Synchronizes once where the host is about to read data a queued copy writes.
  Status syncHost(RunState& run, const std::string& what) {
    if (!run.pending) return Status::ok();
    run.pending = false;
    return api->synchronize(what);
  }

  /// The host data of value `id` (host values, constants, views of them, or a graph input).
  StatusOr<std::shared_ptr<HostTensor>> hostData(RunState& run, int id) {
    const Plan& plan = *run.state.plan;
    const PlannedValue& v = value(plan, id);
    if (v.location == Location::kConstant) {
      ASSIGN_OR_RETURN(HostTensor t, constantData(plan, id));
      return std::make_shared<HostTensor>(std::move(t));
    }
    if (v.location == Location::kInput) {
      const std::string& name = value(plan, rootOf(plan, id)).name;
      auto feed = run.feeds.find(name);
      if (feed != run.feeds.end()) {
        return std::make_shared<HostTensor>(withDims(feed->second, v.dims));
      }
      auto dev = run.device.find(name);
      if (dev == run.device.end()) {
        return makeError(StatusCode::kInternal, "no feed for '{}'", v.name);
      }
      // An input given in device memory that a host node reads: copied down, once per read.
      ASSIGN_OR_RETURN(HostTensor t, downloadDeviceInput(name, dev->second));
      return std::make_shared<HostTensor>(withDims(std::move(t), v.dims));
    }
    RETURN_IF_ERROR(syncHost(run, fmt::format("copying '{}' to the host", v.name)));
    for (int at = id; at >= 0; at = value(plan, at).base) {
      const std::shared_ptr<HostTensor>& t = run.host[static_cast<size_t>(at)];
      if (t == nullptr) continue;
      if (t->dims == v.dims || v.dynamic) return t;  // a dynamic value: the dims it was made with
      return std::make_shared<HostTensor>(withDims(*t, v.dims));
    }
    return makeError(StatusCode::kInternal, "host value '{}' was read before it was computed",
                     v.name);
  }

  /// Queues the copy of device value `id` to the host (inputs and constants: their host data).
  /// The tensor's bytes are written when the stream gets there: syncHost before reading them.
  StatusOr<std::shared_ptr<HostTensor>> download(RunState& run, int id) {
    const Plan& plan = *run.state.plan;
    const PlannedValue& v = value(plan, id);
    // Dynamic values are held on the host (runDynamic), whatever side the plan put them on.
    if (v.location != Location::kArena || v.dynamic) return hostData(run, id);
    ASSIGN_OR_RETURN(void* ptr, devicePtr(run.state, id));
    auto t = std::make_shared<HostTensor>(HostTensor::zeros(v.dtype, v.dims));
    if (!t->bytes.empty()) {
      RETURN_IF_ERROR(api->copyToHost(t->bytes.data(), ptr, t->bytes.size()));
      run.pending = true;
    }
    return t;
  }

  /// Queues the copy of `t` into device value `id`; `t` is kept until the run ends.
  Status upload(RunState& run, int id, std::shared_ptr<const HostTensor> t) {
    const PlannedValue& v = value(*run.state.plan, id);
    if (static_cast<int64_t>(t->bytes.size()) != v.bytes) {
      return makeError(StatusCode::kInternal, "copying '{}' to the device: {} bytes, not {}",
                       v.name, t->bytes.size(), v.bytes);
    }
    if (t->bytes.empty()) return Status::ok();
    ASSIGN_OR_RETURN(void* ptr, devicePtr(run.state, id));
    RETURN_IF_ERROR(api->copyToDevice(ptr, t->bytes.data(), t->bytes.size())
                        .withContext(fmt::format("copying '{}' to the device", v.name)));
    run.keep.push_back(std::move(t));
    return Status::ok();
  }

  /// Runs node `pn` on the host: the reference kernel, or for a node the reference executor
  /// runs itself (subgraphs, sequences, optionals, other domains) runNodeOnHost. Inputs are read
  /// from wherever they are (device values copied down, one synchronization for all).
  StatusOr<std::vector<HostValue>> runOnHost(RunState& run, const PlannedNode& pn) {
    const Plan& plan = *run.state.plan;
    bool interpret = needsInterpreter(plan, pn);
    std::vector<int> ids = pn.inputs;
    if (interpret) ids.insert(ids.end(), pn.implicit_inputs.begin(), pn.implicit_inputs.end());
    std::vector<std::shared_ptr<HostTensor>> inputs(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || run.others.count(ids[i])) continue;
      ASSIGN_OR_RETURN(inputs[i], download(run, ids[i]));
    }
    RETURN_IF_ERROR(syncHost(run, "copying the node's inputs to the host"));
    std::vector<HostValue> outs;
    if (interpret) {
      std::vector<std::pair<const ir::Value*, HostValue>> values;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0) continue;
        const ir::Value* key =
            i < pn.inputs.size() ? pn.node->input(i) : value(plan, ids[i]).source;
        if (key == nullptr) continue;
        if (auto other = run.others.find(ids[i]); other != run.others.end()) {
          values.emplace_back(key, other->second);
        } else {
          HostValue hv;
          hv.tensor = *inputs[i];
          values.emplace_back(key, std::move(hv));
        }
      }
      ASSIGN_OR_RETURN(outs, runNodeOnHost(*model, *pn.node, values, run_limits));
    } else {
      std::vector<const HostTensor*> ptrs(pn.inputs.size(), nullptr);
      for (size_t i = 0; i < pn.inputs.size(); ++i) {
        if (pn.inputs[i] >= 0) ptrs[i] = inputs[i].get();
      }
      ASSIGN_OR_RETURN(std::vector<HostTensor> tensors,
                       kernels::runReferenceKernel(kernels::referenceOpName(pn.domain, pn.op),
                                                   pn.opset, ptrs, pn.attrs, pn.outputs.size()));
      for (HostTensor& t : tensors) {
        HostValue hv;
        hv.tensor = std::move(t);
        outs.push_back(std::move(hv));
      }
    }
    if (outs.size() != pn.outputs.size()) {
      return makeError(StatusCode::kInternal, "the reference kernel returned {} outputs, not {}",
                       outs.size(), pn.outputs.size());
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (pn.outputs[i] < 0 || outs[i].kind != OutputKind::kTensor) continue;
      const PlannedValue& v = value(plan, pn.outputs[i]);
      // What the interpreter makes of a dynamic value is the reference's answer (a Loop's scan
      // output after zero iterations is [0, 0, ...] there, whatever inference said).
      if (interpret && v.dynamic) continue;
      const HostTensor& t = outs[i].tensor;
      bool type_fits = v.dtype == DataType::kUndefined || t.dtype == v.dtype;
      if (!type_fits || !dimsFit(v, t.dims)) {
        mismatched_value = v.name;
        return makeError(StatusCode::kInternal,
                         "output '{}': the plan says {}[{}], the reference kernel made {}[{}]",
                         v.name, dataTypeName(v.dtype), fmt::join(v.dims, ","),
                         dataTypeName(t.dtype), fmt::join(t.dims, ","));
      }
    }
    return outs;
  }

  /// Puts a host-run node's outputs where the plan wants them: non-tensor values and tensors
  /// held on the host (host values, dynamic values) in the run, arena values uploaded.
  Status storeOutputs(RunState& run, const PlannedNode& pn, std::vector<HostValue> outs) {
    const Plan& plan = *run.state.plan;
    for (size_t i = 0; i < outs.size(); ++i) {
      int id = pn.outputs[i];
      if (id < 0) continue;
      if (outs[i].kind != OutputKind::kTensor) {
        run.others[id] = std::move(outs[i]);
        continue;
      }
      auto t = std::make_shared<HostTensor>(std::move(outs[i].tensor));
      const PlannedValue& v = value(plan, id);
      if (v.dynamic || v.location != Location::kArena) {
        run.host[static_cast<size_t>(id)] = std::move(t);
      } else {
        RETURN_IF_ERROR(upload(run, id, std::move(t)));
      }
    }
    return Status::ok();
  }

  /// Uploads the graph inputs (through the plan's pinned staging buffers where it has them).
  Status uploadInputs(RunState& run) {
    PlanState& state = run.state;
    const Plan& plan = *state.plan;
    for (int id : plan.inputs) {
      const PlannedValue& v = value(plan, id);
      if (v.location != Location::kInput) continue;
      auto feed = run.feeds.find(v.name);
      if (feed == run.feeds.end()) {
        auto dev = run.device.find(v.name);
        if (dev == run.device.end()) {
          return makeError(StatusCode::kInternal, "no feed for '{}'", v.name);
        }
        auto buffer = state.input_buffers.find(id);
        if (buffer == state.input_buffers.end() || buffer->second.size() == 0) continue;
        RETURN_IF_ERROR(
            api->copyOnDevice(buffer->second.data(), dev->second.data, buffer->second.size())
                .withContext(fmt::format("copying input '{}' on the device", v.name)));
        continue;
      }
      auto buffer = state.input_buffers.find(id);
      const auto& bytes = feed->second.bytes;
      if (buffer == state.input_buffers.end() || bytes.empty()) continue;
      if (bytes.size() != buffer->second.size()) {
        return makeError(StatusCode::kInternal, "input '{}': {} bytes for a buffer of {}", v.name,
                         bytes.size(), buffer->second.size());
      }
      // The feed outlives the run, so a pageable copy needs no staging; a pinned one is truly
      // asynchronous (the previous run's copy out of it finished at that run's end).
      const void* src = bytes.data();
      if (auto staging = state.input_staging.find(id); staging != state.input_staging.end()) {
        std::memcpy(staging->second.data(), bytes.data(), bytes.size());
        src = staging->second.data();
      }
      RETURN_IF_ERROR(api->copyToDevice(buffer->second.data(), src, bytes.size())
                          .withContext(fmt::format("uploading input '{}'", v.name)));
    }
    return Status::ok();
  }

  /// Runs one step eagerly.
  Status runStep(RunState& run, const Step& step) {
    const Plan& plan = *run.state.plan;
    if (step.kind != Step::Kind::kNode &&
        (value(plan, step.src).dynamic || value(plan, step.dst).dynamic)) {
      // Dynamic values stay on the host: the copy is the same host value.
      if (auto other = run.others.find(step.src); other != run.others.end()) {
        run.others[step.dst] = other->second;
        return Status::ok();
      }
      ASSIGN_OR_RETURN(run.host[static_cast<size_t>(step.dst)], hostData(run, step.src));
      return Status::ok();
    }
    switch (step.kind) {
      case Step::Kind::kCopyToHost: {
        auto t = download(run, step.src);
        if (!t.isOk()) {
          return t.status().withContext(
              fmt::format("copying '{}' to the host", value(plan, step.src).name));
        }
        run.host[static_cast<size_t>(step.dst)] = std::move(t).value();
        return Status::ok();
      }
      case Step::Kind::kCopyToDevice: {
        ASSIGN_OR_RETURN(std::shared_ptr<HostTensor> t, hostData(run, step.src));
        return upload(run, step.dst, std::move(t));
      }
      case Step::Kind::kNode: {
        const PlannedNode& pn = plan.nodes[static_cast<size_t>(step.node)];
        Status st = runNode(run, pn, step.node);
        if (!st.isOk()) return st.withContext(pn.name);
        return Status::ok();
      }
    }
    return Status::ok();
  }

  Status runNode(RunState& run, const PlannedNode& pn, int index) {
    PlanState& state = run.state;
    if (pn.dynamic && !pn.folded) {
      // Shaped at run time: on the host, whose result gives the dims (dynamic values are held on
      // the host; static outputs go where the plan put them).
      ASSIGN_OR_RETURN(std::vector<HostValue> outs, runOnHost(run, pn));
      return storeOutputs(run, pn, std::move(outs));
    }
    switch (pn.placement) {
      case Placement::kView:
        return Status::ok();  // its output shares its input's buffer, on whichever side
      case Placement::kHost:
      case Placement::kCpuFallback: {
        if (pn.folded) return Status::ok();
        ASSIGN_OR_RETURN(std::vector<HostValue> outs, runOnHost(run, pn));
        return storeOutputs(run, pn, std::move(outs));
      }
      case Placement::kDevice:
        break;
    }
    auto it = state.prepared.find(index);
    if (it == state.prepared.end()) {
      return makeError(StatusCode::kInternal, "the device node was not prepared");
    }
    const PreparedNode& prepared = it->second;
    if (prepared.demoted.empty()) return api->launch(prepared.call);
    // Refused at these shapes: the reference kernel on copies, written back to the arena.
    ASSIGN_OR_RETURN(std::vector<HostValue> outs, runOnHost(run, pn));
    return storeOutputs(run, pn, std::move(outs));
  }

  /// Captures the plan's steps (device launches and views only: graphCaptureBlocker said so)
  /// into a graph. A failure leaves the device out of capture mode and nothing captured run.
  StatusOr<std::unique_ptr<cuda_detail::CapturedGraph>> capture(RunState& run) {
    const Plan& plan = *run.state.plan;
    RETURN_IF_ERROR(api->beginCapture());
    for (const Step& step : plan.steps) {
      Status st = runStep(run, step);
      if (!st.isOk()) {
        (void)api->endCapture();  // discarded: the launch's error is the reason
        return st;
      }
    }
    return api->endCapture();
  }

  /// The node steps of a plan that is about to run: replayed from its graph, captured (the
  /// second run of a capturable plan: the first one warms up lazy initializations, which
  /// cannot be captured), or run eagerly.
  Status runSteps(RunState& run, bool record, std::vector<RecordedValue>* recorded) {
    PlanState& state = run.state;
    const Plan& plan = *state.plan;
    bool eager = record || run.profile != nullptr;
    if (!eager && state.graph_mode == GraphMode::kReplay) {
      RETURN_IF_ERROR(api->replay(*state.graph).withContext("replaying the cuda graph"));
      ++state.replays;
      return Status::ok();
    }
    if (!eager && state.graph_mode == GraphMode::kCapture) {
      auto graph = capture(run);
      if (graph.isOk()) {
        state.graph = std::move(graph).value();
        state.graph_mode = GraphMode::kReplay;
        RETURN_IF_ERROR(api->replay(*state.graph).withContext("launching the cuda graph"));
        ++state.replays;
        return Status::ok();
      }
      // Not capturable after all (a kernel that allocates or synchronizes): eager from now on.
      state.graph_mode = GraphMode::kEager;
      state.graph_reason = fmt::format("capture failed: {}", graph.status().message());
    }
    // With `record`: every named node output, in node order, read right after its node ran
    // (the arena reuses its buffer later). Steps follow node order and only folded nodes have
    // none, so after node k's step the nodes not recorded yet below k are folded ones.
    size_t next_to_record = 0;
    auto recordUpTo = [&](size_t end) -> Status {
      for (; next_to_record < end; ++next_to_record) {
        const PlannedNode& pn = plan.nodes[next_to_record];
        for (int id : pn.outputs) {
          // Tensors only, as the reference executor records.
          if (id < 0 || value(plan, id).name.empty() || run.others.count(id)) continue;
          const PlannedValue& v = value(plan, id);
          auto t = v.location == Location::kHost ? hostData(run, id) : download(run, id);
          if (t.isOk()) {
            Status synced = syncHost(run, "recording");
            if (!synced.isOk()) t = synced;
          }
          if (!t.isOk()) return t.status().withContext(fmt::format("recording '{}'", v.name));
          recorded->push_back({v.name, pn.op, **t});
        }
      }
      return Status::ok();
    };
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const Step& step = plan.steps[i];
      bool timed = run.profile != nullptr &&
                   !(step.kind == Step::Kind::kNode &&
                     (plan.nodes[static_cast<size_t>(step.node)].placement == Placement::kView ||
                      plan.nodes[static_cast<size_t>(step.node)].folded));
      size_t start = 0;
      if (timed) {
        ASSIGN_OR_RETURN(start, api->recordMarker());
      }
      RETURN_IF_ERROR(runStep(run, step));
      if (timed) {
        ASSIGN_OR_RETURN(size_t end, api->recordMarker());
        run.timed.push_back({static_cast<int>(i), start, end});
      }
      if (record && step.kind == Step::Kind::kNode) {
        RETURN_IF_ERROR(recordUpTo(static_cast<size_t>(step.node) + 1));
      }
    }
    if (record) RETURN_IF_ERROR(recordUpTo(plan.nodes.size()));
    if (!eager && state.graph_mode == GraphMode::kWarmUp) state.graph_mode = GraphMode::kCapture;
    return Status::ok();
  }

  /// Runs the plan with `feeds`: uploads, steps, downloads, all queued on the stream with a
  /// synchronization only where the host reads device data, and one at the end.
  StatusOr<ExecutionResult> execute(PlanState& state, const Feeds& feeds, const DeviceFeeds& device,
                                    bool record, std::vector<CudaExecutor::StepTime>* profile) {
    RunState run{state, feeds, device, {}, {}, {}, false, profile, {}};
    run.host.resize(state.plan->values.size());
    api->clearMarkers();
    auto result = executeQueued(run, record);
    if (!result.isOk()) {
      // Nothing queued may outlive the buffers it reads and writes.
      (void)api->synchronize("the failed run");
      return result;
    }
    return result;
  }

  StatusOr<ExecutionResult> executeQueued(RunState& run, bool record) {
    PlanState& state = run.state;
    const Plan& plan = *state.plan;
    if (options.poison_byte >= 0 && plan.arena_bytes > 0) {
      RETURN_IF_ERROR(api->fill(state.arena.data(), options.poison_byte,
                                static_cast<size_t>(plan.arena_bytes)));
    }
    RETURN_IF_ERROR(uploadInputs(run));
    ExecutionResult result;
    std::vector<RecordedValue> recorded;
    // CudaOptions::time_compute: markers around the node steps (profiled runs time each step).
    bool timed = options.time_compute && !record && run.profile == nullptr;
    size_t compute_start = 0, compute_end = 0;
    last_compute_ms.reset();
    if (timed) {
      ASSIGN_OR_RETURN(compute_start, api->recordMarker());
    }
    RETURN_IF_ERROR(runSteps(run, record, &recorded));
    if (timed) {
      ASSIGN_OR_RETURN(compute_end, api->recordMarker());
    }

    // The outputs: device ones queued (into pinned staging where the plan has it), then one
    // synchronization, then the host ones.
    result.names.resize(plan.outputs.size());
    result.outputs.resize(plan.outputs.size());
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      int id = plan.outputs[i];
      const PlannedValue& v = value(plan, id);
      result.names[i] = v.name;
      if (v.location != Location::kArena || v.dynamic) continue;
      // In place before the copy is queued: a moved HostTensor may move its bytes.
      result.outputs[i] = HostTensor::zeros(v.dtype, v.dims);
      HostTensor& t = result.outputs[i];
      if (!t.bytes.empty()) {
        auto ptr = devicePtr(state, id);
        if (!ptr.isOk())
          return ptr.status().withContext(fmt::format("reading output '{}'", v.name));
        auto staging = state.output_staging.find(id);
        void* dst = staging != state.output_staging.end() ? staging->second.data() : t.bytes.data();
        RETURN_IF_ERROR(api->copyToHost(dst, *ptr, t.bytes.size())
                            .withContext(fmt::format("reading output '{}'", v.name)));
      }
    }
    RETURN_IF_ERROR(api->synchronize("the run"));
    run.pending = false;
    if (timed) {
      ASSIGN_OR_RETURN(double ms, api->elapsedMs(compute_start, compute_end));
      last_compute_ms = ms;
    }
    if (run.profile != nullptr) {
      for (const RunState::Timed& t : run.timed) {
        CudaExecutor::StepTime time = describeStep(plan, plan.steps[static_cast<size_t>(t.step)]);
        ASSIGN_OR_RETURN(time.ms, api->elapsedMs(t.start, t.end));
        run.profile->push_back(std::move(time));
      }
    }
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      int id = plan.outputs[i];
      const PlannedValue& v = value(plan, id);
      if (v.location == Location::kArena && !v.dynamic) {
        auto staging = state.output_staging.find(id);
        if (staging != state.output_staging.end() && !result.outputs[i].bytes.empty()) {
          std::memcpy(result.outputs[i].bytes.data(), staging->second.data(),
                      result.outputs[i].bytes.size());
        }
        continue;
      }
      if (auto other = run.others.find(id); other != run.others.end()) {
        // A sequence or an empty optional: ExecutionResult's kinds and sequences hold it.
        result.kinds.resize(plan.outputs.size(), OutputKind::kTensor);
        result.sequences.resize(plan.outputs.size());
        result.kinds[i] = other->second.kind;
        result.sequences[i] = std::move(other->second.sequence);
        result.outputs[i].dtype = other->second.seq_type;
        continue;
      }
      auto t = hostData(run, id);
      if (!t.isOk()) return t.status().withContext(fmt::format("reading output '{}'", v.name));
      result.outputs[i] = **t;
    }
    if (record) result.intermediates = std::move(recorded);
    return result;
  }
};

CudaExecutor::CudaExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaExecutor::~CudaExecutor() = default;

StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::create(const ir::Model& model,
                                                             const CudaOptions& options) {
  if (model.graph == nullptr) return invalidArgument("the model has no graph");
  ASSIGN_OR_RETURN(std::unique_ptr<cuda_detail::DeviceApi> api,
                   cuda_detail::createCudaDeviceApi(options.device_id));
  return createOn(model, options, std::move(api));
}

StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::createOn(
    const ir::Model& model, const CudaOptions& options,
    std::unique_ptr<cuda_detail::DeviceApi> device) {
  if (model.graph == nullptr) return invalidArgument("the model has no graph");
  if (device == nullptr) return invalidArgument("no device");
  // Weights without data (a stripped model) are refused before any plan; an input's default only
  // when a run reads it (checkCudaFeeds).
  RETURN_IF_ERROR(checkRunData(*model.graph, [](const ir::Value&) { return true; }));
  auto impl = std::make_unique<Impl>();
  impl->api = std::move(device);
  impl->model = &model;
  impl->options = options;
  auto info = impl->api->probe();
  if (!info.isOk()) {
    return info.status().withContext(
        fmt::format("cuda runner: no usable CUDA device {}", options.device_id));
  }
  impl->device = std::move(info).value();
  impl->last_thread = std::this_thread::get_id();
  const ir::Model* m = &model;
  PlanOptions plan_options = options.plan;
  const std::set<std::string>* distrusted = &impl->shaped_at_run_time;
  impl->cache = std::make_unique<PlanCache>(
      [m, plan_options, distrusted](const InputShapes& shapes) {
        PlanOptions o = plan_options;
        o.shaped_at_run_time.insert(distrusted->begin(), distrusted->end());
        return buildPlan(*m, shapes, kernels::cudaCapabilities(), o);
      },
      options.plan_cache_capacity);
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(std::move(impl)));
}

bool cudaRunsTargetCall(const ir::Model& model, const ir::Node& call) {
  // Ours (ai.onnxopt) and plugins' ops: a standard op's call is always its body.
  if (call.domain().empty() || call.domain() == "ai.onnx") return false;
  int64_t opset = model.opsetVersion(call.domain()).value_or(0);
  return static_cast<bool>(kernels::cudaCapabilities().supports(bridge::opQuery(call, opset)));
}

StatusOr<ExecutionResult> CudaExecutor::run(const Feeds& inputs, const ExecutionOptions& options) {
  return runWith(inputs, {}, options, nullptr);
}

StatusOr<ExecutionResult> CudaExecutor::run(const Feeds& inputs, const DeviceFeeds& device,
                                            const ExecutionOptions& options) {
  return runWith(inputs, device, options, nullptr);
}

void* CudaExecutor::stream() const {
  return impl_->api->nativeStream();
}

StatusOr<ExecutionResult> CudaExecutor::runProfiled(const Feeds& inputs,
                                                    std::vector<StepTime>* times) {
  if (times == nullptr) return invalidArgument("runProfiled: no vector for the times");
  times->clear();
  return runWith(inputs, {}, {}, times);
}

StatusOr<ExecutionResult> CudaExecutor::runWith(const Feeds& inputs, const DeviceFeeds& device,
                                                const ExecutionOptions& options,
                                                std::vector<StepTime>* profile) {
  ASSIGN_OR_RETURN(InputShapes shapes, checkCudaFeeds(*impl_->model, inputs, device));
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (std::this_thread::get_id() != impl_->last_thread) {
    // CUDA's current device is per thread: select ours on this one.
    RETURN_IF_ERROR(impl_->api->probe().status());
    impl_->last_thread = std::this_thread::get_id();
  }
  // The reference executor takes host tensors: device inputs are copied down for it.
  auto onReference = [&](const Status& why) -> StatusOr<ExecutionResult> {
    if (device.empty()) return impl_->runOnReference(inputs, options, why);
    ASSIGN_OR_RETURN(Feeds all, impl_->withHostCopies(inputs, device));
    return impl_->runOnReference(all, options, why);
  };
  PlanState* state = nullptr;
  StatusOr<ExecutionResult> executed = Status::ok();
  // A host-run node whose dims contradict the plan's (a declared shape no input makes) re-plans
  // with that value shaped at run time, once per value: bounded by the model's values. A value
  // contradicted again (its type, not its dims) sends the runs at this signature to the reference.
  for (;;) {
    auto planned = impl_->stateFor(shapes);
    if (!planned.isOk()) {
      // What the plan cannot represent (an op or value the lowering does not know) still runs, on
      // the CPU; bad inputs, weights without data and out-of-memory stay errors.
      StatusCode code = planned.status().code();
      if (code == StatusCode::kUnimplemented || code == StatusCode::kInternal) {
        return onReference(planned.status());
      }
      return planned.status();
    }
    state = *planned;
    if (!state->reference_only.empty()) {
      return onReference(Status(StatusCode::kInternal, state->reference_only));
    }
    impl_->mismatched_value.reset();
    impl_->run_limits = options.limits;
    executed = impl_->execute(*state, inputs, device, options.record_intermediates, profile);
    if (executed.isOk()) break;
    if (!impl_->mismatched_value) return executed.status();
    if (!impl_->shaped_at_run_time.insert(*impl_->mismatched_value).second) {
      state->reference_only = executed.status().message();
      return onReference(executed.status());
    }
    // Every plan assumed the contradicted dims: all are built again.
    impl_->states.clear();
    impl_->cache->clear();
    if (profile != nullptr) profile->clear();
  }
  ExecutionResult result = std::move(executed).value();
  if (options.non_tensor_outputs) {
    result.kinds.resize(result.outputs.size(), OutputKind::kTensor);
    result.sequences.resize(result.outputs.size());
  } else {
    for (size_t i = 0; i < result.kinds.size(); ++i) {
      if (result.kinds[i] != OutputKind::kTensor) {
        return makeError(StatusCode::kUnimplemented,
                         "output '{}' is {}: the executor returns tensor outputs only",
                         result.names[i],
                         result.kinds[i] == OutputKind::kSequence ? "a sequence" : "empty");
      }
    }
    result.kinds.clear();
    result.sequences.clear();
  }
  impl_->last_plan = state->plan;
  impl_->last_summary = state->plan->summary();
  for (const std::string& name : impl_->shaped_at_run_time) {
    impl_->last_summary += fmt::format(
        "shaped at run time: '{}' (a run's data contradicted its declared dims)\n", name);
  }
  for (const std::string& d : state->demoted) {
    impl_->last_summary += fmt::format("refused at these shapes, ran on the CPU: {}\n", d);
  }
  impl_->last_workspace = static_cast<int64_t>(state->workspace_bytes);
  impl_->last_graph = graphStateText(*state);
  impl_->last_summary += fmt::format(
      "workspace: {} bytes (one region shared by the device nodes)\n", state->workspace_bytes);
  impl_->last_summary += fmt::format("cuda graph: {}\n", impl_->last_graph);
  return result;
}

const kernels::CudaDeviceInfo& CudaExecutor::device() const {
  return impl_->device;
}
int64_t CudaExecutor::planHits() const {
  return impl_->cache->hits();
}
int64_t CudaExecutor::planMisses() const {
  return impl_->cache->misses();
}
int64_t CudaExecutor::uploadedWeightBytes() const {
  return impl_->weight_bytes;
}
std::shared_ptr<const Plan> CudaExecutor::lastPlan() const {
  return impl_->last_plan;
}
std::string CudaExecutor::lastSummary() const {
  return impl_->last_summary;
}
std::string CudaExecutor::cudaGraphState() const {
  return impl_->last_graph;
}
int64_t CudaExecutor::workspaceBytes() const {
  return impl_->last_workspace;
}
std::optional<double> CudaExecutor::lastComputeMs() const {
  return impl_->last_compute_ms;
}

StatusOr<std::unique_ptr<Executor>> createCudaExecutor(const ir::Model& model,
                                                       const CudaOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor, CudaExecutor::create(model, options));
  return std::unique_ptr<Executor>(std::move(executor));
}

}  // namespace onnxopt::runtime
