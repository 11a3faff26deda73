// Lowering an optimized model for concrete input shapes into a Plan (plan.h): shapes, placements,
// steps with explicit copies, and arena offsets from the memory planner. docs/cuda_runtime.md
// explains the decisions.
#include "lowering.h"

namespace onnxopt::runtime {

const char* placementName(Placement placement) {
  switch (placement) {
    case Placement::kDevice:
      return "device";
    case Placement::kHost:
      return "host";
    case Placement::kCpuFallback:
      return "cpu-fallback";
    case Placement::kView:
      return "view";
  }
  return "?";
}

const char* locationName(Location location) {
  switch (location) {
    case Location::kInput:
      return "input";
    case Location::kConstant:
      return "constant";
    case Location::kArena:
      return "arena";
    case Location::kHost:
      return "host";
  }
  return "?";
}
namespace plan_detail {

StatusOr<Plan> Lowering::run(const InputShapes& shapes) {
  if (model_.graph == nullptr) return invalidArgument("the model has no graph");
  plan_.input_shapes = shapes;
  const std::vector<ir::Value*>& weights = model_.graph->initializers();
  for (size_t i = 0; i < weights.size(); ++i) weight_handles_[weights[i]] = static_cast<int>(i);
  RETURN_IF_ERROR(bindInputs(shapes));
  for (const ir::Value* v : model_.graph->initializers()) {
    if (ids_.count(v)) continue;  // an input default, bound above
    RETURN_IF_ERROR(addConstantValue(v));
  }
  for (const ir::Node* n : *model_.graph) {
    Status st = lowerNode(*n);
    if (!st.isOk()) return st.withContext(describeNode(*n));
  }
  for (const ir::Value* out : model_.graph->outputs()) {
    auto it = ids_.find(out);
    if (it == ids_.end()) return invalidArgument("graph output '{}' is not computed", out->name());
    plan_.outputs.push_back(it->second);
    plan_.values[static_cast<size_t>(it->second)].is_graph_output = true;
  }
  buildSteps();
  RETURN_IF_ERROR(assignMemory());
  plan_.host = makeHost();
  return std::move(plan_);
}

bool Lowering::isHostNode(const ir::Node& n, const PlannedNode& pn) {
  if (!n.subgraphs().empty() || !n.domain().empty()) return false;
  if (!kernels::hasReferenceKernel(n.opType(), opset_)) return false;
  for (int id : pn.inputs) {
    if (id >= 0 && !isHostSide(id)) return false;
  }
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    const ir::Value* out = n.output(i);
    if (out == nullptr) continue;
    const ir::Type& type = out->type();
    // The type may be unknown before folding: a fold below checks the result.
    if (type.isTensor() && type.elem_type != DataType::kUndefined && !isHostType(type.elem_type))
      return false;
  }
  return true;
}

Status Lowering::lowerNode(const ir::Node& n) {
  PlannedNode pn;
  pn.node = &n;
  pn.name = describeNode(n);
  pn.domain = n.domain();
  pn.op = n.opType();
  pn.opset = model_.opsetVersion(n.domain()).value_or(0);
  pn.attrs = bridge::toKernelAttrs(n);
  pn.has_subgraphs = !n.subgraphs().empty();
  for (const ir::Value* in : n.inputs()) {
    if (in == nullptr) {
      pn.inputs.push_back(-1);
      continue;
    }
    auto it = ids_.find(in);
    if (it == ids_.end()) {
      return makeError(StatusCode::kUnimplemented,
                       "input '{}' is not a value of the main graph the plan knows", in->name());
    }
    pn.inputs.push_back(it->second);
  }
  for (const ir::Graph* body : n.subgraphs()) {
    for (const ir::Node* inner : body->allNodesRecursive()) {
      for (const ir::Value* in : inner->inputs()) {
        if (in == nullptr || in->owningGraph() != model_.graph.get()) continue;
        auto it = ids_.find(in);
        if (it != ids_.end() && std::find(pn.implicit_inputs.begin(), pn.implicit_inputs.end(),
                                          it->second) == pn.implicit_inputs.end()) {
          pn.implicit_inputs.push_back(it->second);
        }
      }
    }
  }
  for (int id : pn.inputs) pn.dynamic |= id >= 0 && value(id).dynamic;

  if (pn.op == "Constant" && pn.domain.empty()) return lowerConstant(n, std::move(pn));
  if ((pn.op == "Shape" || pn.op == "Size") && pn.domain.empty()) {
    return lowerShapeOf(n, std::move(pn));
  }
  if (isHostNode(n, pn)) {
    bool all_known = true;
    for (size_t i = 0; i < pn.inputs.size(); ++i)
      all_known &= pn.inputs[i] < 0 || hostValueOf(pn, i);
    if (all_known) {
      auto folded = foldOnHost(n, pn);
      if (!folded.isOk()) return folded.status();
      if (*folded) return Status::ok();
    } else {
      RETURN_IF_ERROR(addOutputs(n, pn));
      bool small = true;
      for (int id : pn.outputs) {
        if (id < 0) continue;
        small &= !value(id).dynamic && isHostType(value(id).dtype) &&
                 product(value(id).dims) <= options_.max_host_elements;
      }
      if (small) {
        pn.placement = Placement::kHost;
        for (int id : pn.outputs) {
          if (id >= 0) value(id).location = Location::kHost;
        }
        return finishNode(std::move(pn));
      }
      dropOutputs(n, pn);
    }
  }
  if (isViewOp(pn.op) && pn.domain.empty() && !pn.inputs.empty() && pn.inputs[0] >= 0) {
    RETURN_IF_ERROR(addOutputs(n, pn));
    pn.placement = Placement::kView;
    int base = pn.inputs[0];
    PlannedValue& out = value(pn.outputs[0]);
    const PlannedValue& in = value(base);
    out.location = in.location;
    out.base = base;
    if (in.dynamic && !out.dynamic) {
      // Its dims are known but its buffer is its base's, allocated at run time.
      out.dynamic = true;
      out.bytes = 0;
    }
    if (in.location == Location::kConstant) {
      // A view of constant data is constant data (its bytes are the input's).
      out.location = Location::kConstant;
    }
    return finishNode(std::move(pn));
  }
  kernels::Support s = device_.supports(bridge::opQuery(n, pn.opset));
  RETURN_IF_ERROR(addOutputs(n, pn, /*omit_unused=*/static_cast<bool>(s)));
  if (s && options_.check_node && !hasDynamicValue(pn)) {
    // The kernel's own check at these shapes, decided here rather than when the plan runs.
    kernels::Support k = options_.check_node(plan_, pn);
    if (!k) {
      dropOutputs(n, pn);
      RETURN_IF_ERROR(addOutputs(n, pn));
      s = kernels::Support::no(k.reason.empty() ? "refused by the kernel at these shapes"
                                                : k.reason);
    }
  }
  pn.placement = s ? Placement::kDevice : Placement::kCpuFallback;
  if (!s) pn.fallback_reason = s.reason.empty() ? "not supported by the device" : s.reason;
  for (int id : pn.outputs) {
    if (id >= 0) {
      value(id).location = s ? Location::kArena : Location::kHost;
    }
  }
  return finishNode(std::move(pn));
}

void Lowering::dropOutputs(const ir::Node& n, PlannedNode& pn) {
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    if (n.output(i) != nullptr) ids_.erase(n.output(i));
  }
  size_t keep = plan_.values.size();
  for (int id : pn.outputs) {
    if (id >= 0) keep = std::min(keep, static_cast<size_t>(id));
  }
  plan_.values.resize(keep);
  pn.outputs.clear();
}

Status Lowering::setFoldedOutput(const ir::Node& n, PlannedNode& pn, size_t i,
                                 kernels::HostTensor t) {
  const ir::Value* out = n.output(i);
  if (out == nullptr) {
    pn.outputs.push_back(-1);
    return Status::ok();
  }
  const ir::Type& type = out->type();
  if (type.isTensor() && type.shape) {
    // Inference and the kernel must agree where inference knows the dims.
    std::vector<int64_t> partial;
    bool rank_known = false;
    auto dims = inferredDims(*out, rank_known, partial);
    if (dims && *dims != t.dims) {
      return makeError(StatusCode::kInternal,
                       "output '{}': shape inference says [{}], the host evaluation [{}]",
                       out->name(), fmt::join(*dims, ","), fmt::join(t.dims, ","));
    }
    learnSymbols(*out, t.dims);
  }
  pn.outputs.push_back(addHostConstant(out, std::move(t)));
  return Status::ok();
}

Status Lowering::lowerConstant(const ir::Node& n, PlannedNode pn) {
  auto t = ir::constantNodeTensor(n);
  if (!t) return makeError(StatusCode::kUnimplemented, "unsupported Constant");
  pn.placement = Placement::kHost;
  pn.folded = true;
  RETURN_IF_ERROR(setFoldedOutput(n, pn, 0, bridge::toHost(*t)));
  return finishNode(std::move(pn));
}

Status Lowering::lowerShapeOf(const ir::Node& n, PlannedNode pn) {
  pn.placement = Placement::kHost;
  const PlannedValue* in = pn.inputs.empty() || pn.inputs[0] < 0 ? nullptr : &value(pn.inputs[0]);
  if (in == nullptr) return invalidArgument("input 0 is required");
  if (in->dynamic) {
    RETURN_IF_ERROR(addOutputs(n, pn));
    for (int id : pn.outputs) {
      if (id >= 0) value(id).location = Location::kHost;
    }
    return finishNode(std::move(pn));
  }
  kernels::HostTensor t;
  if (pn.op == "Size") {
    t = kernels::HostTensor::zeros(DataType::kInt64, {});
    t.set<int64_t>(0, product(in->dims));
  } else {
    auto rank = static_cast<int64_t>(in->dims.size());
    auto clampAxis = [rank](int64_t a) {
      if (a < 0) a += rank;
      return std::clamp<int64_t>(a, 0, rank);
    };
    int64_t start = clampAxis(pn.attrs.getInt("start", 0));
    int64_t end = clampAxis(pn.attrs.getInt("end", rank));
    int64_t len = std::max<int64_t>(end - start, 0);
    t = kernels::HostTensor::zeros(DataType::kInt64, {len});
    for (int64_t k = 0; k < len; ++k) t.set<int64_t>(k, in->dims[static_cast<size_t>(start + k)]);
  }
  pn.folded = true;
  RETURN_IF_ERROR(setFoldedOutput(n, pn, 0, std::move(t)));
  return finishNode(std::move(pn));
}

StatusOr<bool> Lowering::foldOnHost(const ir::Node& n, PlannedNode& pn) {
  std::vector<const kernels::HostTensor*> ins;
  for (size_t i = 0; i < pn.inputs.size(); ++i) ins.push_back(hostValueOf(pn, i));
  auto outs = kernels::runReferenceKernel(n.opType(), opset_, ins, pn.attrs, n.numOutputs());
  if (!outs.isOk()) return outs.status().withContext("evaluating shape arithmetic on the host");
  for (const kernels::HostTensor& t : *outs) {
    if (!isHostType(t.dtype) || t.numElements() > options_.max_host_elements) return false;
  }
  pn.placement = Placement::kHost;
  pn.folded = true;
  for (size_t i = 0; i < outs->size(); ++i) {
    RETURN_IF_ERROR(setFoldedOutput(n, pn, i, std::move((*outs)[i])));
  }
  RETURN_IF_ERROR(finishNode(std::move(pn)));
  return true;
}

int Lowering::mirrorOf(int id, bool to_host) {
  auto key = std::make_pair(id, to_host);
  auto it = mirrors_.find(key);
  if (it != mirrors_.end()) return it->second;
  PlannedValue m = value(id);
  m.name = fmt::format("{}@{}", m.name, to_host ? "host" : "device");
  m.location = to_host ? Location::kHost : Location::kArena;
  m.base = -1;
  m.is_graph_output = false;
  m.host_value.reset();
  int mid = addValue(std::move(m));
  plan_.steps.push_back(
      Step{to_host ? Step::Kind::kCopyToHost : Step::Kind::kCopyToDevice, -1, id, mid});
  mirrors_[key] = mid;
  return mid;
}

}  // namespace plan_detail

using plan_detail::Lowering;

int64_t Plan::countPlacement(Placement placement) const {
  return std::count_if(nodes.begin(), nodes.end(),
                       [&](const PlannedNode& n) { return n.placement == placement; });
}

std::string Plan::summary() const {
  int64_t folded =
      std::count_if(nodes.begin(), nodes.end(), [](const PlannedNode& n) { return n.folded; });
  int64_t copies = std::count_if(steps.begin(), steps.end(),
                                 [](const Step& s) { return s.kind != Step::Kind::kNode; });
  std::string out = fmt::format(
      "plan: {} nodes: {} device, {} host ({} folded), {} cpu-fallback, {} view; {} steps, {} "
      "copies\n",
      nodes.size(), countPlacement(Placement::kDevice), countPlacement(Placement::kHost), folded,
      countPlacement(Placement::kCpuFallback), countPlacement(Placement::kView), steps.size(),
      copies);
  out += fmt::format(
      "memory: arena {} bytes, intermediates {} bytes (saved {}%), host arena {} bytes, weights "
      "{} bytes\n",
      arena_bytes, intermediate_bytes,
      intermediate_bytes > 0 ? 100 - arena_bytes * 100 / intermediate_bytes : 0, host_arena_bytes,
      weight_bytes);
  for (int id : inputs) {
    const PlannedValue& v = values[static_cast<size_t>(id)];
    if (v.location == Location::kInput && v.host_value) {
      out += fmt::format("value input: '{}' (planned for its data)\n", v.name);
    }
  }
  for (const PlannedNode& n : nodes) {
    if (n.placement == Placement::kCpuFallback) {
      out += fmt::format("fallback: {}: {}\n", n.name, n.fallback_reason);
    }
  }
  for (const PlannedNode& n : nodes) {
    if (n.dynamic) out += fmt::format("dynamic: {}\n", n.name);
  }
  return out;
}

StatusOr<Plan> buildPlan(const ir::Model& model, const InputShapes& shapes,
                         const kernels::Capabilities& device, const PlanOptions& options) {
  return Lowering(model, device, options).run(shapes);
}

}  // namespace onnxopt::runtime
