// The memory planner (runtime/memory_planner.h): hand cases with a known optimal arena, and a
// property test over random lifetimes and sizes (no two live buffers share a byte).
#include "onnxopt/runtime/memory_planner.h"

#include <random>

#include <gtest/gtest.h>

namespace onnxopt::runtime {
namespace {

constexpr int64_t kA = kArenaAlignment;

MemoryLayout plan(const std::vector<BufferRequest>& requests) {
  auto layout = planMemory(requests);
  EXPECT_TRUE(layout.isOk()) << layout.status().toString();
  return layout.isOk() ? std::move(layout).value() : MemoryLayout{};
}

bool overlapsInTime(const BufferRequest& a, const BufferRequest& b) {
  return !(a.last < b.first || b.last < a.first);
}

/// Every pair of requests live at the same step occupies disjoint bytes.
void expectNoConflicts(const std::vector<BufferRequest>& r, const MemoryLayout& l) {
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(l.offsets[i] % kA, 0) << "buffer " << i;
    EXPECT_LE(l.offsets[i] + alignedBytes(r[i].bytes), l.arena_bytes) << "buffer " << i;
    for (size_t j = i + 1; j < r.size(); ++j) {
      if (r[i].bytes == 0 || r[j].bytes == 0 || !overlapsInTime(r[i], r[j])) continue;
      int64_t ai = l.offsets[i], bi = ai + alignedBytes(r[i].bytes);
      int64_t aj = l.offsets[j], bj = aj + alignedBytes(r[j].bytes);
      EXPECT_TRUE(bi <= aj || bj <= ai) << "buffers " << i << " and " << j << " overlap";
    }
  }
}

TEST(MemoryPlanner, AlignsSizesUp) {
  EXPECT_EQ(alignedBytes(0), 0);
  EXPECT_EQ(alignedBytes(1), kA);
  EXPECT_EQ(alignedBytes(kA), kA);
  EXPECT_EQ(alignedBytes(kA + 1), 2 * kA);
}

TEST(MemoryPlanner, ChainNeedsTwoBuffers) {
  // x0 -> x1 -> x2 -> x3: each value lives from its producer to its consumer.
  std::vector<BufferRequest> r = {{kA, 0, 1}, {kA, 1, 2}, {kA, 2, 3}, {kA, 3, 4}};
  MemoryLayout l = plan(r);
  EXPECT_EQ(l.arena_bytes, 2 * kA);
  EXPECT_EQ(l.total_bytes, 4 * kA);
  EXPECT_EQ(l.offsets[0], l.offsets[2]);
  EXPECT_EQ(l.offsets[1], l.offsets[3]);
  expectNoConflicts(r, l);
}

TEST(MemoryPlanner, DisjointLifetimesShareOneOffset) {
  std::vector<BufferRequest> r = {{3 * kA, 0, 0}, {kA, 1, 1}, {2 * kA, 2, 2}};
  MemoryLayout l = plan(r);
  EXPECT_EQ(l.arena_bytes, 3 * kA);
  EXPECT_EQ(l.offsets, (std::vector<int64_t>{0, 0, 0}));
}

TEST(MemoryPlanner, AllLiveTogetherStackLargestFirst) {
  std::vector<BufferRequest> r = {{kA, 0, 5}, {3 * kA, 0, 5}, {2 * kA, 0, 5}};
  MemoryLayout l = plan(r);
  EXPECT_EQ(l.arena_bytes, 6 * kA);
  EXPECT_EQ(l.offsets, (std::vector<int64_t>{5 * kA, 0, 3 * kA}));
}

TEST(MemoryPlanner, SmallBufferFillsTheGapOfAFreedOne) {
  // A large buffer lives throughout; B (2 units) dies at step 1; C (1 unit) and D (1 unit) start
  // after it and fit in B's hole, so the arena stays 4 + 2 units.
  std::vector<BufferRequest> r = {{4 * kA, 0, 4}, {2 * kA, 0, 1}, {kA, 2, 4}, {kA, 2, 4}};
  MemoryLayout l = plan(r);
  EXPECT_EQ(l.arena_bytes, 6 * kA);
  EXPECT_EQ(l.offsets[0], 0);
  EXPECT_EQ(l.offsets[1], 4 * kA);
  EXPECT_EQ(l.offsets[2], 4 * kA);
  EXPECT_EQ(l.offsets[3], 5 * kA);
  expectNoConflicts(r, l);
}

TEST(MemoryPlanner, UnalignedSizesGetAlignedOffsets) {
  std::vector<BufferRequest> r = {{10, 0, 1}, {300, 0, 1}, {1, 0, 1}};
  MemoryLayout l = plan(r);
  EXPECT_EQ(l.arena_bytes, 4 * kA);  // 300 -> 2 units, 10 and 1 -> 1 each
  expectNoConflicts(r, l);
}

TEST(MemoryPlanner, ZeroByteBuffersTakeNoSpace) {
  std::vector<BufferRequest> r = {{0, 0, 3}, {kA, 0, 3}};
  MemoryLayout l = plan(r);
  EXPECT_EQ(l.arena_bytes, kA);
  EXPECT_EQ(l.total_bytes, kA);
}

TEST(MemoryPlanner, RefusesBadRequests) {
  auto bad_size = planMemory({{kA, 0, 1}, {-1, 0, 1}});
  ASSERT_FALSE(bad_size.isOk());
  EXPECT_NE(bad_size.status().message().find("buffer 1"), std::string::npos)
      << bad_size.status().toString();
  EXPECT_FALSE(planMemory({{kA, 3, 2}}).isOk());
}

TEST(MemoryPlanner, RandomLifetimesNeverConflict) {
  std::mt19937_64 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    std::uniform_int_distribution<int> count(1, 40);
    std::uniform_int_distribution<int64_t> step(0, 30), size(0, 5000);
    std::vector<BufferRequest> r(static_cast<size_t>(count(rng)));
    int64_t peak_live = 0;
    for (BufferRequest& b : r) {
      int64_t a = step(rng), c = step(rng);
      b = {size(rng), std::min(a, c), std::max(a, c)};
    }
    // The arena can be no smaller than the bytes live at the busiest step.
    for (int64_t s = 0; s <= 30; ++s) {
      int64_t live = 0;
      for (const BufferRequest& b : r) {
        if (b.first <= s && s <= b.last) live += alignedBytes(b.bytes);
      }
      peak_live = std::max(peak_live, live);
    }
    MemoryLayout l = plan(r);
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectNoConflicts(r, l);
    EXPECT_LE(l.arena_bytes, l.total_bytes);
    EXPECT_GE(l.arena_bytes, peak_live);
  }
}

}  // namespace
}  // namespace onnxopt::runtime
