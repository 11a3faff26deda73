// What the files of merge-consecutive share: each file adds the patterns of one concept (view ops,
// Slices) to the pass's list, and the helpers they all use.
#pragma once

#include <cstdint>
#include <vector>

#include "onnxopt/rewrite/pattern.h"

namespace onnxopt::passes::merge {

/// Replaces `node`'s output with `value` when that keeps model output names.
bool forwardTo(ir::Node* node, ir::Value* value, rewrite::PatternContext& ctx);

/// Sets the `axes` of a Squeeze/Unsqueeze/Reduce-like node: the attribute when `as_input` is
/// false, else a new constant input 1.
void setAxes(ir::Node* node, const std::vector<int64_t>& axes, bool as_input,
             rewrite::PatternContext& ctx);

/// Reshape, Squeeze, Unsqueeze and Flatten chains; Reduce(keepdims=0) then Unsqueeze
/// (merge_view_ops.cc).
void addViewPatterns(rewrite::PatternList& list);
/// Slice of a Slice (merge_slices.cc).
void addSlicePatterns(rewrite::PatternList& list);

}  // namespace onnxopt::passes::merge
