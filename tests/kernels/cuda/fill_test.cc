// The CUDA Range and ConstantOfShape kernels against the CPU reference kernels: Range for every
// claimed type with positive and negative steps, an empty range and a long one (rounding of
// start + i * delta and of the length), with constant inputs and with device scalars the kernel
// reads; ConstantOfShape for every claimed value type, the default value, a scalar and an empty
// shape. Label gpu: without a device each test is skipped with "skipped: no CUDA device".
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>
#include <string>
#include <vector>

#include "reduce_test_util.h"

namespace onnxopt::kernels {
namespace {

struct RangeCase {
  int64_t opset = 11;
  DataType dtype = DataType::kFloat;
  double start = 0, limit = 0, delta = 1;
  std::string name;
};

void PrintTo(const RangeCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<RangeCase> rangeCases() {
  struct Bounds {
    double start, limit, delta;
    std::string what;
  };
  const std::vector<Bounds> floats = {
      {0.5, 10.3, 0.7, "up"},  {3, -4.2, -0.3, "down"},       {5, 1, 1, "empty"},
      {0, 1000, 0.01, "long"}, {-1e3, 1e3, 1.0 / 3, "third"}, {2, 2.5, 1, "one"}};
  const std::vector<Bounds> ints = {{0, 10, 3, "up"},
                                    {5, -7, -2, "down"},
                                    {5, 1, 1, "empty"},
                                    {-50000, 50000, 1, "long"},
                                    {7, 8, 100, "one"}};
  std::vector<RangeCase> out;
  for (const CudaKernelInfo& row : test::rowsOf("Range")) {
    for (DataType t : row.inputs.at(0).types()) {
      for (const Bounds& b : test::isFloatType(t) ? floats : ints) {
        out.push_back({row.since, t, b.start, b.limit, b.delta,
                       fmt::format("Range_opset{}_{}_{}", row.since, dataTypeName(t), b.what)});
      }
    }
  }
  return out;
}

std::vector<HostTensor> rangeInputs(const RangeCase& c) {
  return {test::tensorOf(c.dtype, {}, {c.start}), test::tensorOf(c.dtype, {}, {c.limit}),
          test::tensorOf(c.dtype, {}, {c.delta})};
}

class RangeTest : public test::CudaTest, public ::testing::WithParamInterface<RangeCase> {};

TEST_P(RangeTest, MatchesReference) {
  const RangeCase& c = GetParam();
  std::vector<HostTensor> inputs = rangeInputs(c);
  std::vector<HostTensor> want = test::referenceOutputs("Range", c.opset, inputs, {}, 1);
  ASSERT_EQ(want.size(), 1u);
  auto got = test::runOnDevice("Range", c.opset, inputs, {}, want[0].dtype, want[0].dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectNear(want[0], *got, {0, 0});
}

/// Inputs not known when planning: the kernel reads start and delta on the device, the output's
/// length comes from the plan.
TEST_P(RangeTest, DeviceScalars) {
  const RangeCase& c = GetParam();
  std::vector<HostTensor> inputs = rangeInputs(c);
  std::vector<HostTensor> want = test::referenceOutputs("Range", c.opset, inputs, {}, 1);
  ASSERT_EQ(want.size(), 1u);
  auto stream = DeviceStream::create();
  ASSERT_TRUE(stream.isOk()) << stream.status().toString();
  std::vector<test::DeviceTensor> device;
  CudaKernelCall call;
  call.op = "Range";
  call.opset = c.opset;
  for (const HostTensor& t : inputs) {
    auto d = test::upload(t, stream->get());
    ASSERT_TRUE(d.isOk()) << d.status().toString();
    call.inputs.push_back(d->view());
    device.push_back(std::move(*d));
  }
  auto out = DeviceBuffer::allocate(want[0].bytes.size());
  ASSERT_TRUE(out.isOk());
  ASSERT_TRUE(fillDevice(out->data(), 0xA5, out->size(), stream->get()).isOk());
  call.outputs = {TensorView(want[0].dtype, want[0].dims, {1}, out->data(), MemoryKind::kDevice)};
  Status s = launchCudaKernel(call, stream->get());
  ASSERT_TRUE(s.isOk()) << s.toString();
  HostTensor got = HostTensor::zeros(want[0].dtype, want[0].dims);
  ASSERT_TRUE(copyToHost(got.bytes.data(), out->data(), got.bytes.size(), stream->get()).isOk());
  ASSERT_TRUE(stream->synchronize().isOk());
  test::expectNear(want[0], got, {0, 0});
}

INSTANTIATE_TEST_SUITE_P(Claimed, RangeTest, ::testing::ValuesIn(rangeCases()),
                         [](const ::testing::TestParamInfo<RangeCase>& p) { return p.param.name; });

struct FillCase {
  int64_t opset = 20;
  DataType dtype = DataType::kFloat;  ///< kUndefined: no value attribute (float 0)
  std::vector<int64_t> dims;
  std::string name;
};

void PrintTo(const FillCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<FillCase> fillCases() {
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 4}, {}, {0, 5}, {70000}};
  std::vector<FillCase> out;
  for (const CudaKernelInfo& row : test::rowsOf("ConstantOfShape")) {
    // Opset 20 (bfloat16 values); the default value at the row's first opset too.
    out.push_back({row.since, DataType::kUndefined, {3, 2}, "ConstantOfShape_default_opset9_3x2"});
    int64_t opset = 20;
    std::vector<DataType> types = row.outputs.at(0).types();
    types.push_back(DataType::kUndefined);
    for (DataType t : types) {
      for (const auto& dims : shapes) {
        std::string type = t == DataType::kUndefined ? "default" : dataTypeName(t);
        out.push_back(
            {opset, t, dims, fmt::format("ConstantOfShape_{}_{}", type, test::dimsName(dims))});
      }
    }
  }
  return out;
}

class ConstantOfShapeTest : public test::CudaTest,
                            public ::testing::WithParamInterface<FillCase> {};

TEST_P(ConstantOfShapeTest, MatchesReference) {
  const FillCase& c = GetParam();
  std::vector<double> dims(c.dims.begin(), c.dims.end());
  std::vector<HostTensor> inputs = {
      test::tensorOf(DataType::kInt64, {static_cast<int64_t>(dims.size())}, dims)};
  KernelAttrs attrs;
  if (c.dtype != DataType::kUndefined) {
    double value = c.dtype == DataType::kBool ? 1 : c.dtype == DataType::kUint8 ? 200 : -3.5;
    attrs.tensors["value"] = test::tensorOf(c.dtype, {1}, {value});
  }
  std::vector<HostTensor> want =
      test::referenceOutputs("ConstantOfShape", c.opset, inputs, attrs, 1);
  ASSERT_EQ(want.size(), 1u);
  auto got =
      test::runOnDevice("ConstantOfShape", c.opset, inputs, attrs, want[0].dtype, want[0].dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectNear(want[0], *got, {0, 0});
}

INSTANTIATE_TEST_SUITE_P(Claimed, ConstantOfShapeTest, ::testing::ValuesIn(fillCases()),
                         [](const ::testing::TestParamInfo<FillCase>& p) { return p.param.name; });

}  // namespace
}  // namespace onnxopt::kernels
