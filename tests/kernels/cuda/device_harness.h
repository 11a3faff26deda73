// What the GPU kernel tests share: the device probed once per process, the fixture that skips
// with "skipped: no CUDA device" (fails under ONNXOPT_REQUIRE_CUDA=1), uploads, one node run on
// the device with its output poisoned first, and the comparison at a dtype-aware tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "onnxopt/kernels/cuda.h"
#include "onnxopt/support/half.h"

namespace onnxopt::kernels::test {

inline double valueAt(const HostTensor& t, int64_t i) {
  switch (t.dtype) {
    case DataType::kFloat:
      return t.get<float>(i);
    case DataType::kFloat16:
      return halfToFloat(t.get<uint16_t>(i));
    case DataType::kBfloat16:
      return bfloat16ToFloat(t.get<uint16_t>(i));
    case DataType::kInt8:
      return t.get<int8_t>(i);
    case DataType::kUint8:
      return t.get<uint8_t>(i);
    case DataType::kInt32:
      return t.get<int32_t>(i);
    case DataType::kInt64:
      return static_cast<double>(t.get<int64_t>(i));
    case DataType::kBool:
      return t.get<uint8_t>(i);  // raw byte: a poisoned (unwritten) bool is not 0 or 1
    default:
      return NAN;
  }
}

struct Tolerance {
  double rtol;
  double atol;
};

inline Tolerance toleranceFor(DataType t) {
  switch (t) {
    case DataType::kFloat:
      return {2e-5, 1e-6};
    case DataType::kFloat16:
      return {2e-3, 1e-4};  // one half ulp (2^-10 relative) of rounding
    case DataType::kBfloat16:
      return {1.6e-2, 1e-3};  // one bfloat16 ulp (2^-7 relative)
    default:
      return {0, 0};
  }
}

/// The device once per process: its info, or why there is none.
inline const StatusOr<CudaDeviceInfo>& device() {
  static const StatusOr<CudaDeviceInfo> info = probeCudaDevice(0);
  return info;
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device().isOk()) return;
    if (const char* req = std::getenv("ONNXOPT_REQUIRE_CUDA"); req != nullptr && *req == '1') {
      FAIL() << "ONNXOPT_REQUIRE_CUDA=1 but: " << device().status().toString();
    }
    GTEST_SKIP() << "skipped: no CUDA device (" << device().status().message() << ")";
  }
};

/// A host tensor on the device, and a view of it.
struct DeviceTensor {
  DeviceBuffer buffer;
  std::vector<int64_t> dims;
  DataType dtype = DataType::kUndefined;

  ConstTensorView view() const {
    return ConstTensorView(dtype, dims, contiguousStrides(dims), buffer.data(),
                           MemoryKind::kDevice);
  }
  TensorView mutableView() const {
    return TensorView(dtype, dims, contiguousStrides(dims), buffer.data(), MemoryKind::kDevice);
  }
};

inline StatusOr<DeviceTensor> upload(const HostTensor& t, CudaStream stream) {
  ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(t.bytes.size()));
  RETURN_IF_ERROR(copyToDevice(buffer.data(), t.bytes.data(), t.bytes.size(), stream));
  return DeviceTensor{std::move(buffer), t.dims, t.dtype};
}

/// Compares `actual` with the reference `expected` element by element.
inline void expectClose(const HostTensor& expected, const HostTensor& actual, Tolerance tol) {
  ASSERT_EQ(expected.dtype, actual.dtype);
  ASSERT_EQ(expected.dims, actual.dims);
  int reported = 0;
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    double e = valueAt(expected, i), a = valueAt(actual, i);
    if (std::isnan(e) && std::isnan(a)) continue;
    if (e == a) continue;  // equal infinities (their difference is NaN)
    if (std::fabs(e - a) <= tol.atol + tol.rtol * std::fabs(e)) continue;
    ADD_FAILURE() << "element " << i << ": cuda " << a << ", reference " << e;
    if (++reported == 5) return;
  }
}

/// Runs the node's CUDA kernel on `inputs` (uploaded, and given as constants too), into an output
/// of `dtype` and `dims` poisoned with `poison` bytes first (0xFF: NaN in every float type), and
/// returns the output; every step's error names the op. The device context follows `tf32`.
inline StatusOr<HostTensor> runOnDevice(const std::string& op, int64_t opset,
                                        const std::vector<HostTensor>& inputs,
                                        const KernelAttrs& attrs, DataType dtype,
                                        const std::vector<int64_t>& dims,
                                        const std::string& domain = "", uint8_t poison = 0xA5,
                                        Tf32 tf32 = Tf32::kNone) {
  ASSIGN_OR_RETURN(DeviceStream stream, DeviceStream::create());
  std::vector<DeviceTensor> device_inputs;
  for (const HostTensor& t : inputs) {
    ASSIGN_OR_RETURN(DeviceTensor d, upload(t, stream.get()));
    device_inputs.push_back(std::move(d));
  }
  HostTensor got = HostTensor::zeros(dtype, dims);
  ASSIGN_OR_RETURN(DeviceBuffer out_buffer, DeviceBuffer::allocate(got.bytes.size()));
  DeviceTensor out{std::move(out_buffer), dims, dtype};
  RETURN_IF_ERROR(fillDevice(out.buffer.data(), poison, got.bytes.size(), stream.get()));
  CudaKernelCall call;
  call.domain = domain;
  call.op = op;
  call.opset = opset;
  for (const DeviceTensor& d : device_inputs) call.inputs.push_back(d.view());
  // Every input is also a constant known on the host, as the executor passes initializers and
  // folded values (kernels read small operands such as Slice's starts there).
  for (const HostTensor& t : inputs) call.constant_inputs.push_back(&t);
  call.outputs.push_back(out.mutableView());
  call.attrs = &attrs;
  Support support = cudaCanImplement(call);
  if (!support) return Status(StatusCode::kUnimplemented, support.reason);
  // Prepared once on a device context, as the executor does: the workspace the kernel asks for
  // (the conv family's algorithm choice, kept in the context), then the run.
  ASSIGN_OR_RETURN(std::unique_ptr<CudaDeviceContext> ctx,
                   CudaDeviceContext::create(stream.get(), CudaContextOptions{tf32, {}}));
  ASSIGN_OR_RETURN(std::unique_ptr<PreparedCudaKernel> kernel, prepareCudaKernel(call, *ctx));
  if (!kernel->support()) return Status(StatusCode::kUnimplemented, kernel->support().reason);
  ASSIGN_OR_RETURN(DeviceBuffer workspace, DeviceBuffer::allocate(kernel->workspaceBytes()));
  kernel->setWorkspace(workspace.data(), workspace.size());
  RETURN_IF_ERROR(kernel->run(*ctx));
  RETURN_IF_ERROR(copyToHost(got.bytes.data(), out.buffer.data(), got.bytes.size(), stream.get()));
  RETURN_IF_ERROR(stream.synchronize(op));
  return got;
}

}  // namespace onnxopt::kernels::test
