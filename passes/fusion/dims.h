// Shape queries the transformer fusions (fuse-attention, fuse-rotary) share: they compare the dims
// of symbolic exports (batch, sequence), where two dims are the same only when known to be.
#pragma once

#include <vector>

#include "onnxopt/ir/graph.h"

namespace onnxopt::passes::dims {

using Dims = std::vector<ir::Dim>;

/// Dims that are known to be equal: the same number or the same symbol (never two unknowns).
inline bool sameDim(const ir::Dim& a, const ir::Dim& b) {
  return !a.isUnknown() && !b.isUnknown() && a.kind == b.kind && a.value == b.value &&
         a.param == b.param;
}

/// The dims of a tensor value of known rank; nullptr otherwise.
inline const Dims* shapeOf(const ir::Value* v) {
  if (v == nullptr || !v->type().isTensor() || !v->type().shape) return nullptr;
  return &*v->type().shape;
}

}  // namespace onnxopt::passes::dims
