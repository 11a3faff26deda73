// Lowering an optimized model for concrete input shapes into a Plan (plan.h): shapes, placements,
// steps with explicit copies, and arena offsets from the memory planner. docs/cuda_runtime.md
// explains the decisions.
#include "onnxopt/runtime/plan.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../describe_node.h"
#include "concrete_shapes.h"
#include "dim_eval.h"
#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/op_traits.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/runtime/memory_planner.h"
#include "onnxopt/runtime/reference_executor.h"

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

namespace {

using plan_detail::Bindings;
using plan_detail::evalDim;

bool isViewOp(const std::string& op) {
  return ir::hasTrait("", op, ir::OpTrait::kView);
}

/// Whether output `index` of the op is one its device kernel may be handed absent (and then
/// does not compute): the statistics LayerNormalization returns besides Y, and the residual sum
/// of our SkipLayerNormalization (which a model keeps as an output of the call even where
/// nothing reads it, since onnx types a function call by all of its outputs: writing it costs
/// as much as reading X).
bool omittableOutput(const std::string& domain, const std::string& op, size_t index) {
  if (domain.empty() || domain == "ai.onnx")
    return op == "LayerNormalization" && (index == 1 || index == 2);
  return domain == "ai.onnxopt" && op == "SkipLayerNormalization" && index == 1;
}

bool isHostType(DataType t) {
  return t == DataType::kInt64 || t == DataType::kInt32 || t == DataType::kBool;
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// Bytes of `dims` elements of `dtype`; nullopt when it overflows or the type has no width.
std::optional<int64_t> byteSize(DataType dtype, const std::vector<int64_t>& dims) {
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

  StatusOr<Plan> run(const InputShapes& shapes) {
    if (model_.graph == nullptr) return invalidArgument("the model has no graph");
    plan_.input_shapes = shapes;
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
      if (it == ids_.end())
        return invalidArgument("graph output '{}' is not computed", out->name());
      plan_.outputs.push_back(it->second);
      plan_.values[static_cast<size_t>(it->second)].is_graph_output = true;
    }
    buildSteps();
    RETURN_IF_ERROR(assignMemory());
    return std::move(plan_);
  }

 private:
  int addValue(PlannedValue v) {
    plan_.values.push_back(std::move(v));
    return static_cast<int>(plan_.values.size() - 1);
  }
  PlannedValue& value(int id) { return plan_.values[static_cast<size_t>(id)]; }

  /// Binds each graph input to its given shape, checking it against the declared type, and binds
  /// the symbols of the declared dims.
  Status bindInputs(const InputShapes& shapes) {
    const ir::Graph& g = *model_.graph;
    for (const auto& [name, shape] : shapes) {
      bool known = false;
      for (const ir::Value* in : g.inputs()) known |= in->name() == name;
      if (!known) return invalidArgument("'{}' is not a graph input", name);
    }
    for (const ir::Value* in : g.inputs()) {
      auto it = shapes.find(in->name());
      if (it == shapes.end()) {
        if (in->initializer() == nullptr) {
          return invalidArgument("no shape given for graph input '{}'", in->name());
        }
        RETURN_IF_ERROR(addConstantValue(in));
        plan_.inputs.push_back(ids_.at(in));
        continue;
      }
      const InputShape& given = it->second;
      const ir::Type& type = in->type();
      DataType dtype = given.dtype;
      if (type.isTensor() && type.elem_type != DataType::kUndefined) {
        if (dtype != DataType::kUndefined && dtype != type.elem_type) {
          return invalidArgument("input '{}' is {}, but {} was given", in->name(),
                                 dataTypeName(type.elem_type), dataTypeName(dtype));
        }
        dtype = type.elem_type;
      }
      if (dtype == DataType::kUndefined) {
        return invalidArgument("input '{}' has no declared element type and none was given",
                               in->name());
      }
      for (int64_t d : given.dims) {
        if (d < 0) {
          return invalidArgument("input '{}': dims [{}] are not sizes", in->name(),
                                 fmt::join(given.dims, ","));
        }
      }
      if (type.isTensor() && type.shape) {
        const auto& declared = *type.shape;
        if (declared.size() != given.dims.size()) {
          return invalidArgument("input '{}' has rank {}, but dims [{}] were given", in->name(),
                                 declared.size(), fmt::join(given.dims, ","));
        }
        for (size_t d = 0; d < declared.size(); ++d) {
          const ir::Dim& dim = declared[d];
          if (dim.isKnown() && dim.value != given.dims[d]) {
            return invalidArgument("input '{}': dim {} is {}, but {} was given", in->name(), d,
                                   dim.value, given.dims[d]);
          }
          if (dim.kind == ir::Dim::Kind::kParam) {
            auto [b, inserted] = bindings_.emplace(dim.param, given.dims[d]);
            if (!inserted && b->second != given.dims[d]) {
              return invalidArgument(
                  "input '{}': dim {} ('{}') is {}, but another input binds '{}' to {}", in->name(),
                  d, dim.param, given.dims[d], dim.param, b->second);
            }
          }
        }
      }
      auto bytes = byteSize(dtype, given.dims);
      if (!bytes && dtype != DataType::kString) {  // strings are host data of no fixed width
        return invalidArgument("input '{}': {}[{}] has no byte size", in->name(),
                               dataTypeName(dtype), fmt::join(given.dims, ","));
      }
      PlannedValue v;
      v.name = in->name();
      v.source = in;
      v.dtype = dtype;
      v.dims = given.dims;
      v.bytes = bytes.value_or(0);
      v.location = Location::kInput;
      int id = addValue(std::move(v));
      ids_[in] = id;
      plan_.inputs.push_back(id);
    }
    return Status::ok();
  }

  /// An initializer (or an input default left out): constant data, kept on the host when small.
  Status addConstantValue(const ir::Value* v) {
    const ir::Tensor* t = v->initializer();
    if (t == nullptr && v->sparseInitializer() != nullptr) {
      // A sparse initializer: its dense data, as the reference executor reads it.
      ASSIGN_OR_RETURN(kernels::HostTensor dense,
                       densifySparse(*v->sparseInitializer(), v->name()));
      PlannedValue pv;
      pv.name = v->name();
      pv.source = v;
      pv.dtype = dense.dtype;
      pv.dims = dense.dims;
      pv.bytes = byteSize(pv.dtype, pv.dims).value_or(0);
      pv.location = Location::kConstant;
      pv.host_value = std::move(dense);
      ids_[v] = addValue(std::move(pv));
      return Status::ok();
    }
    if (t == nullptr) return invalidArgument("'{}' has no data", v->name());
    PlannedValue pv;
    pv.name = v->name();
    pv.source = v;
    pv.dtype = t->dtype();
    pv.dims = t->dims();
    pv.bytes = byteSize(pv.dtype, pv.dims).value_or(0);
    pv.location = Location::kConstant;
    if (product(pv.dims) <= options_.max_host_elements) pv.host_value = bridge::toHost(*t);
    ids_[v] = addValue(std::move(pv));
    return Status::ok();
  }

  /// The concrete dims of `v` from its inferred type; nullopt (and `rank_known`) when some dim
  /// does not evaluate.
  std::optional<std::vector<int64_t>> inferredDims(const ir::Value& v, bool& rank_known,
                                                   std::vector<int64_t>& partial) const {
    const ir::Type& type = v.type();
    rank_known = type.isTensor() && type.shape.has_value();
    partial.clear();
    if (!rank_known) return std::nullopt;
    bool all = true;
    for (const ir::Dim& d : *type.shape) {
      auto x = evalDim(d, bindings_);
      partial.push_back(x.value_or(-1));
      all &= x.has_value();
    }
    if (!all) return std::nullopt;
    return partial;
  }

  /// A symbol of `v`'s inferred dims that nothing bound yet (a fresh one) learns its value from
  /// dims computed another way (a host evaluation, a Reshape target).
  void learnSymbols(const ir::Value& v, const std::vector<int64_t>& dims) {
    const ir::Type& type = v.type();
    if (!type.isTensor() || !type.shape || type.shape->size() != dims.size()) return;
    for (size_t d = 0; d < dims.size(); ++d) {
      const ir::Dim& dim = (*type.shape)[d];
      if (dim.kind == ir::Dim::Kind::kParam) bindings_.emplace(dim.param, dims[d]);
    }
  }

  /// A known host value of input `i` of the node, or nullptr.
  const kernels::HostTensor* hostValueOf(const PlannedNode& pn, size_t i) {
    if (i >= pn.inputs.size() || pn.inputs[i] < 0) return nullptr;
    const PlannedValue& v = value(pn.inputs[i]);
    if (v.host_value) return &*v.host_value;
    return nullptr;
  }

  /// Output 0's dims by the op's concrete rule (concrete_shapes.h), from what is known of the
  /// inputs.
  std::optional<std::vector<int64_t>> ruleDims(const PlannedNode& pn) {
    if (!pn.domain.empty()) return std::nullopt;
    std::vector<plan_detail::KnownInput> known;
    for (size_t i = 0; i < pn.inputs.size(); ++i) {
      plan_detail::KnownInput k;
      if (pn.inputs[i] >= 0) {
        const PlannedValue& v = value(pn.inputs[i]);
        if (!v.dynamic && v.rank_known) k.dims = &v.dims;
        k.value = hostValueOf(pn, i);
      }
      known.push_back(k);
    }
    return plan_detail::concreteOutputDims(pn.op, pn.attrs, known);
  }

  /// Creates the planned outputs of a node from inferred types (or `computed` dims). With
  /// `omit_unused` (a device node), an optional output nothing reads is planned as absent
  /// (omittableOutput): no buffer, and the kernel does not write it.
  Status addOutputs(const ir::Node& n, PlannedNode& pn, bool omit_unused = false) {
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      const ir::Value* out = n.output(i);
      if (out == nullptr ||
          (omit_unused && out->uses().empty() && omittableOutput(pn.domain, pn.op, i))) {
        pn.outputs.push_back(-1);
        continue;
      }
      PlannedValue v;
      v.name = out->name();
      v.source = out;
      v.dtype = out->type().isTensor() ? out->type().elem_type : DataType::kUndefined;
      std::vector<int64_t> partial;
      auto dims = inferredDims(*out, v.rank_known, partial);
      bool distrusted = options_.shaped_at_run_time.count(out->name()) > 0;
      if (distrusted) {
        dims.reset();
        partial.clear();
        v.rank_known = false;
      }
      if (!dims && !distrusted && (i == 0 || (i == 1 && pn.op == "TopK"))) {
        // Inference left some dim open: the op's concrete rule fills it where it knows it.
        if (auto rule = ruleDims(pn); rule && (!v.rank_known || rule->size() == partial.size())) {
          for (size_t d = 0; d < partial.size(); ++d) {
            if (partial[d] >= 0) (*rule)[d] = partial[d];  // what inference knows stands
          }
          dims = rule;
          v.rank_known = true;
          learnSymbols(*out, *dims);
        }
      }
      if (v.dtype == DataType::kUndefined || v.dtype == DataType::kString) {
        // No fixed width (or no known type): sized when it is computed.
        if (dims) v.dims = *dims;
        v.dynamic = true;
        plan_.has_dynamic = true;
      } else if (dims) {
        v.dims = *dims;
        auto bytes = byteSize(v.dtype, v.dims);
        if (!bytes) {
          return invalidArgument("output '{}' ({}[{}]) has no byte size", out->name(),
                                 dataTypeName(v.dtype), fmt::join(v.dims, ","));
        }
        v.bytes = *bytes;
      } else {
        v.dims = partial;
        v.dynamic = true;
        plan_.has_dynamic = true;
      }
      int id = addValue(std::move(v));
      ids_[out] = id;
      pn.outputs.push_back(id);
    }
    return Status::ok();
  }

  bool isHostSide(int id) {
    const PlannedValue& v = value(id);
    return v.location == Location::kHost || (v.location == Location::kConstant && v.host_value);
  }

  /// Whether the node is shape arithmetic the host keeps: every input is host-side, every output
  /// a small integer tensor, and a reference kernel runs it.
  bool isHostNode(const ir::Node& n, const PlannedNode& pn) {
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

  Status lowerNode(const ir::Node& n) {
    PlannedNode pn;
    pn.node = &n;
    pn.name = describeNode(n);
    pn.domain = n.domain();
    pn.op = n.opType();
    pn.opset = model_.opsetVersion(n.domain()).value_or(0);
    pn.attrs = bridge::toKernelAttrs(n);
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
    pn.placement = s ? Placement::kDevice : Placement::kCpuFallback;
    if (!s) pn.fallback_reason = s.reason.empty() ? "not supported by the device" : s.reason;
    for (int id : pn.outputs) {
      if (id >= 0) {
        value(id).location = s ? Location::kArena : Location::kHost;
      }
    }
    return finishNode(std::move(pn));
  }

  /// Forgets the outputs addOutputs made (a host candidate that turned out too large).
  void dropOutputs(const ir::Node& n, PlannedNode& pn) {
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

  Status finishNode(PlannedNode pn) {
    for (int id : pn.outputs) pn.dynamic |= id >= 0 && value(id).dynamic;
    plan_.nodes.push_back(std::move(pn));
    return Status::ok();
  }

  Status setFoldedOutput(const ir::Node& n, PlannedNode& pn, size_t i, kernels::HostTensor t) {
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
    PlannedValue v;
    v.name = out->name();
    v.source = out;
    v.dtype = t.dtype;
    v.dims = t.dims;
    v.bytes = byteSize(t.dtype, t.dims).value_or(0);
    v.location = Location::kConstant;
    v.host_value = std::move(t);
    int id = addValue(std::move(v));
    ids_[out] = id;
    pn.outputs.push_back(id);
    return Status::ok();
  }

  Status lowerConstant(const ir::Node& n, PlannedNode pn) {
    auto t = ir::constantNodeTensor(n);
    if (!t) return makeError(StatusCode::kUnimplemented, "unsupported Constant");
    pn.placement = Placement::kHost;
    pn.folded = true;
    RETURN_IF_ERROR(setFoldedOutput(n, pn, 0, bridge::toHost(*t)));
    return finishNode(std::move(pn));
  }

  /// Shape and Size read only their input's dims: known when planning unless they are dynamic.
  Status lowerShapeOf(const ir::Node& n, PlannedNode pn) {
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

  /// Runs a host node whose inputs are all known. False (nothing planned) when an output is not
  /// a small integer tensor after all; an error when the kernel fails.
  StatusOr<bool> foldOnHost(const ir::Node& n, PlannedNode& pn) {
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

  /// Whether the node reads its inputs on the host.
  static bool readsOnHost(Placement p) {
    return p == Placement::kHost || p == Placement::kCpuFallback;
  }

  /// The id of `id`'s copy on the other side, made by a copy step before the current one.
  int mirrorOf(int id, bool to_host) {
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

  /// The steps in order, with a copy wherever a reader is on the other side from the value, and
  /// uploads (weights) marked.
  void buildSteps() {
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

  Status assignMemory() {
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
        if (pn.placement != Placement::kDevice || !pn.domain.empty() ||
            !plan_detail::isElementwise(pn.op) || pn.outputs.empty() || pn.outputs[0] < 0) {
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
          group_last[static_cast<size_t>(root)] =
              std::max(group_last[static_cast<size_t>(root)],
                       group_last[static_cast<size_t>(pn.outputs[0])]);
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
      if (v.location == Location::kConstant && v.upload && v.base < 0)
        plan_.weight_bytes += v.bytes;
    }
    return Status::ok();
  }

  const ir::Model& model_;
  const kernels::Capabilities& device_;
  PlanOptions options_;
  int64_t opset_;
  Plan plan_;
  Bindings bindings_;
  std::unordered_map<const ir::Value*, int> ids_;
  std::map<std::pair<int, bool>, int> mirrors_;
};

}  // namespace

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
