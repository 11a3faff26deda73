// A set of names for one-pass uniqueness checks over large graphs.
//
// std::unordered_set allocates a node per element; over a million names that allocation, not
// the hashing, is the cost. NameSet is open addressing over views: one array, no allocation per
// name. The viewed strings must outlive the set. Empty names are not stored (insert says false).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

namespace onnxopt {

class NameSet {
 public:
  /// Room for about `expected` names before the table grows.
  explicit NameSet(size_t expected = 0) { rehash(capacityFor(expected)); }

  /// Adds `name`; false when it was already present (or is empty).
  bool insert(std::string_view name) {
    if (name.empty()) return false;
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    if (!place(slots_, name)) return false;
    ++size_;
    return true;
  }
  bool contains(std::string_view name) const {
    if (name.empty()) return false;
    const size_t mask = slots_.size() - 1;
    for (size_t i = std::hash<std::string_view>{}(name)&mask;; i = (i + 1) & mask) {
      if (slots_[i].empty()) return false;
      if (slots_[i] == name) return true;
    }
  }
  size_t size() const { return size_; }

 private:
  static size_t capacityFor(size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    return cap;
  }
  /// Linear probing; the table is at most half full, so a free slot is always found.
  static bool place(std::vector<std::string_view>& slots, std::string_view name) {
    const size_t mask = slots.size() - 1;
    for (size_t i = std::hash<std::string_view>{}(name)&mask;; i = (i + 1) & mask) {
      if (slots[i].empty()) {
        slots[i] = name;
        return true;
      }
      if (slots[i] == name) return false;
    }
  }
  void rehash(size_t capacity) {
    std::vector<std::string_view> bigger(capacity);
    for (std::string_view s : slots_) {
      if (!s.empty()) place(bigger, s);
    }
    slots_ = std::move(bigger);
  }

  std::vector<std::string_view> slots_;
  size_t size_ = 0;
};

}  // namespace onnxopt
