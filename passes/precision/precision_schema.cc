// The schema facts convert-precision relies on, and the check that its result keeps them: inputs
// bound to one type parameter share their element type (LSTM(X, W, R, B, _, h0, c0, P): one T),
// and an output typed by an attribute has the attribute's type (ConstantOfShape<value: T>: T).
#include "precision_schema.h"

#include <map>
#include <optional>

#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/tied_types.h"
#include "onnxopt/support/data_type.h"

namespace onnxopt::passes {
namespace {

/// Every version's row per op, oldest first.
const std::map<std::string, std::vector<OpPrecision>>& precisionTable() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, std::vector<OpPrecision>>();
#define PRECISION_OP(op, since, h, hr, b, br, fi, fo, tied, hb, bb) \
  (*t)[#op].push_back({since, h != 0, hr, b != 0, br, fi, fo, ir::parseTied(tied), hb, bb});
#include "onnxopt/ir/precision_ops.inc"
#undef PRECISION_OP
    return t;
  }();
  return *table;
}

/// The values of `n` that `slots` name, with their slot's description ("input 2").
std::vector<std::pair<const ir::Value*, std::string>> tiedValues(
    const ir::Node& n, const std::vector<TiedSlot>& slots) {
  std::vector<std::pair<const ir::Value*, std::string>> out;
  for (const TiedSlot& s : slots) {
    size_t count = s.output ? n.numOutputs() : n.numInputs();
    size_t end = s.variadic ? count : std::min(count, s.index + 1);
    for (size_t i = s.index; i < end; ++i) {
      const ir::Value* v = s.output ? n.output(i) : n.input(i);
      if (v != nullptr && v->type().isTensor() && v->type().elem_type != DataType::kUndefined) {
        out.emplace_back(v, fmt::format("{} {}", s.output ? "output" : "input", i));
      }
    }
  }
  return out;
}

Status mismatch(const ir::Node& n, const std::string& a_slot, const ir::Value* a,
                const std::string& b_slot, const ir::Value* b) {
  return makeError(StatusCode::kUnimplemented,
                   "{} '{}' would mix types: {} '{}' is {}, {} '{}' is {}", n.opType(), n.name(),
                   a_slot, a->name(), dataTypeName(a->type().elem_type), b_slot, b->name(),
                   dataTypeName(b->type().elem_type));
}

Status checkTied(const ir::Node& n, const OpPrecision& row) {
  for (const std::vector<TiedSlot>& group : row.tied) {
    auto values = tiedValues(n, group);
    for (size_t i = 1; i < values.size(); ++i) {
      if (values[i].first->type().elem_type != values[0].first->type().elem_type) {
        return mismatch(n, values[0].second, values[0].first, values[i].second, values[i].first);
      }
    }
  }
  return Status::ok();
}

/// The type the attribute typing `n`'s output 0 gives it, or nullopt where it does not say.
std::optional<DataType> attributeType(const ir::Node& n) {
  if (n.opType() == "Constant") {
    std::optional<ir::Tensor> t = ir::constantNodeTensor(n);
    return t ? std::optional<DataType>(t->dtype()) : std::nullopt;
  }
  const TypeAttribute* ta = typeAttributeOf(n.opType());
  if (ta == nullptr) return std::nullopt;
  const ir::Attribute* a = n.findAttribute(ta->name);
  if (a == nullptr) {
    if (ta->float_by_default) return DataType::kFloat;
    return std::nullopt;
  }
  if (ta->tensor) {
    return a->tensors.size() == 1 ? std::optional<DataType>(a->tensors[0].dtype()) : std::nullopt;
  }
  // DequantizeLinear's output_dtype 0: the scale's type.
  if (a->kind != ir::Attribute::Kind::kInt || a->i == 0) return std::nullopt;
  return static_cast<DataType>(a->i);
}

Status checkAttributeType(const ir::Node& n) {
  const ir::Value* out = n.output(0);
  std::optional<DataType> said = attributeType(n);
  if (!said || out == nullptr || !out->type().isTensor() ||
      out->type().elem_type == DataType::kUndefined || out->type().elem_type == *said) {
    return Status::ok();
  }
  return makeError(StatusCode::kUnimplemented,
                   "{} '{}': its attribute makes output '{}' {}, its type says {}", n.opType(),
                   n.name(), out->name(), dataTypeName(*said), dataTypeName(out->type().elem_type));
}

/// The element type of `v` where it is a known tensor type.
std::optional<DataType> elemOf(const ir::Value* v) {
  if (v == nullptr || !v->type().isTensor() || v->type().elem_type == DataType::kUndefined) {
    return std::nullopt;
  }
  return v->type().elem_type;
}

/// An If's outputs against each branch's; a Loop's carried values and scan outputs (outputs, from
/// input 2 on) against its body's outputs from 1 on; a Scan's final states and scan outputs
/// against its body's outputs, one to one.
Status checkSubgraphInterface(const ir::Node& n) {
  const size_t skip = n.opType() == "Loop" ? 1 : 0;
  if (n.opType() != "If" && n.opType() != "Loop" && n.opType() != "Scan") return Status::ok();
  for (const ir::Graph* body : n.subgraphs()) {
    for (size_t i = 0; i < n.numOutputs() && i + skip < body->numOutputs(); ++i) {
      std::optional<DataType> outer = elemOf(n.output(i)), inner = elemOf(body->output(i + skip));
      if (outer && inner && *outer != *inner) {
        return mismatch(n, fmt::format("output {}", i), n.output(i),
                        fmt::format("body output {}", i + skip), body->output(i + skip));
      }
    }
  }
  return Status::ok();
}

bool touches(const ir::Node& n, DataType target) {
  for (const ir::Value* v : n.inputs()) {
    if (elemOf(v) == target) return true;
  }
  for (const ir::Value* v : n.outputs()) {
    if (elemOf(v) == target) return true;
  }
  return false;
}

}  // namespace

bool hasPrecisionRow(const std::string& op) {
  return precisionTable().count(op) > 0;
}

const OpPrecision* precisionOf(const std::string& op, int64_t opset) {
  auto it = precisionTable().find(op);
  if (it == precisionTable().end()) return nullptr;
  const OpPrecision* row = nullptr;
  for (const OpPrecision& r : it->second) {
    if (r.since <= opset) row = &r;
  }
  return row;
}

const TypeAttribute* typeAttributeOf(const std::string& op) {
  static const std::map<std::string, TypeAttribute> ops = {
      {"Cast", {"to", false, false}},
      {"ConstantOfShape", {"value", true, true}},
      {"RandomNormal", {"dtype", false, true}},
      {"RandomUniform", {"dtype", false, true}},
      {"RandomNormalLike", {"dtype", false, false}},
      {"RandomUniformLike", {"dtype", false, false}},
      {"EyeLike", {"dtype", false, false}},
      {"Bernoulli", {"dtype", false, false}},
      {"HannWindow", {"output_datatype", false, true}},
      {"HammingWindow", {"output_datatype", false, true}},
      {"BlackmanWindow", {"output_datatype", false, true}},
      {"MelWeightMatrix", {"output_datatype", false, true}},
      {"DequantizeLinear", {"output_dtype", false, false}},
  };
  auto it = ops.find(op);
  return it == ops.end() ? nullptr : &it->second;
}

Status checkPrecisionTypes(const ir::Graph& graph, int64_t opset, DataType target) {
  for (const ir::Node* n : graph.allNodesRecursive()) {
    if ((!n->domain().empty() && n->domain() != "ai.onnx") || !touches(*n, target)) continue;
    if (const OpPrecision* row = precisionOf(n->opType(), opset))
      RETURN_IF_ERROR(checkTied(*n, *row));
    RETURN_IF_ERROR(checkAttributeType(*n));
    RETURN_IF_ERROR(checkSubgraphInterface(*n));
  }
  return Status::ok();
}

}  // namespace onnxopt::passes
