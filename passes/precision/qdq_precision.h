// What convert-precision does with quantized models. From opset 19, QuantizeLinear takes x and
// y_scale in float16/bfloat16 and DequantizeLinear's output has its scale's type: the scales
// convert with the float side and no Cast sits at a Q/DQ.
//
//   %q = QuantizeLinear(%x16, %s: float)     ==>   %q = QuantizeLinear(%x16, %s16)
//   %d: float = DequantizeLinear(%q, %s)           %d16 = DequantizeLinear(%q, %s16)
//
// Below it, Q/DQ stay float32, and so does what lies between a DequantizeLinear and the next
// QuantizeLinear (a QDQ region: the int8 op a runtime fuses): a Cast only where a region meets
// the converted side, rather than one per Q/DQ.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "onnxopt/ir/graph.h"

namespace onnxopt::passes {

/// The model opset from which QuantizeLinear and DequantizeLinear allow float16 and bfloat16.
constexpr int64_t kLowPrecisionQdqOpset = 19;

/// Reasons quantizedKeepReason gives that convert-precision warns of.
inline constexpr const char* kUnrepresentableScale = "a quantization scale the type cannot hold";
inline constexpr const char* kDequantizedRange = "dequantized values beyond the type's range";

/// The ops whose compute the target type speeds up (tensor cores, half the bytes per product).
bool computeHeavy(const std::string& op);

/// A default-domain QuantizeLinear or DequantizeLinear.
bool isQdq(const ir::Node& n);

/// Why a quantization node stays float32 under `target` (empty: nothing about its quantization
/// keeps it):
///   a Q/DQ whose scale is computed at run time, or rounds to zero, infinity or off by more than
///   two units of `target`, or (DequantizeLinear) whose values would pass `target`'s range;
///   QLinearMatMul (its scales are all it has of float: nothing to speed up);
///   a Cast of MatMulInteger's or ConvInteger's int32 sums (they pass float16's range), and the
///   Mul scaling it; a Mul of DynamicQuantizeLinear's scale (a product of scales may underflow).
std::string quantizedKeepReason(const ir::Node& n, DataType target);

/// The nodes of `g`, other than Q/DQ, inside a QDQ region: each float input that is not a
/// constant comes from a DequantizeLinear, a region node or (where `io_float32`) a graph input
/// (a product or convolution: from a DequantizeLinear only, so that an unquantized one is not
/// taken), and each float output is read only by QuantizeLinear or region nodes, or is a graph
/// output (where `io_float32`, of a node reached from a DequantizeLinear).
std::set<const ir::Node*> qdqRegion(const ir::Graph& g, bool io_float32);

}  // namespace onnxopt::passes
