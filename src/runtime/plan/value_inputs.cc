// Value inputs: graph inputs whose data a plan is made for. A kernel that reads an operand when
// its node is planned (Capabilities::valueInputs) runs on the device only where that operand is
// known then; when a graph input feeds it (ONNX's node tests, models whose shape computations are
// fed in), the input's data joins the plan's signature, so that the plan reads it as a constant
// and a new value plans again (plan_cache.h).
#include <set>

#include "lowering.h"

namespace onnxopt::runtime {

namespace {

/// Types a value input may have: indices, sizes and axes, and float scales (Resize's scales and
/// roi, Range's bounds).
bool isValueType(DataType t) {
  return kernels::kIndexTypes.contains(t) || kernels::kFloatTypes.contains(t);
}

/// Whether the planner evaluates `n` on the host when its inputs are known (Lowering::isHostNode
/// without the data): shape arithmetic whose outputs are small integer tensors.
bool isShapeArithmetic(const ir::Node& n, int64_t opset) {
  if (!n.subgraphs().empty() || !n.domain().empty()) return false;
  // Shape and Size read only their input's dims, which every plan knows.
  if (n.opType() == "Shape" || n.opType() == "Size") return false;
  if (!kernels::hasReferenceKernel(n.opType(), opset)) return false;
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    const ir::Value* out = n.output(i);
    if (out == nullptr) continue;
    const ir::Type& type = out->type();
    if (!type.isTensor() || !plan_detail::isHostType(type.elem_type)) return false;
  }
  return true;
}

}  // namespace

std::set<std::string> valueInputNames(const ir::Model& model, const kernels::Capabilities& device) {
  std::set<std::string> names;
  if (model.graph == nullptr) return names;
  const ir::Graph& g = *model.graph;
  std::set<const ir::Value*> inputs(g.inputs().begin(), g.inputs().end());
  int64_t opset = model.opsetVersion("").value_or(0);
  std::set<const ir::Value*> seen;
  std::vector<const ir::Value*> work;
  for (const ir::Node* n : g) {
    int64_t node_opset = model.opsetVersion(n->domain()).value_or(0);
    for (size_t i : device.valueInputs(n->domain(), n->opType(), node_opset)) {
      if (i < n->numInputs() && n->input(i) != nullptr) work.push_back(n->input(i));
    }
  }
  // Back from each value operand through the shape arithmetic that computes it.
  while (!work.empty()) {
    const ir::Value* v = work.back();
    work.pop_back();
    if (!seen.insert(v).second) continue;
    if (inputs.count(v)) {
      const ir::Type& type = v->type();
      if (type.isTensor() && isValueType(type.elem_type)) names.insert(v->name());
      continue;
    }
    const ir::Node* producer = v->producer();
    if (producer == nullptr || !isShapeArithmetic(*producer, opset)) continue;
    for (const ir::Value* in : producer->inputs()) {
      if (in != nullptr) work.push_back(in);
    }
  }
  return names;
}

void addInputValues(InputShapes& shapes, const Feeds& feeds, const std::set<std::string>& names,
                    int64_t max_elements) {
  for (const std::string& name : names) {
    auto shape = shapes.find(name);
    auto feed = feeds.find(name);
    if (shape == shapes.end() || feed == feeds.end()) continue;
    const kernels::HostTensor& t = feed->second;
    if (!isValueType(t.dtype) || t.numElements() > max_elements) continue;
    shape->second.value = t.bytes;
  }
}

}  // namespace onnxopt::runtime
