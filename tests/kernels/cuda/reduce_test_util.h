// What the GPU tests of the reduction-like families share (reduce_test.cc, scan_test.cc,
// topk_test.cc, fill_test.cc): the claimed types of a family's rows, seeded random values, the
// reference run, a device run with several outputs, and a comparison that accepts equal
// infinities and NaN for NaN.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels::test {

/// The rows of kernels/cuda/ops.def of `family`.
inline std::vector<CudaKernelInfo> rowsOf(const std::string& family) {
  std::vector<CudaKernelInfo> out;
  for (const CudaKernelInfo& row : cudaKernelTable()) {
    if (family == row.family) out.push_back(row);
  }
  return out;
}

inline bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

/// "3x4x5" ("scalar" for rank 0).
inline std::string dimsName(const std::vector<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  return fmt::format("{}", fmt::join(dims, "x"));
}

/// `name` as a gtest parameter name: '-' (negative axes) spelled 'm'.
inline std::string testName(std::string name) {
  for (size_t i = name.find('-'); i != std::string::npos; i = name.find('-'))
    name.replace(i, 1, "m");
  return name;
}

inline int64_t elementsOf(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// `n` values uniform in [lo, hi] (integers for an integer type), from a generator seeded by
/// `seed` (the test's name).
inline std::vector<double> randomValues(DataType type, int64_t n, double lo, double hi,
                                        const std::string& seed) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(seed)));
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) {
    if (isFloatType(type)) {
      x = std::uniform_real_distribution<>(lo, hi)(rng);
    } else {
      x = static_cast<double>(std::uniform_int_distribution<int64_t>(
          static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng));
    }
  }
  return v;
}

/// The reference kernel's outputs, failing the test when it refuses.
inline std::vector<HostTensor> referenceOutputs(const std::string& op, int64_t opset,
                                                const std::vector<HostTensor>& inputs,
                                                const KernelAttrs& attrs, size_t outputs) {
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : inputs) ptrs.push_back(t.dtype == DataType::kUndefined ? nullptr : &t);
  auto ref = runReferenceKernel(op, opset, ptrs, attrs, outputs);
  EXPECT_TRUE(ref.isOk()) << ref.status().toString();
  return ref.isOk() ? *ref : std::vector<HostTensor>{};
}

/// runOnDevice for a node of several outputs, shaped and typed like `expected`: inputs uploaded
/// and given as constants too (inputs from `first_runtime` on only uploaded: known only at run
/// time), every output poisoned with 0xA5 bytes first.
inline StatusOr<std::vector<HostTensor>> runOutputsOnDevice(const std::string& op, int64_t opset,
                                                            const std::vector<HostTensor>& inputs,
                                                            const KernelAttrs& attrs,
                                                            const std::vector<HostTensor>& expected,
                                                            size_t first_runtime = SIZE_MAX) {
  ASSIGN_OR_RETURN(DeviceStream stream, DeviceStream::create());
  CudaKernelCall call;
  call.op = op;
  call.opset = opset;
  call.attrs = &attrs;
  std::vector<DeviceTensor> device;  // the inputs, then the outputs
  for (const HostTensor& t : inputs) {
    ASSIGN_OR_RETURN(DeviceTensor d, upload(t, stream.get()));
    call.inputs.push_back(d.view());
    call.constant_inputs.push_back(call.inputs.size() > first_runtime ? nullptr : &t);
    device.push_back(std::move(d));
  }
  std::vector<HostTensor> got;
  for (const HostTensor& e : expected) {
    got.push_back(HostTensor::zeros(e.dtype, e.dims));
    ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(e.bytes.size()));
    RETURN_IF_ERROR(fillDevice(buffer.data(), 0xA5, e.bytes.size(), stream.get()));
    device.push_back(DeviceTensor{std::move(buffer), e.dims, e.dtype});
    call.outputs.push_back(device.back().mutableView());
  }
  if (Support s = cudaCanImplement(call); !s) return Status(StatusCode::kUnimplemented, s.reason);
  ASSIGN_OR_RETURN(size_t scratch_bytes, cudaWorkspaceBytes(call));
  ASSIGN_OR_RETURN(DeviceBuffer scratch, DeviceBuffer::allocate(scratch_bytes));
  call.workspace = scratch.data();
  call.workspace_bytes = scratch_bytes;
  RETURN_IF_ERROR(launchCudaKernel(call, stream.get()));
  for (size_t i = 0; i < got.size(); ++i) {
    const DeviceTensor& out = device[inputs.size() + i];
    RETURN_IF_ERROR(
        copyToHost(got[i].bytes.data(), out.buffer.data(), got[i].bytes.size(), stream.get()));
  }
  RETURN_IF_ERROR(stream.synchronize(op));
  return got;
}

/// expectClose that also accepts equal values (infinities) and NaN for NaN.
inline void expectNear(const HostTensor& expected, const HostTensor& actual, Tolerance tol,
                       const std::string& what = "") {
  ASSERT_EQ(expected.dtype, actual.dtype) << what;
  ASSERT_EQ(expected.dims, actual.dims) << what;
  int reported = 0;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    double e = valueAt(expected, i), a = valueAt(actual, i);
    if (e == a || (std::isnan(e) && std::isnan(a))) continue;
    if (std::fabs(e - a) <= tol.atol + tol.rtol * std::fabs(e)) continue;
    ADD_FAILURE() << what << " element " << i << ": cuda " << a << ", reference " << e;
    if (++reported == 5) return;
  }
}

}  // namespace onnxopt::kernels::test
