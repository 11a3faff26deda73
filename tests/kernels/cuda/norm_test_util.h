// What the tests of the row-wise families and Resize share (softmax_test.cc, norm_test.cc,
// resize_test.cc): a case (op, opset, inputs, attributes, the configuration as its name) run on
// the device and compared with the reference kernel, seeded random values, and calls of device
// views without memory for the host-only canImplement tests.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels::test {

struct NodeCase {
  std::string op;
  int64_t opset = 0;
  std::vector<HostTensor> inputs;  ///< an input of dtype kUndefined is omitted
  KernelAttrs attrs;
  std::string name;  ///< the configuration, in the test's name
};

inline void PrintTo(const NodeCase& c, std::ostream* os) {
  *os << c.name;
}

inline std::string dimsName(const std::vector<int64_t>& dims) {
  return dims.empty() ? "scalar" : fmt::format("{}", fmt::join(dims, "x"));
}

/// A tensor of `dims` with values uniform in [lo, hi), seeded by `seed`.
inline HostTensor randomTensor(DataType dtype, const std::vector<int64_t>& dims, double lo,
                               double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values) v = std::uniform_real_distribution<>(lo, hi)(rng);
  return tensorOf(dtype, dims, values);
}

inline uint32_t seedOf(const std::string& name) {
  return static_cast<uint32_t>(std::hash<std::string>{}(name));
}

/// Runs the case on the reference kernel and on the device and compares the first output.
inline void expectMatchesReference(const NodeCase& c, Tolerance tol) {
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : c.inputs) {
    ptrs.push_back(t.dtype == DataType::kUndefined ? nullptr : &t);
  }
  auto expected = runReferenceKernel(c.op, c.opset, ptrs, c.attrs, 1);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  const HostTensor& want = expected->at(0);
  auto got = runOnDevice(c.op, c.opset, c.inputs, c.attrs, want.dtype, want.dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  expectClose(want, *got, tol);
}

/// A view of `dims` in device memory at no address: canImplement never reads it.
inline ConstTensorView deviceView(DataType dtype, const std::vector<int64_t>& dims) {
  return ConstTensorView(dtype, dims, contiguousStrides(dims), nullptr, MemoryKind::kDevice);
}

/// A call of `op` on device views (an input of dtype kUndefined is omitted), for cudaCanImplement.
inline CudaKernelCall viewCall(const std::string& op, int64_t opset,
                               const std::vector<ConstTensorView>& inputs,
                               const ConstTensorView& output, const KernelAttrs& attrs) {
  CudaKernelCall call;
  call.op = op;
  call.opset = opset;
  call.inputs = inputs;
  call.outputs.emplace_back(output.dtype, output.dims, output.strides,
                            const_cast<void*>(output.data), output.memory);
  call.attrs = &attrs;
  return call;
}

}  // namespace onnxopt::kernels::test
