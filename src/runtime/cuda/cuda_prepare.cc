// A plan's device state (executor_impl.h), made once per plan: the arena and the input
// buffers, the constants uploaded, every device node's call bound to its buffers (or demoted to
// the CPU where the kernel refuses its shapes), the one workspace, and pinned staging.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "executor_impl.h"

namespace onnxopt::runtime {

using cuda_detail::DeviceMemory;
using cuda_detail::GraphMode;
using cuda_detail::PlanState;
using cuda_detail::PreparedNode;
using cuda_detail::rootOf;
using kernels::HostTensor;

StatusOr<void*> CudaExecutor::Impl::devicePtr(const PlanState& state, int id) const {
  const Plan& plan = *state.plan;
  const PlannedValue& v = value(plan, id);
  int root = rootOf(plan, id);
  if (auto bound = state.bound.find(root); bound != state.bound.end()) return bound->second;
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

Status CudaExecutor::Impl::prepare(PlanState& state) {
  RETURN_IF_ERROR(allocateArena(state));
  RETURN_IF_ERROR(uploadConstants(state));
  return bindNodes(state);
}

Status CudaExecutor::Impl::bindNodes(PlanState& state) {
  const Plan& plan = *state.plan;
  RETURN_IF_ERROR(allocateInputs(state));
  state.prepared.clear();
  state.demoted.clear();
  state.graph.reset();
  state.replays = 0;
  size_t workspace = 0;
  for (const Step& step : plan.steps) {
    if (step.kind != Step::Kind::kNode) continue;
    const PlannedNode& pn = plan.nodes[static_cast<size_t>(step.node)];
    // Dynamic nodes run on the CPU at run time (runDynamic): nothing to prepare.
    if (pn.placement != Placement::kDevice || pn.dynamic) continue;
    RETURN_IF_ERROR(prepareNode(state, step.node, &workspace));
  }
  RETURN_IF_ERROR(allocateWorkspace(state, workspace));
  allocateStaging(state);
  if (options.cuda_graphs) {
    state.graph_reason = cuda_detail::graphCaptureBlocker(state);
    state.graph_mode = state.graph_reason.empty() ? GraphMode::kWarmUp : GraphMode::kEager;
  }
  return Status::ok();
}

Status CudaExecutor::Impl::allocateArena(PlanState& state) {
  const Plan& plan = *state.plan;
  if (plan.arena_bytes > 0) {
    auto arena = DeviceMemory::allocate(*api, static_cast<size_t>(plan.arena_bytes));
    if (!arena.isOk()) {
      return arena.status().withContext(
          fmt::format("allocating the device arena of {} bytes", plan.arena_bytes));
    }
    state.arena = std::move(arena).value();
  }
  return Status::ok();
}

Status CudaExecutor::Impl::allocateInputs(PlanState& state) {
  const Plan& plan = *state.plan;
  for (int id : plan.inputs) {
    const PlannedValue& v = value(plan, id);
    if (v.location != Location::kInput) continue;  // an input default: a constant
    if (v.dtype == DataType::kString) continue;    // host only (copied down by the host)
    if (state.bound.count(id) || state.input_buffers.count(id)) continue;
    auto buffer = DeviceMemory::allocate(*api, static_cast<size_t>(v.bytes));
    if (!buffer.isOk()) {
      return buffer.status().withContext(fmt::format("allocating input '{}'", v.name));
    }
    state.input_buffers.emplace(id, std::move(buffer).value());
  }
  return Status::ok();
}

Status CudaExecutor::Impl::prepareNode(PlanState& state, int index, size_t* workspace) {
  const Plan& plan = *state.plan;
  const PlannedNode& pn = plan.nodes[static_cast<size_t>(index)];
  PreparedNode prepared;
  kernels::CudaKernelCall& call = prepared.call;
  call.domain = pn.domain;
  call.op = pn.op;
  call.opset = pn.opset;
  call.attrs = &pn.attrs;
  // Each operand a view of its device buffer (an absent optional one: an empty view).
  auto bind = [&](const std::vector<int>& ids, auto& views) -> Status {
    for (int id : ids) {
      if (id < 0) {
        views.emplace_back();
        continue;
      }
      const PlannedValue& v = value(plan, id);
      auto ptr = devicePtr(state, id);
      if (!ptr.isOk()) return ptr.status().withContext(pn.name);
      views.emplace_back(v.dtype, v.dims, kernels::contiguousStrides(v.dims), *ptr,
                         kernels::MemoryKind::kDevice);
    }
    return Status::ok();
  };
  RETURN_IF_ERROR(bind(pn.inputs, call.inputs));
  RETURN_IF_ERROR(bind(pn.outputs, call.outputs));
  // Constant inputs (and value inputs' data) are also readable on the host, where kernels take
  // small operands.
  for (int id : pn.inputs) {
    prepared.constants.push_back(id >= 0 ? hostOperand(plan, id) : std::nullopt);
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
  auto kernel = api->prepare(call);
  if (!kernel.isOk()) return kernel.status().withContext(pn.name);
  const kernels::Support& support = (*kernel)->support();
  if (!support) {
    prepared.demoted = support.reason.empty() ? "refused by the kernel" : support.reason;
    state.demoted.push_back(fmt::format("{}: {}", pn.name, prepared.demoted));
  } else {
    *workspace = std::max(*workspace, (*kernel)->workspaceBytes());
    prepared.kernel = std::move(kernel).value();
  }
  state.prepared.emplace(index, std::move(prepared));
  return Status::ok();
}

Status CudaExecutor::Impl::allocateWorkspace(PlanState& state, size_t workspace) {
  if (workspace > state.workspace.size()) {
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
    if (prepared.kernel)
      prepared.kernel->setWorkspace(state.workspace.data(), state.workspace.size());
  }
  return Status::ok();
}

void CudaExecutor::Impl::allocateStaging(PlanState& state) {
  const Plan& plan = *state.plan;
  // Pinned staging: a failure to get it is no error (the copies then read and write the
  // caller's pageable memory, which is slower, not wrong).
  for (int id : plan.inputs) {
    auto buffer = state.input_buffers.find(id);
    if (buffer == state.input_buffers.end() || buffer->second.size() == 0) continue;
    if (state.input_staging.count(id)) continue;
    auto staging = DeviceMemory::allocateHost(*api, buffer->second.size());
    if (staging.isOk()) state.input_staging.emplace(id, std::move(staging).value());
  }
  for (int id : plan.outputs) {
    const PlannedValue& v = value(plan, id);
    if (v.location != Location::kArena || v.bytes <= 0 || state.output_staging.count(id) ||
        state.bound.count(rootOf(plan, id))) {
      continue;
    }
    auto staging = DeviceMemory::allocateHost(*api, static_cast<size_t>(v.bytes));
    if (staging.isOk()) state.output_staging.emplace(id, std::move(staging).value());
  }
}

StatusOr<PlanState*> CudaExecutor::Impl::stateFor(const InputShapes& shapes,
                                                  const DeviceFeeds& device,
                                                  const DeviceBinding* binding) {
  ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan, cache->get(shapes));
  std::map<int, void*> bound = bindingFor(*plan, device, binding);
  std::string key = inputSignature(shapes);
  auto it = states.find(key);
  if (it != states.end() && it->second.plan == plan) {
    PlanState& known = it->second;
    known.last_used = ++clock;
    if (known.bound != bound) {
      // Other caller buffers than the kernels were prepared with: prepared again for these.
      known.bound = std::move(bound);
      if (Status st = bindNodes(known); !st.isOk()) {
        states.erase(it);  // half prepared: made again by the next run at this signature
        return st;
      }
    }
    return &known;
  }
  if (it != states.end()) states.erase(it);  // its plan was evicted and built again
  // Keep device state for at most as many plans as the cache holds.
  while (!states.empty() && states.size() >= cache->capacity()) {
    auto oldest = std::min_element(states.begin(), states.end(), [](const auto& a, const auto& b) {
      return a.second.last_used < b.second.last_used;
    });
    states.erase(oldest);
  }
  PlanState state;
  state.plan = std::move(plan);
  state.bound = std::move(bound);
  state.last_used = ++clock;
  RETURN_IF_ERROR(prepare(state));
  return &states.emplace(key, std::move(state)).first->second;
}

kernels::Support CudaExecutor::Impl::checkWhilePlanning(const Plan& plan,
                                                        const PlannedNode& pn) const {
  kernels::CudaKernelCall call;
  call.domain = pn.domain;
  call.op = pn.op;
  call.opset = pn.opset;
  call.attrs = &pn.attrs;
  std::vector<std::optional<HostTensor>> constants;
  for (int id : pn.inputs) {
    if (id < 0) {
      call.inputs.emplace_back();
      constants.emplace_back();
      continue;
    }
    const PlannedValue& v = value(plan, id);
    call.inputs.emplace_back(v.dtype, v.dims, kernels::contiguousStrides(v.dims), nullptr,
                             kernels::MemoryKind::kDevice);
    constants.push_back(hostOperand(plan, id));
  }
  for (int id : pn.outputs) {
    if (id < 0) {
      call.outputs.emplace_back();
      continue;
    }
    const PlannedValue& v = value(plan, id);
    call.outputs.emplace_back(v.dtype, v.dims, kernels::contiguousStrides(v.dims), nullptr,
                              kernels::MemoryKind::kDevice);
  }
  for (const std::optional<HostTensor>& c : constants) {
    call.constant_inputs.push_back(c ? &*c : nullptr);
  }
  return api->canImplement(call);
}

}  // namespace onnxopt::runtime
