#include "onnxopt/ir/types.h"

#include <array>

#include <fmt/format.h>

namespace onnxopt::ir {
Dim Dim::fromExpr(const SymExpr& e) {
  if (e.overflowed()) return unknown();  // shape arithmetic past int64: the size is not known
  if (auto c = e.constantValue()) return known(*c);
  if (auto name = e.symbolName()) return symbol(*name);
  Dim d;
  d.kind = Kind::kExpr;
  d.param = e.toString();
  d.expr = std::make_shared<SymExpr>(e);
  return d;
}

std::optional<SymExpr> Dim::toExpr() const {
  switch (kind) {
    case Kind::kValue:
      if (value < 0) return std::nullopt;  // a "-1" dim_value: unknown
      return SymExpr::constant(value);
    case Kind::kParam:
      return SymExpr::symbol(param);
    case Kind::kExpr:
      return *expr;
    case Kind::kUnknown:
      return std::nullopt;
  }
  return std::nullopt;
}

const std::string& Type::noLabel() {
  static const std::string empty;
  return empty;
}

bool Type::operator==(const Type& other) const {
  if (kind != other.kind || elem_type != other.elem_type || shape != other.shape ||
      opaqueDomain() != other.opaqueDomain() || opaqueName() != other.opaqueName() ||
      denotation() != other.denotation()) {
    return false;
  }
  if (!element || !other.element) return element == other.element;
  return *element == *other.element;
}

static std::string shapeToString(const Shape& shape) {
  if (!shape) return "";
  std::string out = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    const Dim& d = (*shape)[i];
    if (i) out += ",";
    switch (d.kind) {
      case Dim::Kind::kValue:
        out += std::to_string(d.value);
        break;
      case Dim::Kind::kParam:
        out += d.param;
        break;
      case Dim::Kind::kExpr:
        out += "(" + d.param + ")";
        break;
      case Dim::Kind::kUnknown:
        out += "?";
        break;
    }
  }
  return out + "]";
}

bool typeSizeFits(const Type& type) {
  if (!type.shape) return true;
  uint64_t count = 1;
  for (const Dim& d : *type.shape) {
    if (d.isKnown() && __builtin_mul_overflow(count, static_cast<uint64_t>(d.value), &count)) {
      return false;
    }
  }
  return count <= static_cast<uint64_t>(INT64_MAX) &&
         dataTypeStorageBytes(type.elem_type, count).has_value();
}

std::string typeToString(const Type& type) {
  auto elem = [&]() { return type.element ? typeToString(*type.element) : std::string("?"); };
  switch (type.kind) {
    case Type::Kind::kUnknown:
      return "?";
    case Type::Kind::kTensor:
      return dataTypeName(type.elem_type) + shapeToString(type.shape);
    case Type::Kind::kSparseTensor:
      return "sparse(" + dataTypeName(type.elem_type) + shapeToString(type.shape) + ")";
    case Type::Kind::kSequence:
      return "seq(" + elem() + ")";
    case Type::Kind::kOptional:
      return "optional(" + elem() + ")";
    case Type::Kind::kMap:
      return "map(" + dataTypeName(type.elem_type) + "," + elem() + ")";
    case Type::Kind::kOpaque:
      return "opaque(" + type.opaqueDomain() + "," + type.opaqueName() + ")";
  }
  return "?";
}

}  // namespace onnxopt::ir
