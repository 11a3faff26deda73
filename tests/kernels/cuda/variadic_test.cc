// The CUDA variadic Sum and Mean against the CPU reference kernel, for every type
// kernels/cuda/ops.def claims: one input, two of one shape, three and eight broadcasting ones, a
// scalar among them. Label gpu: without a device each test is skipped with "skipped: no CUDA
// device".
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>
#include <string>
#include <vector>

#include "reduce_test_util.h"

namespace onnxopt::kernels {
namespace {

struct VariadicCase {
  std::string op;
  DataType dtype = DataType::kFloat;
  std::vector<std::vector<int64_t>> shapes;
  std::string name;
};

void PrintTo(const VariadicCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<VariadicCase> variadicCases() {
  const std::vector<std::vector<std::vector<int64_t>>> sets = {
      {{7, 33}},
      {{1000}, {1000}},
      {{3, 1, 17}, {4, 17}, {}},
      {{2, 1, 5}, {1, 3, 1}, {5}, {2, 3, 5}, {1}, {3, 5}, {2, 1, 1}, {}}};
  std::vector<VariadicCase> out;
  for (const CudaKernelInfo& row : test::rowsOf("Variadic")) {
    for (DataType t : row.inputs.at(0).types()) {
      for (const auto& shapes : sets) {
        std::string name = fmt::format("{}_{}", row.op, dataTypeName(t));
        for (const auto& s : shapes) name += "_" + test::dimsName(s);
        out.push_back({row.op, t, shapes, name});
      }
    }
  }
  return out;
}

class VariadicTest : public test::CudaTest, public ::testing::WithParamInterface<VariadicCase> {};

TEST_P(VariadicTest, MatchesReference) {
  const VariadicCase& c = GetParam();
  bool f = test::isFloatType(c.dtype);
  std::vector<HostTensor> inputs;
  for (size_t k = 0; k < c.shapes.size(); ++k) {
    inputs.push_back(
        test::tensorOf(c.dtype, c.shapes[k],
                       test::randomValues(c.dtype, test::elementsOf(c.shapes[k]), f ? -4 : -1000,
                                          f ? 4 : 1000, c.name + std::to_string(k))));
  }
  std::vector<HostTensor> want = test::referenceOutputs(c.op, 13, inputs, {}, 1);
  ASSERT_EQ(want.size(), 1u);
  auto got = test::runOnDevice(c.op, 13, inputs, {}, want[0].dtype, want[0].dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  // The same order of float additions as the reference: only the division may round apart.
  test::expectNear(want[0], *got, test::toleranceFor(c.dtype));
}

INSTANTIATE_TEST_SUITE_P(Claimed, VariadicTest, ::testing::ValuesIn(variadicCases()),
                         [](const ::testing::TestParamInfo<VariadicCase>& p) {
                           return p.param.name;
                         });

}  // namespace
}  // namespace onnxopt::kernels
