// DeviceApi: the device operations the CUDA executor uses (memory, copies, synchronization, the
// kernels' check, preparation and launch), behind one interface, so that the executor's
// traversal of a plan (pointers, offsets, copies, in-place reuse) is tested on a machine without a
// GPU against a host-memory device (tests/runtime/fake_device.h). createCudaDeviceApi is the real
// one: the CUDA provider's (provider.h), loaded on first use, through include/onnxopt/kernels/cuda.h
// (no CUDA headers here).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "onnxopt/kernels/cuda.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime::cuda_detail {

/// A graph captured by DeviceApi::endCapture, replayed by DeviceApi::replay (each device its own).
class CapturedGraph {
 public:
  virtual ~CapturedGraph() = default;
};

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  /// The device's properties (and selects it for the calling thread).
  virtual StatusOr<kernels::CudaDeviceInfo> probe() = 0;
  /// `bytes` of device memory (nullptr for 0 bytes); out of memory names the size.
  virtual StatusOr<void*> allocate(size_t bytes) = 0;
  virtual void release(void* data) = 0;
  /// Page-locked host memory for staging copies (nullptr for 0 bytes).
  virtual StatusOr<void*> allocateHost(size_t bytes) = 0;
  virtual void releaseHost(void* data) = 0;
  /// Copies and fills, ordered on the device's one stream and asynchronous with respect to the
  /// host: the host side of a copy must stay alive and untouched until the next synchronize.
  virtual Status copyToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual Status copyToHost(void* dst, const void* src, size_t bytes) = 0;
  virtual Status fill(void* dst, int value, size_t bytes) = 0;
  /// Device to device: `src` is memory of this device that the caller owns (a DLPack input).
  virtual Status copyOnDevice(void* dst, const void* src, size_t bytes) = 0;
  /// The native stream every operation is ordered on (a cudaStream_t; nullptr for fakes).
  virtual void* nativeStream() = 0;
  /// Waits for the stream; a kernel's asynchronous fault shows here, named after `what`.
  virtual Status synchronize(const std::string& what) = 0;
  /// The kernel's host-only check of a node (planning: views without pointers).
  virtual kernels::Support canImplement(const kernels::CudaKernelCall& call) = 0;
  /// The node's kernel prepared on this device's context (kernels::prepareCudaKernel: parsed once,
  /// its refusal, workspace and variant asked once), for the executor to keep with its plan.
  virtual StatusOr<std::unique_ptr<kernels::PreparedCudaKernel>> prepare(
      const kernels::CudaKernelCall& call) = 0;
  /// Enqueues a kernel this device prepared (no parsing: the prepared arguments run).
  virtual Status launch(const kernels::PreparedCudaKernel& kernel) = 0;
  /// CUDA graphs: the launches between beginCapture and endCapture are recorded, not run;
  /// replay runs them again (with the pointers they were captured with). A call that cannot be
  /// captured fails, and so does endCapture then (the device is out of capture mode either way);
  /// a device that cannot capture at all fails endCapture with its reason.
  /// Timing (profiling): a marker recorded on the stream where its work has reached (an event);
  /// after a synchronize, elapsedMs of two markers is the time between them. clearMarkers forgets
  /// every marker.
  virtual StatusOr<size_t> recordMarker() = 0;
  virtual StatusOr<double> elapsedMs(size_t from, size_t to) = 0;
  virtual void clearMarkers() = 0;
  virtual Status beginCapture() = 0;
  virtual StatusOr<std::unique_ptr<CapturedGraph>> endCapture() = 0;
  virtual Status replay(const CapturedGraph& graph) = 0;
};

/// The CUDA device `device_id` with a stream of its own, from the CUDA provider: an error where
/// the provider cannot be loaded, there is no device, no driver, or no CUDA in this build. Its
/// kernels follow `tf32` for float32 products.
StatusOr<std::unique_ptr<DeviceApi>> createCudaDeviceApi(
    int device_id, const kernels::CudaContextOptions& options);

/// An owned allocation of a DeviceApi (which must outlive it): device memory, or with
/// allocateHost page-locked host memory.
class DeviceMemory {
 public:
  static StatusOr<DeviceMemory> allocate(DeviceApi& api, size_t bytes) {
    ASSIGN_OR_RETURN(void* data, api.allocate(bytes));
    return DeviceMemory(api, data, bytes, false);
  }
  static StatusOr<DeviceMemory> allocateHost(DeviceApi& api, size_t bytes) {
    ASSIGN_OR_RETURN(void* data, api.allocateHost(bytes));
    return DeviceMemory(api, data, bytes, true);
  }
  DeviceMemory() = default;
  DeviceMemory(DeviceMemory&& other) noexcept { *this = std::move(other); }
  DeviceMemory& operator=(DeviceMemory&& other) noexcept {
    if (this != &other) {
      reset();
      api_ = other.api_;
      data_ = other.data_;
      size_ = other.size_;
      host_ = other.host_;
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
  DeviceMemory(DeviceApi& api, void* data, size_t size, bool host)
      : api_(&api), data_(data), size_(size), host_(host) {}
  void reset() {
    if (data_ != nullptr) {
      if (host_) {
        api_->releaseHost(data_);
      } else {
        api_->release(data_);
      }
    }
    data_ = nullptr;
    size_ = 0;
  }
  DeviceApi* api_ = nullptr;
  void* data_ = nullptr;
  size_t size_ = 0;
  bool host_ = false;
};

}  // namespace onnxopt::runtime::cuda_detail
