// What the conv and pool families' canImplement refuses, and why (host only: no device needed,
// so these run in CI): types, ranks, memory, output shapes, attributes; and that every
// ConvTranspose geometry (output_shape beyond the full output, output_padding) is taken.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnxopt/kernels/cuda.h"

namespace onnxopt::kernels {
namespace {

/// A node over device views (no data) of `inputs`, one output of `out`, all of type `t`.
struct FakeNode {
  KernelAttrs attrs;
  CudaKernelCall call;

  FakeNode(const std::string& op, const std::vector<std::vector<int64_t>>& inputs,
           const std::vector<int64_t>& out, DataType t = DataType::kFloat) {
    call.op = op;
    call.opset = 19;
    for (const auto& dims : inputs) {
      call.inputs.emplace_back(t, dims, contiguousStrides(dims), nullptr, MemoryKind::kDevice);
    }
    call.outputs.emplace_back(t, out, contiguousStrides(out), nullptr, MemoryKind::kDevice);
    call.attrs = &attrs;
  }
  Support check() const { return cudaCanImplement(call); }
};

void expectRefused(const FakeNode& n, const std::string& reason) {
  Support s = n.check();
  EXPECT_FALSE(s) << "accepted; expected: " << reason;
  EXPECT_NE(s.reason.find(reason), std::string::npos) << s.reason;
}

TEST(ConvCanImplement, AcceptsWhatCudnnRuns) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  FakeNode plain("Conv", {{2, 3, 7, 9}, {4, 3, 3, 3}, {4}}, {2, 4, 5, 7});
  EXPECT_TRUE(plain.check()) << plain.check().reason;
  FakeNode asym("Conv", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 6, 8});
  asym.attrs.int_lists["pads"] = {0, 1, 1, 0};
  EXPECT_TRUE(asym.check()) << asym.check().reason;
  FakeNode one_d("Conv", {{2, 3, 11}, {4, 3, 3}}, {2, 4, 9}, DataType::kFloat16);
  EXPECT_TRUE(one_d.check()) << one_d.check().reason;
  FakeNode same("ConvTranspose", {{2, 3, 5, 6}, {3, 4, 3, 3}}, {2, 4, 10, 12});
  same.attrs.int_lists["strides"] = {2, 2};
  same.attrs.strings["auto_pad"] = "SAME_UPPER";
  EXPECT_TRUE(same.check()) << same.check().reason;
}

TEST(ConvCanImplement, RefusesTypesRanksAndMemory) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  expectRefused(FakeNode("Conv", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 5, 7}, DataType::kInt32),
                "Conv: no CUDA kernel for int32");
  FakeNode mixed("Conv", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 5, 7});
  mixed.call.inputs[1].dtype = DataType::kFloat16;
  expectRefused(mixed, "Conv: X, W, B and Y must share one type");
  expectRefused(FakeNode("Conv", {{1, 1, 3, 3, 3, 3}, {1, 1, 1, 1, 1, 1}}, {1, 1, 3, 3, 3, 3}),
                "Conv: cuDNN convolves 1 to 3 spatial dims, not 4");
  FakeNode host("Conv", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 5, 7});
  host.call.inputs[1].memory = MemoryKind::kHost;
  expectRefused(host, "host memory");
  expectRefused(FakeNode("Conv", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 7, 9}),
                "Conv: the output is [2, 4, 7, 9]; the convolution gives [2, 4, 5, 7]");
}

TEST(ConvCanImplement, RefusesBrokenAttributes) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  FakeNode group("Conv", {{2, 4, 7, 9}, {4, 2, 3, 3}}, {2, 4, 5, 7});
  group.attrs.ints["group"] = 3;
  expectRefused(group, "Conv: group 3 does not fit 4 input channels");
  FakeNode pad("Conv", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 5, 7});
  pad.attrs.strings["auto_pad"] = "SAME";
  expectRefused(pad, "Conv: unknown auto_pad 'SAME'");
  FakeNode pads("Conv", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 5, 7});
  pads.attrs.int_lists["pads"] = {1, 1};
  expectRefused(pads, "Conv: pads has 2 values, expected 4");
  FakeNode bias("Conv", {{2, 3, 7, 9}, {4, 3, 3, 3}, {3}}, {2, 4, 5, 7});
  expectRefused(bias, "Conv: B must have shape [4], not [3]");
}

TEST(ConvCanImplement, AcceptsEveryTransposeGeometry) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  // output_shape far above the full output: Y starts before it (pad_begin -2).
  FakeNode big("ConvTranspose", {{1, 2, 3, 3}, {2, 2, 3, 3}}, {1, 2, 9, 9});
  big.attrs.int_lists["output_shape"] = {9, 9};
  EXPECT_TRUE(big.check()) << big.check().reason;
  // One past the full output at the end (pad_end -1, ONNX's test_convtranspose_output_shape).
  FakeNode past("ConvTranspose", {{1, 1, 3, 3}, {1, 2, 3, 3}}, {1, 2, 10, 8});
  past.attrs.int_lists["strides"] = {3, 2};
  past.attrs.int_lists["output_shape"] = {10, 8};
  EXPECT_TRUE(past.check()) << past.check().reason;
  // output_padding at the stride.
  FakeNode outpad("ConvTranspose", {{1, 2, 3, 3}, {2, 2, 3, 3}}, {1, 2, 6, 6});
  outpad.attrs.int_lists["output_padding"] = {1, 1};
  EXPECT_TRUE(outpad.check()) << outpad.check().reason;
  FakeNode wrong("ConvTranspose", {{1, 2, 3, 3}, {2, 2, 3, 3}}, {1, 2, 6, 6});
  expectRefused(wrong,
                "ConvTranspose: the output is [1, 2, 6, 6]; the convolution gives [1, 2, 5, 5]");
}

TEST(PoolCanImplement, AcceptsEveryAttribute) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  FakeNode max("MaxPool", {{2, 3, 7, 9}}, {2, 3, 4, 4}, DataType::kInt8);
  max.attrs.int_lists["kernel_shape"] = {2, 2};
  max.attrs.int_lists["strides"] = {2, 2};
  max.attrs.int_lists["dilations"] = {1, 2};
  max.attrs.ints["ceil_mode"] = 1;
  EXPECT_TRUE(max.check()) << max.check().reason;
  max.call.outputs.emplace_back(DataType::kInt64, std::vector<int64_t>{2, 3, 4, 4},
                                contiguousStrides({2, 3, 4, 4}), nullptr, MemoryKind::kDevice);
  max.attrs.ints["storage_order"] = 1;
  EXPECT_TRUE(max.check()) << max.check().reason;
  FakeNode global("GlobalAveragePool", {{2, 3, 4, 5, 6, 7}}, {2, 3, 1, 1, 1, 1},
                  DataType::kBfloat16);
  EXPECT_TRUE(global.check()) << global.check().reason;
}

TEST(PoolCanImplement, RefusesWhatTheKernelsCannotRun) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  FakeNode int32("MaxPool", {{2, 3, 7, 9}}, {2, 3, 5, 7}, DataType::kInt32);
  int32.attrs.int_lists["kernel_shape"] = {3, 3};
  expectRefused(int32, "MaxPool: no CUDA kernel for int32");
  FakeNode avg("AveragePool", {{2, 3, 7, 9}}, {2, 3, 5, 7}, DataType::kInt8);
  avg.attrs.int_lists["kernel_shape"] = {3, 3};
  expectRefused(avg, "AveragePool: no CUDA kernel for int8");
  FakeNode four("MaxPool", {{1, 1, 3, 3, 3, 3}}, {1, 1, 3, 3, 3, 3});
  four.attrs.int_lists["kernel_shape"] = {1, 1, 1, 1};
  expectRefused(four, "MaxPool: the CUDA kernel pools 1 to 3 spatial dims, not 4");
  FakeNode no_kernel("AveragePool", {{2, 3, 7, 9}}, {2, 3, 5, 7});
  expectRefused(no_kernel, "AveragePool: kernel_shape is required");
  FakeNode dilated("AveragePool", {{2, 3, 7, 9}}, {2, 3, 3, 5});
  dilated.attrs.int_lists["kernel_shape"] = {3, 3};
  dilated.attrs.int_lists["dilations"] = {2, 2};
  dilated.call.opset = 18;
  expectRefused(dilated, "AveragePool: dilations before opset 19");
  FakeNode indices("MaxPool", {{2, 3, 7, 9}}, {2, 3, 5, 7});
  indices.attrs.int_lists["kernel_shape"] = {3, 3};
  indices.call.outputs.emplace_back(DataType::kInt32, std::vector<int64_t>{2, 3, 5, 7},
                                    contiguousStrides({2, 3, 5, 7}), nullptr, MemoryKind::kDevice);
  expectRefused(indices, "MaxPool: Indices must be int64 of shape [2, 3, 5, 7]");
  FakeNode shape("MaxPool", {{2, 3, 7, 9}}, {2, 3, 7, 9});
  shape.attrs.int_lists["kernel_shape"] = {3, 3};
  expectRefused(shape, "MaxPool: the output is [2, 3, 7, 9]; the pooling gives [2, 3, 5, 7]");
}

TEST(QuantConvCanImplement, TakesByteTypesAndFloatScales) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  FakeNode ok("ConvInteger", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 5, 7}, DataType::kUint8);
  ok.call.outputs[0].dtype = DataType::kInt32;
  EXPECT_TRUE(ok.check()) << ok.check().reason;
  FakeNode wrong_y("ConvInteger", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 5, 7}, DataType::kUint8);
  expectRefused(wrong_y, "ConvInteger: Y must be int32, not uint8");
  FakeNode floats("ConvInteger", {{2, 3, 7, 9}, {4, 3, 3, 3}}, {2, 4, 5, 7});
  expectRefused(floats, "ConvInteger: X and W must be int8 or uint8, not float and float");
  FakeNode q("QLinearConv", {{2, 3, 7, 9}, {}, {}, {4, 3, 3, 3}, {4}, {4}, {}, {}}, {2, 4, 5, 7},
             DataType::kInt8);
  for (size_t i : {1, 4, 6}) q.call.inputs[i].dtype = DataType::kFloat;
  EXPECT_TRUE(q.check()) << q.check().reason;
  q.call.inputs[4].dtype = DataType::kFloat16;
  expectRefused(q, "QLinearConv: the CUDA kernel takes float scales, not float16");
}

}  // namespace
}  // namespace onnxopt::kernels