// CUDA graphs for the executor (executor_impl.h): whether a plan's steps can be one graph,
// its capture at the second run of a capturable plan, and its replay from then on.
#include <utility>

#include <fmt/format.h>

#include "executor_impl.h"

namespace onnxopt::runtime {

using cuda_detail::GraphMode;
using cuda_detail::PlanState;

namespace cuda_detail {

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

}  // namespace cuda_detail

StatusOr<std::unique_ptr<cuda_detail::CapturedGraph>> CudaExecutor::Impl::capture(RunState& run) {
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

StatusOr<bool> CudaExecutor::Impl::runAsGraph(RunState& run) {
  PlanState& state = run.state;
  if (state.graph_mode == GraphMode::kReplay) {
    RETURN_IF_ERROR(api->replay(*state.graph).withContext("replaying the cuda graph"));
    ++state.replays;
    return true;
  }
  if (state.graph_mode == GraphMode::kCapture) {
    auto graph = capture(run);
    if (graph.isOk()) {
      state.graph = std::move(graph).value();
      state.graph_mode = GraphMode::kReplay;
      RETURN_IF_ERROR(api->replay(*state.graph).withContext("launching the cuda graph"));
      ++state.replays;
      return true;
    }
    // Not capturable after all (a kernel that allocates or synchronizes): eager from now on.
    state.graph_mode = GraphMode::kEager;
    state.graph_reason = fmt::format("capture failed: {}", graph.status().message());
  }
  return false;
}

}  // namespace onnxopt::runtime
