// What a kernel library can run: a query from (domain, op, opset, element types, layout) to
// "supported" or the reason it is not. Passes ask it before they rely on a kernel (constant folding
// asks the reference kernels; the CUDA target's rewrites will ask the CUDA table), instead of
// running one and discovering kUnimplemented. Like the kernels, it knows no IR types:
// bridge::opQuery builds a query from a node.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels {

/// The memory layout of a node's activations, where a kernel cares: image ops (convolution,
/// pooling, the channel normalizations) read channels-first (NCHW) or channels-last (NHWC) data.
/// kAny asks about the op without a layout; ops that do not care accept every layout.
enum class Layout { kAny, kNCHW, kNHWC };

/// "any", "NCHW", "NHWC".
const char* layoutName(Layout layout);

/// A set of element types (one bit per DataType code).
class TypeSet {
 public:
  constexpr TypeSet() = default;
  constexpr TypeSet(std::initializer_list<DataType> types) {
    for (DataType t : types) bits_ |= bit(t);
  }

  constexpr bool contains(DataType type) const { return (bits_ & bit(type)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr TypeSet operator|(TypeSet other) const { return fromBits(bits_ | other.bits_); }
  /// The types of this set that are not in `other`.
  constexpr TypeSet operator-(TypeSet other) const { return fromBits(bits_ & ~other.bits_); }
  constexpr bool operator==(const TypeSet& other) const = default;

  /// The types in code order.
  std::vector<DataType> types() const;
  /// "float, uint8, ..." in code order; "no type" when empty.
  std::string toString() const;

 private:
  static constexpr uint64_t bit(DataType type) {
    auto code = static_cast<int32_t>(type);
    return code > 0 && code < 64 ? uint64_t{1} << code : 0;
  }
  static constexpr TypeSet fromBits(uint64_t bits) {
    TypeSet s;
    s.bits_ = bits;
    return s;
  }
  uint64_t bits_ = 0;
};

inline constexpr TypeSet kFloatTypes = {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16,
                                        DataType::kDouble};
inline constexpr TypeSet kSignedIntTypes = {DataType::kInt8, DataType::kInt16, DataType::kInt32,
                                            DataType::kInt64};
inline constexpr TypeSet kUnsignedIntTypes = {DataType::kUint8, DataType::kUint16,
                                              DataType::kUint32, DataType::kUint64};
inline constexpr TypeSet kIntTypes = kSignedIntTypes | kUnsignedIntTypes;
inline constexpr TypeSet kNumericTypes = kFloatTypes | kIntTypes;
/// Shapes, axes, indices, pads, repeats: the kernels read them as int32 or int64.
inline constexpr TypeSet kIndexTypes = {DataType::kInt32, DataType::kInt64};

/// One question: can this op run with these element types in this layout?
struct OpQuery {
  std::string domain;  ///< "" or "ai.onnx" for the default domain
  std::string op;
  int64_t opset = 0;  ///< the model's opset of `domain`
  /// The element type of each input, in order; kUndefined for an omitted optional input or a type
  /// that is not known (not checked).
  std::vector<DataType> inputs;
  /// Likewise for the outputs; checked where the kernel constrains an output beyond its inputs
  /// (Cast's `to`, QuantizeLinear's output, ConstantOfShape's value).
  std::vector<DataType> outputs;
  Layout layout = Layout::kAny;
};

/// The answer: ok, or why not ("no reference kernel for LSTM", "Conv: input 0 is int8; the
/// reference kernel takes float, float16, bfloat16, double").
struct Support {
  bool ok = false;
  std::string reason;  ///< empty when ok

  static Support yes() { return {true, {}}; }
  static Support no(std::string reason) { return {false, std::move(reason)}; }
  explicit operator bool() const { return ok; }
};

/// A kernel library's answer to OpQuery. A "no" means the kernel refuses nodes of that description
/// (kUnimplemented, or kInvalidArgument for an index input of another type), short of degenerate
/// ones it answers before looking at types (a Reduce with noop_with_empty_axes and no axes copies
/// its input, whatever the type). A "yes" covers what the query describes; limits that depend on
/// attributes or values (training-mode Dropout, integer division by zero, a Cast `to` a type the
/// query did not name) are still the kernel's to report.
class Capabilities {
 public:
  virtual ~Capabilities() = default;
  /// "reference", later "cuda".
  virtual const char* name() const = 0;
  virtual Support supports(const OpQuery& query) const = 0;
  /// The op's value operands: the inputs (by index) whose data its kernel must know when the
  /// node is planned, small operands it reads on the host (Slice's starts, Resize's scales,
  /// Reduce's axes) or that decide its outputs' dims (Expand's shape, TopK's k). A node whose
  /// value operand is known only at run time does not run on this library's kernels. None by
  /// default (a library that reads every operand where it runs).
  virtual std::vector<size_t> valueInputs(const std::string& domain, const std::string& op,
                                          int64_t opset) const {
    (void)domain, (void)op, (void)opset;
    return {};
  }
};

/// The reference CPU kernels' capabilities, from their registry (kernels/reference/registry.cc).
const Capabilities& referenceCapabilities();

}  // namespace onnxopt::kernels
