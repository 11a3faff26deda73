// Lowering, the schedule: steps in node order with explicit host/device copies, and arena offsets
// from the memory planner for every intermediate.
#include "lowering.h"

namespace onnxopt::runtime::plan_detail {

void Lowering::buildSteps() {
  for (size_t k = 0; k < plan_.nodes.size(); ++k) {
    PlannedNode& pn = plan_.nodes[k];
    if (pn.folded) continue;
    for (int* slot : inputSlots(pn)) {
      int& id = *slot;
      if (id < 0) continue;
      PlannedValue& v = value(id);
      if (v.location == Location::kConstant) {
        // Constants are on the host already and uploaded once for device readers.
        if (pn.placement == Placement::kDevice) markUpload(id);
        continue;
      }
      if (pn.placement == Placement::kView) continue;  // aliases whatever side its input is on
      // Shape and Size read only dims, which the executor holds on the host: no data copy.
      if (pn.domain.empty() && (pn.op == "Shape" || pn.op == "Size")) continue;
      bool host_value = v.location == Location::kHost;
      bool host_reader = readsOnHost(pn.placement);
      if (host_value != host_reader) id = mirrorOf(id, host_reader);
    }
    plan_.steps.push_back(Step{Step::Kind::kNode, static_cast<int>(k), -1, -1});
  }
}

Status Lowering::assignMemory() {
  const int64_t end = static_cast<int64_t>(plan_.steps.size());
  std::vector<int64_t> first(plan_.values.size(), -1), last(plan_.values.size(), -1);
  auto touch = [&](int id, int64_t step) {
    if (id < 0) return;
    auto i = static_cast<size_t>(id);
    if (first[i] < 0) first[i] = step;
    last[i] = std::max(last[i], step);
  };
  for (int64_t s = 0; s < end; ++s) {
    const Step& st = plan_.steps[static_cast<size_t>(s)];
    if (st.kind != Step::Kind::kNode) {
      touch(st.src, s);
      touch(st.dst, s);
      continue;
    }
    const PlannedNode& pn = plan_.nodes[static_cast<size_t>(st.node)];
    for (int id : pn.outputs) touch(id, s);
    for (int id : pn.inputs) touch(id, s);
    for (int id : pn.implicit_inputs) touch(id, s);
  }
  for (int id : plan_.outputs) touch(id, end);
  // A buffer's lifetime is the union of its sharers' (views extend their base's).
  std::vector<int64_t> group_last(last);
  auto extend = [&](int id) {
    int r = rootOf(id);
    group_last[static_cast<size_t>(r)] =
        std::max(group_last[static_cast<size_t>(r)], last[static_cast<size_t>(id)]);
  };
  for (size_t id = 0; id < plan_.values.size(); ++id) {
    if (value(static_cast<int>(id)).base >= 0) extend(static_cast<int>(id));
  }
  auto containsOutput = [&](int root) {
    for (size_t id = 0; id < plan_.values.size(); ++id) {
      if (plan_.values[id].is_graph_output && rootOf(static_cast<int>(id)) == root) return true;
    }
    return false;
  };
  if (options_.in_place) {
    for (int64_t s = 0; s < end; ++s) {
      const Step& st = plan_.steps[static_cast<size_t>(s)];
      if (st.kind != Step::Kind::kNode) continue;
      PlannedNode& pn = plan_.nodes[static_cast<size_t>(st.node)];
      if (pn.placement != Placement::kDevice || !pn.domain.empty() || !isElementwise(pn.op) ||
          pn.outputs.empty() || pn.outputs[0] < 0) {
        continue;
      }
      PlannedValue& out = value(pn.outputs[0]);
      if (out.dynamic || out.base >= 0) continue;
      for (size_t i = 0; i < pn.inputs.size(); ++i) {
        int in = pn.inputs[i];
        if (in < 0) continue;
        const PlannedValue& v = value(in);
        int root = rootOf(in);
        const PlannedValue& r = value(root);
        if (v.dynamic || r.location != Location::kArena || v.dtype != out.dtype ||
            v.bytes != out.bytes || group_last[static_cast<size_t>(root)] != s ||
            containsOutput(root)) {
          continue;
        }
        out.base = root;
        pn.in_place_input = static_cast<int>(i);
        pn.in_place_output = 0;
        group_last[static_cast<size_t>(root)] = std::max(
            group_last[static_cast<size_t>(root)], group_last[static_cast<size_t>(pn.outputs[0])]);
        break;
      }
    }
  }
  // One request per buffer (a root of the arena or the host arena).
  for (Location where : {Location::kArena, Location::kHost}) {
    std::vector<BufferRequest> requests;
    std::vector<int> roots;
    for (size_t id = 0; id < plan_.values.size(); ++id) {
      const PlannedValue& v = plan_.values[id];
      if (v.base >= 0 || v.dynamic || v.location != where || first[id] < 0) continue;
      requests.push_back({v.bytes, first[id], group_last[id]});
      roots.push_back(static_cast<int>(id));
      if (where == Location::kArena) plan_.intermediate_bytes += alignedBytes(v.bytes);
    }
    if (where == Location::kArena) {
      // In-place outputs would have been buffers of their own.
      for (const PlannedNode& pn : plan_.nodes) {
        if (pn.in_place_output >= 0) {
          plan_.intermediate_bytes +=
              alignedBytes(value(pn.outputs[static_cast<size_t>(pn.in_place_output)]).bytes);
        }
      }
    }
    ASSIGN_OR_RETURN(MemoryLayout layout, planMemory(requests));
    for (size_t k = 0; k < roots.size(); ++k) value(roots[k]).offset = layout.offsets[k];
    (where == Location::kArena ? plan_.arena_bytes : plan_.host_arena_bytes) = layout.arena_bytes;
  }
  for (size_t id = 0; id < plan_.values.size(); ++id) {
    PlannedValue& v = plan_.values[id];
    if (v.base >= 0) v.offset = value(rootOf(static_cast<int>(id))).offset;
    if (v.location == Location::kConstant && v.upload && v.base < 0) plan_.weight_bytes += v.bytes;
  }
  return Status::ok();
}

}  // namespace onnxopt::runtime::plan_detail
