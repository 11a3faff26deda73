// Every row of kernels/cuda/ops.def in an elementwise kernel family against the op-trait table
// (src/ir/op_traits.def): the family's kind is the op's elementwise kind, and the row's output
// type is bool exactly where the table says the op writes bool; and no op the table calls
// elementwise has a row in another family. Runs without a GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "onnxopt/ir/op_traits.h"
#include "onnxopt/kernels/cuda.h"

namespace onnxopt::kernels {
namespace {

using ir::Elementwise;

/// The elementwise kind of each elementwise kernel family.
std::optional<Elementwise> kindOfFamily(const std::string& family) {
  static const std::map<std::string, Elementwise> kFamilies = {
      {"Unary", Elementwise::kUnary},       {"Cast", Elementwise::kUnary},
      {"Binary", Elementwise::kBinary},     {"Mod", Elementwise::kBinary},
      {"Variadic", Elementwise::kVariadic}, {"Where", Elementwise::kTernary}};
  auto it = kFamilies.find(family);
  if (it == kFamilies.end()) return std::nullopt;
  return it->second;
}

/// Whether the row's output 0 is bool: its own type set, or that of the inputs it follows.
bool writesBool(const CudaKernelInfo& row) {
  if (!row.outputs.empty()) return row.outputs[0] == TypeSet{DataType::kBool};
  size_t from = row.same_from < 0 ? 0 : static_cast<size_t>(row.same_from);
  const TypeSet& in = row.inputs[std::min(from, row.inputs.size() - 1)];
  return in == TypeSet{DataType::kBool};
}

TEST(CudaOpTraits, ElementwiseRowsAgreeWithTheTraitTable) {
  int checked = 0;
  for (const CudaKernelInfo& row : cudaKernelTable()) {
    std::string where =
        fmt::format("ops.def row {} {}-{} (family {})", row.op, row.since, row.until, row.family);
    auto kind = kindOfFamily(row.family);
    const ir::OpTraits* traits = ir::opTraits(row.domain, row.op);
    if (!kind) {
      EXPECT_FALSE(traits != nullptr && traits->elementwise != Elementwise::kNo)
          << where << ": the trait table calls it elementwise; its kernel is not";
      continue;
    }
    ASSERT_NE(traits, nullptr) << where << ": no row in src/ir/op_traits.def";
    EXPECT_EQ(traits->elementwise, *kind) << where << ": another elementwise kind in op_traits.def";
    EXPECT_EQ(traits->has(ir::OpTrait::kWritesBool), writesBool(row))
        << where << ": op_traits.def and the row disagree on a bool output";
    ++checked;
  }
  // The unary, binary and variadic sections at least (guards against an empty expansion).
  EXPECT_GT(checked, 60);
}

}  // namespace
}  // namespace onnxopt::kernels
