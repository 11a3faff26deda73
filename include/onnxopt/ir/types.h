// Element types, dimensions, shapes and value types of the onnxopt IR.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/ir/symbolic.h"
#include "onnxopt/support/data_type.h"

namespace onnxopt::ir {

// Element types live in the support layer (kernels use them too); the IR names them as its own.
using onnxopt::DataType;
using onnxopt::dataTypeBits;
using onnxopt::dataTypeFromName;
using onnxopt::dataTypeName;
using onnxopt::dataTypeStorageBytes;
using onnxopt::isKnownDataType;
using onnxopt::kMaxKnownDataType;

/// One dimension: a known size, a named symbol (dim_param), a symbolic expression over symbols
/// (from shape inference, written out as a dim_param of its canonical text), or unknown. The
/// optional denotation is kept.
struct Dim {
  enum class Kind : uint8_t { kUnknown, kValue, kParam, kExpr };
  Kind kind = Kind::kUnknown;
  int64_t value = 0;
  std::string param;  ///< the symbol name, or the canonical text of an expression
  std::string denotation;
  std::shared_ptr<const SymExpr> expr;  ///< kExpr only

  static Dim known(int64_t v) { return Dim{Kind::kValue, v, {}, {}, nullptr}; }
  static Dim symbol(std::string name) { return Dim{Kind::kParam, 0, std::move(name), {}, nullptr}; }
  static Dim unknown() { return Dim{}; }
  /// A constant becomes a known dim, a lone symbol a kParam, anything else a kExpr.
  static Dim fromExpr(const SymExpr& e);
  /// The dim as an expression; nullopt when unknown.
  std::optional<SymExpr> toExpr() const;

  /// A negative dim_value (some exporters write -1 for "dynamic") is kept for the round trip but
  /// counts as unknown.
  bool isKnown() const { return kind == Kind::kValue && value >= 0; }
  bool isUnknown() const { return kind == Kind::kUnknown || (kind == Kind::kValue && value < 0); }
  bool operator==(const Dim& other) const {
    return kind == other.kind && value == other.value && param == other.param &&
           denotation == other.denotation;
  }
};

/// A tensor shape: unknown rank (nullopt) or a list of dims.
using Shape = std::optional<std::vector<Dim>>;

/// The type of a value (TypeProto): a tensor, sparse tensor, sequence, map, optional, or opaque
/// type.
struct Type {
  enum class Kind : uint8_t {
    kUnknown,
    kTensor,
    kSparseTensor,
    kSequence,
    kMap,
    kOptional,
    kOpaque
  };
  Kind kind = Kind::kUnknown;
  DataType elem_type =
      DataType::kUndefined;             ///< tensor and sparse tensor element type; map key type
  Shape shape;                          ///< tensor and sparse tensor only
  std::shared_ptr<const Type> element;  ///< sequence/optional element, map value

  /// Names that few types carry, shared between copies and absent when all are empty (a Type
  /// sits in every value: inline, these strings made it twice as large).
  struct Labels {
    std::string opaque_domain, opaque_name;  ///< opaque only
    std::string denotation;
    bool operator==(const Labels& other) const = default;
  };
  std::shared_ptr<const Labels> labels;

  const std::string& opaqueDomain() const { return labels ? labels->opaque_domain : noLabel(); }
  const std::string& opaqueName() const { return labels ? labels->opaque_name : noLabel(); }
  const std::string& denotation() const { return labels ? labels->denotation : noLabel(); }
  void setLabels(Labels l) {
    labels = l == Labels{} ? nullptr : std::make_shared<const Labels>(std::move(l));
  }
  static const std::string& noLabel();

  static Type tensor(DataType elem, Shape shape = std::nullopt) {
    Type t;
    t.kind = Kind::kTensor;
    t.elem_type = elem;
    t.shape = std::move(shape);
    return t;
  }
  bool isKnown() const { return kind != Kind::kUnknown; }
  bool isTensor() const { return kind == Kind::kTensor; }
  bool operator==(const Type& other) const;
};

/// Renders a type in the text form: `float[N,3,224,224]`, `seq(int64[?])`, `?` when unknown.
std::string typeToString(const Type& type);

/// False when the known dims of a tensor type multiply past INT64_MAX elements or its byte size
/// overflows: no such tensor can exist. The importer refuses a declared type like that, and shape
/// inference never infers one (passes and `opt run` size buffers from these types).
bool typeSizeFits(const Type& type);

}  // namespace onnxopt::ir
