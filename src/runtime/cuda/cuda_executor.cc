// The CUDA executor (cuda_executor.h): a plain loop over a Plan's steps. Device nodes launch their
// kernel on views into the plan's arena, host and CPU-fallback nodes run the reference kernels on
// host tensors, copy steps move values across, views alias. Everything a step needs (pointers,
// kernel calls, workspace) is prepared once per plan; a run only uploads inputs and launches.
#include "onnxopt/runtime/cuda_executor.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
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

namespace onnxopt::runtime {

using cuda_detail::DeviceMemory;
using kernels::HostTensor;

StatusOr<InputShapes> checkCudaFeeds(const ir::Model& model, const Feeds& feeds) {
  if (model.graph == nullptr) return invalidArgument("the model has no graph");
  const ir::Graph& g = *model.graph;
  std::vector<std::string> names;
  for (const ir::Value* in : g.inputs()) names.push_back(in->name());
  for (const auto& [name, t] : feeds) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return invalidArgument("'{}' is not an input of the model (its inputs: {})", name,
                             fmt::join(names, ", "));
    }
  }
  InputShapes shapes;
  for (const ir::Value* in : g.inputs()) {
    auto it = feeds.find(in->name());
    if (it == feeds.end()) {
      if (in->initializer() != nullptr) continue;
      return invalidArgument("input '{}' is missing", in->name());
    }
    const HostTensor& t = it->second;
    const ir::Type& type = in->type();
    if (type.isTensor() && type.elem_type != DataType::kUndefined && t.dtype != type.elem_type) {
      return invalidArgument("input '{}' is {}, but a {} tensor was given", in->name(),
                             dataTypeName(type.elem_type), dataTypeName(t.dtype));
    }
    for (int64_t d : t.dims) {
      if (d < 0) {
        return invalidArgument("input '{}': dims [{}] are not sizes", in->name(),
                               fmt::join(t.dims, ","));
      }
    }
    if (type.isTensor() && type.shape) {
      const auto& declared = *type.shape;
      if (declared.size() != t.dims.size()) {
        return invalidArgument("input '{}' has rank {}, but a tensor of dims [{}] was given",
                               in->name(), declared.size(), fmt::join(t.dims, ","));
      }
      for (size_t d = 0; d < declared.size(); ++d) {
        if (declared[d].isKnown() && declared[d].value != t.dims[d]) {
          return invalidArgument("input '{}': dim {} is {}, but {} was given", in->name(), d,
                                 declared[d].value, t.dims[d]);
        }
      }
    }
    if (t.dtype == DataType::kString) {
      if (static_cast<int64_t>(t.strings.size()) != t.numElements()) {
        return invalidArgument("input '{}': {} strings for dims [{}]", in->name(), t.strings.size(),
                               fmt::join(t.dims, ","));
      }
    } else {
      auto bytes = dataTypeStorageBytes(t.dtype, static_cast<uint64_t>(t.numElements()));
      if (!bytes || *bytes != t.bytes.size()) {
        return invalidArgument("input '{}': {} bytes of data for {}[{}]", in->name(),
                               t.bytes.size(), dataTypeName(t.dtype), fmt::join(t.dims, ","));
      }
    }
    shapes[in->name()] = {t.dtype, t.dims};
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
  uint64_t last_used = 0;
};

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
  std::thread::id last_thread;
  std::mutex mu;

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
    return makeError(StatusCode::kInternal, "constant '{}' has no data", v.name);
  }

  /// Uploads the constants the plan's device side reads: initializers once per session, folded
  /// values once per plan.
  Status uploadConstants(PlanState& state) {
    const Plan& plan = *state.plan;
    for (size_t id = 0; id < plan.values.size(); ++id) {
      const PlannedValue& v = plan.values[id];
      if (v.location != Location::kConstant || !v.upload || v.base >= 0) continue;
      const ir::Value* src = v.source;
      bool initializer = src != nullptr && src->initializer() != nullptr;
      if (initializer) {
        if (auto it = weights.find(src); it != weights.end()) {
          state.constant_ptrs[static_cast<int>(id)] = it->second.data();
          continue;
        }
      }
      ASSIGN_OR_RETURN(HostTensor data, constantData(plan, static_cast<int>(id)));
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
    // The uploads read host memory that goes away when `data` does: finish them here.
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

  /// Checks what the executor does not support yet and prepares every device node's call.
  Status prepare(PlanState& state) {
    const Plan& plan = *state.plan;
    for (const Step& step : plan.steps) {
      if (step.kind != Step::Kind::kNode) continue;
      const PlannedNode& pn = plan.nodes[static_cast<size_t>(step.node)];
      if (pn.dynamic) {
        return makeError(StatusCode::kUnimplemented,
                         "{}: its shapes are known only at run time, which the cuda runner does "
                         "not support yet",
                         pn.name);
      }
      if (pn.node != nullptr && !pn.node->subgraphs().empty() &&
          pn.placement != Placement::kDevice) {
        return makeError(
            StatusCode::kUnimplemented,
            "{}: ops with subgraphs (If, Loop, Scan) do not run on the cuda runner yet", pn.name);
      }
    }
    for (const PlannedValue& v : plan.values) {
      if (v.dynamic) {
        return makeError(StatusCode::kUnimplemented,
                         "value '{}' is known only at run time, which the cuda runner does not "
                         "support yet",
                         v.name);
      }
    }
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
      if (pn.placement != Placement::kDevice) continue;
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
      for (const std::optional<HostTensor>& c : prepared.constants) {
        call.constant_inputs.push_back(c ? &*c : nullptr);
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
    for (auto& [index, prepared] : state.prepared) {
      prepared.call.workspace = state.workspace.data();
      prepared.call.workspace_bytes = state.workspace.size();
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

  /// Runs the plan's steps with `feeds`; host values are kept in `host` by value id.
  StatusOr<ExecutionResult> execute(PlanState& state, const Feeds& feeds, bool record) {
    const Plan& plan = *state.plan;
    std::vector<std::optional<HostTensor>> host(plan.values.size());

    if (options.poison_byte >= 0 && plan.arena_bytes > 0) {
      RETURN_IF_ERROR(api->fill(state.arena.data(), options.poison_byte,
                                static_cast<size_t>(plan.arena_bytes)));
    }
    for (int id : plan.inputs) {
      const PlannedValue& v = value(plan, id);
      if (v.location != Location::kInput) continue;
      auto feed = feeds.find(v.name);
      if (feed == feeds.end()) return makeError(StatusCode::kInternal, "no feed for '{}'", v.name);
      auto buffer = state.input_buffers.find(id);
      if (buffer == state.input_buffers.end() || feed->second.bytes.empty()) continue;
      if (feed->second.bytes.size() != buffer->second.size()) {
        return makeError(StatusCode::kInternal, "input '{}': {} bytes for a buffer of {}", v.name,
                         feed->second.bytes.size(), buffer->second.size());
      }
      RETURN_IF_ERROR(api->copyToDevice(buffer->second.data(), feed->second.bytes.data(),
                                        feed->second.bytes.size())
                          .withContext(fmt::format("uploading input '{}'", v.name)));
    }

    // The host data of value `id` (host values, constants, views of them, or a graph input).
    auto hostData = [&](int id) -> StatusOr<HostTensor> {
      const PlannedValue& v = value(plan, id);
      if (v.location == Location::kConstant) return constantData(plan, id);
      if (v.location == Location::kInput) {
        auto feed = feeds.find(value(plan, rootOf(plan, id)).name);
        if (feed == feeds.end())
          return makeError(StatusCode::kInternal, "no feed for '{}'", v.name);
        return withDims(feed->second, v.dims);
      }
      for (int at = id; at >= 0; at = value(plan, at).base) {
        if (host[static_cast<size_t>(at)]) return withDims(*host[static_cast<size_t>(at)], v.dims);
      }
      return makeError(StatusCode::kInternal, "host value '{}' was read before it was computed",
                       v.name);
    };
    // Copies device value `id` down (after the work before it on the stream).
    auto download = [&](int id) -> StatusOr<HostTensor> {
      const PlannedValue& v = value(plan, id);
      if (v.location == Location::kInput || v.location == Location::kConstant) return hostData(id);
      ASSIGN_OR_RETURN(void* ptr, devicePtr(state, id));
      HostTensor t = HostTensor::zeros(v.dtype, v.dims);
      if (!t.bytes.empty()) {
        RETURN_IF_ERROR(api->copyToHost(t.bytes.data(), ptr, t.bytes.size()));
        RETURN_IF_ERROR(api->synchronize(fmt::format("copying '{}' to the host", v.name)));
      }
      return t;
    };
    // Runs node `pn` on the reference kernels; `read` gives each input's host data.
    auto runOnHost = [&](const PlannedNode& pn,
                         const std::function<StatusOr<HostTensor>(int)>& read)
        -> StatusOr<std::vector<HostTensor>> {
      std::vector<HostTensor> inputs(pn.inputs.size());
      std::vector<const HostTensor*> ptrs(pn.inputs.size(), nullptr);
      for (size_t i = 0; i < pn.inputs.size(); ++i) {
        if (pn.inputs[i] < 0) continue;
        ASSIGN_OR_RETURN(inputs[i], read(pn.inputs[i]));
        ptrs[i] = &inputs[i];
      }
      ASSIGN_OR_RETURN(std::vector<HostTensor> outs,
                       kernels::runReferenceKernel(kernels::referenceOpName(pn.domain, pn.op),
                                                   pn.opset, ptrs, pn.attrs, pn.outputs.size()));
      if (outs.size() != pn.outputs.size()) {
        return makeError(StatusCode::kInternal, "the reference kernel returned {} outputs, not {}",
                         outs.size(), pn.outputs.size());
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        if (pn.outputs[i] < 0) continue;
        const PlannedValue& v = value(plan, pn.outputs[i]);
        if (outs[i].dtype != v.dtype || outs[i].dims != v.dims) {
          return makeError(StatusCode::kInternal,
                           "output '{}': the plan says {}[{}], the reference kernel made {}[{}]",
                           v.name, dataTypeName(v.dtype), fmt::join(v.dims, ","),
                           dataTypeName(outs[i].dtype), fmt::join(outs[i].dims, ","));
        }
      }
      return outs;
    };

    // With `record`: every named node output, in node order, read right after its node ran
    // (the arena reuses its buffer later). Steps follow node order and only folded nodes have
    // none, so after node k's step the nodes not recorded yet below k are folded ones.
    std::vector<RecordedValue> recorded;
    size_t next_to_record = 0;
    auto recordUpTo = [&](size_t end) -> Status {
      for (; next_to_record < end; ++next_to_record) {
        const PlannedNode& pn = plan.nodes[next_to_record];
        for (int id : pn.outputs) {
          if (id < 0 || value(plan, id).name.empty()) continue;
          const PlannedValue& v = value(plan, id);
          auto t = v.location == Location::kHost ? hostData(id) : download(id);
          if (!t.isOk()) return t.status().withContext(fmt::format("recording '{}'", v.name));
          recorded.push_back({v.name, pn.op, std::move(t).value()});
        }
      }
      return Status::ok();
    };

    for (const Step& step : plan.steps) {
      switch (step.kind) {
        case Step::Kind::kCopyToHost: {
          auto t = download(step.src);
          if (!t.isOk()) {
            return t.status().withContext(
                fmt::format("copying '{}' to the host", value(plan, step.src).name));
          }
          host[static_cast<size_t>(step.dst)] = std::move(t).value();
          break;
        }
        case Step::Kind::kCopyToDevice: {
          const PlannedValue& dst = value(plan, step.dst);
          ASSIGN_OR_RETURN(HostTensor t, hostData(step.src));
          ASSIGN_OR_RETURN(void* ptr, devicePtr(state, step.dst));
          if (static_cast<int64_t>(t.bytes.size()) != dst.bytes) {
            return makeError(StatusCode::kInternal, "copying '{}' to the device: {} bytes, not {}",
                             dst.name, t.bytes.size(), dst.bytes);
          }
          if (!t.bytes.empty()) {
            RETURN_IF_ERROR(api->copyToDevice(ptr, t.bytes.data(), t.bytes.size())
                                .withContext(fmt::format("copying '{}' to the device", dst.name)));
            // Pageable copies return once the source was read, but finish before `t` goes.
            RETURN_IF_ERROR(api->synchronize(fmt::format("copying '{}' to the device", dst.name)));
          }
          break;
        }
        case Step::Kind::kNode: {
          const PlannedNode& pn = plan.nodes[static_cast<size_t>(step.node)];
          Status st = runNode(state, pn, step.node, host, hostData, download, runOnHost);
          if (!st.isOk()) return st.withContext(pn.name);
          if (record) RETURN_IF_ERROR(recordUpTo(static_cast<size_t>(step.node) + 1));
          break;
        }
      }
    }

    ExecutionResult result;
    for (int id : plan.outputs) {
      const PlannedValue& v = value(plan, id);
      result.names.push_back(v.name);
      auto t = v.location == Location::kHost ? hostData(id) : download(id);
      if (!t.isOk()) return t.status().withContext(fmt::format("reading output '{}'", v.name));
      result.outputs.push_back(std::move(t).value());
    }
    if (record) {
      RETURN_IF_ERROR(recordUpTo(plan.nodes.size()));
      result.intermediates = std::move(recorded);
    }
    RETURN_IF_ERROR(api->synchronize("the run"));
    return result;
  }

  template <typename HostData, typename Download, typename RunOnHost>
  Status runNode(PlanState& state, const PlannedNode& pn, int index,
                 std::vector<std::optional<HostTensor>>& host, HostData& hostData,
                 Download& download, RunOnHost& runOnHost) {
    const Plan& plan = *state.plan;
    switch (pn.placement) {
      case Placement::kView:
        return Status::ok();  // its output shares its input's buffer, on whichever side
      case Placement::kHost:
      case Placement::kCpuFallback: {
        if (pn.folded) return Status::ok();
        ASSIGN_OR_RETURN(std::vector<HostTensor> outs, runOnHost(pn, hostData));
        for (size_t i = 0; i < outs.size(); ++i) {
          if (pn.outputs[i] >= 0) host[static_cast<size_t>(pn.outputs[i])] = std::move(outs[i]);
        }
        return Status::ok();
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
    ASSIGN_OR_RETURN(std::vector<HostTensor> outs, runOnHost(pn, download));
    for (size_t i = 0; i < outs.size(); ++i) {
      if (pn.outputs[i] < 0 || outs[i].bytes.empty()) continue;
      ASSIGN_OR_RETURN(void* ptr, devicePtr(state, pn.outputs[i]));
      RETURN_IF_ERROR(api->copyToDevice(ptr, outs[i].bytes.data(), outs[i].bytes.size()));
      RETURN_IF_ERROR(api->synchronize(
          fmt::format("copying '{}' to the device", value(plan, pn.outputs[i]).name)));
    }
    return Status::ok();
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
  impl->cache = std::make_unique<PlanCache>(
      [m, plan_options](const InputShapes& shapes) {
        return buildPlan(*m, shapes, kernels::cudaCapabilities(), plan_options);
      },
      options.plan_cache_capacity);
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(std::move(impl)));
}

StatusOr<ExecutionResult> CudaExecutor::run(const Feeds& inputs, const ExecutionOptions& options) {
  ASSIGN_OR_RETURN(InputShapes shapes, checkCudaFeeds(*impl_->model, inputs));
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (std::this_thread::get_id() != impl_->last_thread) {
    // CUDA's current device is per thread: select ours on this one.
    RETURN_IF_ERROR(impl_->api->probe().status());
    impl_->last_thread = std::this_thread::get_id();
  }
  ASSIGN_OR_RETURN(PlanState * state, impl_->stateFor(shapes));
  ASSIGN_OR_RETURN(ExecutionResult result,
                   impl_->execute(*state, inputs, options.record_intermediates));
  if (options.non_tensor_outputs) {
    result.kinds.assign(result.outputs.size(), OutputKind::kTensor);
    result.sequences.resize(result.outputs.size());
  }
  impl_->last_plan = state->plan;
  impl_->last_summary = state->plan->summary();
  for (const std::string& d : state->demoted) {
    impl_->last_summary += fmt::format("refused at these shapes, ran on the CPU: {}\n", d);
  }
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

StatusOr<std::unique_ptr<Executor>> createCudaExecutor(const ir::Model& model,
                                                       const CudaOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor, CudaExecutor::create(model, options));
  return std::unique_ptr<Executor>(std::move(executor));
}

}  // namespace onnxopt::runtime
