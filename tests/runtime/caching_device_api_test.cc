// CachingDeviceApi (src/runtime/cuda/caching_device_api.h) over the fake device: size classes,
// device blocks reused at once, pinned blocks only after a synchronize, the cache trimmed to its
// limit, everything cached freed (and the allocation tried again) where the device runs out,
// session memory uncached, and nothing left when it goes. The executor over it: generator_cuda_
// host_test.cc (decode steps stop asking the device for memory once the plan cache is full).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "../../src/runtime/cuda/caching_device_api.h"
#include "fake_device.h"

namespace onnxopt::runtime {
namespace {

using cuda_detail::CachingDeviceApi;

/// The pointer an allocation gave (nullptr, and a failure, where it gave an error).
void* got(StatusOr<void*> allocation) {
  EXPECT_TRUE(allocation.isOk()) << allocation.status().toString();
  return allocation.isOk() ? *allocation : nullptr;
}

TEST(CachingDeviceApi, SizeClassesRoundUpByAnEighthAtMost) {
  EXPECT_EQ(CachingDeviceApi::sizeClass(1), 256u);
  EXPECT_EQ(CachingDeviceApi::sizeClass(256), 256u);
  EXPECT_EQ(CachingDeviceApi::sizeClass(300), 320u);
  EXPECT_EQ(CachingDeviceApi::sizeClass(320), 320u);
  size_t last = 0;
  for (size_t bytes = 1; bytes < (size_t{1} << 22); bytes = bytes * 9 / 8 + 7) {
    size_t c = CachingDeviceApi::sizeClass(bytes);
    EXPECT_GE(c, bytes);
    EXPECT_LE(c, std::max<size_t>(256, bytes + bytes / 8)) << bytes;
    EXPECT_GE(c, last) << bytes;                            // monotone
    EXPECT_EQ(CachingDeviceApi::sizeClass(c), c) << bytes;  // a class is its own class
    last = c;
  }
}

TEST(CachingDeviceApi, DeviceBlocksAreReusedAtOnce) {
  auto log = std::make_shared<test::FakeDeviceLog>();
  CachingDeviceApi api(std::make_unique<test::FakeDevice>(log));
  void* a = got(api.allocate(1000));
  // Taken an eighth larger than 1000's class (1024): 1152.
  EXPECT_EQ(log->allocated_bytes.back(), CachingDeviceApi::newBlockBytes(1024));
  api.release(a);
  EXPECT_EQ(got(api.allocate(1010)), a);  // 1010's class, 1024, is served by it
  void* b = got(api.allocate(1000));      // a is taken: a new block
  EXPECT_NE(b, a);
  api.release(b);
  EXPECT_EQ(got(api.allocate(1100)), b);  // its own class
  api.release(a);
  EXPECT_NE(got(api.allocate(4000)), a);  // a block far smaller is not taken
  EXPECT_EQ(log->allocations, 3);
  EXPECT_EQ(got(api.allocate(0)), nullptr);
  EXPECT_EQ(api.cachedDeviceBytes(), CachingDeviceApi::newBlockBytes(1024));
}

TEST(CachingDeviceApi, PinnedBlocksWaitForASynchronize) {
  auto log = std::make_shared<test::FakeDeviceLog>();
  CachingDeviceApi api(std::make_unique<test::FakeDevice>(log));
  void* a = got(api.allocateHost(4096));
  api.releaseHost(a);  // an upload from it may still be queued
  void* b = got(api.allocateHost(4096));
  EXPECT_NE(b, a);
  EXPECT_GT(api.cachedHostBytes(), 0u);
  ASSERT_TRUE(api.synchronize("test").isOk());
  EXPECT_EQ(got(api.allocateHost(4096)), a);
  EXPECT_EQ(log->live, 2);
}

TEST(CachingDeviceApi, CachedBytesStayUnderTheLimitAndGoWithTheApi) {
  auto log = std::make_shared<test::FakeDeviceLog>();
  const size_t block = CachingDeviceApi::newBlockBytes(4096);  // what a request of 4096 takes
  {
    CachingDeviceApi api(std::make_unique<test::FakeDevice>(log), /*max_cached_bytes=*/2 * block);
    std::vector<void*> blocks;
    for (int i = 0; i < 4; ++i) blocks.push_back(got(api.allocate(4096)));
    EXPECT_EQ(log->live, 4);
    for (void* b : blocks) api.release(b);
    EXPECT_EQ(api.cachedDeviceBytes(), 2 * block);
    EXPECT_EQ(log->live, 2);
    void* held = got(api.allocate(4096));
    api.releaseHost(got(api.allocateHost(512)));  // waiting for a synchronize when the api goes
    EXPECT_EQ(log->live, 3);
    EXPECT_NE(held, nullptr);
  }
  EXPECT_EQ(log->live, 1);  // `held`, never given back
  EXPECT_TRUE(log->errors.empty()) << log->errors.front();
}

TEST(CachingDeviceApi, SessionMemoryIsTakenAtItsSizeAndNotCached) {
  auto log = std::make_shared<test::FakeDeviceLog>();
  CachingDeviceApi api(std::make_unique<test::FakeDevice>(log));
  void* weight = got(api.uncached().allocate(1000));
  EXPECT_EQ(log->allocated_bytes.back(), 1000u);
  api.uncached().release(weight);
  EXPECT_EQ(log->live, 0);
  EXPECT_EQ(api.cachedDeviceBytes(), 0u);
}

/// A fake device with room for `limit` bytes.
class SmallDevice final : public test::FakeDevice {
 public:
  SmallDevice(std::shared_ptr<test::FakeDeviceLog> log, size_t limit)
      : FakeDevice(std::move(log)), limit_(limit) {}
  StatusOr<void*> allocate(size_t bytes) override {
    if (used_ + bytes > limit_) return makeError(StatusCode::kResourceExhausted, "out of memory");
    ASSIGN_OR_RETURN(void* data, FakeDevice::allocate(bytes));
    used_ += bytes;
    sizes_[data] = bytes;
    return data;
  }
  void release(void* data) override {
    used_ -= sizes_[data];
    sizes_.erase(data);
    FakeDevice::release(data);
  }

 private:
  size_t limit_;
  size_t used_ = 0;
  std::map<void*, size_t> sizes_;
};

TEST(CachingDeviceApi, AFailedAllocationFreesTheCacheAndTriesAgain) {
  auto log = std::make_shared<test::FakeDeviceLog>();
  CachingDeviceApi api(std::make_unique<SmallDevice>(log, 12288));
  void* a = got(api.allocate(4096));
  void* b = got(api.allocate(4096));
  api.release(a);
  api.release(b);
  EXPECT_EQ(api.cachedDeviceBytes(), 2 * CachingDeviceApi::newBlockBytes(4096));
  // 12288 fits only once the cached blocks are freed, and without the headroom.
  auto big = api.allocate(12288);
  ASSERT_TRUE(big.isOk()) << big.status().toString();
  EXPECT_EQ(api.cachedDeviceBytes(), 0u);
  auto more = api.allocate(4096);
  ASSERT_FALSE(more.isOk());
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace onnxopt::runtime
