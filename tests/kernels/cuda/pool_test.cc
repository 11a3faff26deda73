// The pools on CUDA (kernels/cuda/conv/pool.cu) against the reference kernels: MaxPool (float types,
// int8, uint8; strides, pads, asymmetric pads, dilations, ceil_mode, auto_pad, 1-D to 3-D, the
// Indices output in both storage orders), AveragePool (count_include_pad both ways, ceil_mode,
// dilations at opset 19), LpPool, GlobalAveragePool and GlobalMaxPool (channels longer than a
// block); ai.onnxopt.NhwcMaxPool and NhwcAveragePool on channels-last X (3 channels, and 16:
// MaxPool's vector kernel). Label gpu.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels {
namespace {

struct PoolCase {
  std::string op;
  DataType dtype;
  std::vector<int64_t> x;
  KernelAttrs attrs;
  bool indices = false;  ///< MaxPool's second output
  std::string name;
};

void PrintTo(const PoolCase& c, std::ostream* os) {
  *os << c.name;
}

struct PoolGeometry {
  std::string what;
  std::vector<int64_t> x;
  KernelAttrs attrs;
};

/// Attributes: integer lists, then integers, then auto_pad.
KernelAttrs poolAttrs(std::initializer_list<std::pair<const char*, std::vector<int64_t>>> lists,
                      std::initializer_list<std::pair<const char*, int64_t>> ints = {},
                      const char* auto_pad = nullptr) {
  KernelAttrs a;
  for (const auto& [name, v] : lists) a.int_lists[name] = v;
  for (const auto& [name, v] : ints) a.ints[name] = v;
  if (auto_pad != nullptr) a.strings["auto_pad"] = auto_pad;
  return a;
}

/// Windows both MaxPool and AveragePool run.
std::vector<PoolGeometry> windowGeometries() {
  return {
      {"k3", {2, 3, 7, 9}, poolAttrs({{"kernel_shape", {3, 3}}})},
      {"k3_s2_pads1",
       {2, 3, 7, 9},
       poolAttrs({{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}})},
      {"k2_s2_ceil",
       {2, 3, 7, 9},
       poolAttrs({{"kernel_shape", {2, 2}}, {"strides", {2, 2}}}, {{"ceil_mode", 1}})},
      {"k3_s2_pads1_ceil",
       {2, 3, 8, 9},
       poolAttrs({{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}},
                 {{"ceil_mode", 1}})},
      {"k3_dilation2", {2, 3, 7, 9}, poolAttrs({{"kernel_shape", {3, 3}}, {"dilations", {2, 2}}})},
      {"k3_asympads", {2, 3, 7, 9}, poolAttrs({{"kernel_shape", {3, 3}}, {"pads", {0, 1, 2, 0}}})},
      {"k3_s2_same_upper",
       {2, 3, 7, 9},
       poolAttrs({{"kernel_shape", {3, 3}}, {"strides", {2, 2}}}, {}, "SAME_UPPER")},
      {"k4_s2_same_lower",
       {2, 3, 7, 9},
       poolAttrs({{"kernel_shape", {4, 4}}, {"strides", {2, 2}}}, {}, "SAME_LOWER")},
      {"k2_valid", {2, 3, 7, 9}, poolAttrs({{"kernel_shape", {2, 2}}}, {}, "VALID")},
      {"1d_k3_s2_pads1",
       {2, 4, 11},
       poolAttrs({{"kernel_shape", {3}}, {"strides", {2}}, {"pads", {1, 1}}})},
      {"3d_k2_s2_pads1",
       {2, 3, 5, 6, 7},
       poolAttrs(
           {{"kernel_shape", {2, 2, 2}}, {"strides", {2, 2, 2}}, {"pads", {1, 1, 1, 0, 0, 0}}})},
  };
}

std::string caseName(const std::string& op, DataType t, const std::string& what,
                     const std::vector<int64_t>& x) {
  return fmt::format("{}_{}_{}_x{}", op, dataTypeName(t), what, fmt::join(x, "x"));
}

std::vector<PoolCase> poolCases() {
  std::vector<PoolCase> out;
  const std::vector<DataType> floats = {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16};
  for (DataType t : floats) {
    for (const PoolGeometry& g : windowGeometries()) {
      out.push_back({"MaxPool", t, g.x, g.attrs, false, caseName("MaxPool", t, g.what, g.x)});
      out.push_back(
          {"AveragePool", t, g.x, g.attrs, false, caseName("AveragePool", t, g.what, g.x)});
      KernelAttrs with_pad = g.attrs;
      with_pad.ints["count_include_pad"] = 1;
      out.push_back({"AveragePool", t, g.x, with_pad, false,
                     caseName("AveragePool", t, g.what + "_include_pad", g.x)});
    }
    KernelAttrs lp = poolAttrs(
        {{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}}, {{"p", 2}});
    out.push_back({"LpPool",
                   t,
                   {2, 3, 7, 9},
                   lp,
                   false,
                   caseName("LpPool", t, "p2_k3_s2_pads1", {2, 3, 7, 9})});
    KernelAttrs lp3 = poolAttrs({{"kernel_shape", {3}}}, {{"p", 3}});
    out.push_back(
        {"LpPool", t, {2, 4, 11}, lp3, false, caseName("LpPool", t, "1d_p3_k3", {2, 4, 11})});
    for (const auto& x : std::vector<std::vector<int64_t>>{
             {2, 3, 7, 9}, {2, 5, 1000}, {1, 4, 3, 4, 5}, {2, 3, 1, 1}}) {
      for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
        out.push_back({op, t, x, {}, false, caseName(op, t, "global", x)});
      }
    }
  }
  for (DataType t : {DataType::kInt8, DataType::kUint8}) {
    for (const PoolGeometry& g : windowGeometries()) {
      out.push_back({"MaxPool", t, g.x, g.attrs, false, caseName("MaxPool", t, g.what, g.x)});
    }
  }
  // Indices, in both storage orders, for the geometries that reach into padding.
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kInt8}) {
    for (int64_t order : {0, 1}) {
      for (const PoolGeometry& g : windowGeometries()) {
        if (g.what != "k3_s2_pads1" && g.what != "k3_dilation2" && g.what != "1d_k3_s2_pads1" &&
            g.what != "3d_k2_s2_pads1") {
          continue;
        }
        KernelAttrs a = g.attrs;
        a.ints["storage_order"] = order;
        out.push_back(
            {"MaxPool", t, g.x, a, true,
             caseName("MaxPool", t, fmt::format("{}_indices_order{}", g.what, order), g.x)});
      }
    }
  }
  return out;
}

/// Runs the node with two outputs (MaxPool's Y and Indices), both poisoned first.
StatusOr<std::vector<HostTensor>> runWithIndices(const PoolCase& c, const HostTensor& x,
                                                 const std::vector<HostTensor>& want) {
  ASSIGN_OR_RETURN(DeviceStream stream, DeviceStream::create());
  ASSIGN_OR_RETURN(test::DeviceTensor dx, test::upload(x, stream.get()));
  std::vector<HostTensor> got;
  std::vector<test::DeviceTensor> outs;
  for (const HostTensor& w : want) {
    got.push_back(HostTensor::zeros(w.dtype, w.dims));
    ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(got.back().bytes.size()));
    RETURN_IF_ERROR(fillDevice(buffer.data(), 0xA5, got.back().bytes.size(), stream.get()));
    outs.push_back(test::DeviceTensor{std::move(buffer), w.dims, w.dtype});
  }
  CudaKernelCall call;
  call.op = c.op;
  call.opset = 19;
  call.inputs = {dx.view()};
  call.constant_inputs = {&x};
  for (const test::DeviceTensor& o : outs) call.outputs.push_back(o.mutableView());
  call.attrs = &c.attrs;
  Support support = cudaCanImplement(call);
  if (!support) return Status(StatusCode::kUnimplemented, support.reason);
  RETURN_IF_ERROR(launchCudaKernel(call, stream.get()));
  for (size_t i = 0; i < outs.size(); ++i) {
    RETURN_IF_ERROR(
        copyToHost(got[i].bytes.data(), outs[i].buffer.data(), got[i].bytes.size(), stream.get()));
  }
  RETURN_IF_ERROR(stream.synchronize(c.op));
  return got;
}

class PoolTest : public test::CudaTest, public ::testing::WithParamInterface<PoolCase> {};

TEST_P(PoolTest, MatchesReference) {
  const PoolCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  int64_t n = 1;
  for (int64_t d : c.x) n *= d;
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values) {
    if (c.dtype == DataType::kInt8) {
      v = std::uniform_int_distribution<int>(-128, 127)(rng);
    } else if (c.dtype == DataType::kUint8) {
      v = std::uniform_int_distribution<int>(0, 255)(rng);
    } else {
      v = std::uniform_real_distribution<>(-2, 2)(rng);
    }
  }
  HostTensor x = test::tensorOf(c.dtype, c.x, values);
  auto expected = runReferenceKernel(c.op, 19, {&x}, c.attrs, c.indices ? 2 : 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  // Max picks an element (exact); the averages sum in the reference's order (one rounding).
  test::Tolerance tol = test::toleranceFor(c.dtype);
  if (c.op == "MaxPool" || c.op == "GlobalMaxPool") tol = {0, 0};
  if (!c.indices) {
    const HostTensor& want = expected->at(0);
    auto got = test::runOnDevice(c.op, 19, {x}, c.attrs, want.dtype, want.dims);
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    test::expectClose(want, *got, tol);
    return;
  }
  auto got = runWithIndices(c, x, *expected);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(expected->at(0), got->at(0), tol);
  test::expectClose(expected->at(1), got->at(1), {0, 0});
}

/// ai.onnxopt.NhwcMaxPool and NhwcAveragePool (convert-nhwc): the same windows on channels-last
/// X [N, H, W, C], against their reference kernels (the NCHW pool between Transposes).
std::vector<PoolCase> nhwcPoolCases() {
  std::vector<PoolCase> out;
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    for (const char* op : {"NhwcMaxPool", "NhwcAveragePool"}) {
      for (const PoolGeometry& g : windowGeometries()) {
        if (g.x.size() != 4) continue;
        // The geometries are NCHW: the same dims channels-last.
        std::vector<int64_t> x = {g.x[0], g.x[2], g.x[3], g.x[1]};
        out.push_back(
            {op, t, x, g.attrs, false, fmt::format("{}_{}_{}", op, dataTypeName(t), g.what)});
        // 16 channels: MaxPool's vector kernel (16-byte loads: 4 or 8 channels per thread).
        x[3] = 16;
        out.push_back(
            {op, t, x, g.attrs, false, fmt::format("{}_{}_{}_c16", op, dataTypeName(t), g.what)});
      }
    }
  }
  return out;
}

class NhwcPoolTest : public test::CudaTest, public ::testing::WithParamInterface<PoolCase> {};

TEST_P(NhwcPoolTest, MatchesReference) {
  const PoolCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  int64_t n = 1;
  for (int64_t d : c.x) n *= d;
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values) v = std::uniform_real_distribution<>(-2, 2)(rng);
  HostTensor x = test::tensorOf(c.dtype, c.x, values);
  auto expected = runReferenceKernel("ai.onnxopt." + c.op, 1, {&x}, c.attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  test::Tolerance tol = c.op == "NhwcMaxPool" ? test::Tolerance{0, 0} : test::toleranceFor(c.dtype);
  const HostTensor& want = expected->at(0);
  auto got = test::runOnDevice(c.op, 1, {x}, c.attrs, want.dtype, want.dims, "ai.onnxopt");
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want, *got, tol);
}

INSTANTIATE_TEST_SUITE_P(Claimed, NhwcPoolTest, ::testing::ValuesIn(nhwcPoolCases()),
                         [](const ::testing::TestParamInfo<PoolCase>& p) { return p.param.name; });

INSTANTIATE_TEST_SUITE_P(Claimed, PoolTest, ::testing::ValuesIn(poolCases()),
                         [](const ::testing::TestParamInfo<PoolCase>& p) { return p.param.name; });

}  // namespace
}  // namespace onnxopt::kernels
