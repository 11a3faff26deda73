// Maps and sets keyed by names, for one-pass work over large graphs.
//
// std::unordered_map allocates a node per element; over a million names that allocation, not the
// hashing, is the cost. NameMap is open addressing over views: one array of slots, no allocation
// per name, no erase. The viewed strings must outlive the map. Empty names are never stored.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxopt {

template <typename V>
class NameMap {
 public:
  /// Room for about `expected` names before the table grows.
  explicit NameMap(size_t expected = 0) { rehash(capacityFor(expected)); }

  /// Makes room for `expected` names in all.
  void reserve(size_t expected) {
    if (capacityFor(expected) > slots_.size()) rehash(capacityFor(expected));
  }

  /// Adds `name` -> `value` unless `name` is present. Returns the stored value and whether it was
  /// added; {nullptr, false} for an empty name.
  std::pair<V*, bool> insert(std::string_view name, V value) {
    if (name.empty() || name.size() > UINT32_MAX) return {nullptr, false};
    if ((size_ + 1) * 3 > slots_.size() * 2) rehash(slots_.size() * 2);
    const uint32_t hash = hashOf(name);
    Slot& slot = probe(slots_, name, hash);
    if (!slot.free()) return {&slot.value, false};
    slot.hash = hash;
    slot.size = static_cast<uint32_t>(name.size());
    slot.data = name.data();
    slot.value = std::move(value);
    ++size_;
    return {&slot.value, true};
  }
  /// Adds or replaces.
  void set(std::string_view name, V value) {
    auto [stored, added] = insert(name, value);
    if (!added && stored != nullptr) *stored = std::move(value);
  }
  /// The value stored for `name`, or nullptr.
  const V* find(std::string_view name) const {
    if (name.empty()) return nullptr;
    const Slot& slot = probe(slots_, name, hashOf(name));
    return slot.free() ? nullptr : &slot.value;
  }
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  size_t size() const { return size_; }

 private:
  /// 24 bytes with a pointer-sized value: a million names take 48 MB, not 64.
  struct Slot {
    uint32_t hash = 0;  ///< compared first: names of one length differ mostly here
    uint32_t size = 0;  ///< 0: a free slot (empty names are never stored)
    const char* data = nullptr;
    V value{};
    bool free() const { return size == 0; }
    std::string_view name() const { return {data, size}; }
  };
  static uint32_t hashOf(std::string_view name) {
    size_t h = std::hash<std::string_view>{}(name);
    return static_cast<uint32_t>(h ^ (h >> 32));
  }
  /// At most two thirds full: a million names take 1.5 million slots (36 MB), not 2^21.
  static size_t capacityFor(size_t expected) { return std::max<size_t>(16, expected / 2 * 3 + 3); }
  /// Linear probing from the hash's place in [0, size) (a multiply, not a modulo); the table is
  /// at most two thirds full, so the walk ends at `name` or a free slot.
  template <typename Slots>
  static auto& probe(Slots& slots, std::string_view name, uint32_t hash) {
    const size_t size = slots.size();
    size_t i = static_cast<size_t>((uint64_t{hash} * size) >> 32);
    for (;; i = i + 1 == size ? 0 : i + 1) {
      auto& slot = slots[i];
      if (slot.free() || (slot.hash == hash && slot.name() == name)) return slot;
    }
  }
  void rehash(size_t capacity) {
    std::vector<Slot> bigger(capacity);
    for (Slot& s : slots_) {
      if (!s.free()) probe(bigger, s.name(), s.hash) = std::move(s);
    }
    slots_ = std::move(bigger);
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

/// A set of names: insert says whether the name was new.
class NameSet {
 public:
  explicit NameSet(size_t expected = 0) : map_(expected) {}
  bool insert(std::string_view name) { return map_.insert(name, true).second; }
  bool contains(std::string_view name) const { return map_.contains(name); }
  size_t size() const { return map_.size(); }

 private:
  NameMap<bool> map_;
};

}  // namespace onnxopt
