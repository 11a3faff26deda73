// ir::opTraits(): the rows of op_traits.def, looked up by name.
#include "onnxopt/ir/op_traits.h"

#include <algorithm>

namespace onnxopt::ir {
namespace {

using enum OpTrait;

constexpr OpTraits kTable[] = {
#define OP_TRAITS(op, elementwise, flags) {#op, Elementwise::elementwise, flags},
#include "op_traits.def"
#undef OP_TRAITS
};

constexpr bool namesUnique() {
  for (size_t i = 0; i < std::size(kTable); ++i) {
    for (size_t j = i + 1; j < std::size(kTable); ++j) {
      if (kTable[i].op == kTable[j].op) return false;
    }
  }
  return true;
}
static_assert(namesUnique(), "op_traits.def: an op has two rows");

}  // namespace

std::span<const OpTraits> opTraitTable() {
  return kTable;
}

const OpTraits* opTraits(std::string_view domain, std::string_view op) {
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  const OpTraits* it = std::find_if(std::begin(kTable), std::end(kTable),
                                    [&](const OpTraits& t) { return t.op == op; });
  return it == std::end(kTable) ? nullptr : it;
}

bool isElementwise(std::string_view domain, std::string_view op) {
  const OpTraits* t = opTraits(domain, op);
  return t != nullptr && t->elementwise != Elementwise::kNo;
}

bool isElementwise(std::string_view domain, std::string_view op, Elementwise kind) {
  const OpTraits* t = opTraits(domain, op);
  return t != nullptr && t->elementwise == kind;
}

bool hasTrait(std::string_view domain, std::string_view op, OpTrait trait) {
  const OpTraits* t = opTraits(domain, op);
  return t != nullptr && t->has(trait);
}

bool broadcasts(std::string_view domain, std::string_view op) {
  const OpTraits* t = opTraits(domain, op);
  return t != nullptr &&
         (t->elementwise == Elementwise::kBinary || t->elementwise == Elementwise::kTernary ||
          t->elementwise == Elementwise::kVariadic);
}

}  // namespace onnxopt::ir
