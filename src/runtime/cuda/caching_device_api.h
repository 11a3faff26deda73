// CachingDeviceApi: the CUDA executor's DeviceApi with its memory kept for reuse. A plan's device
// state (arena, input buffers, workspace, pinned staging) lives as long as the plan stays in the
// cache; a new input shape makes a new one and evicts the oldest. Without reuse every new shape
// paid cudaMalloc and cudaMallocHost for its buffers and cudaFree and cudaFreeHost for the
// evicted plan's, and each free synchronizes the whole device: in a generation every decode step
// is a new shape (the past grows by one). Here a released block waits for the next request of its
// size class instead, and the driver sees a free only when the cache is over its limit, when an
// allocation fails (then everything cached is freed and the allocation tried once more), or when
// the executor goes.
//
//   size class: a request rounded up to a multiple of 1/8 of its power of two (at least 256
//               bytes), so that buffers growing a little per step land in one class; a block
//               taken from the device under 64 MiB is the class of an eighth more than asked
//               (the plan evicted 8 steps later gives back a block that the new plan's buffer,
//               8 positions longer, fits in)
//   reuse:      a cached block of the request's class or up to half as large again
//   device:     a block given back is reused at once (every use is ordered on the one stream, so
//               the new owner's work runs after the old owner's)
//   host:       a pinned block given back is reused only after the next synchronize (the host
//               writes it directly; an upload from it may still be queued: device_api.h)
//
// Every other call goes to the wrapped DeviceApi. Memory a session keeps (weights, the caller's
// buffers) is taken from that one directly (uncached()), at its exact size.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "device_api.h"

namespace onnxopt::runtime::cuda_detail {

class CachingDeviceApi final : public DeviceApi {
 public:
  /// Blocks cached (given back, not yet reused) beyond this many bytes, per kind, go back to the
  /// driver, largest first.
  static constexpr size_t kDefaultMaxCachedBytes = size_t{1} << 30;
  /// A new block under this size is taken an eighth larger than asked (its class).
  static constexpr size_t kHeadroomBelowBytes = size_t{64} << 20;

  explicit CachingDeviceApi(std::unique_ptr<DeviceApi> device,
                            size_t max_cached_bytes = kDefaultMaxCachedBytes);
  ~CachingDeviceApi() override;

  /// The size class of a request of `bytes` (see the file comment).
  static size_t sizeClass(size_t bytes);
  /// The bytes of a new block taken from the device for a request of size class `bytes`: the
  /// class of an eighth more under kHeadroomBelowBytes, the class itself above.
  static size_t newBlockBytes(size_t bytes) {
    return bytes < kHeadroomBelowBytes ? sizeClass(bytes + bytes / 8) : bytes;
  }
  /// The device itself, for memory kept as long as the session (weights): exact sizes, no cache.
  DeviceApi& uncached() { return *device_; }

  StatusOr<kernels::CudaDeviceInfo> probe() override { return device_->probe(); }
  StatusOr<void*> allocate(size_t bytes) override;
  void release(void* data) override;
  StatusOr<void*> allocateHost(size_t bytes) override;
  void releaseHost(void* data) override;
  Status copyToDevice(void* dst, const void* src, size_t bytes) override {
    return device_->copyToDevice(dst, src, bytes);
  }
  Status copyToHost(void* dst, const void* src, size_t bytes) override {
    return device_->copyToHost(dst, src, bytes);
  }
  Status fill(void* dst, int value, size_t bytes) override {
    return device_->fill(dst, value, bytes);
  }
  Status copyOnDevice(void* dst, const void* src, size_t bytes) override {
    return device_->copyOnDevice(dst, src, bytes);
  }
  void* nativeStream() override { return device_->nativeStream(); }
  Status synchronize(const std::string& what) override;
  kernels::Support canImplement(const kernels::CudaKernelCall& call) override {
    return device_->canImplement(call);
  }
  StatusOr<std::unique_ptr<kernels::PreparedCudaKernel>> prepare(
      const kernels::CudaKernelCall& call) override {
    return device_->prepare(call);
  }
  Status launch(const kernels::PreparedCudaKernel& kernel) override {
    return device_->launch(kernel);
  }
  StatusOr<size_t> recordMarker() override { return device_->recordMarker(); }
  StatusOr<double> elapsedMs(size_t from, size_t to) override {
    return device_->elapsedMs(from, to);
  }
  void clearMarkers() override { device_->clearMarkers(); }
  Status beginCapture() override { return device_->beginCapture(); }
  StatusOr<std::unique_ptr<CapturedGraph>> endCapture() override { return device_->endCapture(); }
  Status replay(const CapturedGraph& graph) override { return device_->replay(graph); }

  /// Bytes given back and kept, device and host (pinned, waiting or ready).
  size_t cachedDeviceBytes() const { return device_pool_.cached_bytes; }
  size_t cachedHostBytes() const;

 private:
  struct Block {
    void* data = nullptr;
    size_t bytes = 0;  ///< its size class
  };
  /// One kind of memory: blocks handed out (their size class by pointer) and blocks given back
  /// (pointers by size class).
  struct Pool {
    std::unordered_map<void*, size_t> live;
    std::multimap<size_t, void*> cached;
    size_t cached_bytes = 0;
  };

  /// A block for a request of size class `bytes`: a cached one of that class or up to half as
  /// large again, else a new one (after freeing every cached block, and then without the headroom,
  /// where the first try fails).
  StatusOr<void*> obtain(Pool& pool, size_t bytes, bool host);
  /// `block` cached in `pool`, then the pool trimmed to the limit.
  void keep(Pool& pool, Block block, bool host);
  /// Frees cached blocks, largest first, until at most `limit` bytes stay.
  void trim(Pool& pool, size_t limit, bool host);

  std::unique_ptr<DeviceApi> device_;
  size_t max_cached_bytes_;
  Pool device_pool_;
  Pool host_pool_;
  /// Pinned blocks given back since the last synchronize: not yet reusable.
  std::vector<Block> waiting_;
};

}  // namespace onnxopt::runtime::cuda_detail
