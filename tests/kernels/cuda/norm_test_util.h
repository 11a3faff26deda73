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
  std::string domain;  ///< "" or ai.onnxopt (our own ops)
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

/// runOnDevice (device_harness.h) for a node with several outputs, each like its `like` tensor
/// (type and dims): the outputs come back in order, each poisoned with 0xA5 bytes before the run.
inline StatusOr<std::vector<HostTensor>> runOutputsOnDevice(const NodeCase& c,
                                                            const std::vector<HostTensor>& like) {
  ASSIGN_OR_RETURN(DeviceStream stream, DeviceStream::create());
  CudaKernelCall call;
  call.domain = c.domain;
  call.op = c.op;
  call.opset = c.opset;
  call.attrs = &c.attrs;
  std::vector<DeviceTensor> buffers;
  for (const HostTensor& t : c.inputs) {
    ASSIGN_OR_RETURN(DeviceTensor d, upload(t, stream.get()));
    call.inputs.push_back(d.view());
    call.constant_inputs.push_back(&t);
    buffers.push_back(std::move(d));
  }
  std::vector<HostTensor> got;
  for (const HostTensor& t : like) {
    got.push_back(HostTensor::zeros(t.dtype, t.dims));
    ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(got.back().bytes.size()));
    RETURN_IF_ERROR(fillDevice(b.data(), 0xA5, b.size(), stream.get()));
    buffers.push_back(DeviceTensor{std::move(b), t.dims, t.dtype});
    call.outputs.push_back(buffers.back().mutableView());
  }
  if (Support s = cudaCanImplement(call); !s) return Status(StatusCode::kUnimplemented, s.reason);
  // These families need no scratch memory.
  ASSIGN_OR_RETURN(size_t scratch, cudaWorkspaceBytes(call));
  if (scratch != 0) return Status(StatusCode::kInternal, c.op + ": asks for a workspace");
  RETURN_IF_ERROR(launchCudaKernel(call, stream.get()));
  for (size_t i = 0; i < got.size(); ++i) {
    const TensorView& out = call.outputs[i];
    RETURN_IF_ERROR(copyToHost(got[i].bytes.data(), out.data, got[i].bytes.size(), stream.get()));
  }
  RETURN_IF_ERROR(stream.synchronize(c.op));
  return got;
}

/// Runs the case on the reference kernel and on the device and compares `outputs` outputs (the
/// first at `tol`, the others, float statistics, at `stats_tol`).
inline void expectMatchesReference(const NodeCase& c, Tolerance tol, size_t outputs = 1,
                                   Tolerance stats_tol = {}) {
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : c.inputs) {
    ptrs.push_back(t.dtype == DataType::kUndefined ? nullptr : &t);
  }
  auto expected =
      runReferenceKernel(referenceOpName(c.domain, c.op), c.opset, ptrs, c.attrs, outputs);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  auto got = runOutputsOnDevice(c, *expected);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  for (size_t i = 0; i < outputs; ++i) {
    SCOPED_TRACE(::testing::Message() << "output " << i);
    expectClose(expected->at(i), got->at(i), i == 0 ? tol : stats_tol);
  }
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
