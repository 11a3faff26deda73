// Per-step profiles for the executor (executor_impl.h, CudaExecutor::runProfiled): what
// each timed step is, and its device time from the markers recorded around it.
#include <utility>

#include <fmt/format.h>

#include "executor_impl.h"

namespace onnxopt::runtime {

CudaExecutor::StepTime CudaExecutor::Impl::describeStep(const PlanState& state,
                                                        const Step& step) const {
  const Plan& plan = *state.plan;
  CudaExecutor::StepTime t;
  t.cost = stepCost(plan, step);
  if (step.kind == Step::Kind::kNode) {
    const PlannedNode& pn = plan.nodes[static_cast<size_t>(step.node)];
    t.name = pn.name;
    t.op = pn.op;
    t.placement = placementName(pn.placement);
    auto prepared = state.prepared.find(step.node);
    if (prepared != state.prepared.end() && prepared->second.kernel) {
      t.variant = prepared->second.kernel->variant();
    }
    return t;
  }
  bool down = step.kind == Step::Kind::kCopyToHost;
  t.name = fmt::format("copy '{}' to the {}", value(plan, step.src).name, down ? "host" : "device");
  t.op = down ? "CopyToHost" : "CopyToDevice";
  t.placement = "copy";
  return t;
}

Status CudaExecutor::Impl::collectProfile(RunState& run) {
  const Plan& plan = *run.state.plan;
  for (const RunState::Timed& t : run.timed) {
    CudaExecutor::StepTime time = describeStep(run.state, plan.steps[static_cast<size_t>(t.step)]);
    ASSIGN_OR_RETURN(time.ms, api->elapsedMs(t.start, t.end));
    run.profile->push_back(std::move(time));
  }
  return Status::ok();
}

}  // namespace onnxopt::runtime
