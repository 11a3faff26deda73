// The Generator's KV cache in device memory (generator_device.h): buffers allocated once per
// generation, past and present exchanged by pointer.
#include "generator_device.h"

#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace onnxopt::runtime {

DeviceKvCache::DeviceKvCache(CudaExecutor& executor, DecoderSignature signature)
    : executor_(executor), signature_(std::move(signature)) {}

size_t DeviceKvCache::bytesFor(const KvCacheEntry& e, int64_t positions) const {
  auto bytes = dataTypeStorageBytes(
      e.dtype, static_cast<uint64_t>(batch_ * e.heads * positions * e.head_dim));
  return bytes ? static_cast<size_t>(*bytes) : 0;
}

Status DeviceKvCache::reserve(int64_t batch, int64_t max_len) {
  past_side_ = 0;
  if (batch == batch_ && max_len <= max_len_ && !buffers_[0].empty()) return Status::ok();
  for (auto& side : buffers_) side.clear();  // released before the larger ones are taken
  batch_ = batch;
  max_len_ = max_len;
  for (auto& side : buffers_) {
    for (const KvCacheEntry& e : signature_.cache) {
      size_t bytes = bytesFor(e, max_len);
      if (bytes == 0) return invalidArgument("cache '{}' has no size in bytes", e.past);
      auto buffer = executor_.allocate(bytes);
      if (!buffer.isOk()) {
        batch_ = 0;
        return buffer.status().withContext(fmt::format("allocating the cache '{}'", e.past));
      }
      side.push_back(std::move(buffer).value());
    }
  }
  return Status::ok();
}

StatusOr<DeviceKvCache::Logits> DeviceKvCache::run(const Feeds& feeds, int64_t past_len,
                                                   int64_t fed) {
  const int64_t total = past_len + fed;
  if (total > max_len_) {
    return makeError(StatusCode::kInternal, "the device cache holds {} positions, not {}", max_len_,
                     total);
  }
  DeviceFeeds past;
  DeviceOutputs outputs;
  const auto& from = buffers_[past_side_];
  const auto& into = buffers_[1 - past_side_];
  for (size_t i = 0; i < signature_.cache.size(); ++i) {
    const KvCacheEntry& e = signature_.cache[i];
    past[e.past] = DeviceInput{e.dtype, {batch_, e.heads, past_len, e.head_dim}, from[i].get()};
    outputs[e.present] = DeviceOutput{into[i].get(), bytesFor(e, max_len_)};
  }
  outputs[signature_.logits] = DeviceOutput{};  // left where the run computed it
  ASSIGN_OR_RETURN(DeviceRunResult ran, executor_.runOnDevice(feeds, past, outputs));
  for (size_t i = 0; i < signature_.cache.size(); ++i) {
    const KvCacheEntry& e = signature_.cache[i];
    const DeviceInput& t = ran.device.at(e.present);  // runOnDevice keeps every output it was given
    const std::vector<int64_t> want{batch_, e.heads, total, e.head_dim};
    if (t.dims != want) {
      return invalidArgument("mismatched cache shapes: present '{}' is [{}] after {} ids, not [{}]",
                             e.present, fmt::join(t.dims, ","), total, fmt::join(want, ","));
    }
  }
  past_side_ = 1 - past_side_;
  Logits logits;
  if (auto on_device = ran.device.find(signature_.logits); on_device != ran.device.end()) {
    logits.device = on_device->second;
    return logits;
  }
  for (size_t i = 0; i < ran.host.names.size(); ++i) {
    if (ran.host.names[i] == signature_.logits) {
      logits.host = std::move(ran.host.outputs[i]);
      return logits;
    }
  }
  return invalidArgument("the run returned no '{}'", signature_.logits);
}

}  // namespace onnxopt::runtime
