// Greedy-by-size arena placement (memory_planner.h).
#include "onnxopt/runtime/memory_planner.h"

#include <algorithm>
#include <numeric>

namespace onnxopt::runtime {

int64_t alignedBytes(int64_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

StatusOr<MemoryLayout> planMemory(const std::vector<BufferRequest>& requests) {
  for (size_t i = 0; i < requests.size(); ++i) {
    const BufferRequest& r = requests[i];
    if (r.bytes < 0 || r.last < r.first || r.bytes > INT64_MAX - kArenaAlignment) {
      return invalidArgument("memory planner: buffer {} has {} bytes over steps [{}, {}]", i,
                             r.bytes, r.first, r.last);
    }
  }
  MemoryLayout layout;
  layout.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first; ties by earlier start, then by index, so the layout is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes) return requests[a].bytes > requests[b].bytes;
    return requests[a].first < requests[b].first;
  });
  struct Placed {
    int64_t offset, size;
    size_t index;
  };
  std::vector<Placed> placed;  // kept sorted by offset
  for (size_t i : order) {
    const BufferRequest& r = requests[i];
    int64_t size = alignedBytes(r.bytes);
    if (size == 0) continue;
    layout.total_bytes += size;
    // Walk the placed buffers whose lifetimes overlap, in offset order, for the first gap.
    int64_t offset = 0;
    for (const Placed& p : placed) {
      const BufferRequest& q = requests[p.index];
      if (q.last < r.first || r.last < q.first) continue;
      if (p.offset >= offset + size) break;  // the gap before p fits
      offset = std::max(offset, p.offset + p.size);
    }
    layout.offsets[i] = offset;
    layout.arena_bytes = std::max(layout.arena_bytes, offset + size);
    auto at = std::upper_bound(placed.begin(), placed.end(), offset,
                               [](int64_t o, const Placed& p) { return o < p.offset; });
    placed.insert(at, Placed{offset, size, i});
  }
  return layout;
}

}  // namespace onnxopt::runtime
