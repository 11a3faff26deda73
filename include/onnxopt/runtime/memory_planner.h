// The memory planner: buffers with lifetimes (first and last step that touch them) -> offsets in one
// arena, greedy by size (TFLite's GreedyBySize, the idea of onnxruntime's planner): the largest
// buffer is placed first, each at the lowest aligned offset that overlaps no placed buffer whose
// lifetime overlaps its own. Plain C++, no device: the lowering (plan.h) builds the requests, the
// CUDA executor allocates one arena of `arena_bytes` per plan.
#pragma once

#include <cstdint>
#include <vector>

#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

/// Offsets are multiples of this (cudaMalloc's own alignment; every vector load fits).
inline constexpr int64_t kArenaAlignment = 256;

/// One buffer to place: `bytes` live from step `first` to step `last`, both inclusive.
struct BufferRequest {
  int64_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
};

struct MemoryLayout {
  std::vector<int64_t> offsets;  ///< one per request, in request order
  int64_t arena_bytes = 0;       ///< the arena's size: max(offset + aligned size)
  int64_t total_bytes = 0;       ///< sum of the aligned sizes (what separate buffers would take)
};

/// `bytes` rounded up to kArenaAlignment (0 stays 0).
int64_t alignedBytes(int64_t bytes);

/// Places `requests`. Two requests whose [first, last] intervals intersect never share a byte. A
/// zero-byte request gets offset 0 and takes no space. Negative sizes or last < first are
/// kInvalidArgument naming the request.
StatusOr<MemoryLayout> planMemory(const std::vector<BufferRequest>& requests);

}  // namespace onnxopt::runtime
