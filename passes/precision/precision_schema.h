// What convert-precision knows of ONNX's schemas: which types an op allows (ir/precision_ops.inc,
// generated from onnx's own schemas), which of its inputs and outputs must share one type, and
// which attribute sets the type of its output. checkPrecisionTypes holds a converted graph to
// the last two:
//
//   %h0: float = Slice(ConstantOfShape<value=float>(%s))  %y = LSTM(%x: float16, ..., %h0)
//     ==> error: LSTM 'l': input 5 'h0' is float, input 0 'x' is float16
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/tied_types.h"
#include "onnxopt/support/status.h"

namespace onnxopt::passes {

using ir::TiedSlot;

/// What onnx's schemas allow for one version of an op (tools/gen_precision_ops.py).
struct OpPrecision {
  int64_t since = 0;
  bool fp16 = false;
  int64_t fp16_restricted = 0;  ///< outputs (bit i) that stay float32 under float16
  bool bf16 = false;
  int64_t bf16_restricted = 0;
  int64_t float_inputs = 0;   ///< inputs (bit i) declared tensor(float) itself
  int64_t float_outputs = 0;  ///< outputs likewise
  /// The inputs and outputs of each float-admitting type parameter: one type each.
  std::vector<std::vector<TiedSlot>> tied;
  /// The model opset from which the op's function body, which a runtime without a kernel for
  /// the type runs instead, allows float16 (bfloat16); 0: any.
  int64_t fp16_body_from = 0;
  int64_t bf16_body_from = 0;
};

/// Whether onnx has a default-domain op `op` with a float tensor in its interface.
bool hasPrecisionRow(const std::string& op);

/// The row of `op` in force at `opset` (the newest version at or below it), or nullptr.
const OpPrecision* precisionOf(const std::string& op, int64_t opset);

/// An attribute that sets the element type of an op's output 0 rather than its inputs.
struct TypeAttribute {
  const char* name = nullptr;
  /// Whether the attribute is a tensor (ConstantOfShape's value) rather than a DataType code.
  bool tensor = false;
  /// The type when the attribute is absent: float, or (false) the type of input 0.
  bool float_by_default = true;
};

/// The attribute that types `op`'s output 0 (Cast's to, RandomNormal's dtype, ConstantOfShape's
/// value, ...), or nullptr. Constant is left to its own handling (its value_* forms).
const TypeAttribute* typeAttributeOf(const std::string& op);

/// Checks every node of `graph` and its subgraphs that reads or writes a value of type `target`:
/// its tied inputs and outputs have one element type, the attribute typing its output agrees with
/// it, and an If's or Loop's outputs have its bodies' types. An error names the node and values.
Status checkPrecisionTypes(const ir::Graph& graph, int64_t opset, DataType target);

}  // namespace onnxopt::passes
