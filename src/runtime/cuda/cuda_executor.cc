// The CUDA executor (cuda_executor.h): a plain loop over a Plan's steps. Device nodes launch their
// kernel on views into the plan's arena, host and CPU-fallback nodes run the reference kernels on
// host tensors, copy steps move values across, views alias. Everything a step needs (pointers,
// kernel calls, workspace) is prepared once per plan; a run only uploads inputs and launches.
// This file is the public CudaExecutor: creation, a run (re-planning where the data contradicts a
// declared shape, the reference executor where no plan fits), and the summary; the parts of the
// implementation are listed in executor_impl.h.
#include "onnxopt/runtime/cuda_executor.h"

#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "caching_device_api.h"
#include "executor_impl.h"
#include "onnxopt/runtime/weight_data.h"

namespace onnxopt::runtime {

using cuda_detail::PlanState;
using kernels::HostTensor;

StatusOr<HostTensor> CudaExecutor::Impl::downloadDeviceInput(const std::string& name,
                                                             const DeviceInput& in) {
  HostTensor t = HostTensor::zeros(in.dtype, in.dims);
  if (t.bytes.empty()) return t;
  RETURN_IF_ERROR(api->copyToHost(t.bytes.data(), in.data, t.bytes.size())
                      .withContext(fmt::format("copying input '{}' to the host", name)));
  RETURN_IF_ERROR(api->synchronize(fmt::format("copying input '{}' to the host", name)));
  return t;
}

StatusOr<Feeds> CudaExecutor::Impl::withHostCopies(const Feeds& feeds, const DeviceFeeds& device) {
  Feeds all = feeds;
  for (const auto& [name, in] : device) {
    ASSIGN_OR_RETURN(all[name], downloadDeviceInput(name, in));
  }
  return all;
}

StatusOr<ExecutionResult> CudaExecutor::Impl::runOnReference(const Feeds& feeds,
                                                             const ExecutionOptions& options,
                                                             const Status& why) {
  ASSIGN_OR_RETURN(ExecutionResult result, run_reference(feeds, options));
  last_summary = fmt::format(
      "plan: not usable for these inputs ({}): the whole run went to the reference executor "
      "(CPU)\n",
      why.message());
  last_graph = "off (no plan)";
  last_workspace = 0;
  last_compute_ms.reset();
  return result;
}

CudaExecutor::CudaExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaExecutor::~CudaExecutor() = default;

StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::create(const ir::Model& model,
                                                             const CudaOptions& options) {
  if (model.graph == nullptr) return invalidArgument("the model has no graph");
  ASSIGN_OR_RETURN(
      std::unique_ptr<cuda_detail::DeviceApi> api,
      cuda_detail::createCudaDeviceApi(
          options.device_id, kernels::CudaContextOptions{options.tf32, options.tuning_cache}));
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
  auto cached = std::make_unique<cuda_detail::CachingDeviceApi>(std::move(device));
  impl->device_memory = &cached->uncached();
  impl->api = std::move(cached);
  const ir::Model* m = &model;
  // Value inputs fed on the host plan for their data; those given in device memory stay keyed by
  // shape (reading them would synchronize every run).
  std::set<std::string> value_inputs = valueInputNames(model, kernels::cudaCapabilities());
  int64_t max_elements = options.plan.max_host_elements;
  impl->check_feeds = [m, value_inputs, max_elements](
                          const Feeds& feeds,
                          const DeviceFeeds& on_device) -> StatusOr<InputShapes> {
    ASSIGN_OR_RETURN(InputShapes shapes, checkCudaFeeds(*m, feeds, on_device));
    addInputValues(shapes, feeds, value_inputs, max_elements);
    return shapes;
  };
  impl->run_reference = [m](const Feeds& feeds, const ExecutionOptions& run_options) {
    return runModel(*m, feeds, run_options);
  };
  impl->options = options;
  auto info = impl->api->probe();
  if (!info.isOk()) {
    return info.status().withContext(
        fmt::format("cuda runner: no usable CUDA device {}", options.device_id));
  }
  impl->device = std::move(info).value();
  impl->last_thread = std::this_thread::get_id();
  PlanOptions plan_options = options.plan;
  plan_options.check_node = [checker = impl.get()](const Plan& plan, const PlannedNode& pn) {
    return checker->checkWhilePlanning(plan, pn);
  };
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
                                                std::vector<StepTime>* profile,
                                                const DeviceBinding* binding) {
  ASSIGN_OR_RETURN(InputShapes shapes, impl_->check_feeds(inputs, device));
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (std::this_thread::get_id() != impl_->last_thread) {
    // CUDA's current device is per thread: select ours on this one.
    RETURN_IF_ERROR(impl_->api->probe().status());
    impl_->last_thread = std::this_thread::get_id();
  }
  ASSIGN_OR_RETURN(ExecutionResult result,
                   impl_->runLocked(inputs, device, shapes, options, profile, binding));
  if (binding != nullptr) RETURN_IF_ERROR(impl_->placeHostOutputs(result, *binding));
  return result;
}

StatusOr<ExecutionResult> CudaExecutor::Impl::runLocked(
    const Feeds& inputs, const DeviceFeeds& device, const InputShapes& shapes,
    const ExecutionOptions& options, std::vector<StepTime>* profile, const DeviceBinding* binding) {
  // The reference executor takes host tensors: device inputs are copied down for it.
  auto onReference = [&](const Status& why) -> StatusOr<ExecutionResult> {
    if (device.empty()) return runOnReference(inputs, options, why);
    ASSIGN_OR_RETURN(Feeds all, withHostCopies(inputs, device));
    return runOnReference(all, options, why);
  };
  PlanState* state = nullptr;
  StatusOr<ExecutionResult> executed = Status::ok();
  // A host-run node whose dims contradict the plan's (a declared shape no input makes) re-plans
  // with that value shaped at run time, once per value: bounded by the model's values. A value
  // contradicted again (its type, not its dims) sends the runs at this signature to the reference.
  for (;;) {
    auto planned = stateFor(shapes, device, binding);
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
    mismatched_value.reset();
    run_limits = options.limits;
    executed = execute(*state, inputs, device, options.record_intermediates, profile, binding);
    if (executed.isOk()) break;
    if (!mismatched_value) return executed.status();
    if (!shaped_at_run_time.insert(*mismatched_value).second) {
      state->reference_only = executed.status().message();
      return onReference(executed.status());
    }
    // Every plan assumed the contradicted dims: all are built again.
    states.clear();
    cache->clear();
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
  last_plan = state->plan;
  last_summary = state->plan->summary();
  for (const std::string& name : shaped_at_run_time) {
    last_summary += fmt::format(
        "shaped at run time: '{}' (a run's data contradicted its declared dims)\n", name);
  }
  for (const std::string& d : state->demoted) {
    last_summary += fmt::format("refused at these shapes, ran on the CPU: {}\n", d);
  }
  last_workspace = static_cast<int64_t>(state->workspace_bytes);
  last_graph = graphStateText(*state);
  last_summary += fmt::format("workspace: {} bytes (one region shared by the device nodes)\n",
                              state->workspace_bytes);
  last_summary += fmt::format("cuda graph: {}\n", last_graph);
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
