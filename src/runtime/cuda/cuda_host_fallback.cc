// Nodes the executor runs on the host (executor_impl.h): host-placed, CPU-fallback, demoted
// and run-time-shaped nodes, on the reference kernels or the reference executor's interpreter,
// and the copies of their operands between host and device.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "executor_impl.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::runtime {

using cuda_detail::rootOf;
using cuda_detail::withDims;
using kernels::HostTensor;

namespace {

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

/// Whether the CPU side must run `pn` through the reference executor's interpreter (the plan's
/// PlanHost::runNode) rather than one reference kernel: ops with subgraphs, sequence and optional
/// ops, other domains (functions, FlexAttention), and nodes reading or writing values of no
/// tensor type.
bool needsInterpreter(const Plan& plan, const PlannedNode& pn) {
  if (plan.host == nullptr) return false;
  // Ops without a reference kernel: the interpreter runs or refuses them as runModel does.
  if (!kernels::hasReferenceKernel(kernels::referenceOpName(pn.domain, pn.op), pn.opset)) {
    return true;
  }
  if (pn.has_subgraphs) return true;
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

}  // namespace

Status CudaExecutor::Impl::syncHost(RunState& run, const std::string& what) {
  if (!run.pending) return Status::ok();
  run.pending = false;
  return api->synchronize(what);
}

StatusOr<std::shared_ptr<HostTensor>> CudaExecutor::Impl::hostData(RunState& run, int id) {
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

StatusOr<std::shared_ptr<HostTensor>> CudaExecutor::Impl::download(RunState& run, int id) {
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

Status CudaExecutor::Impl::upload(RunState& run, int id, std::shared_ptr<const HostTensor> t) {
  const PlannedValue& v = value(*run.state.plan, id);
  if (static_cast<int64_t>(t->bytes.size()) != v.bytes) {
    return makeError(StatusCode::kInternal, "copying '{}' to the device: {} bytes, not {}", v.name,
                     t->bytes.size(), v.bytes);
  }
  if (t->bytes.empty()) return Status::ok();
  ASSIGN_OR_RETURN(void* ptr, devicePtr(run.state, id));
  RETURN_IF_ERROR(api->copyToDevice(ptr, t->bytes.data(), t->bytes.size())
                      .withContext(fmt::format("copying '{}' to the device", v.name)));
  run.keep.push_back(std::move(t));
  return Status::ok();
}

StatusOr<std::vector<HostValue>> CudaExecutor::Impl::runOnHost(RunState& run,
                                                               const PlannedNode& pn) {
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
    // By position: the node's inputs, then its implicit inputs (PlanHost::runNode).
    std::vector<HostValue> tensors(ids.size());
    std::vector<const HostValue*> values(ids.size(), nullptr);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0) continue;
      if (auto other = run.others.find(ids[i]); other != run.others.end()) {
        values[i] = &other->second;
      } else {
        tensors[i].tensor = *inputs[i];
        values[i] = &tensors[i];
      }
    }
    const auto node = static_cast<int>(&pn - plan.nodes.data());
    ASSIGN_OR_RETURN(outs, plan.host->runNode(node, values, run_limits));
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
                       v.name, dataTypeName(v.dtype), fmt::join(v.dims, ","), dataTypeName(t.dtype),
                       fmt::join(t.dims, ","));
    }
  }
  return outs;
}

Status CudaExecutor::Impl::storeOutputs(RunState& run, const PlannedNode& pn,
                                        std::vector<HostValue> outs) {
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

}  // namespace onnxopt::runtime
