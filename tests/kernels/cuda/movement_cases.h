// What the data-movement and indexing GPU tests (movement_test.cc, indexing_test.cc) share: a case
// (a node, its inputs, which of them are constants known when planning, its attributes), random
// inputs per element type, and one run of the node on the device compared bit for bit with the
// reference kernel on every output (these ops move elements: nothing is rounded). The outputs are
// poisoned with 0xA5 bytes first, so an element the kernel does not write fails.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels::test {

struct MoveCase {
  std::string name;  ///< the configuration, in the test's name
  std::string op;
  int64_t opset = 0;
  std::vector<HostTensor> inputs;  ///< an input of dtype kUndefined is omitted
  KernelAttrs attrs;
  size_t outputs = 1;
  /// Inputs the kernel sees only on the device (not constants known when planning).
  std::vector<size_t> runtime_inputs;
  /// Exact unless the kernel computes in an order the reference does not (a float reduction
  /// over repeated indices).
  Tolerance tolerance{0, 0};
};

inline void PrintTo(const MoveCase& c, std::ostream* os) {
  *os << c.name;
}

/// The element types the scatters claim (kCudaAll): every size (1, 2, 4, 8 bytes) and bool.
inline std::vector<DataType> scatterTypes() {
  return {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16, DataType::kInt8,
          DataType::kUint8, DataType::kInt32,   DataType::kInt64,    DataType::kBool};
}

/// The element types the pure movement kernels claim: the scatters' and double, int16, uint16,
/// uint32, uint64.
inline std::vector<DataType> movableTypes() {
  std::vector<DataType> out = scatterTypes();
  out.insert(out.end(), {DataType::kDouble, DataType::kInt16, DataType::kUint16, DataType::kUint32,
                         DataType::kUint64});
  return out;
}

/// One type per element size, and bool: the shorter sweep for the shape and attribute cases.
inline std::vector<DataType> sizeClassTypes() {
  return {DataType::kUint8, DataType::kFloat16, DataType::kFloat, DataType::kInt64,
          DataType::kBool};
}

inline std::string dimsName(const std::vector<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  std::string out;
  for (int64_t d : dims)
    out += (out.empty() ? "" : "x") + (d < 0 ? "m" + std::to_string(-d) : std::to_string(d));
  return out;
}

inline std::string listName(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values)
    out += (out.empty() ? "" : "_") + (v < 0 ? "m" + std::to_string(-v) : std::to_string(v));
  return out.empty() ? "none" : out;
}

/// Distinct-looking random elements of `type` (every bit pattern written is a value the reference
/// moves unchanged).
inline HostTensor randomTensor(DataType type, const std::vector<int64_t>& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) {
    if (type == DataType::kBool) {
      x = std::uniform_int_distribution<int>(0, 1)(rng);
    } else if (type == DataType::kUint8) {
      x = std::uniform_int_distribution<int>(0, 255)(rng);
    } else if (type == DataType::kInt8) {
      x = std::uniform_int_distribution<int>(-128, 127)(rng);
    } else if (type == DataType::kInt32 || type == DataType::kInt64) {
      x = std::uniform_int_distribution<int>(-100000, 100000)(rng);
    } else if (type == DataType::kInt16) {
      x = std::uniform_int_distribution<int>(-30000, 30000)(rng);
    } else if (type == DataType::kUint16 || type == DataType::kUint32 ||
               type == DataType::kUint64) {
      x = std::uniform_int_distribution<int>(0, 60000)(rng);
    } else {
      x = std::uniform_real_distribution<>(-8, 8)(rng);
    }
  }
  return tensorOf(type, dims, v);
}

/// An integer tensor (int64 unless `type` says int32) of `dims` holding `values`.
inline HostTensor intTensor(const std::vector<int64_t>& values, std::vector<int64_t> dims = {-1},
                            DataType type = DataType::kInt64) {
  if (dims == std::vector<int64_t>{-1}) dims = {static_cast<int64_t>(values.size())};
  std::vector<double> v(values.begin(), values.end());
  return tensorOf(type, std::move(dims), v);
}

/// Runs the case on the device into outputs of `want`'s types and dims (poisoned first).
inline StatusOr<std::vector<HostTensor>> runCaseOnDevice(const MoveCase& c,
                                                         const std::vector<HostTensor>& want) {
  ASSIGN_OR_RETURN(DeviceStream stream, DeviceStream::create());
  std::vector<DeviceTensor> device_inputs;
  for (const HostTensor& t : c.inputs) {
    if (t.dtype == DataType::kUndefined) {
      device_inputs.emplace_back();
      continue;
    }
    ASSIGN_OR_RETURN(DeviceTensor d, upload(t, stream.get()));
    device_inputs.push_back(std::move(d));
  }
  std::vector<DeviceTensor> outs;
  for (const HostTensor& w : want) {
    ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(w.bytes.size()));
    RETURN_IF_ERROR(fillDevice(buffer.data(), 0xA5, w.bytes.size(), stream.get()));
    outs.push_back(DeviceTensor{std::move(buffer), w.dims, w.dtype});
  }
  CudaKernelCall call;
  call.op = c.op;
  call.opset = c.opset;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    bool omitted = c.inputs[i].dtype == DataType::kUndefined;
    call.inputs.push_back(omitted ? ConstTensorView() : device_inputs[i].view());
    bool runtime = false;
    for (size_t r : c.runtime_inputs) runtime = runtime || r == i;
    call.constant_inputs.push_back(omitted || runtime ? nullptr : &c.inputs[i]);
  }
  for (const DeviceTensor& o : outs) call.outputs.push_back(o.mutableView());
  call.attrs = &c.attrs;
  Support support = cudaCanImplement(call);
  if (!support) return Status(StatusCode::kUnimplemented, support.reason);
  ASSIGN_OR_RETURN(size_t workspace_bytes, cudaWorkspaceBytes(call));
  ASSIGN_OR_RETURN(DeviceBuffer workspace, DeviceBuffer::allocate(workspace_bytes));
  call.workspace = workspace.data();
  call.workspace_bytes = workspace.size();
  RETURN_IF_ERROR(launchCudaKernel(call, stream.get()));
  std::vector<HostTensor> got;
  for (size_t i = 0; i < want.size(); ++i) {
    HostTensor g = HostTensor::zeros(want[i].dtype, want[i].dims);
    RETURN_IF_ERROR(
        copyToHost(g.bytes.data(), outs[i].buffer.data(), g.bytes.size(), stream.get()));
    got.push_back(std::move(g));
  }
  RETURN_IF_ERROR(stream.synchronize(c.op));
  return got;
}

/// The reference kernel's outputs for the case.
inline StatusOr<std::vector<HostTensor>> referenceOutputs(const MoveCase& c) {
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : c.inputs) {
    ptrs.push_back(t.dtype == DataType::kUndefined ? nullptr : &t);
  }
  return runReferenceKernel(c.op, c.opset, ptrs, c.attrs, c.outputs);
}

/// The case's node as the executor would pass it, with device views at no memory (for host-only
/// checks: canImplement does not dereference them) and outputs of `want`'s types and dims.
inline CudaKernelCall hostOnlyCall(const MoveCase& c, const std::vector<HostTensor>& want) {
  CudaKernelCall call;
  call.op = c.op;
  call.opset = c.opset;
  call.attrs = &c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const HostTensor& t = c.inputs[i];
    bool omitted = t.dtype == DataType::kUndefined;
    call.inputs.push_back(omitted ? ConstTensorView()
                                  : ConstTensorView(t.dtype, t.dims, contiguousStrides(t.dims),
                                                    nullptr, MemoryKind::kDevice));
    bool runtime = false;
    for (size_t r : c.runtime_inputs) runtime = runtime || r == i;
    call.constant_inputs.push_back(omitted || runtime ? nullptr : &t);
  }
  for (const HostTensor& w : want) {
    call.outputs.emplace_back(w.dtype, w.dims, contiguousStrides(w.dims), nullptr,
                              MemoryKind::kDevice);
  }
  return call;
}

/// Host-only: the reference runs the case and the CUDA kernel accepts it (so that a case list or a
/// canImplement that is wrong shows without a device).
inline void expectReferenceAndCanImplement(const MoveCase& c) {
  auto want = referenceOutputs(c);
  ASSERT_TRUE(want.isOk()) << c.name << ": reference: " << want.status().toString();
  Support s = cudaCanImplement(hostOnlyCall(c, *want));
  EXPECT_TRUE(s) << c.name << ": " << s.reason;
}

/// Runs the case on the reference and the device and compares every output exactly.
inline void expectMatchesReference(const MoveCase& c) {
  auto want = referenceOutputs(c);
  ASSERT_TRUE(want.isOk()) << "reference: " << want.status().toString();
  ASSERT_EQ(want->size(), c.outputs);
  auto got = runCaseOnDevice(c, *want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  for (size_t i = 0; i < want->size(); ++i) {
    SCOPED_TRACE(fmt::format("output {}", i));
    expectClose(want->at(i), got->at(i), c.tolerance);
    // Moved elements are the reference's bit for bit (-0.0, NaN payloads, bool bytes).
    if (c.tolerance.rtol == 0 && c.tolerance.atol == 0) {
      EXPECT_TRUE(want->at(i).bytes == got->at(i).bytes) << "the output bytes differ";
    }
  }
}

}  // namespace onnxopt::kernels::test
