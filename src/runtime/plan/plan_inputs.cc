// Lowering, the values a plan starts from: inputs bound to concrete shapes (learning the symbols
// they fix), constants, and the graph's outputs.
#include "lowering.h"

namespace onnxopt::runtime::plan_detail {

Status Lowering::bindInputs(const InputShapes& shapes) {
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
      return invalidArgument("input '{}': {}[{}] has no byte size", in->name(), dataTypeName(dtype),
                             fmt::join(given.dims, ","));
    }
    PlannedValue v;
    v.name = in->name();
    v.source = in;
    v.dtype = dtype;
    v.dims = given.dims;
    v.bytes = bytes.value_or(0);
    v.location = Location::kInput;
    if (given.value) {
      // A value input: its readers plan on this data (the plan's signature holds it).
      if (static_cast<int64_t>(given.value->size()) != v.bytes || dtype == DataType::kString) {
        return invalidArgument("input '{}': {} bytes of data given for {}[{}]", in->name(),
                               given.value->size(), dataTypeName(dtype),
                               fmt::join(given.dims, ","));
      }
      v.host_value = kernels::HostTensor{dtype, given.dims, *given.value, {}};
    }
    int id = addValue(std::move(v));
    ids_[in] = id;
    plan_.inputs.push_back(id);
  }
  return Status::ok();
}

Status Lowering::addConstantValue(const ir::Value* v) {
  const ir::Tensor* t = v->initializer();
  if (t == nullptr && v->sparseInitializer() != nullptr) {
    // A sparse initializer: its dense data, as the reference executor reads it.
    ASSIGN_OR_RETURN(kernels::HostTensor dense, densifySparse(*v->sparseInitializer(), v->name()));
    addHostConstant(v, std::move(dense));
    return Status::ok();
  }
  if (t == nullptr) return invalidArgument("'{}' has no data", v->name());
  PlannedValue pv;
  pv.name = v->name();
  pv.source = v;
  pv.weight = weightHandle(v);
  pv.dtype = t->dtype();
  pv.dims = t->dims();
  pv.bytes = byteSize(pv.dtype, pv.dims).value_or(0);
  pv.location = Location::kConstant;
  if (product(pv.dims) <= options_.max_host_elements) pv.host_value = bridge::toHost(*t);
  ids_[v] = addValue(std::move(pv));
  return Status::ok();
}

std::optional<std::vector<int64_t>> Lowering::inferredDims(const ir::Value& v, bool& rank_known,
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

void Lowering::learnSymbols(const ir::Value& v, const std::vector<int64_t>& dims) {
  const ir::Type& type = v.type();
  if (!type.isTensor() || !type.shape || type.shape->size() != dims.size()) return;
  for (size_t d = 0; d < dims.size(); ++d) {
    const ir::Dim& dim = (*type.shape)[d];
    if (dim.kind == ir::Dim::Kind::kParam) bindings_.emplace(dim.param, dims[d]);
  }
}

std::optional<std::vector<ir::Type>> Lowering::inferAlone(const ir::Node& n,
                                                          const PlannedNode& pn) {
  std::vector<std::optional<ir::NodeInput>> inputs;
  for (size_t i = 0; i < pn.inputs.size(); ++i) {
    if (pn.inputs[i] < 0) {
      inputs.emplace_back();
      continue;
    }
    const PlannedValue& v = value(pn.inputs[i]);
    ir::NodeInput in;
    if (v.rank_known) {
      std::vector<ir::Dim> dims;
      for (int64_t d : v.dims) dims.push_back(d >= 0 ? ir::Dim::known(d) : ir::Dim::unknown());
      in.type = ir::Type::tensor(v.dtype, std::move(dims));
    } else {
      in.type = ir::Type::tensor(v.dtype);
    }
    if (const kernels::HostTensor* t = hostValueOf(pn, i)) {
      in.data = bridge::fromHost(kernels::HostTensor(*t));
    }
    inputs.push_back(std::move(in));
  }
  return ir::inferNodeAlone(model_, n, inputs);
}

bool Lowering::completeDims(const ir::Type& alone, std::vector<int64_t>& partial,
                            bool& rank_known) {
  if (!alone.isTensor() || !alone.shape) return false;
  if (rank_known && alone.shape->size() != partial.size()) return false;
  if (!rank_known) partial.assign(alone.shape->size(), -1);
  rank_known = true;
  bool all = true;
  for (size_t d = 0; d < partial.size(); ++d) {
    const ir::Dim& dim = (*alone.shape)[d];
    // What the symbolic evaluation knows stands; the node's own inference fills the rest.
    if (partial[d] < 0 && dim.isKnown()) partial[d] = dim.value;
    all &= partial[d] >= 0;
  }
  return all;
}

Status Lowering::addOutputs(const ir::Node& n, PlannedNode& pn, bool omit_unused) {
  std::optional<std::vector<ir::Type>> alone;
  bool alone_tried = false;
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
    if (!dims && !distrusted) {
      // Some dim does not evaluate (an unnamed input dim, a size only a host evaluation made
      // known): inference of the node alone, on its inputs' concrete dims and known data.
      if (!alone_tried) alone = inferAlone(n, pn);
      alone_tried = true;
      if (alone && i < alone->size() && completeDims((*alone)[i], partial, v.rank_known)) {
        dims = partial;
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

}  // namespace onnxopt::runtime::plan_detail
