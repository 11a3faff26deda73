#include "onnxopt/ir/tied_types.h"

#include <sstream>
#include <unordered_map>
#include <utility>

namespace onnxopt::ir {
namespace {

/// Every version's groups per op, oldest first.
using TiedTable = std::unordered_map<std::string, std::vector<std::pair<int64_t, TiedGroups>>>;

const TiedTable& tiedTable() {
  static const auto* table = [] {
    auto* t = new TiedTable();
#define PRECISION_OP(op, since, h, hr, b, br, fi, fo, tied, hb, bb) \
  (*t)[#op].emplace_back(since, parseTied(tied));
#include "onnxopt/ir/precision_ops.inc"
#undef PRECISION_OP
    return t;
  }();
  return *table;
}

}  // namespace

TiedGroups parseTied(const std::string& text) {
  TiedGroups groups;
  std::stringstream all(text);
  std::string group;
  while (std::getline(all, group, ';')) {
    std::vector<TiedSlot> slots;
    std::stringstream members(group);
    std::string m;
    while (std::getline(members, m, ',')) {
      TiedSlot slot;
      slot.output = m[0] == 'o';
      slot.variadic = m.back() == '+';
      slot.index = std::stoul(m.substr(1, m.size() - 1 - (slot.variadic ? 1 : 0)));
      slots.push_back(slot);
    }
    if (!slots.empty()) groups.push_back(std::move(slots));
  }
  return groups;
}

const TiedGroups* tiedTypesOf(const std::string& op, int64_t opset) {
  auto it = tiedTable().find(op);
  if (it == tiedTable().end()) return nullptr;
  const TiedGroups* groups = nullptr;
  for (const auto& [since, g] : it->second) {
    if (since <= opset) groups = &g;
  }
  return groups;
}

}  // namespace onnxopt::ir
