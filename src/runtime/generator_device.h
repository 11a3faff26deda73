// The Generator's device path (generator.h): the KV cache of a decode loop kept in a CUDA
// executor's memory. Each cache tensor has two buffers sized for the longest sequence of the
// generation, allocated once: step t reads its past from one (bound into the plan's kernels, no
// copy) and writes its present into the other, and the next step swaps them. The logits stay on
// the device, where the greedy token is chosen, so a step copies only the ids to the host.
//
//   step t:  past.{i} = buffer[t % 2][i] [batch, heads, past, head_dim]
//            present.{i} -> buffer[(t + 1) % 2][i] [batch, heads, past + fed, head_dim]
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/decoder_signature.h"

namespace onnxopt::runtime {

class DeviceKvCache {
 public:
  DeviceKvCache(CudaExecutor& executor, DecoderSignature signature);

  /// Room for `batch` rows of up to `max_len` positions: the buffers of the last generation
  /// where they are large enough, else new ones. Starts again from an empty past.
  Status reserve(int64_t batch, int64_t max_len);

  /// A step's logits: on the device (valid until the executor's next run), or on the host where
  /// the run left them there.
  struct Logits {
    std::optional<DeviceInput> device;
    kernels::HostTensor host;
  };

  /// One run: `feeds` (ids, mask, positions) from the host, and the past of `past_len` positions
  /// from the cache; the present (checked to be [batch, heads, past_len + fed, head_dim]) goes
  /// into the other buffers, which become the next step's past.
  StatusOr<Logits> run(const Feeds& feeds, int64_t past_len, int64_t fed);

  CudaExecutor& executor() { return executor_; }

 private:
  size_t bytesFor(const KvCacheEntry& e, int64_t positions) const;

  CudaExecutor& executor_;
  DecoderSignature signature_;
  int64_t batch_ = 0;
  int64_t max_len_ = 0;
  /// [side][cache entry]: side `past_side_` holds the past of the next step.
  std::vector<std::shared_ptr<void>> buffers_[2];
  int past_side_ = 0;
};

}  // namespace onnxopt::runtime
