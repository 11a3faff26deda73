// Axis arguments as ONNX gives them: negative values count from the end.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace onnxopt {

/// `axis` in [-rank, rank) as an index in [0, rank); nullopt when it is out of range.
inline std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

/// Each of `axes` normalized against `rank`, in order; nullopt when one is out of range or repeats
/// (every op that takes an axes list rejects duplicates).
inline std::optional<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t>& axes,
                                                         int64_t rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank > 0 ? rank : 0), false);
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n || seen[static_cast<size_t>(*n)]) return std::nullopt;
    seen[static_cast<size_t>(*n)] = true;
    out.push_back(*n);
  }
  return out;
}

}  // namespace onnxopt
