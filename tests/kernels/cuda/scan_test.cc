// The CUDA CumSum and CumProd kernels against the CPU reference kernel, for every type
// kernels/cuda/ops.def claims: axes first/middle/last and negative, lines of 1 to 5000 elements
// along and across the memory order, exclusive and reverse, an int32 axis, an empty tensor.
// Label gpu: without a device each test is skipped with "skipped: no CUDA device".
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>
#include <string>
#include <vector>

#include "reduce_test_util.h"

namespace onnxopt::kernels {
namespace {

struct ScanCase {
  std::string op = "CumSum";
  int64_t opset = 14;
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> dims;
  int64_t axis = 0;
  DataType axis_type = DataType::kInt64;
  int64_t exclusive = 0;
  int64_t reverse = 0;
  std::string name;
};

void PrintTo(const ScanCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<ScanCase> scanCases() {
  struct Line {
    std::vector<int64_t> dims;
    int64_t axis;
  };
  const std::vector<Line> lines = {{{7}, 0},       {{3, 4, 5}, 0},   {{3, 4, 5}, 1},
                                   {{3, 4, 5}, 2}, {{3, 4, 5}, -1},  {{2, 5000}, 1},
                                   {{5000, 3}, 0}, {{1, 257}, 1},    {{4, 64}, -1},
                                   {{3, 63}, 1},   {{2, 1, 300}, 2}, {{0, 3}, 1}};
  std::vector<ScanCase> out;
  for (const CudaKernelInfo& row : test::rowsOf("CumSum")) {
    const std::string op = row.op;
    const int64_t opset = op == "CumSum" ? 14 : row.since;
    for (DataType t : row.inputs.at(0).types()) {
      for (const Line& l : lines) {
        for (int64_t exclusive : {0, 1}) {
          for (int64_t reverse : {0, 1}) {
            ScanCase c{op, opset, t, l.dims, l.axis, DataType::kInt64, exclusive, reverse, ""};
            c.name = test::testName(fmt::format("{}_opset{}_{}_{}_axis{}_exclusive{}_reverse{}", op,
                                                opset, dataTypeName(t), test::dimsName(l.dims),
                                                l.axis, exclusive, reverse));
            out.push_back(c);
          }
        }
      }
      ScanCase c{op, row.since, t, {5, 6}, 1, DataType::kInt32, 0, 0, ""};
      c.name = fmt::format("{}_opset{}_{}_5x6_axis1_int32axis", op, row.since, dataTypeName(t));
      out.push_back(c);
    }
  }
  return out;
}

class CumSumTest : public test::CudaTest, public ::testing::WithParamInterface<ScanCase> {};

TEST_P(CumSumTest, MatchesReference) {
  const ScanCase& c = GetParam();
  bool f = test::isFloatType(c.dtype);
  const bool prod = c.op == "CumProd";
  // Products: near 1 (floats), no zeros (integers, which wrap exactly).
  double lo = prod ? (f ? 0.9 : -3) : (f ? -2 : -100), hi = prod ? (f ? 1.1 : 3) : (f ? 2 : 100);
  std::vector<double> values =
      test::randomValues(c.dtype, test::elementsOf(c.dims), lo, hi, c.name);
  if (prod && !f) {
    for (double& v : values) v = v == 0 ? 1 : v;
  }
  std::vector<HostTensor> inputs = {test::tensorOf(c.dtype, c.dims, values),
                                    test::tensorOf(c.axis_type, {}, {static_cast<double>(c.axis)})};
  KernelAttrs attrs;
  attrs.ints["exclusive"] = c.exclusive;
  attrs.ints["reverse"] = c.reverse;
  std::vector<HostTensor> want = test::referenceOutputs(c.op, c.opset, inputs, attrs, 1);
  ASSERT_EQ(want.size(), 1u);
  auto got = test::runOnDevice(c.op, c.opset, inputs, attrs, want[0].dtype, want[0].dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  // Float scans in another order than the reference's: sums off by up to line * ulp * max |x|,
  // products by up to line ulps.
  test::Tolerance tol = test::toleranceFor(c.dtype);
  int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.dims.size()) : c.axis;
  double line = static_cast<double>(c.dims[static_cast<size_t>(axis)]);
  if (f && prod) tol.rtol += 1e-6 * line;
  if (f && !prod) tol.atol += 2e-6 * line;
  test::expectNear(want[0], *got, tol);
}

INSTANTIATE_TEST_SUITE_P(Claimed, CumSumTest, ::testing::ValuesIn(scanCases()),
                         [](const ::testing::TestParamInfo<ScanCase>& p) { return p.param.name; });

}  // namespace
}  // namespace onnxopt::kernels
