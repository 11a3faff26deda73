// The LRU cache of plans by input signature (plan_cache.h).
#include "onnxopt/runtime/plan_cache.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace onnxopt::runtime {

std::string inputSignature(const InputShapes& shapes) {
  std::string out;
  for (const auto& [name, shape] : shapes) {  // std::map: name order
    out += fmt::format("{}:{}[{}]", name, dataTypeName(shape.dtype), fmt::join(shape.dims, ","));
    if (shape.value) {
      // The bytes, not a printed number: every float value (a -0, a NaN payload) plans apart.
      out += '=';
      for (unsigned char b : *shape.value) out += fmt::format("{:02x}", b);
    }
    out += ';';
  }
  return out;
}

PlanCache::PlanCache(Builder build, size_t capacity)
    : build_(std::move(build)), capacity_(std::max<size_t>(capacity, 1)) {}

void PlanCache::clear() {
  entries_.clear();
  index_.clear();
}

StatusOr<std::shared_ptr<const Plan>> PlanCache::get(const InputShapes& shapes) {
  std::string key = inputSignature(shapes);
  auto it = index_.find(key);
  if (it != index_.end()) {
    ++hits_;
    entries_.splice(entries_.begin(), entries_, it->second);
    return entries_.front().plan;
  }
  ++misses_;
  ASSIGN_OR_RETURN(Plan plan, build_(shapes));
  if (entries_.size() >= capacity_) {
    index_.erase(entries_.back().key);
    entries_.pop_back();
    ++evictions_;
  }
  entries_.push_front(Entry{key, std::make_shared<const Plan>(std::move(plan))});
  index_[key] = entries_.begin();
  return entries_.front().plan;
}

}  // namespace onnxopt::runtime
