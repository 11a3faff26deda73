// What fold-constants computes from shapes rather than from constant data: Shape and Size of
// static shapes, the known elements of Shape chains over partly static shapes, and Reshape
// targets computed at run time whose every entry is known.
//
//   Shape(%x : T[d1, .., dk]), every di known   ==>  int64[k]{d1, .., dk}
//   %v int64, rank <= 1, computed from Shape(%x : T[B, 2, 128]) (Gather, Slice, Concat, Add, Mul,
//      Div, Unsqueeze, Cast, ...), every element known (Gather(Shape(%x), 2) * 12)
//                                               ==>  int64 value (1536)
//   Reshape(%x : T[B, S, 384], Concat(Gather(Shape(%x), 0), Gather(Shape(%x), 1), {12, 32}))
//                                               ==>  Reshape(%x, int64[4]{0, 0, 12, 32})
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/rewrite/rewriter.h"

namespace onnxopt::passes::shapefold {

/// The integer contents of shape tensors, as shape inference computed them.
using ShapeValues = std::unordered_map<const ir::Value*, ir::ShapeValue>;

/// Shape and Size of a value whose shape is fully known, constant or not.
std::optional<std::vector<kernels::HostTensor>> foldShape(const ir::Node& n);

/// Gather(Shape(x), const) and Slice(Shape(x), const...) picking only dims of x that are known,
/// while others are not:  Gather(Shape(%s : float[2,N,128]), 0)  ==>  int64 2.
std::optional<std::vector<kernels::HostTensor>> foldShapeElements(const ir::Node& n);

/// The outputs of a node that reads a value computed at run time, each int64 of rank 0 or 1
/// whose every element `values` knows as a number; nullopt otherwise. Outputs without uses come
/// back as empty tensors.
std::optional<std::vector<ir::Tensor>> foldKnownValues(const ir::Node& n,
                                                       const ShapeValues& values);

/// Dims that are not 0 whenever Reshape `n` runs: a Reshape(x, t) with a -1 in t fails when t's
/// other entries multiply to 0 (onnxruntime and numpy refuse to infer -1 then), so each of those
/// entries is nonzero once it has run, and an ancestor of `n` has always run before `n` does.
/// Looks at the nearest kMaxAncestors ancestors.
std::vector<ir::SymExpr> nonzeroDims(const ir::Node& n, const ShapeValues& values);

/// A Reshape whose target is computed at run time becomes a Reshape to a constant target when
/// each entry is known: a number, a dim equal to the input's dim at its position (0 there, with
/// allowzero = 0), or the one entry left (-1 there, when every other entry is a positive number
/// or a copied dim that nonzeroDims proves). Without `values`, or when they do not settle it,
/// from the inferred output type: at most one dim not known, -1 there. Returns whether the
/// target was replaced.
bool foldReshapeTarget(ir::Node* n, const ShapeValues* values, rewrite::Rewriter& rewriter);

}  // namespace onnxopt::passes::shapefold
