// Index maps of view chains, for fuse-packed-attention's sequence-first form: a value reached from
// a base value through ops that only move or select elements (Reshape, Transpose, Squeeze,
// Unsqueeze, Gather of one index, Slice), as the mixed-radix strides of its elements in the
// base's row-major order (fuse_packed_attention.cc explains the rule).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "onnxopt/ir/graph.h"

namespace onnxopt::passes::view_maps {

/// One mixed-radix digit of an index: `extent` values, `stride` elements apart.
struct Digit {
  int64_t extent, stride;
};

/// An index map onto a base value's row-major elements: element (i0, i1, ...) of a value is
/// element offset + sum over dims k of the strides of ik's digits (ik written in dim k's digits,
/// the first the most significant). A dim of one digit is a plain stride; a Reshape that merges
/// two dims whose strides do not line up keeps both digits in one dim, so chains that split a
/// merged dim again (torch's head splits, which ONNX writes as Reshapes of copies) stay exact.
struct IndexMap {
  std::vector<std::vector<Digit>> dims;
  int64_t offset = 0;

  int64_t extent(size_t dim) const {
    int64_t n = 1;
    for (const Digit& d : dims[dim]) n *= d.extent;
    return n;
  }
  std::vector<int64_t> shape() const {
    std::vector<int64_t> out;
    for (size_t i = 0; i < dims.size(); ++i) out.push_back(extent(i));
    return out;
  }
  /// Each dim's digits merged where one steps exactly over the next (extents of 1 dropped).
  void simplify() {
    for (auto& digits : dims) {
      std::vector<Digit> merged;
      for (const Digit& d : digits) {
        if (d.extent == 1) continue;
        if (!merged.empty() && merged.back().stride == d.stride * d.extent) {
          merged.back() = {merged.back().extent * d.extent, d.stride};
        } else {
          merged.push_back(d);
        }
      }
      digits = std::move(merged);
    }
  }
  /// The stride of each dim when every dim is one digit (0 for a dim of extent 1), else nullopt.
  std::optional<std::vector<int64_t>> strides() const {
    IndexMap m = *this;
    m.simplify();
    std::vector<int64_t> out;
    for (const auto& digits : m.dims) {
      if (digits.size() > 1) return std::nullopt;
      out.push_back(digits.empty() ? 0 : digits[0].stride);
    }
    return out;
  }
};

IndexMap identityMap(const std::vector<int64_t>& dims);

/// Whether `m` maps onto its base in row-major order from element 0 (where its shape is the
/// base's, `m` is the identity).
bool isRowMajor(const IndexMap& m);

/// `m` read in row-major order as `dims` (Reshape's semantics): the digits, in order, regrouped,
/// a digit split in two where a new dim ends inside it. False where extents do not divide.
bool reshapeMap(IndexMap& m, const std::vector<int64_t>& dims);

/// Whether `node` only moves or selects its input 0's elements: the ops the maps are followed
/// through.
bool isViewOp(const ir::Node& node);

/// Dim `axis` of `m` cut to [start, start + length) (one digit, or none: extent 1).
bool cutDim(IndexMap& m, size_t axis, int64_t start, int64_t length);

/// The map of `node`'s output `index` given `m`, the map of its input 0; false where the op's
/// operands are not constants or the shapes not static.
bool applyViewOp(const ir::Node& node, size_t index, IndexMap& m, int64_t opset);

/// `value` as a map onto the value the chain of view ops that makes it starts from (the first
/// value not made by one, with a static shape): that base and the map, or nullopt.
std::optional<std::pair<ir::Value*, IndexMap>> traceView(ir::Value* value, int64_t opset);

/// Whether `m` has `dims` and, where a dim is not 1, `strides`, at `offset`.
bool mapIs(const IndexMap& m, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
           int64_t offset);

}  // namespace onnxopt::passes::view_maps
