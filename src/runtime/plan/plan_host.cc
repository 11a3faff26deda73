// The PlanHost buildPlan gives every plan (plan.h): the model's side of the plan over the IR. The
// weights' data by handle (the graph's initializers, in order), and the plan's interpreted nodes
// with the IR values their inputs and implicit inputs stand for, so that an executor hands the
// interpreter host values by position and never reads the IR.
#include <memory>
#include <utility>
#include <vector>

#include "lowering.h"

namespace onnxopt::runtime::plan_detail {

namespace {

class IrPlanHost final : public PlanHost {
 public:
  IrPlanHost(const ir::Model& model, std::vector<const ir::Node*> nodes,
             std::vector<std::vector<const ir::Value*>> keys)
      : model_(model),
        weights_(model.graph->initializers().begin(), model.graph->initializers().end()),
        nodes_(std::move(nodes)),
        keys_(std::move(keys)) {}

  StatusOr<kernels::HostTensor> weightData(int handle) const override {
    if (handle < 0 || static_cast<size_t>(handle) >= weights_.size()) {
      return makeError(StatusCode::kInternal, "no weight {}", handle);
    }
    const ir::Value* v = weights_[static_cast<size_t>(handle)];
    if (v->initializer() != nullptr) return bridge::toHost(*v->initializer());
    if (v->sparseInitializer() != nullptr) return densifySparse(*v->sparseInitializer(), v->name());
    return makeError(StatusCode::kInternal, "weight '{}' has no data", v->name());
  }

  StatusOr<std::vector<HostValue>> runNode(int node, const std::vector<const HostValue*>& inputs,
                                           const RunLimits& limits) const override {
    if (node < 0 || static_cast<size_t>(node) >= nodes_.size() ||
        nodes_[static_cast<size_t>(node)] == nullptr) {
      return makeError(StatusCode::kInternal, "plan node {} has no IR node", node);
    }
    const std::vector<const ir::Value*>& keys = keys_[static_cast<size_t>(node)];
    std::vector<std::pair<const ir::Value*, HostValue>> values;
    for (size_t i = 0; i < inputs.size() && i < keys.size(); ++i) {
      if (inputs[i] == nullptr || keys[i] == nullptr) continue;
      values.emplace_back(keys[i], *inputs[i]);
    }
    return runNodeOnHost(model_, *nodes_[static_cast<size_t>(node)], values, limits);
  }

 private:
  const ir::Model& model_;
  std::vector<const ir::Value*> weights_;
  std::vector<const ir::Node*> nodes_;
  /// Per plan node: the IR values of its inputs, then of its implicit inputs.
  std::vector<std::vector<const ir::Value*>> keys_;
};

}  // namespace

std::shared_ptr<const PlanHost> Lowering::makeHost() const {
  std::vector<const ir::Node*> nodes;
  std::vector<std::vector<const ir::Value*>> keys;
  for (const PlannedNode& pn : plan_.nodes) {
    nodes.push_back(pn.node);
    std::vector<const ir::Value*> k;
    for (size_t i = 0; i < pn.inputs.size(); ++i) {
      k.push_back(pn.node != nullptr && i < pn.node->inputs().size() ? pn.node->input(i) : nullptr);
    }
    for (int id : pn.implicit_inputs) {
      k.push_back(id >= 0 ? plan_.values[static_cast<size_t>(id)].source : nullptr);
    }
    keys.push_back(std::move(k));
  }
  return std::make_shared<IrPlanHost>(model_, std::move(nodes), std::move(keys));
}

}  // namespace onnxopt::runtime::plan_detail
