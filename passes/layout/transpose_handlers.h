// What optimize-transposes may push a Transpose<p> through, op by op: the per-op handler table.
//
//   N(Transpose<p>(x), ...)  ==>  Transpose<q>(N'(x, ...))
//
// An elementwise N is its own N' (q = p). An op that names axes of its input gets them renamed on
// x (axis a of Transpose<p>(x) is axis p[a] of x): an attribute, constant inputs, and where the
// result's rank is not x's, the q that orders the result's dims (none when it is the identity).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/ir/graph.h"

namespace onnxopt::passes {

/// An elementwise op of the default domain with one output: elements moved before it are its
/// results moved the same way.
bool isElementwise(const ir::Node& n);

/// A constant, or the Unsqueeze of one optimize-transposes made (fold-constants folds both).
bool isConstantOperand(const ir::Value* v);

/// A constant input the pushed op takes instead of the original's: input index, the base of the
/// new initializer's name, its value.
struct RemappedInput {
  size_t index = 0;
  std::string name;
  ir::Tensor tensor;
};

/// How an op that names axes of its first input is rewritten to take x instead of
/// Transpose<p>(x).
struct AxisRemap {
  /// An attribute to set on the pushed op (axis, axes, pads), when it takes one.
  std::optional<ir::Attribute> attribute;
  /// Constant inputs to set on the pushed op (Slice's axes, Pad's pads, Resize's scales or sizes,
  /// Reduce/Squeeze/Unsqueeze axes as an input).
  std::vector<RemappedInput> inputs;
  /// Where the result's rank is not x's (keepdims=0 reductions, Squeeze, Unsqueeze): the perm of
  /// the Transpose after the pushed op that gives the result's dims their order (the identity
  /// where none is needed).
  std::optional<std::vector<int64_t>> result_perm;
};

/// The rewrite of `n` (not elementwise) onto x, for a Transpose<perm> of x (of rank `rank`) as
/// its first input; nullopt where `n` is no op the table knows or its axes are not constant.
std::optional<AxisRemap> axisRemapOf(const ir::Node& n, int64_t opset, int64_t rank,
                                     const std::vector<int64_t>& perm);

}  // namespace onnxopt::passes
