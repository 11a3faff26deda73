// CudaExecutor::runOnDevice and the greedy tokens on the device (src/runtime/cuda/cuda_device_io.cc)
// on the host-memory fake device: a cache-like input read where the caller keeps it, an output
// computed into the caller's memory (no copy of either), outputs left in the plan's memory, the
// kernels prepared again when a known signature comes with other buffers, the refusals, and the
// last position's ArgMax of which only the ids are copied down.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "fake_device.h"
#include "model_feeds.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "test_models.h"

namespace onnxopt::runtime {
namespace {

using test::floats;

// present = Concat(past, x) along the sequence, as a decoder's cache grows by one position.
constexpr const char* kGrowingCache = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,P] past, float[2,1] x) => (float[2,Q] present, float[2,1] y) {
  present = Concat<axis = 1>(past, x)
  y = Add(x, x)
}
)";

struct Session {
  std::shared_ptr<test::FakeDeviceLog> log = std::make_shared<test::FakeDeviceLog>();
  std::unique_ptr<CudaExecutor> executor;

  explicit Session(const ir::Model& model) {
    CudaOptions options;
    options.poison_byte = 0xA5;  // a value read from where the run did not write shows
    auto created = CudaExecutor::createOn(model, options, std::make_unique<test::FakeDevice>(log));
    EXPECT_TRUE(created.isOk()) << created.status().toString();
    if (created.isOk()) executor = std::move(created).value();
  }
  std::shared_ptr<void> buffer(size_t bytes) {
    auto b = executor->allocate(bytes);
    EXPECT_TRUE(b.isOk()) << b.status().toString();
    return b.isOk() ? *b : nullptr;
  }
  std::vector<float> read(const DeviceInput& value) {
    auto t = executor->download(value);
    EXPECT_TRUE(t.isOk()) << t.status().toString();
    std::vector<float> out(t.isOk() ? t->numElements() : 0);
    if (!out.empty()) std::memcpy(out.data(), t->bytes.data(), t->bytes.size());
    return out;
  }
};

TEST(CudaRunOnDevice, TheCacheIsReadAndWrittenWhereTheCallerKeepsIt) {
  auto model = test::parseInferred(kGrowingCache);
  ASSERT_TRUE(model);
  Session s(*model);
  ASSERT_TRUE(s.executor);
  const size_t capacity = 2 * 8 * sizeof(float);
  std::shared_ptr<void> sides[2] = {s.buffer(capacity), s.buffer(capacity)};
  std::vector<float> first{1, 2, 3, 4, 5, 6};  // [2, 3]
  std::memcpy(sides[0].get(), first.data(), first.size() * sizeof(float));
  std::vector<float> want{1, 2, 3, 10, 4, 5, 6, 20};
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    const int64_t past = 3 + step;
    const int64_t copies = s.log->device_copies;
    auto ran =
        s.executor->runOnDevice({{"x", floats({2, 1}, {10.f * (step + 1), 20.f * (step + 1)})}},
                                {{"past", {DataType::kFloat, {2, past}, sides[step % 2].get()}}},
                                {{"present", {sides[(step + 1) % 2].get(), capacity}}, {"y", {}}});
    ASSERT_TRUE(ran.isOk()) << ran.status().toString();
    EXPECT_TRUE(ran->host.names.empty());
    const DeviceInput& present = ran->device.at("present");
    EXPECT_EQ(present.data, sides[(step + 1) % 2].get());
    EXPECT_EQ(present.dims, (std::vector<int64_t>{2, past + 1}));
    EXPECT_EQ(s.log->device_copies, copies);  // past bound, present computed in place
    EXPECT_EQ(s.read(present), want);
    EXPECT_EQ(s.read(ran->device.at("y")),
              (std::vector<float>{20.f * (step + 1), 40.f * (step + 1)}));
    // The next step's expected cache: this one's with the next x appended to each row.
    std::vector<float> next;
    for (int r = 0; r < 2; ++r) {
      next.insert(next.end(), want.begin() + r * (past + 1), want.begin() + (r + 1) * (past + 1));
      next.push_back((r + 1) * 10.f * (step + 2));
    }
    want = next;
  }
  EXPECT_EQ(s.executor->planMisses(), 3);  // a plan per past length
  sides[0].reset();
  sides[1].reset();
  s.executor.reset();
  EXPECT_EQ(s.log->live, 0);
  EXPECT_TRUE(s.log->errors.empty()) << s.log->errors.front();
}

TEST(CudaRunOnDevice, OtherBuffersAtAKnownSignaturePrepareTheKernelsAgain) {
  auto model = test::parseInferred(kGrowingCache);
  ASSERT_TRUE(model);
  Session s(*model);
  ASSERT_TRUE(s.executor);
  const size_t capacity = 2 * 4 * sizeof(float);
  std::shared_ptr<void> past = s.buffer(capacity);
  std::shared_ptr<void> outs[2] = {s.buffer(capacity), s.buffer(capacity)};
  std::vector<float> values{1, 2, 3, 4, 5, 6};
  std::memcpy(past.get(), values.data(), values.size() * sizeof(float));
  const int64_t before = s.log->prepares;
  for (int run = 0; run < 3; ++run) {
    auto ran = s.executor->runOnDevice({{"x", floats({2, 1}, {7, 8})}},
                                       {{"past", {DataType::kFloat, {2, 3}, past.get()}}},
                                       {{"present", {outs[run % 2].get(), capacity}}});
    ASSERT_TRUE(ran.isOk()) << ran.status().toString();
    EXPECT_EQ(ran->host.names, (std::vector<std::string>{"y"}));  // not asked for: on the host
    EXPECT_EQ(s.read(ran->device.at("present")), (std::vector<float>{1, 2, 3, 7, 4, 5, 6, 8}));
  }
  EXPECT_EQ(s.executor->planMisses(), 1);
  EXPECT_EQ(s.log->prepares - before, 3 * 2);  // each run other buffers: both nodes again
  // The same buffers again: nothing prepared.
  auto again = s.executor->runOnDevice({{"x", floats({2, 1}, {7, 8})}},
                                       {{"past", {DataType::kFloat, {2, 3}, past.get()}}},
                                       {{"present", {outs[0].get(), capacity}}});
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(s.log->prepares - before, 3 * 2);
  EXPECT_TRUE(s.log->errors.empty()) << s.log->errors.front();
}

TEST(CudaRunOnDevice, BadOutputsAreRefused) {
  auto model = test::parseInferred(kGrowingCache);
  ASSERT_TRUE(model);
  Session s(*model);
  ASSERT_TRUE(s.executor);
  std::shared_ptr<void> small = s.buffer(4 * sizeof(float));
  Feeds feeds{{"x", floats({2, 1}, {7, 8})}, {"past", floats({2, 3}, {1, 2, 3, 4, 5, 6})}};
  auto unknown = s.executor->runOnDevice(feeds, {}, {{"z", {}}});
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("'z' is not an output of the model"), std::string::npos)
      << unknown.status().toString();
  auto too_small = s.executor->runOnDevice(feeds, {}, {{"present", {small.get(), 16}}});
  ASSERT_FALSE(too_small.isOk());
  EXPECT_NE(too_small.status().message().find(
                "output 'present' is float[2,4] (32 bytes): the device memory given has 16"),
            std::string::npos)
      << too_small.status().toString();
  EXPECT_TRUE(s.log->errors.empty()) << s.log->errors.front();
}

TEST(CudaRunOnDevice, LastPositionArgMaxCopiesOnlyTheIds) {
  auto model = test::parseInferred(kGrowingCache);
  ASSERT_TRUE(model);
  Session s(*model);
  ASSERT_TRUE(s.executor);
  // [2 rows, 3 positions, 4 logits]: the last position's largest are 2 (first of a tie) and 0.
  std::vector<float> logits{9, 0, 0, 0, 0, 9, 0, 0, 1, 2,  5, 5,  //
                            0, 0, 0, 9, 0, 9, 0, 0, 7, -1, 3, 6};
  std::shared_ptr<void> block = s.buffer(logits.size() * sizeof(float));
  std::memcpy(block.get(), logits.data(), logits.size() * sizeof(float));
  const test::FakeDeviceLog before = *s.log;
  auto ids = s.executor->lastPositionArgMax({DataType::kFloat, {2, 3, 4}, block.get()});
  ASSERT_TRUE(ids.isOk()) << ids.status().toString();
  EXPECT_EQ(*ids, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(s.log->launches - before.launches, 1);
  EXPECT_EQ(s.log->to_host_bytes - before.to_host_bytes, 16);  // two ids, nothing else
  // One position per row (a decode step; the block's first 8 logits): one copy of both ids.
  const test::FakeDeviceLog one = *s.log;
  auto last = s.executor->lastPositionArgMax({DataType::kFloat, {2, 1, 4}, block.get()});
  ASSERT_TRUE(last.isOk()) << last.status().toString();
  EXPECT_EQ(*last, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s.log->to_host_copies - one.to_host_copies, 1);
  EXPECT_EQ(s.log->to_host_bytes - one.to_host_bytes, 16);
  auto bad = s.executor->lastPositionArgMax({DataType::kFloat, {8}, block.get()});
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.log->errors.empty()) << s.log->errors.front();
}

}  // namespace
}  // namespace onnxopt::runtime
