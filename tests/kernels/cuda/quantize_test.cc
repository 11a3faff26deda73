// QuantizeLinear and DequantizeLinear on CUDA (kernels/cuda/quant/quantize.cc) against the reference
// kernels: int8 and uint8 (int16 and uint16 from opset 21, and int32 into DequantizeLinear), float,
// float16 and bfloat16, per tensor (a scalar and a [1] scale), per axis (axis 0, 1 and -1) and
// blocked (opset 21: blocks of 2 along axis 1, of 3 along the last), with and without a zero
// point, at opsets 13, 19 and 21; the inputs hold halfway values (round half to even), values past
// the integer range (saturation) and NaN (0). Quantized results must match exactly. Label gpu;
// the refusals (double precision, a float8e8m0 scale, a blocked scale of the wrong shape) run
// without a device.
// DynamicQuantizeLinear: mixed, one-signed, constant, empty and huge inputs, exactly.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels {
namespace {

struct QuantCase {
  std::string op;
  int64_t opset;
  DataType float_type;  ///< x's (QuantizeLinear) or the scale's and output's (DequantizeLinear)
  DataType int_type;
  std::string scale;  ///< "scalar", "one" ([1]), "axis0", "axis1", "axislast", "block..."
  bool zero;
  std::string name;
};

void PrintTo(const QuantCase& c, std::ostream* os) {
  *os << c.name;
}

const std::vector<int64_t> kShape = {3, 5, 7};

std::vector<QuantCase> quantCases() {
  std::vector<QuantCase> out;
  for (const char* op : {"QuantizeLinear", "DequantizeLinear"}) {
    for (int64_t opset : {13, 19, 21}) {
      for (DataType f : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
        if (opset < 19 && f != DataType::kFloat) continue;
        std::vector<DataType> ints = {DataType::kInt8, DataType::kUint8};
        if (opset >= 21) ints.insert(ints.end(), {DataType::kInt16, DataType::kUint16});
        if (std::string(op) == "DequantizeLinear") ints.push_back(DataType::kInt32);
        for (DataType i : ints) {
          std::vector<const char*> scales = {"scalar", "one", "axis0", "axis1", "axislast"};
          if (opset >= 21) scales.insert(scales.end(), {"block2axis1", "block3axislast"});
          for (const char* scale : scales) {
            for (bool zero : {false, true}) {
              QuantCase c{op, opset, f, i, scale, zero, ""};
              c.name = fmt::format("{}_{}_{}_{}_{}_opset{}", op, dataTypeName(f), dataTypeName(i),
                                   scale, zero ? "zero" : "nozero", opset);
              out.push_back(c);
            }
          }
        }
      }
    }
  }
  return out;
}

/// The values of a quantized type (int32: a range well inside float's exact integers).
std::pair<int64_t, int64_t> intRange(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return {-128, 127};
    case DataType::kUint8:
      return {0, 255};
    case DataType::kInt16:
      return {-32768, 32767};
    case DataType::kUint16:
      return {0, 65535};
    default:
      return {-100000, 100000};
  }
}

struct QuantInputs {
  std::vector<HostTensor> tensors;
  KernelAttrs attrs;
};

QuantInputs inputsOf(const QuantCase& c) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  QuantInputs q;
  std::vector<int64_t> scale_dims;
  if (c.scale == "one") scale_dims = {1};
  if (c.scale == "axis0") scale_dims = {kShape[0]};
  if (c.scale == "axis1") scale_dims = {kShape[1]};
  if (c.scale == "axislast") scale_dims = {kShape[2]};
  if (c.scale == "axis0") q.attrs.ints["axis"] = 0;
  if (c.scale == "axis1") q.attrs.ints["axis"] = 1;
  if (c.scale == "axislast") q.attrs.ints["axis"] = -1;
  if (c.scale == "block2axis1") {
    scale_dims = {3, 3, 7};  // 5 along axis 1 in blocks of 2
    q.attrs.ints["axis"] = 1;
    q.attrs.ints["block_size"] = 2;
  }
  if (c.scale == "block3axislast") {
    scale_dims = {3, 5, 3};  // 7 along the last axis in blocks of 3
    q.attrs.ints["axis"] = -1;
    q.attrs.ints["block_size"] = 3;
  }
  int64_t n = 3 * 5 * 7, ns = 1;
  for (int64_t d : scale_dims) ns *= d;
  std::vector<double> scales(static_cast<size_t>(ns)), zeros(static_cast<size_t>(ns));
  for (size_t k = 0; k < scales.size(); ++k) {
    scales[k] = k % 3 == 0 ? 0.5 : std::uniform_real_distribution<>(0.05, 2.0)(rng);
    auto [lo, hi] = intRange(c.int_type);
    zeros[k] = static_cast<double>(std::uniform_int_distribution<int64_t>(lo / 2, hi / 2)(rng));
  }
  std::vector<double> x(static_cast<size_t>(n));
  for (size_t k = 0; k < x.size(); ++k) {
    if (c.op == "QuantizeLinear") {
      double range =
          c.int_type == DataType::kInt16 || c.int_type == DataType::kUint16 ? 50000 : 200;
      x[k] = std::uniform_real_distribution<>(-range, range)(rng);
      if (k % 11 == 0) x[k] = std::round(x[k]) + 0.5;  // halfway for a scale of 1 (or 0.5)
      if (k == 7) x[k] = 1e6;
      if (k == 8) x[k] = -1e6;
      if (k == 9) x[k] = NAN;
    } else {
      auto [lo, hi] = intRange(c.int_type);
      x[k] = static_cast<double>(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
    }
  }
  DataType x_type = c.op == "QuantizeLinear" ? c.float_type : c.int_type;
  q.tensors.push_back(test::tensorOf(x_type, kShape, x));
  q.tensors.push_back(test::tensorOf(c.float_type, scale_dims, scales));
  if (c.zero) q.tensors.push_back(test::tensorOf(c.int_type, scale_dims, zeros));
  return q;
}

class QuantTest : public test::CudaTest, public ::testing::WithParamInterface<QuantCase> {};

TEST_P(QuantTest, MatchesReference) {
  const QuantCase& c = GetParam();
  QuantInputs in = inputsOf(c);
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : in.tensors) ptrs.push_back(&t);
  auto expected = runReferenceKernel(c.op, c.opset, ptrs, in.attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  auto got = test::runOnDevice(c.op, c.opset, in.tensors, in.attrs, want.dtype, want.dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::Tolerance exact{0, 0};
  test::expectClose(want, *got, c.op == "QuantizeLinear" ? exact : test::toleranceFor(want.dtype));
}

INSTANTIATE_TEST_SUITE_P(Claimed, QuantTest, ::testing::ValuesIn(quantCases()),
                         [](const ::testing::TestParamInfo<QuantCase>& p) { return p.param.name; });

/// DynamicQuantizeLinear: x of `dims` drawn from [lo, hi] (all zeros when lo == hi).
struct DynamicCase {
  std::vector<int64_t> dims;
  double lo, hi;
  std::string name;
};

void PrintTo(const DynamicCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<DynamicCase> dynamicCases() {
  return {{{3, 5, 7}, -3, 5, "mixed_3x5x7"},
          {{70000}, -0.5, 20, "mixed_70000"},
          {{1000}, 0.5, 9, "positive_1000"},
          {{1000}, -9, -0.5, "negative_1000"},
          {{4, 4}, 0, 0, "zeros_4x4"},
          {{1}, -2, -2, "one_1"},
          {{0}, 0, 0, "empty"},
          {{2, 3}, -1e30, 1e30, "huge_2x3"}};
}

class DynamicQuantTest : public test::CudaTest,
                         public ::testing::WithParamInterface<DynamicCase> {};

TEST_P(DynamicQuantTest, MatchesReference) {
  const DynamicCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  int64_t n = 1;
  for (int64_t d : c.dims) n *= d;
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values)
    v = c.lo == c.hi ? c.lo : std::uniform_real_distribution<>(c.lo, c.hi)(rng);
  HostTensor x = test::tensorOf(DataType::kFloat, c.dims, values);
  KernelAttrs none;
  auto expected = runReferenceKernel("DynamicQuantizeLinear", 11, {&x}, none, 3);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();

  auto stream = DeviceStream::create();
  ASSERT_TRUE(stream.isOk()) << stream.status().toString();
  auto dx = test::upload(x, stream->get());
  ASSERT_TRUE(dx.isOk()) << dx.status().toString();
  CudaKernelCall call;
  call.op = "DynamicQuantizeLinear";
  call.opset = 11;
  call.attrs = &none;
  call.inputs.push_back(dx->view());
  std::vector<test::DeviceTensor> outs;
  for (const HostTensor& want : *expected) {
    auto buffer = DeviceBuffer::allocate(want.bytes.size());
    ASSERT_TRUE(buffer.isOk()) << buffer.status().toString();
    ASSERT_TRUE(fillDevice(buffer->data(), 0xA5, want.bytes.size(), stream->get()).isOk());
    outs.push_back(test::DeviceTensor{std::move(buffer).value(), want.dims, want.dtype});
  }
  for (const test::DeviceTensor& o : outs) call.outputs.push_back(o.mutableView());
  Support support = cudaCanImplement(call);
  ASSERT_TRUE(support) << support.reason;
  auto bytes = cudaWorkspaceBytes(call);
  ASSERT_TRUE(bytes.isOk());
  auto workspace = DeviceBuffer::allocate(*bytes);
  ASSERT_TRUE(workspace.isOk());
  call.workspace = workspace->data();
  call.workspace_bytes = workspace->size();
  ASSERT_TRUE(launchCudaKernel(call, stream->get()).isOk());
  for (size_t i = 0; i < outs.size(); ++i) {
    HostTensor got = HostTensor::zeros(outs[i].dtype, outs[i].dims);
    ASSERT_TRUE(copyToHost(got.bytes.data(), outs[i].buffer.data(), got.bytes.size(), stream->get())
                    .isOk());
    ASSERT_TRUE(stream->synchronize("DynamicQuantizeLinear").isOk());
    SCOPED_TRACE(fmt::format("output {}", i));
    test::expectClose(expected->at(i), got, {0, 0});  // the same float arithmetic: exact
  }
}

INSTANTIATE_TEST_SUITE_P(Claimed, DynamicQuantTest, ::testing::ValuesIn(dynamicCases()),
                         [](const ::testing::TestParamInfo<DynamicCase>& p) {
                           return p.param.name;
                         });

/// A call over device views (no memory) of `in`'s shapes, the output `y` of x's shape.
Support askQuant(const std::string& op, int64_t opset, const std::vector<HostTensor>& in,
                 DataType y, const KernelAttrs& attrs) {
  CudaKernelCall call;
  call.op = op;
  call.opset = opset;
  call.attrs = &attrs;
  for (const HostTensor& t : in) {
    call.inputs.emplace_back(t.dtype, t.dims, contiguousStrides(t.dims), nullptr,
                             MemoryKind::kDevice);
  }
  call.outputs.emplace_back(y, kShape, contiguousStrides(kShape), nullptr, MemoryKind::kDevice);
  return cudaCanImplement(call);
}

TEST(QuantCanImplement, RefusesWithAReason) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  HostTensor x = HostTensor::zeros(DataType::kFloat, kShape);
  HostTensor s = HostTensor::zeros(DataType::kFloat, {});
  HostTensor z8 = HostTensor::zeros(DataType::kInt8, {});
  KernelAttrs none;
  EXPECT_TRUE(askQuant("QuantizeLinear", 19, {x, s, z8}, DataType::kInt8, none));
  EXPECT_TRUE(askQuant("QuantizeLinear", 13, {x, s}, DataType::kUint8, none));
  KernelAttrs blocked;
  blocked.ints["block_size"] = 2;
  blocked.ints["axis"] = 1;
  HostTensor bs = HostTensor::zeros(DataType::kFloat, {3, 3, 7});
  EXPECT_TRUE(askQuant("QuantizeLinear", 21, {x, bs}, DataType::kUint8, blocked));
  blocked.ints["block_size"] = 3;  // 5 in blocks of 3: 2 blocks, not 3
  Support r = askQuant("QuantizeLinear", 21, {x, bs}, DataType::kUint8, blocked);
  EXPECT_FALSE(r);
  EXPECT_NE(r.reason.find("must have x's shape with 2 blocks"), std::string::npos) << r.reason;
  KernelAttrs dbl;
  dbl.ints["precision"] = static_cast<int64_t>(DataType::kDouble);
  r = askQuant("QuantizeLinear", 23, {x, s, z8}, DataType::kInt8, dbl);
  EXPECT_FALSE(r);
  EXPECT_NE(r.reason.find("precision"), std::string::npos) << r.reason;
  // int4 from opset 21 (low_precision_test.cc runs it); a float8e8m0 scale (24+) is refused.
  HostTensor z4 = HostTensor::zeros(DataType::kInt4, {});
  EXPECT_TRUE(askQuant("QuantizeLinear", 21, {x, s, z4}, DataType::kInt4, none));
  HostTensor e8 = HostTensor::zeros(DataType::kFloat8E8M0, {});
  r = askQuant("QuantizeLinear", 25, {x, e8, z4}, DataType::kInt4, none);
  EXPECT_FALSE(r);
  EXPECT_NE(r.reason.find("no CUDA kernel for float with a float8e8m0 scale"), std::string::npos)
      << r.reason;
  r = askQuant("QuantizeLinear", 19, {x, s, z8}, DataType::kUint8, none);
  EXPECT_FALSE(r);
  EXPECT_NE(r.reason.find("the output is uint8, not int8"), std::string::npos) << r.reason;
  HostTensor wrong_axis = HostTensor::zeros(DataType::kFloat, {4});
  r = askQuant("QuantizeLinear", 19, {x, wrong_axis}, DataType::kUint8, none);
  EXPECT_FALSE(r);
  EXPECT_NE(r.reason.find("per-axis scale must be 1-D of length 5"), std::string::npos) << r.reason;
  HostTensor q = HostTensor::zeros(DataType::kUint8, kShape);
  r = askQuant("DequantizeLinear", 19, {q, s, z8}, DataType::kFloat, none);
  EXPECT_FALSE(r);
  EXPECT_NE(r.reason.find("the zero point is int8, the input uint8"), std::string::npos)
      << r.reason;
  // DynamicQuantizeLinear: float only.
  KernelAttrs attrs;
  CudaKernelCall dql{"", "DynamicQuantizeLinear", 11, {}, {}, &attrs, {}};
  dql.inputs = {ConstTensorView(DataType::kFloat16, kShape, contiguousStrides(kShape), nullptr,
                                MemoryKind::kDevice)};
  dql.outputs = {
      TensorView(DataType::kUint8, kShape, contiguousStrides(kShape), nullptr, MemoryKind::kDevice),
      TensorView(DataType::kFloat, {}, {}, nullptr, MemoryKind::kDevice),
      TensorView(DataType::kUint8, {}, {}, nullptr, MemoryKind::kDevice)};
  r = cudaCanImplement(dql);
  EXPECT_FALSE(r);
  EXPECT_NE(r.reason.find("no CUDA kernel for float16"), std::string::npos) << r.reason;
  dql.inputs[0].dtype = DataType::kFloat;
  EXPECT_TRUE(cudaCanImplement(dql)) << cudaCanImplement(dql).reason;
}

}  // namespace
}  // namespace onnxopt::kernels
