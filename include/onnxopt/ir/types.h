// Element types, dimensions, shapes and value types of the onnxopt IR.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/ir/symbolic.h"

namespace onnxopt::ir {

/// Tensor element types. The numbering is TensorProto.DataType's, so unknown future codes survive a
/// round trip as plain integers.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUint2 = 25,
  kInt2 = 26,
  kFloat6E2M3 = 27,
  kFloat6E3M2 = 28,
};

/// The largest DataType code onnxopt knows.
inline constexpr int32_t kMaxKnownDataType = 28;

/// Bits per element; 0 for kUndefined, kString and unknown codes.
int dataTypeBits(DataType type);
/// Bytes that `count` elements occupy in raw_data (sub-byte types are packed, rounded up).
uint64_t dataTypeStorageBytes(DataType type, uint64_t count);
/// The name used in the text form ("float", "int64", "bfloat16", ...); "dtype<N>" when unknown.
std::string dataTypeName(DataType type);
/// Inverse of dataTypeName; nullopt when the name is not a known type.
std::optional<DataType> dataTypeFromName(const std::string& name);
bool isKnownDataType(int32_t code);

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

  bool isKnown() const { return kind == Kind::kValue; }
  bool isUnknown() const { return kind == Kind::kUnknown; }
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
      DataType::kUndefined;                ///< tensor and sparse tensor element type; map key type
  Shape shape;                             ///< tensor and sparse tensor only
  std::shared_ptr<const Type> element;     ///< sequence/optional element, map value
  std::string opaque_domain, opaque_name;  ///< opaque only
  std::string denotation;

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

}  // namespace onnxopt::ir
