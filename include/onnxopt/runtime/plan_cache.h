// PlanCache: plans by input signature (the dtype and dims of every input, and the data of the
// value inputs: InputShape::value), so that a session run at a shape (and value) it has seen
// reuses that plan and a new one plans again. Bounded, least recently used first out.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "onnxopt/runtime/plan.h"

namespace onnxopt::runtime {

/// "name:dtype[d0,d1,...];..." over the inputs in name order, a value input's data appended in
/// hex ("k:int64[1]=0200000000000000;"): equal shapes and values, equal signatures.
std::string inputSignature(const InputShapes& shapes);

class PlanCache {
 public:
  /// Plans kept by default: a model served at a few batch sizes and sequence lengths stays
  /// planned; each plan holds only metadata (its arena is the executor's), so eight are cheap.
  static constexpr size_t kDefaultCapacity = 8;

  using Builder = std::function<StatusOr<Plan>(const InputShapes&)>;

  /// `build` makes the plan for a signature not cached (buildPlan with the session's model and
  /// capabilities). A capacity of 0 is taken as 1.
  explicit PlanCache(Builder build, size_t capacity = kDefaultCapacity);

  /// The plan for `shapes`: the cached one (a hit) or a new one (a miss, which may evict the least
  /// recently used plan; holders of a shared_ptr keep theirs). A failed build is returned and not
  /// cached. Not thread-safe: a session serializes its calls.
  StatusOr<std::shared_ptr<const Plan>> get(const InputShapes& shapes);

  /// Drops every cached plan (the builder's inputs changed); the counters stay.
  void clear();

  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  int64_t evictions() const { return evictions_; }
  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const Plan> plan;
  };
  Builder build_;
  size_t capacity_;
  std::list<Entry> entries_;  ///< most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  int64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace onnxopt::runtime
