// The CUDA elementwise kernels (unary, binary, Mod, Where, Cast, CastLike) against the CPU reference kernels, for
// every (op, types) combination kernels/cuda/ops.def claims, over shapes that broadcast up to rank
// 8: seeded random inputs, the output poisoned before the run, compared at a tolerance for the
// output's type (exact for integers and bool). Label gpu: without a device each test is skipped
// with "skipped: no CUDA device" (or fails, with ONNXOPT_REQUIRE_CUDA=1, as tools/gpu/test.sh
// sets).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "kernel_cases.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/support/half.h"

namespace onnxopt::kernels {
namespace {

using Shapes = std::vector<std::vector<int64_t>>;

struct Case {
  std::string op;
  int64_t opset = 0;
  std::vector<DataType> inputs;
  DataType output = DataType::kUndefined;
  Shapes shapes;  ///< one per input
  KernelAttrs attrs;
  std::string name;  ///< the configuration, in the test's name
};

/// gtest prints a parameter as its configuration (ctest's test names show it).
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::string shapeName(const std::vector<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  return fmt::format("{}", fmt::join(dims, "x"));
}

std::string caseName(const Case& c, const std::string& variant) {
  std::string name = c.op + variant + "_" + dataTypeName(c.inputs.back());
  if (c.op == "Pow" && c.inputs.front() != c.inputs.back()) {
    name =
        c.op + variant + "_" + dataTypeName(c.inputs.front()) + "_" + dataTypeName(c.inputs.back());
  }
  if (c.op == "Cast" || c.op == "CastLike") {
    name = c.op + "_" + dataTypeName(c.inputs[0]) + "_to_" + dataTypeName(c.output);
  }
  for (const auto& s : c.shapes) name += "_" + shapeName(s);
  return name;
}

/// The shapes each family runs on: same shape, broadcasting both ways, a scalar, rank 8, and
/// sizes of several blocks.
std::vector<Shapes> shapesFor(const CudaKernelInfo& row) {
  std::string family = row.family;
  if (std::string(row.op) == "PRelu") {  // the slope broadcasts to X (unidirectional)
    return {{{1000}, {1000}}, {{2, 3, 5}, {}}, {{2, 3, 5}, {3, 1}}, {{4, 8, 3, 3}, {8, 1, 1}}};
  }
  if (family == "Binary" || family == "Mod") {
    // 1000 and 1003 elements: the vectorized path (16 bytes a thread) without and with a tail.
    // A row broadcast (a bias), a column one (a per-row scale), an attention mask and a scalar
    // over rows of 16: the vectorized broadcasting path (one operand loaded 16 bytes at a time,
    // the other splat).
    return {{{1000}, {1000}},
            {{1003}, {1003}},
            {{6, 5, 16}, {16}},
            {{6, 16}, {6, 1}},
            {{2, 3, 4, 16}, {2, 1, 1, 16}},
            {{24}, {4, 1, 24}},
            {{3, 1, 17}, {4, 17}},
            {{2, 3, 5}, {}},
            {{2, 1, 2, 1, 2, 1, 2, 3}, {1, 3, 1, 2, 1, 2, 1, 1}}};
  }
  if (family == "Where") {
    return {{{4, 1}, {1, 6}, {4, 6}},
            {{300}, {300}, {300}},
            {{2, 1, 1, 1, 1, 1, 1, 3}, {1, 2, 1, 1, 1, 1, 2, 1}, {3}}};
  }
  if (std::string(row.op) == "Clip" && row.max_inputs == 3) return {{{7, 33}, {}, {}}};
  // 7x33: the vectorized path with a tail; 2x3x1x5: ... and one shorter than a vector.
  return {{{7, 33}}, {{2, 3, 1, 5}}, {{3, 4096}}};
}

std::vector<Case> allCases() {
  std::vector<Case> out;
  for (const CudaKernelInfo& row : cudaKernelTable()) {
    // The elementwise families only: MatMul and Gemm have their own cases (matmul_test.cc), and
    // so has every other family (its shapes and attributes are not elementwise).
    const std::string family = row.family;
    if (family != "Unary" && family != "Binary" && family != "Mod" && family != "Where" &&
        family != "Cast" && family != "CastLike") {
      continue;
    }
    for (const test::TypeCombo& combo : test::claimedCombos(row)) {
      std::vector<std::pair<std::string, KernelAttrs>> variants = {{"", {}}};
      std::string op = row.op;
      if (op == "Gelu") {
        KernelAttrs tanh;
        tanh.strings["approximate"] = "tanh";
        variants.push_back({"Tanh", tanh});
      } else if (op == "LeakyRelu" || op == "Elu" || op == "Celu" || op == "Swish" ||
                 op == "ThresholdedRelu") {
        variants[0].second.floats["alpha"] = 0.3f;
        variants.push_back({"Default", {}});
      } else if (op == "Shrink") {
        variants[0].second.floats["lambd"] = 0.7f;
        variants[0].second.floats["bias"] = 0.2f;
        variants.push_back({"Default", {}});
      } else if (op == "IsInf") {
        variants = {{"", {}}, {"Negative", {}}, {"Positive", {}}};
        variants[1].second.ints["detect_positive"] = 0;
        variants[2].second.ints["detect_negative"] = 0;
      } else if (op == "HardSigmoid") {
        variants[0].second.floats["alpha"] = 0.3f;
        variants[0].second.floats["beta"] = 0.4f;
      } else if (op == "Clip" && row.max_inputs == 1) {
        variants[0].second.floats["min"] = -1.0f;
        variants[0].second.floats["max"] = 1.5f;
      } else if (op == "Cast") {
        variants[0].second.ints["to"] = static_cast<int64_t>(combo.output);
      } else if (op == "Mod") {
        // Python's remainder (fmod 0) for integers only; C's (fmod 1) for every type.
        DataType t = combo.inputs.back();
        bool is_float =
            t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
        variants = {{"Fmod", {}}};
        variants[0].second.ints["fmod"] = 1;
        if (!is_float) variants.push_back({"", {}});
      }
      std::vector<Shapes> shape_sets = shapesFor(row);
      if (op == "Cast") shape_sets = {{{3, 37}}};
      if (op == "CastLike") shape_sets = {{{3, 37}, {1}}};
      for (const auto& [variant, attrs] : variants) {
        for (const Shapes& shapes : shape_sets) {
          // The reference kernels start at opset 7; rows from 6 run there.
          Case c{op, std::max<int64_t>(row.since, 7), combo.inputs, combo.output, shapes, attrs,
                 ""};
          c.inputs.resize(shapes.size());
          if (op == "CastLike") c.inputs = {combo.inputs[0], combo.output};
          c.name = caseName(c, variant) + fmt::format("_opset{}", c.opset);
          out.push_back(std::move(c));
        }
      }
    }
  }
  return out;
}

/// Random values where the op is defined and the reference agrees with itself: positive for Log
/// and Sqrt, away from zero for divisors, small exponents, and integers that wrap in int8.
std::vector<double> randomValues(const Case& c, size_t input, DataType type, int64_t n,
                                 std::mt19937& rng) {
  std::vector<double> v(static_cast<size_t>(n));
  bool is_float =
      type == DataType::kFloat || type == DataType::kFloat16 || type == DataType::kBfloat16;
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<>(lo, hi)(rng);
  };
  auto integer = [&](int64_t lo, int64_t hi) {
    return static_cast<double>(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
  };
  bool comparison = c.op == "Equal" || c.op == "Less" || c.op == "Greater" ||
                    c.op == "LessOrEqual" || c.op == "GreaterOrEqual";
  for (double& x : v) {
    if (type == DataType::kBool) {
      x = integer(0, 1);
    } else if (comparison) {  // small integers, so that equal elements occur
      x = integer(type == DataType::kUint8 ? 0 : -3, 3);
    } else if (c.op == "Clip" && input > 0) {
      x = input == 1 ? -1.0 : 1.5;
      if (!is_float) x = input == 1 ? -5 : 7;
      if (type == DataType::kUint8) x = input == 1 ? 5 : 200;
    } else if (is_float) {
      if (c.op == "IsNaN" || c.op == "IsInf") {  // a quarter each NaN, +inf, -inf, finite
        constexpr double kInf = std::numeric_limits<double>::infinity();
        const double kinds[] = {std::numeric_limits<double>::quiet_NaN(), kInf, -kInf, 1.5};
        x = kinds[static_cast<size_t>(integer(0, 3))];
        if (x == 1.5) x = uniform(-4, 4);
      } else if (c.op == "Log" || c.op == "Sqrt") {
        x = uniform(0.05, 5);
      } else if (c.op == "Acos" || c.op == "Asin" || c.op == "Atanh") {
        x = uniform(-0.95, 0.95);
      } else if (c.op == "Acosh") {
        x = uniform(1.05, 5);
      } else if (c.op == "Tan") {
        x = uniform(-1.2, 1.2);
      } else if (c.op == "Pow") {
        x = input == 0 ? uniform(0.5, 2) : uniform(-2, 2);
      } else if (((c.op == "Div" || c.op == "Mod") && input == 1) || c.op == "Reciprocal") {
        x = uniform(0.5, 4) * (integer(0, 1) ? 1 : -1);
      } else if (c.op == "Cast" || c.op == "CastLike") {
        x = uniform(-300, 300);
      } else {
        x = uniform(-4, 4);
      }
    } else if (c.op == "Pow") {
      x = input == 0 ? integer(-3, 3) : integer(-1, 5);
    } else if ((c.op == "Div" || c.op == "Mod") && input == 1) {
      x = integer(1, 9) * (integer(0, 1) || type == DataType::kUint8 ? 1 : -1);
    } else if (type == DataType::kUint8) {
      x = integer(0, 255);
    } else if (type == DataType::kInt8) {
      x = integer(-128, 127);
    } else {
      x = integer(-1000, 1000);
    }
  }
  return v;
}

class ElementwiseTest : public test::CudaTest, public ::testing::WithParamInterface<Case> {};

TEST_P(ElementwiseTest, MatchesReference) {
  const Case& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  std::vector<HostTensor> host;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : c.shapes[i]) n *= d;
    host.push_back(
        test::tensorOf(c.inputs[i], c.shapes[i], randomValues(c, i, c.inputs[i], n, rng)));
  }
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : host) ptrs.push_back(&t);
  auto expected = runReferenceKernel(c.op, c.opset, ptrs, c.attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  ASSERT_EQ(want.dtype, c.output);

  auto got = test::runOnDevice(c.op, c.opset, host, c.attrs, want.dtype, want.dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want, *got, test::toleranceFor(want.dtype));
}

INSTANTIATE_TEST_SUITE_P(Claimed, ElementwiseTest, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

class CudaLaunchTest : public test::CudaTest {};

/// A transposed (non-contiguous) input view: the kernels read any strides.
TEST_F(CudaLaunchTest, StridedInput) {
  auto stream = DeviceStream::create();
  ASSERT_TRUE(stream.isOk()) << stream.status().toString();
  std::mt19937 rng(7);
  std::vector<double> values(6 * 5);
  for (double& v : values) v = std::uniform_real_distribution<>(-3, 3)(rng);
  HostTensor base = test::tensorOf(DataType::kFloat, {6, 5}, values);  // viewed as [5, 6]
  HostTensor transposed = HostTensor::zeros(DataType::kFloat, {5, 6});
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 6; ++j) transposed.set<float>(i * 6 + j, base.get<float>(j * 5 + i));
  }
  auto expected = runReferenceKernel("Relu", 14, {&transposed}, {}, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  auto in = test::upload(base, stream->get());
  ASSERT_TRUE(in.isOk()) << in.status().toString();
  auto out = DeviceBuffer::allocate(transposed.bytes.size());
  ASSERT_TRUE(out.isOk());
  ASSERT_TRUE(fillDevice(out->data(), 0xFF, out->size(), stream->get()).isOk());
  CudaKernelCall call;
  call.op = "Relu";
  call.opset = 14;
  call.inputs = {
      ConstTensorView(DataType::kFloat, {5, 6}, {1, 5}, in->buffer.data(), MemoryKind::kDevice)};
  call.outputs = {TensorView(DataType::kFloat, {5, 6}, {6, 1}, out->data(), MemoryKind::kDevice)};
  ASSERT_TRUE(launchCudaKernel(call, stream->get()).isOk());
  HostTensor got = HostTensor::zeros(DataType::kFloat, {5, 6});
  ASSERT_TRUE(copyToHost(got.bytes.data(), out->data(), got.bytes.size(), stream->get()).isOk());
  ASSERT_TRUE(stream->synchronize().isOk());
  test::expectClose(expected->at(0), got, test::toleranceFor(DataType::kFloat));
}

/// An empty output launches nothing and succeeds.
TEST_F(CudaLaunchTest, EmptyTensor) {
  CudaKernelCall call;
  call.op = "Add";
  call.opset = 14;
  call.inputs = {ConstTensorView(DataType::kFloat, {0, 3}, {3, 1}, nullptr, MemoryKind::kDevice),
                 ConstTensorView(DataType::kFloat, {3}, {1}, nullptr, MemoryKind::kDevice)};
  call.outputs = {TensorView(DataType::kFloat, {0, 3}, {3, 1}, nullptr, MemoryKind::kDevice)};
  Status s = launchCudaKernel(call, nullptr);
  EXPECT_TRUE(s.isOk()) << s.toString();
}

/// A refused node is kUnimplemented naming the op, and nothing runs.
TEST_F(CudaLaunchTest, RefusedNodeIsAnError) {
  CudaKernelCall call;
  call.op = "Exp";
  call.opset = 13;
  call.inputs = {ConstTensorView(DataType::kInt32, {3}, {1}, nullptr, MemoryKind::kDevice)};
  call.outputs = {TensorView(DataType::kInt32, {3}, {1}, nullptr, MemoryKind::kDevice)};
  Status s = launchCudaKernel(call, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "Exp: no CUDA kernel for int32");
}

TEST_F(CudaLaunchTest, DeviceInfo) {
  const CudaDeviceInfo& info = test::device().value();
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.major, 5);
  EXPECT_GT(info.total_bytes, size_t{0});
  std::printf("device 0: %s, compute capability %d.%d, %d multiprocessors\n", info.name.c_str(),
              info.major, info.minor, info.multiprocessors);
}

/// A device error is a Status naming the call, not an abort: an allocation beyond any card.
TEST_F(CudaLaunchTest, OutOfMemoryIsResourceExhausted) {
  auto buffer = DeviceBuffer::allocate(size_t{1} << 50);
  ASSERT_FALSE(buffer.isOk());
  EXPECT_EQ(buffer.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(buffer.status().message().find("1125899906842624 bytes"), std::string::npos)
      << buffer.status().message();
  // The error is not sticky: the next allocation works.
  EXPECT_TRUE(DeviceBuffer::allocate(1024).isOk());
}

}  // namespace
}  // namespace onnxopt::kernels
