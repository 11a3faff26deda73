// Maps and sets keyed by names, for one-pass work over large graphs.
//
// std::unordered_map allocates a node per element; over a million names that allocation, not the
// hashing, is the cost. NameMap is open addressing over views: one array of slots, no allocation
// per name, no erase. The viewed strings must outlive the map. Empty names are never stored.
#pragma once

#include <cstddef>
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
    if (name.empty()) return {nullptr, false};
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    const size_t hash = hashOf(name);
    Slot& slot = probe(slots_, name, hash);
    if (!slot.name.empty()) return {&slot.value, false};
    slot.hash = hash;
    slot.name = name;
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
    return slot.name.empty() ? nullptr : &slot.value;
  }
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  size_t size() const { return size_; }

 private:
  struct Slot {
    size_t hash = 0;        ///< compared first: names of one length differ mostly here
    std::string_view name;  ///< empty: a free slot
    V value{};
  };
  static size_t hashOf(std::string_view name) { return std::hash<std::string_view>{}(name); }
  static size_t capacityFor(size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    return cap;
  }
  /// Linear probing; the table is at most half full, so the walk ends at `name` or a free slot.
  template <typename Slots>
  static auto& probe(Slots& slots, std::string_view name, size_t hash) {
    const size_t mask = slots.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      auto& slot = slots[i];
      if (slot.name.empty() || (slot.hash == hash && slot.name == name)) return slot;
    }
  }
  void rehash(size_t capacity) {
    std::vector<Slot> bigger(capacity);
    for (Slot& s : slots_) {
      if (!s.name.empty()) probe(bigger, s.name, s.hash) = std::move(s);
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
