// What kind of computation a default-domain ONNX op is (elementwise, broadcasting, commutative,
// a view, idempotent), from one table (src/ir/op_traits.def) that the passes, shape inference
// and the runtime planner read instead of keeping lists of their own.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace onnxopt::ir {

/// How an op's output elements depend on its inputs' elements.
enum class Elementwise : uint8_t {
  kNo,        ///< not elementwise
  kUnary,     ///< y[i] = f(x[i]); other inputs (Clip's bounds) are scalars
  kBinary,    ///< y[i] = f(a[i], b[i]), the operands broadcast
  kTernary,   ///< Where: three operands, broadcast
  kVariadic,  ///< Sum/Max/...: any number of operands, broadcast
};

/// Traits besides the elementwise kind (bits; op_traits.def says what each means).
enum class OpTrait : uint32_t {
  kNone = 0,
  kCommutative = 1u << 0,  ///< two operands swap (any order, for a variadic op)
  kWritesBool = 1u << 1,   ///< the output is bool whatever the inputs' types
  kConverts = 1u << 2,     ///< the output type is named by an attribute (Cast)
  kView = 1u << 3,         ///< output 0 is input 0's data with other dims
  kIdempotent = 1u << 4,   ///< f(f(x)) = f(x)
  kInvolution = 1u << 5,   ///< f(f(x)) = x
};

constexpr OpTrait operator|(OpTrait a, OpTrait b) {
  return static_cast<OpTrait>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}

/// One row of the table.
struct OpTraits {
  std::string_view op;  ///< a string literal: op.data() is null-terminated
  Elementwise elementwise = Elementwise::kNo;
  OpTrait flags = OpTrait::kNone;

  bool has(OpTrait t) const {
    return (static_cast<uint32_t>(flags) & static_cast<uint32_t>(t)) != 0;
  }
};

/// Every row, in table order.
std::span<const OpTraits> opTraitTable();

/// The traits of `op` in `domain` ("" or "ai.onnx" for ONNX's); nullptr for an op without any
/// (every op of another domain).
const OpTraits* opTraits(std::string_view domain, std::string_view op);

/// Whether `op` is elementwise (any kind).
bool isElementwise(std::string_view domain, std::string_view op);
/// Whether `op` is elementwise of this kind.
bool isElementwise(std::string_view domain, std::string_view op, Elementwise kind);
/// Whether `op` has trait `t`.
bool hasTrait(std::string_view domain, std::string_view op, OpTrait t);
/// Whether `op`'s output is the broadcast of its operands (binary, ternary and variadic
/// elementwise ops; PRelu's slope broadcasts to X, which is the same shape rule for valid input).
bool broadcasts(std::string_view domain, std::string_view op);

}  // namespace onnxopt::ir
