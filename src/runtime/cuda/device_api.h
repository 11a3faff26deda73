// DeviceApi: the device operations the CUDA executor uses (memory, copies, synchronization, the
// kernels' canImplement / workspace / launch), behind one interface, so that the executor's
// traversal of a plan (pointers, offsets, copies, in-place reuse) is tested on a machine without a
// GPU against a host-memory device (tests/runtime/fake_device.h). createCudaDeviceApi is the real
// one, through include/onnxopt/kernels/cuda.h (no CUDA headers here).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "onnxopt/kernels/cuda.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime::cuda_detail {

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  /// The device's properties (and selects it for the calling thread).
  virtual StatusOr<kernels::CudaDeviceInfo> probe() = 0;
  /// `bytes` of device memory (nullptr for 0 bytes); out of memory names the size.
  virtual StatusOr<void*> allocate(size_t bytes) = 0;
  virtual void release(void* data) = 0;
  /// Copies and fills, ordered on the device's one stream.
  virtual Status copyToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual Status copyToHost(void* dst, const void* src, size_t bytes) = 0;
  virtual Status fill(void* dst, int value, size_t bytes) = 0;
  /// Waits for the stream; a kernel's asynchronous fault shows here, named after `what`.
  virtual Status synchronize(const std::string& what) = 0;
  virtual kernels::Support canImplement(const kernels::CudaKernelCall& call) = 0;
  virtual StatusOr<size_t> workspaceBytes(const kernels::CudaKernelCall& call) = 0;
  virtual Status launch(const kernels::CudaKernelCall& call) = 0;
};

/// The CUDA device `device_id` with a stream of its own: an error where there is no device,
/// no driver, or no CUDA in this build.
StatusOr<std::unique_ptr<DeviceApi>> createCudaDeviceApi(int device_id);

/// An owned allocation of a DeviceApi (which must outlive it).
class DeviceMemory {
 public:
  static StatusOr<DeviceMemory> allocate(DeviceApi& api, size_t bytes) {
    ASSIGN_OR_RETURN(void* data, api.allocate(bytes));
    DeviceMemory m;
    m.api_ = &api;
    m.data_ = data;
    m.size_ = bytes;
    return m;
  }
  DeviceMemory() = default;
  DeviceMemory(DeviceMemory&& other) noexcept { *this = std::move(other); }
  DeviceMemory& operator=(DeviceMemory&& other) noexcept {
    if (this != &other) {
      reset();
      api_ = other.api_;
      data_ = other.data_;
      size_ = other.size_;
      other.data_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() { reset(); }

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void reset() {
    if (data_ != nullptr) api_->release(data_);
    data_ = nullptr;
    size_ = 0;
  }
  DeviceApi* api_ = nullptr;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace onnxopt::runtime::cuda_detail
