// A run of a prepared plan (executor_impl.h): the graph inputs uploaded (through pinned
// staging), the steps run in order (device launches, host-run nodes, copies, views; or the plan's
// CUDA graph), the outputs downloaded; all queued on the stream, synchronized only where the host
// reads device data, and once at the end.
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "executor_impl.h"

namespace onnxopt::runtime {

using cuda_detail::GraphMode;
using cuda_detail::PlanState;
using cuda_detail::PreparedNode;
using kernels::HostTensor;

Status CudaExecutor::Impl::uploadInputs(RunState& run) {
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
      if (state.bound.count(id)) continue;  // read where it is
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

Status CudaExecutor::Impl::runStep(RunState& run, const Step& step) {
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

Status CudaExecutor::Impl::runNode(RunState& run, const PlannedNode& pn, int index) {
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
  if (prepared.kernel) return api->launch(*prepared.kernel);
  // Refused at these shapes: the reference kernel on copies, written back to the arena.
  ASSIGN_OR_RETURN(std::vector<HostValue> outs, runOnHost(run, pn));
  return storeOutputs(run, pn, std::move(outs));
}

Status CudaExecutor::Impl::runSteps(RunState& run, bool record,
                                    std::vector<RecordedValue>* recorded) {
  PlanState& state = run.state;
  const Plan& plan = *state.plan;
  bool eager = record || run.profile != nullptr;
  if (!eager) {
    ASSIGN_OR_RETURN(bool replayed, runAsGraph(run));
    if (replayed) return Status::ok();
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

StatusOr<ExecutionResult> CudaExecutor::Impl::execute(PlanState& state, const Feeds& feeds,
                                                      const DeviceFeeds& device, bool record,
                                                      std::vector<CudaExecutor::StepTime>* profile,
                                                      const DeviceBinding* binding) {
  RunState run{state, feeds, device, {}, {}, {}, false, profile, {}, binding};
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

StatusOr<ExecutionResult> CudaExecutor::Impl::executeQueued(RunState& run, bool record) {
  PlanState& state = run.state;
  const Plan& plan = *state.plan;
  if (options.poison_byte >= 0 && plan.arena_bytes > 0) {
    RETURN_IF_ERROR(
        api->fill(state.arena.data(), options.poison_byte, static_cast<size_t>(plan.arena_bytes)));
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
    if (run.binding != nullptr) {
      if (auto out = run.binding->outputs->find(v.name); out != run.binding->outputs->end()) {
        RETURN_IF_ERROR(keepOnDevice(run, id, out->second));
        continue;
      }
    }
    // In place before the copy is queued: a moved HostTensor may move its bytes.
    result.outputs[i] = HostTensor::zeros(v.dtype, v.dims);
    HostTensor& t = result.outputs[i];
    if (!t.bytes.empty()) {
      auto ptr = devicePtr(state, id);
      if (!ptr.isOk()) return ptr.status().withContext(fmt::format("reading output '{}'", v.name));
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
  if (run.profile != nullptr) RETURN_IF_ERROR(collectProfile(run));
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    int id = plan.outputs[i];
    const PlannedValue& v = value(plan, id);
    if (v.location == Location::kArena && !v.dynamic) {
      if (run.binding != nullptr && run.binding->kept->count(v.name)) continue;
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

}  // namespace onnxopt::runtime
