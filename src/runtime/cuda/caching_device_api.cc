// CachingDeviceApi (caching_device_api.h): size classes, reuse, and the frees the driver sees.
#include "caching_device_api.h"

#include <bit>
#include <utility>

namespace onnxopt::runtime::cuda_detail {

CachingDeviceApi::CachingDeviceApi(std::unique_ptr<DeviceApi> device, size_t max_cached_bytes)
    : device_(std::move(device)), max_cached_bytes_(max_cached_bytes) {}

CachingDeviceApi::~CachingDeviceApi() {
  for (const Block& b : waiting_) keep(host_pool_, b, true);
  waiting_.clear();
  trim(device_pool_, 0, false);
  trim(host_pool_, 0, true);
}

size_t CachingDeviceApi::sizeClass(size_t bytes) {
  constexpr size_t kMin = 256;
  if (bytes <= kMin) return kMin;
  const size_t step = std::bit_floor(bytes - 1) / 8;  // 1/8 of the power of two below
  if (step == 0 || bytes > SIZE_MAX - step) return bytes;
  return (bytes + step - 1) / step * step;
}

StatusOr<void*> CachingDeviceApi::obtain(Pool& pool, size_t bytes, bool host) {
  if (auto it = pool.cached.lower_bound(bytes);
      it != pool.cached.end() && it->first - bytes <= bytes / 2) {
    void* data = it->second;
    pool.live.emplace(data, it->first);
    pool.cached_bytes -= it->first;
    pool.cached.erase(it);
    return data;
  }
  // A new block an eighth larger than asked, where that is little: the buffer of a plan some
  // positions longer fits in it when this plan is evicted.
  size_t size = newBlockBytes(bytes);
  auto fresh = host ? device_->allocateHost(size) : device_->allocate(size);
  if (!fresh.isOk() && !pool.cached.empty()) {
    trim(pool, 0, host);  // what is cached may be what the new block needs
    fresh = host ? device_->allocateHost(size) : device_->allocate(size);
  }
  if (!fresh.isOk() && size != bytes) {
    size = bytes;
    fresh = host ? device_->allocateHost(size) : device_->allocate(size);
  }
  if (!fresh.isOk()) return fresh.status();
  pool.live.emplace(*fresh, size);
  return *fresh;
}

StatusOr<void*> CachingDeviceApi::allocate(size_t bytes) {
  if (bytes == 0) return device_->allocate(0);
  return obtain(device_pool_, sizeClass(bytes), false);
}

StatusOr<void*> CachingDeviceApi::allocateHost(size_t bytes) {
  if (bytes == 0) return device_->allocateHost(0);
  return obtain(host_pool_, sizeClass(bytes), true);
}

void CachingDeviceApi::release(void* data) {
  if (data == nullptr) return;
  auto it = device_pool_.live.find(data);
  if (it == device_pool_.live.end()) return device_->release(data);
  Block block{data, it->second};
  device_pool_.live.erase(it);
  keep(device_pool_, block, false);
}

void CachingDeviceApi::releaseHost(void* data) {
  if (data == nullptr) return;
  auto it = host_pool_.live.find(data);
  if (it == host_pool_.live.end()) return device_->releaseHost(data);
  waiting_.push_back({data, it->second});
  host_pool_.live.erase(it);
}

Status CachingDeviceApi::synchronize(const std::string& what) {
  Status s = device_->synchronize(what);
  if (!s.isOk()) return s;
  std::vector<Block> ready = std::move(waiting_);
  waiting_.clear();
  for (const Block& b : ready) keep(host_pool_, b, true);
  return s;
}

size_t CachingDeviceApi::cachedHostBytes() const {
  size_t bytes = host_pool_.cached_bytes;
  for (const Block& b : waiting_) bytes += b.bytes;
  return bytes;
}

void CachingDeviceApi::keep(Pool& pool, Block block, bool host) {
  pool.cached.emplace(block.bytes, block.data);
  pool.cached_bytes += block.bytes;
  trim(pool, max_cached_bytes_, host);
}

void CachingDeviceApi::trim(Pool& pool, size_t limit, bool host) {
  while (pool.cached_bytes > limit && !pool.cached.empty()) {
    auto largest = std::prev(pool.cached.end());
    pool.cached_bytes -= largest->first;
    if (host) {
      device_->releaseHost(largest->second);
    } else {
      device_->release(largest->second);
    }
    pool.cached.erase(largest);
  }
}

}  // namespace onnxopt::runtime::cuda_detail
