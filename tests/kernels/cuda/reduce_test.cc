// The CUDA Reduce* and ArgMax/ArgMin kernels against the CPU reference kernels, for every row and
// type kernels/cuda/ops.def claims: reduce all, one axis first/middle/last, two non-adjacent axes,
// keepdims 0/1, rows of 1 to 5000 elements along and across the memory order, long groups split
// across blocks, an empty group, noop_with_empty_axes, a transposed input; ArgMax/ArgMin with
// ties, select_last_index and NaN. Label gpu: without a device each test is skipped with
// "skipped: no CUDA device".
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "reduce_test_util.h"

namespace onnxopt::kernels {
namespace {

struct ReduceCase {
  std::string op;
  int64_t opset = 0;
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> dims;
  std::optional<std::vector<int64_t>> axes;  ///< nullopt: not given
  int64_t keepdims = 1;
  int64_t noop = 0;         ///< noop_with_empty_axes (axes-input opsets)
  bool axes_input = false;  ///< the opset takes axes as an input
  int64_t select_last = 0;  ///< ArgMax/ArgMin
  bool nans = false;        ///< ArgMax/ArgMin: NaN elements
  std::string name;
};

void PrintTo(const ReduceCase& c, std::ostream* os) {
  *os << c.name;
}

struct Shape {
  std::vector<int64_t> dims;
  std::optional<std::vector<int64_t>> axes;
  int64_t keepdims;
  std::string what;
  bool all_types;  ///< run for every claimed type (else float and float16 only)
};

const std::vector<Shape>& reduceShapes() {
  static const std::vector<Shape> shapes = {
      {{3, 4, 5}, std::nullopt, 1, "all", true},
      {{3, 4, 5}, std::nullopt, 0, "all", false},
      {{6, 5, 7}, std::vector<int64_t>{0}, 0, "first", false},
      {{6, 5, 7}, std::vector<int64_t>{1}, 1, "middle", false},
      {{6, 5, 7}, std::vector<int64_t>{-1}, 0, "last", false},
      {{4, 3, 5, 6}, std::vector<int64_t>{0, 2}, 1, "axes0_2", true},
      {{4, 3, 5, 6}, std::vector<int64_t>{3, 1}, 0, "axes3_1", false},
      {{2, 3, 4, 5, 6}, std::vector<int64_t>{1, 2, 4}, 1, "axes1_2_4", false},
      {{3, 1}, std::vector<int64_t>{1}, 0, "row1", false},
      {{2, 33}, std::vector<int64_t>{1}, 1, "row33", false},
      {{2, 1000}, std::vector<int64_t>{-1}, 0, "row1000", true},
      {{1, 5000}, std::vector<int64_t>{1}, 1, "row5000", false},
      {{7, 4097}, std::vector<int64_t>{1}, 0, "row4097", false},
      {{5000, 2}, std::vector<int64_t>{0}, 0, "column5000", true},
      {{300, 70}, std::vector<int64_t>{0}, 1, "column300", false},
      {{0, 3}, std::vector<int64_t>{0}, 1, "emptygroup", true},
      // Few long groups: split across blocks (partial results in the workspace).
      {{100000}, std::nullopt, 0, "split_all", true},
      {{3, 40000}, std::vector<int64_t>{1}, 1, "split_rows", false},
      {{50000, 2}, std::vector<int64_t>{0}, 0, "split_columns", false},
      {{}, std::nullopt, 1, "scalar", false},
  };
  return shapes;
}

std::string axesName(const std::optional<std::vector<int64_t>>& axes) {
  return axes ? fmt::format("{}", fmt::join(*axes, "_")) : "none";
}

std::vector<ReduceCase> reduceCases() {
  std::vector<ReduceCase> out;
  for (const CudaKernelInfo& row : test::rowsOf("Reduce")) {
    bool axes_input = row.max_inputs == 2;
    // The reference kernels start at opset 7; attribute rows run at 11 (ReduceSum) or 13.
    int64_t opset = axes_input ? row.since : std::min<int64_t>(row.until, 13);
    for (DataType t : row.inputs.at(0).types()) {
      bool full = t == DataType::kFloat || t == DataType::kFloat16;
      bool int_mean = std::string(row.op) == "ReduceMean" && !test::isFloatType(t);
      for (const Shape& s : reduceShapes()) {
        if (!full && !s.all_types) continue;
        if (int_mean && s.what == "emptygroup") continue;  // undefined: refused (host test)
        ReduceCase c{row.op, opset, t, s.dims, s.axes, s.keepdims, 0, axes_input, 0, false, ""};
        c.name = fmt::format("{}_opset{}_{}_{}_{}_axes{}_keep{}", row.op, opset, dataTypeName(t),
                             s.what, test::dimsName(s.dims), axesName(s.axes), s.keepdims);
        out.push_back(c);
      }
      if (axes_input) {
        // noop_with_empty_axes: the input unchanged; an empty axes tensor without it: all axes.
        ReduceCase noop{row.op, opset, t, {3, 4}, std::nullopt, 1, 1, true, 0, false, ""};
        noop.name = fmt::format("{}_opset{}_{}_noop_3x4", row.op, opset, dataTypeName(t));
        out.push_back(noop);
        ReduceCase empty{row.op, opset, t,     {3, 4}, std::vector<int64_t>{}, 0, 0,
                         true,   0,     false, ""};
        empty.name = fmt::format("{}_opset{}_{}_emptyaxes_3x4", row.op, opset, dataTypeName(t));
        out.push_back(empty);
      }
    }
  }
  return out;
}

/// Values where the op is well conditioned: near 1 for products, positive for logs.
std::vector<double> reduceValues(const ReduceCase& c, int64_t n) {
  bool f = test::isFloatType(c.dtype);
  double lo = f ? -2 : -100, hi = f ? 2 : 100;
  if (c.op == "ReduceProd") {
    // Near 1 on both sides, so that no order of 5000 products overflows or underflows.
    lo = f ? 0.9 : -3;
    hi = f ? 1.1 : 3;
  } else if (c.op == "ReduceLogSum") {
    lo = f ? 0.1 : 1;
  } else if (c.op == "ReduceLogSumExp") {
    lo = -5;
    hi = 5;
  } else if (c.dtype == DataType::kBool) {
    lo = 0;
    hi = 1;
  } else if (c.dtype == DataType::kUint8) {
    lo = 0;
    hi = 255;
  } else if (c.dtype == DataType::kInt8) {
    lo = -128;
    hi = 127;
  }
  return test::randomValues(c.dtype, n, lo, hi, c.name);
}

/// The dtype's tolerance, widened for float accumulation in another order than the reference's:
/// a group of n elements sums with an error up to n * ulp * max |term|.
test::Tolerance reduceTolerance(const ReduceCase& c, int64_t group) {
  test::Tolerance tol = test::toleranceFor(c.dtype);
  if (!test::isFloatType(c.dtype) || c.op == "ReduceMax" || c.op == "ReduceMin") return tol;
  double term = 2;
  if (c.op == "ReduceSumSquare" || c.op == "ReduceL2") term = 4;
  if (c.op == "ReduceMean") term = 2.0 / static_cast<double>(std::max<int64_t>(group, 1));
  if (c.op == "ReduceLogSum" || c.op == "ReduceLogSumExp") term = 1;
  if (c.op == "ReduceProd") {
    tol.rtol += 1e-6 * static_cast<double>(group);
    return tol;
  }
  tol.atol += 1e-6 * static_cast<double>(group) * term;
  return tol;
}

class ReduceTest : public test::CudaTest, public ::testing::WithParamInterface<ReduceCase> {};

TEST_P(ReduceTest, MatchesReference) {
  const ReduceCase& c = GetParam();
  std::vector<HostTensor> inputs = {
      test::tensorOf(c.dtype, c.dims, reduceValues(c, test::elementsOf(c.dims)))};
  KernelAttrs attrs;
  attrs.ints["keepdims"] = c.keepdims;
  if (c.axes_input) {
    attrs.ints["noop_with_empty_axes"] = c.noop;
    if (c.axes) {
      std::vector<double> axes(c.axes->begin(), c.axes->end());
      inputs.push_back(test::tensorOf(DataType::kInt64, {static_cast<int64_t>(axes.size())}, axes));
    }
  } else if (c.axes) {
    attrs.int_lists["axes"] = *c.axes;
  }
  std::vector<HostTensor> want = test::referenceOutputs(c.op, c.opset, inputs, attrs, 1);
  ASSERT_EQ(want.size(), 1u);
  int64_t outputs = want[0].numElements();
  int64_t group = outputs == 0 ? 0 : inputs[0].numElements() / outputs;
  auto got = test::runOnDevice(c.op, c.opset, inputs, attrs, want[0].dtype, want[0].dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectNear(want[0], *got, reduceTolerance(c, group));
}

INSTANTIATE_TEST_SUITE_P(Claimed, ReduceTest, ::testing::ValuesIn(reduceCases()),
                         [](const ::testing::TestParamInfo<ReduceCase>& p) {
                           return test::testName(p.param.name);
                         });

std::vector<ReduceCase> argCases() {
  struct ArgShape {
    std::vector<int64_t> dims;
    int64_t axis;
    std::string what;
  };
  const std::vector<ArgShape> shapes = {
      {{6, 5, 7}, 0, "first"},   {{6, 5, 7}, 1, "middle"},     {{6, 5, 7}, -1, "last"},
      {{2, 5000}, 1, "row5000"}, {{5000, 3}, 0, "column5000"}, {{1}, 0, "one"},
      {{33}, 0, "row33"}};
  std::vector<ReduceCase> out;
  for (const CudaKernelInfo& row : test::rowsOf("ArgReduce")) {
    for (DataType t : row.inputs.at(0).types()) {
      for (const ArgShape& s : shapes) {
        for (int64_t opset : {11, 13}) {
          for (int64_t keepdims : {0, 1}) {
            for (int64_t last : {0, 1}) {
              if (opset < 12 && last == 1) continue;
              for (bool nans : {false, true}) {
                if (nans && !test::isFloatType(t)) continue;
                ReduceCase c{row.op, opset, t,    s.dims, std::vector<int64_t>{s.axis}, keepdims, 0,
                             false,  last,  nans, ""};
                c.name = fmt::format("{}_opset{}_{}_{}_{}_axis{}_keep{}_last{}{}", row.op, opset,
                                     dataTypeName(t), s.what, test::dimsName(s.dims), s.axis,
                                     keepdims, last, nans ? "_nan" : "");
                out.push_back(c);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

class ArgReduceTest : public test::CudaTest, public ::testing::WithParamInterface<ReduceCase> {};

TEST_P(ArgReduceTest, MatchesReference) {
  const ReduceCase& c = GetParam();
  int64_t n = test::elementsOf(c.dims);
  // Few distinct values, so that ties occur; NaNs at the first element of some rows and later.
  std::vector<double> values = test::randomValues(c.dtype, n, -4, 4, c.name);
  for (double& v : values) v = std::round(v);
  if (c.nans) {
    for (int64_t i = 0; i < n; i += 7) values[static_cast<size_t>(i)] = NAN;
  }
  std::vector<HostTensor> inputs = {test::tensorOf(c.dtype, c.dims, values)};
  KernelAttrs attrs;
  attrs.ints["axis"] = c.axes->at(0);
  attrs.ints["keepdims"] = c.keepdims;
  if (c.opset >= 12) attrs.ints["select_last_index"] = c.select_last;
  std::vector<HostTensor> want = test::referenceOutputs(c.op, c.opset, inputs, attrs, 1);
  ASSERT_EQ(want.size(), 1u);
  auto got = test::runOnDevice(c.op, c.opset, inputs, attrs, want[0].dtype, want[0].dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectNear(want[0], *got, {0, 0});
}

INSTANTIATE_TEST_SUITE_P(Claimed, ArgReduceTest, ::testing::ValuesIn(argCases()),
                         [](const ::testing::TestParamInfo<ReduceCase>& p) {
                           return test::testName(p.param.name);
                         });

class ReduceLaunchTest : public test::CudaTest {};

/// A transposed (non-contiguous) input: the layout walks any strides, for rows and columns.
TEST_F(ReduceLaunchTest, TransposedInput) {
  auto stream = DeviceStream::create();
  ASSERT_TRUE(stream.isOk()) << stream.status().toString();
  const int64_t rows = 37, cols = 300;  // the base is [cols, rows], viewed as [rows, cols]
  HostTensor base = test::tensorOf(DataType::kFloat, {cols, rows},
                                   test::randomValues(DataType::kFloat, rows * cols, -2, 2, "T"));
  HostTensor transposed = HostTensor::zeros(DataType::kFloat, {rows, cols});
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      transposed.set<float>(i * cols + j, base.get<float>(j * rows + i));
    }
  }
  auto in = test::upload(base, stream->get());
  ASSERT_TRUE(in.isOk()) << in.status().toString();
  for (int64_t axis : {0, 1}) {
    KernelAttrs attrs;
    attrs.ints["keepdims"] = 0;
    HostTensor axes = test::tensorOf(DataType::kInt64, {1}, {static_cast<double>(axis)});
    std::vector<HostTensor> want =
        test::referenceOutputs("ReduceSum", 13, {transposed, axes}, attrs, 1);
    ASSERT_EQ(want.size(), 1u);
    auto out = DeviceBuffer::allocate(want[0].bytes.size());
    ASSERT_TRUE(out.isOk());
    ASSERT_TRUE(fillDevice(out->data(), 0xFF, out->size(), stream->get()).isOk());
    CudaKernelCall call;
    call.op = "ReduceSum";
    call.opset = 13;
    call.attrs = &attrs;
    call.inputs = {ConstTensorView(DataType::kFloat, {rows, cols}, {1, rows}, in->buffer.data(),
                                   MemoryKind::kDevice),
                   ConstTensorView(DataType::kInt64, {1}, {1}, nullptr, MemoryKind::kDevice)};
    call.constant_inputs = {nullptr, &axes};
    call.outputs = {TensorView(DataType::kFloat, want[0].dims, contiguousStrides(want[0].dims),
                               out->data(), MemoryKind::kDevice)};
    Status s = launchCudaKernel(call, stream->get());
    ASSERT_TRUE(s.isOk()) << s.toString();
    HostTensor got = HostTensor::zeros(DataType::kFloat, want[0].dims);
    ASSERT_TRUE(copyToHost(got.bytes.data(), out->data(), got.bytes.size(), stream->get()).isOk());
    ASSERT_TRUE(stream->synchronize().isOk());
    test::expectNear(want[0], got, {2e-5, 1e-3}, fmt::format("axis {}", axis));
  }
}

/// Axes, k and axis known only at run time (not constants): the kernels take them from the
/// output shapes the plan computed (a 1-D CumSum has one axis).
TEST_F(ReduceLaunchTest, OperandsKnownOnlyAtRunTime) {
  struct Run {
    std::string op;
    int64_t opset;
    std::vector<int64_t> dims;
    std::vector<double> operand;  ///< input 1
    KernelAttrs attrs;
    size_t outputs;
  };
  KernelAttrs keep0;
  keep0.ints["keepdims"] = 0;
  KernelAttrs noop;
  noop.ints["noop_with_empty_axes"] = 1;
  KernelAttrs exclusive;
  exclusive.ints["exclusive"] = 1;
  KernelAttrs smallest;
  smallest.ints["largest"] = 0;
  smallest.ints["axis"] = 0;
  const std::vector<Run> runs = {{"ReduceSum", 13, {4, 5, 6}, {1}, {}, 1},
                                 {"ReduceMean", 18, {4, 5, 6}, {0, 2}, keep0, 1},
                                 {"ReduceLogSumExp", 18, {4, 1, 6}, {-1, 1}, keep0, 1},
                                 {"ReduceMax", 18, {3, 7}, {}, noop, 1},
                                 {"ReduceSum", 13, {3, 7}, {}, {}, 1},
                                 {"TopK", 11, {40, 3}, {6}, smallest, 2},
                                 {"CumSum", 14, {300}, {-1}, exclusive, 1}};
  for (const Run& r : runs) {
    std::vector<HostTensor> inputs = {test::tensorOf(
        DataType::kFloat, r.dims,
        test::randomValues(DataType::kFloat, test::elementsOf(r.dims), -2, 2, r.op))};
    std::vector<int64_t> operand_dims = {static_cast<int64_t>(r.operand.size())};
    if (r.op == "CumSum") operand_dims = {};
    inputs.push_back(test::tensorOf(DataType::kInt64, operand_dims, r.operand));
    std::vector<HostTensor> want =
        test::referenceOutputs(r.op, r.opset, inputs, r.attrs, r.outputs);
    ASSERT_EQ(want.size(), r.outputs) << r.op;
    auto got = test::runOutputsOnDevice(r.op, r.opset, inputs, r.attrs, want, 1);
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    for (size_t i = 0; i < want.size(); ++i) {
      test::expectNear(want[i], got->at(i), {2e-5, 1e-5}, r.op);
    }
  }
}

}  // namespace
}  // namespace onnxopt::kernels
