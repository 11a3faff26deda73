// The lowering of a model into a Plan, shared by its files: plan.cc (the walk over the nodes and
// their placement), plan_inputs.cc (input bindings, constants, outputs) and plan_memory.cc
// (steps with explicit copies, arena offsets).
#pragma once

#include "onnxopt/runtime/plan.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../describe_node.h"
#include "dim_eval.h"
#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/op_traits.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/runtime/memory_planner.h"
#include "onnxopt/runtime/reference_executor.h"

namespace onnxopt::runtime::plan_detail {

/// Each output element depends only on the input elements at its index (unary elementwise ops
/// that keep the element type, and broadcasting ops): the output may take the buffer of an input
/// of its dtype and size (in-place reuse).
inline bool isElementwise(const std::string& op) {
  const ir::OpTraits* t = ir::opTraits("", op);
  bool unary =
      t != nullptr && t->elementwise == ir::Elementwise::kUnary && !t->has(ir::OpTrait::kConverts);
  return unary || ir::broadcasts("", op);
}

inline bool isViewOp(const std::string& op) {
  return ir::hasTrait("", op, ir::OpTrait::kView);
}

/// Whether output `index` of the op is one its device kernel may be handed absent (and then
/// does not compute): the statistics LayerNormalization returns besides Y, and the residual sum
/// of our SkipLayerNormalization and SkipRMSNormalization (which a model keeps as an output of the call even where
/// nothing reads it, since onnx types a function call by all of its outputs: writing it costs
/// as much as reading X).
inline bool omittableOutput(const std::string& domain, const std::string& op, size_t index) {
  if (domain.empty() || domain == "ai.onnx")
    return op == "LayerNormalization" && (index == 1 || index == 2);
  return domain == "ai.onnxopt" &&
         (op == "SkipLayerNormalization" || op == "SkipRMSNormalization") && index == 1;
}

inline bool isHostType(DataType t) {
  return t == DataType::kInt64 || t == DataType::kInt32 || t == DataType::kBool;
}

inline int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// Bytes of `dims` elements of `dtype`; nullopt when it overflows or the type has no width.
inline std::optional<int64_t> byteSize(DataType dtype, const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  if (dtype == DataType::kString) return std::nullopt;
  auto b = dataTypeStorageBytes(dtype, n);
  if (!b || *b > static_cast<uint64_t>(INT64_MAX / 2)) return std::nullopt;
  return static_cast<int64_t>(*b);
}

class Lowering {
 public:
  Lowering(const ir::Model& model, const kernels::Capabilities& device, const PlanOptions& options)
      : model_(model),
        device_(device),
        options_(options),
        opset_(model.opsetVersion("").value_or(0)) {}

  StatusOr<Plan> run(const InputShapes& shapes);

 private:
  int addValue(PlannedValue v) {
    plan_.values.push_back(std::move(v));
    return static_cast<int>(plan_.values.size() - 1);
  }
  PlannedValue& value(int id) { return plan_.values[static_cast<size_t>(id)]; }
  /// A constant value of `source` whose data is `data`, held on the host; its id (bound to source).
  int addHostConstant(const ir::Value* source, kernels::HostTensor data) {
    PlannedValue v;
    v.name = source->name();
    v.source = source;
    v.weight = weightHandle(source);
    v.dtype = data.dtype;
    v.dims = data.dims;
    v.bytes = byteSize(v.dtype, v.dims).value_or(0);
    v.location = Location::kConstant;
    v.host_value = std::move(data);
    int id = addValue(std::move(v));
    ids_[source] = id;
    return id;
  }

  /// The handle of weight `v` (its index among the graph's initializers, PlannedValue::weight),
  /// or -1 for a value that is not one.
  int weightHandle(const ir::Value* v) const {
    auto it = weight_handles_.find(v);
    return it != weight_handles_.end() ? it->second : -1;
  }

  /// Binds each graph input to its given shape, checking it against the declared type, and binds
  /// the symbols of the declared dims.
  Status bindInputs(const InputShapes& shapes);

  /// An initializer (or an input default left out): constant data, kept on the host when small.
  Status addConstantValue(const ir::Value* v);

  /// The concrete dims of `v` from its inferred type; nullopt (and `rank_known`) when some dim
  /// does not evaluate.
  std::optional<std::vector<int64_t>> inferredDims(const ir::Value& v, bool& rank_known,
                                                   std::vector<int64_t>& partial) const;

  /// A symbol of `v`'s inferred dims that nothing bound yet (a fresh one) learns its value from
  /// dims computed another way (a host evaluation, a Reshape target).
  void learnSymbols(const ir::Value& v, const std::vector<int64_t>& dims);

  /// A known host value of input `i` of the node, or nullptr.
  const kernels::HostTensor* hostValueOf(const PlannedNode& pn, size_t i) {
    if (i >= pn.inputs.size() || pn.inputs[i] < 0) return nullptr;
    const PlannedValue& v = value(pn.inputs[i]);
    if (v.host_value) return &*v.host_value;
    return nullptr;
  }

  /// The output types of the IR's shape inference on the node alone (ir::inferNodeAlone), its
  /// inputs bound to their planned dims and known host data; nullopt for a node with subgraphs.
  std::optional<std::vector<ir::Type>> inferAlone(const ir::Node& n, const PlannedNode& pn);

  /// Fills the dims of `partial` left open (-1) from `alone`, an output type inferAlone gave,
  /// taking its rank when none was known; true when every dim is then known.
  static bool completeDims(const ir::Type& alone, std::vector<int64_t>& partial, bool& rank_known);

  /// Creates the planned outputs of a node from inferred types (or `computed` dims). With
  /// `omit_unused` (a device node), an optional output nothing reads is planned as absent
  /// (omittableOutput): no buffer, and the kernel does not write it.
  Status addOutputs(const ir::Node& n, PlannedNode& pn, bool omit_unused = false);

  /// Held on the host, or known when planning (a small constant, a value input's data).
  bool isHostSide(int id) {
    const PlannedValue& v = value(id);
    return v.location == Location::kHost ||
           ((v.location == Location::kConstant || v.location == Location::kInput) && v.host_value);
  }

  /// Whether the node is shape arithmetic the host keeps: every input is host-side, every output
  /// a small integer tensor, and a reference kernel runs it.
  bool isHostNode(const ir::Node& n, const PlannedNode& pn);

  Status lowerNode(const ir::Node& n);

  /// Whether some input or output of the node has dims known only at run time.
  bool hasDynamicValue(const PlannedNode& pn) {
    for (const std::vector<int>* ids : {&pn.inputs, &pn.outputs}) {
      for (int id : *ids) {
        if (id >= 0 && value(id).dynamic) return true;
      }
    }
    return false;
  }

  /// Forgets the outputs addOutputs made (a host candidate that turned out too large).
  void dropOutputs(const ir::Node& n, PlannedNode& pn);

  Status finishNode(PlannedNode pn) {
    for (int id : pn.outputs) pn.dynamic |= id >= 0 && value(id).dynamic;
    plan_.nodes.push_back(std::move(pn));
    return Status::ok();
  }

  Status setFoldedOutput(const ir::Node& n, PlannedNode& pn, size_t i, kernels::HostTensor t);

  Status lowerConstant(const ir::Node& n, PlannedNode pn);

  /// Shape and Size read only their input's dims: known when planning unless they are dynamic.
  Status lowerShapeOf(const ir::Node& n, PlannedNode pn);

  /// Runs a host node whose inputs are all known. False (nothing planned) when an output is not
  /// a small integer tensor after all; an error when the kernel fails.
  StatusOr<bool> foldOnHost(const ir::Node& n, PlannedNode& pn);

  /// Whether the node reads its inputs on the host.
  static bool readsOnHost(Placement p) {
    return p == Placement::kHost || p == Placement::kCpuFallback;
  }

  /// The id of `id`'s copy on the other side, made by a copy step before the current one.
  int mirrorOf(int id, bool to_host);

  /// The steps in order, with a copy wherever a reader is on the other side from the value, and
  /// uploads (weights) marked.
  void buildSteps();

  /// The node's inputs and implicit inputs, as slots a copy may redirect.
  static std::vector<int*> inputSlots(PlannedNode& pn) {
    std::vector<int*> slots;
    for (int& id : pn.inputs) slots.push_back(&id);
    for (int& id : pn.implicit_inputs) slots.push_back(&id);
    return slots;
  }

  /// A constant read on the device is uploaded, with the value a view aliases.
  void markUpload(int id) {
    for (int v = id; v >= 0; v = value(v).base) value(v).upload = true;
  }

  int rootOf(int id) {
    while (value(id).base >= 0) id = value(id).base;
    return id;
  }

  Status assignMemory();

  /// The plan's PlanHost over the model (plan_host.cc), once its nodes and values are final.
  std::shared_ptr<const PlanHost> makeHost() const;

  const ir::Model& model_;
  const kernels::Capabilities& device_;
  PlanOptions options_;
  int64_t opset_;
  Plan plan_;
  Bindings bindings_;
  std::unordered_map<const ir::Value*, int> ids_;
  std::unordered_map<const ir::Value*, int> weight_handles_;
  std::map<std::pair<int, bool>, int> mirrors_;
};

}  // namespace onnxopt::runtime::plan_detail
