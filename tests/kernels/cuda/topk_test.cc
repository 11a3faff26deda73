// The CUDA TopK kernel against the CPU reference kernel (both outputs, exactly), for every row
// and type kernels/cuda/ops.def claims: k from the attribute (opset 1) or the input, first, middle
// and last axes, rows of 1 to 4096 elements (sorted) and longer (selected), k of 0, 1, some and
// all, largest and smallest, ties (broken by the lower index) and NaN (the largest value). Label
// gpu: without a device each test is skipped with "skipped: no CUDA device".
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "reduce_test_util.h"

namespace onnxopt::kernels {
namespace {

struct TopKCase {
  int64_t opset = 11;
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> dims;
  int64_t axis = -1;
  int64_t k = 1;
  int64_t largest = 1;
  bool nans = false;
  std::string name;
};

void PrintTo(const TopKCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<TopKCase> topKCases() {
  struct Row {
    std::vector<int64_t> dims;
    int64_t axis;
    int64_t k;
  };
  const std::vector<Row> rows = {{{4096}, 0, 7},        {{3, 100}, 1, 5},    {{100, 3}, 0, 100},
                                 {{2, 3, 4}, 1, 0},     {{1}, 0, 1},         {{6, 33}, -1, 33},
                                 {{2, 1000, 3}, 1, 10}, {{5, 2049}, 1, 300}, {{7, 64}, 1, 1},
                                 {{2, 50257}, 1, 50},   {{5000, 3}, 0, 256}, {{4097}, 0, 1}};
  std::vector<TopKCase> out;
  for (const CudaKernelInfo& row : test::rowsOf("TopK")) {
    int64_t opset = row.since == 1 ? 7 : row.since;  // the reference kernels start at 7
    for (DataType t : row.inputs.at(0).types()) {
      for (const Row& r : rows) {
        for (int64_t largest : {1, 0}) {
          if (opset < 11 && largest == 0) continue;
          for (bool nans : {false, true}) {
            if (nans && !test::isFloatType(t)) continue;
            TopKCase c{opset, t, r.dims, r.axis, r.k, largest, nans, ""};
            c.name = test::testName(fmt::format("TopK_opset{}_{}_{}_axis{}_k{}_largest{}{}", opset,
                                                dataTypeName(t), test::dimsName(r.dims), r.axis,
                                                r.k, largest, nans ? "_nan" : ""));
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

class TopKTest : public test::CudaTest, public ::testing::WithParamInterface<TopKCase> {};

TEST_P(TopKTest, MatchesReference) {
  const TopKCase& c = GetParam();
  int64_t n = test::elementsOf(c.dims);
  // Few distinct values (ties), NaN at every 5th element.
  std::vector<double> values = test::randomValues(c.dtype, n, -20, 20, c.name);
  for (double& v : values) v = std::round(v);
  if (c.nans) {
    for (int64_t i = 0; i < n; i += 5) values[static_cast<size_t>(i)] = NAN;
  }
  std::vector<HostTensor> inputs = {test::tensorOf(c.dtype, c.dims, values)};
  KernelAttrs attrs;
  attrs.ints["axis"] = c.axis;
  if (c.opset < 10) {
    attrs.ints["k"] = c.k;
  } else {
    inputs.push_back(test::tensorOf(DataType::kInt64, {1}, {static_cast<double>(c.k)}));
  }
  if (c.opset >= 11) {
    attrs.ints["largest"] = c.largest;
    attrs.ints["sorted"] = 1;
  }
  std::vector<HostTensor> want = test::referenceOutputs("TopK", c.opset, inputs, attrs, 2);
  ASSERT_EQ(want.size(), 2u);
  auto got = test::runOutputsOnDevice("TopK", c.opset, inputs, attrs, want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectNear(want[0], got->at(0), {0, 0}, "values");
  test::expectNear(want[1], got->at(1), {0, 0}, "indices");
}

INSTANTIATE_TEST_SUITE_P(Claimed, TopKTest, ::testing::ValuesIn(topKCases()),
                         [](const ::testing::TestParamInfo<TopKCase>& p) { return p.param.name; });

}  // namespace
}  // namespace onnxopt::kernels
