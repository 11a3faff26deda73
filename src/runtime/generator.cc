// The generation loop. Step 0 (prefill) feeds the prompt [batch, L] with an empty cache
// [batch, heads, 0, head_dim]; step t feeds the token each row took [batch, 1], the mask grown by
// one, and the present tensors of step t-1 as the past. Positions, where the model takes them,
// come from the mask as Hugging Face computes them (cumsum(mask) - 1, padding at 1). Over the
// CUDA executor the past and present stay on the device (generator_device.h) and the host feeds
// the ids, the mask and the positions alone.
#include "onnxopt/runtime/generator.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generator_device.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/support/half.h"

namespace onnxopt::runtime {
namespace {

/// A [rows, cols] integer tensor of `dtype` (int64 or int32) from `at(r, c)`.
template <typename At>
kernels::HostTensor indexTensor(DataType dtype, int64_t rows, int64_t cols, At at) {
  kernels::HostTensor t = kernels::HostTensor::zeros(dtype, {rows, cols});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      if (dtype == DataType::kInt32) {
        t.set<int32_t>(r * cols + c, static_cast<int32_t>(at(r, c)));
      } else {
        t.set<int64_t>(r * cols + c, at(r, c));
      }
    }
  }
  return t;
}

/// Row `row` of the last position of logits [batch, seq, vocab], as floats.
StatusOr<std::vector<float>> lastLogits(const kernels::HostTensor& logits, const std::string& name,
                                        int64_t row) {
  const int64_t vocab = logits.dims[2];
  const int64_t base = (row * logits.dims[1] + logits.dims[1] - 1) * vocab;
  std::vector<float> out(vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    switch (logits.dtype) {
      case DataType::kFloat:
        out[i] = logits.get<float>(base + i);
        break;
      case DataType::kDouble:
        out[i] = static_cast<float>(logits.get<double>(base + i));
        break;
      case DataType::kFloat16:
      case DataType::kBfloat16:
        out[i] = fromLowPrecision(logits.get<uint16_t>(base + i), logits.dtype);
        break;
      default:
        return invalidArgument("output '{}' is {}, not a float type", name,
                               dataTypeName(logits.dtype));
    }
  }
  return out;
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

double GenerationStats::decodeTokensPerSecond() const {
  return decode_ms > 0.0 ? static_cast<double>(batch * decode_steps) / (decode_ms / 1000.0) : 0.0;
}

Generator::Generator(std::unique_ptr<Executor> executor, DecoderSignature signature,
                     const GenerationOptions& options, std::string model_path)
    : executor_(std::move(executor)),
      signature_(std::move(signature)),
      options_(options),
      model_path_(std::move(model_path)),
      sampler_(options.sampling) {
  if (auto* cuda = dynamic_cast<CudaExecutor*>(executor_.get())) {
    device_ = std::make_unique<DeviceKvCache>(*cuda, signature_);
  }
}

Generator::~Generator() = default;

StatusOr<std::unique_ptr<Generator>> Generator::create(const ir::Model& model,
                                                       std::unique_ptr<Executor> executor,
                                                       const GenerationOptions& options,
                                                       const std::string& model_path) {
  auto context = [&](const Status& s) {
    return model_path.empty() ? s : s.withContext(model_path);
  };
  if (options.max_new_tokens < 0) return context(invalidArgument("max_new_tokens is negative"));
  if (options.max_length < 0) return context(invalidArgument("max_length is negative"));
  if (Status s = checkSamplingOptions(options.sampling); !s.isOk()) return context(s);
  auto signature = decoderSignature(*model.graph);
  if (!signature.isOk()) return context(signature.status());
  return std::unique_ptr<Generator>(
      new Generator(std::move(executor), std::move(signature).value(), options, model_path));
}

Status Generator::error(const Status& status) const {
  return model_path_.empty() ? status : status.withContext(model_path_);
}

Status Generator::checkPrompt(const Prompt& p) const {
  if (p.input_ids.empty()) return invalidArgument("input_ids has no rows");
  const size_t len = p.input_ids[0].size();
  const bool masked = !p.attention_mask.empty();
  for (size_t r = 0; r < p.input_ids.size(); ++r) {
    if (p.input_ids[r].empty()) return invalidArgument("row {} of input_ids is empty", r);
    if (p.input_ids[r].size() != len && !masked) {
      return invalidArgument(
          "rows of input_ids have different lengths ({} and {}) and no attention_mask says which "
          "ids are padding",
          len, p.input_ids[r].size());
    }
    for (size_t c = 0; c < p.input_ids[r].size(); ++c) {
      int64_t id = p.input_ids[r][c];
      if (id < 0 && signature_.vocab == 0) {
        return invalidArgument("input id {} (row {}, position {}) is negative", id, r, c);
      }
      if (id < 0 || (signature_.vocab > 0 && id >= signature_.vocab)) {
        return invalidArgument("input id {} (row {}, position {}) is out of the vocabulary (0..{})",
                               id, r, c, signature_.vocab - 1);
      }
    }
  }
  if (masked) {
    if (p.attention_mask.size() != p.input_ids.size()) {
      return invalidArgument("{} rows of attention_mask for {} of input_ids",
                             p.attention_mask.size(), p.input_ids.size());
    }
    for (size_t r = 0; r < p.input_ids.size(); ++r) {
      const auto& m = p.attention_mask[r];
      if (m.size() != p.input_ids[r].size() || p.input_ids[r].size() != len) {
        return invalidArgument("row {} of input_ids and attention_mask: {} and {} entries, not {}",
                               r, p.input_ids[r].size(), m.size(), len);
      }
      bool any = false;
      for (int64_t v : m) {
        if (v != 0 && v != 1) return invalidArgument("attention_mask holds {}, not 0 or 1", v);
        any |= v == 1;
      }
      if (!any) return invalidArgument("row {} of attention_mask has no token (all 0)", r);
      if (signature_.attention_mask.empty() && std::find(m.begin(), m.end(), 0) != m.end()) {
        return invalidArgument("the model takes no attention_mask, so no row may be padded");
      }
    }
  }
  if (options_.max_length > 0 && static_cast<int64_t>(len) >= options_.max_length) {
    return invalidArgument("the prompt ({} ids) leaves no room under max_length {}", len,
                           options_.max_length);
  }
  return Status::ok();
}

Status Generator::start(const Prompt& prompt) {
  if (Status s = checkPrompt(prompt); !s.isOk()) return error(s);
  sequences_ = prompt.input_ids;
  mask_ = prompt.attention_mask;
  if (mask_.empty()) {
    for (const auto& row : sequences_) mask_.emplace_back(row.size(), 1);
  }
  cache_.clear();
  if (device_ != nullptr) {
    // The longest the sequences grow: the last run's present holds all but the last new id.
    int64_t longest = static_cast<int64_t>(sequences_[0].size()) + options_.max_new_tokens;
    if (options_.max_length > 0) longest = std::min(longest, options_.max_length);
    if (Status s = device_->reserve(static_cast<int64_t>(sequences_.size()), longest); !s.isOk()) {
      started_ = false;
      return error(s);
    }
  }
  finished_.assign(sequences_.size(), false);
  sampler_ = Sampler(options_.sampling);
  steps_ = 0;
  started_ = true;
  stats_ = GenerationStats{};
  stats_.batch = static_cast<int64_t>(sequences_.size());
  stats_.prompt_tokens = static_cast<int64_t>(sequences_[0].size());
  return Status::ok();
}

bool Generator::done() const {
  if (!started_) return true;
  if (steps_ >= options_.max_new_tokens) return true;
  const int64_t len = static_cast<int64_t>(sequences_[0].size());
  if (options_.max_length > 0 && len >= options_.max_length) return true;
  return steps_ > 0 && std::find(finished_.begin(), finished_.end(), false) == finished_.end();
}

Feeds Generator::stepFeeds() {
  const int64_t batch = static_cast<int64_t>(sequences_.size());
  const int64_t total = static_cast<int64_t>(sequences_[0].size());
  const int64_t fed = steps_ == 0 ? total : 1;  // the prompt, then the last token
  const int64_t first = total - fed;
  Feeds feeds;
  feeds[signature_.input_ids] =
      indexTensor(signature_.ids_dtype, batch, fed,
                  [&](int64_t r, int64_t c) { return sequences_[r][first + c]; });
  if (!signature_.attention_mask.empty()) {
    feeds[signature_.attention_mask] = indexTensor(
        signature_.mask_dtype, batch, total, [&](int64_t r, int64_t c) { return mask_[r][c]; });
  }
  if (!signature_.position_ids.empty()) {
    std::vector<std::vector<int64_t>> positions(batch);
    for (int64_t r = 0; r < batch; ++r) {
      int64_t seen = 0;
      for (int64_t c = 0; c < total; ++c) {
        seen += mask_[r][c];
        positions[r].push_back(mask_[r][c] == 0 ? 1 : seen - 1);
      }
    }
    feeds[signature_.position_ids] =
        indexTensor(signature_.position_dtype, batch, fed,
                    [&](int64_t r, int64_t c) { return positions[r][first + c]; });
  }
  for (size_t i = 0; i < signature_.cache.size() && device_ == nullptr; ++i) {
    const KvCacheEntry& e = signature_.cache[i];
    feeds[e.past] = steps_ == 0
                        ? kernels::HostTensor::zeros(e.dtype, {batch, e.heads, 0, e.head_dim})
                        : std::move(cache_[i]);
  }
  return feeds;
}

StatusOr<std::vector<int64_t>> Generator::takeResult(ExecutionResult result, int64_t fed) {
  const int64_t batch = static_cast<int64_t>(sequences_.size());
  const int64_t total = static_cast<int64_t>(sequences_[0].size());
  std::map<std::string, kernels::HostTensor*> outputs;
  for (size_t i = 0; i < result.names.size() && i < result.outputs.size(); ++i) {
    outputs[result.names[i]] = &result.outputs[i];
  }
  for (const KvCacheEntry& e : signature_.cache) {
    if (outputs.count(e.present) == 0)
      return invalidArgument("the run returned no '{}'", e.present);
  }
  if (outputs.count(signature_.logits) == 0) {
    return invalidArgument("the run returned no '{}'", signature_.logits);
  }
  cache_.assign(signature_.cache.size(), {});
  for (size_t i = 0; i < signature_.cache.size(); ++i) {
    const KvCacheEntry& e = signature_.cache[i];
    kernels::HostTensor& t = *outputs[e.present];
    const std::vector<int64_t> want{batch, e.heads, total, e.head_dim};
    if (t.dims != want) {
      return invalidArgument("mismatched cache shapes: present '{}' is [{}] after {} ids, not [{}]",
                             e.present, fmt::join(t.dims, ","), total, fmt::join(want, ","));
    }
    cache_[i] = std::move(t);
  }
  const kernels::HostTensor& logits = *outputs[signature_.logits];
  RETURN_IF_ERROR(checkLogits(logits.dims, fed));
  return pickOnHost(logits);
}

Status Generator::checkLogits(const std::vector<int64_t>& dims, int64_t fed) const {
  const int64_t batch = static_cast<int64_t>(sequences_.size());
  if (dims.size() != 3 || dims[0] != batch || dims[1] < 1 || dims[2] < 1 ||
      (signature_.vocab > 0 && dims[2] != signature_.vocab)) {
    return invalidArgument("output 'logits' is [{}] for {} ids per row, not [{}, {}, vocab]",
                           fmt::join(dims, ","), fed, batch, fed);
  }
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t id : sequences_[r]) {
      if (id >= dims[2]) {
        return invalidArgument("input id {} (row {}) is out of the vocabulary (0..{})", id, r,
                               dims[2] - 1);
      }
    }
  }
  return Status::ok();
}

StatusOr<std::vector<int64_t>> Generator::pickOnHost(const kernels::HostTensor& logits) {
  const int64_t batch = static_cast<int64_t>(sequences_.size());
  std::vector<int64_t> tokens(batch);
  for (int64_t r = 0; r < batch; ++r) {
    if (finished_[r]) continue;  // no draw: the seed's stream serves the unfinished rows
    ASSIGN_OR_RETURN(std::vector<float> row, lastLogits(logits, signature_.logits, r));
    tokens[r] = sampler_.pick(row);
  }
  return finishRows(std::move(tokens));
}

std::vector<int64_t> Generator::finishRows(std::vector<int64_t> picked) {
  for (size_t r = 0; r < picked.size(); ++r) {
    if (finished_[r]) {
      picked[r] = options_.eos_token_id;
      continue;
    }
    finished_[r] = picked[r] == options_.eos_token_id;
  }
  return picked;
}

StatusOr<std::vector<int64_t>> Generator::runStep(int64_t fed) {
  if (device_ == nullptr) {
    ASSIGN_OR_RETURN(ExecutionResult result, executor_->run(stepFeeds()));
    return takeResult(std::move(result), fed);
  }
  const int64_t total = static_cast<int64_t>(sequences_[0].size());
  ASSIGN_OR_RETURN(DeviceKvCache::Logits logits, device_->run(stepFeeds(), total - fed, fed));
  if (!logits.device) {
    RETURN_IF_ERROR(checkLogits(logits.host.dims, fed));
    return pickOnHost(logits.host);
  }
  RETURN_IF_ERROR(checkLogits(logits.device->dims, fed));
  if (options_.sampling.temperature == 0.0) {
    auto ids = device_->executor().lastPositionArgMax(*logits.device);
    if (ids.isOk()) return finishRows(std::move(ids).value());
    if (ids.status().code() != StatusCode::kUnimplemented) return ids.status();
  }
  // Sampling (or logits the ArgMax kernel does not take): the logits are read on the host.
  ASSIGN_OR_RETURN(kernels::HostTensor host, device_->executor().download(*logits.device));
  return pickOnHost(host);
}

StatusOr<std::vector<int64_t>> Generator::step() {
  if (!started_) return error(invalidArgument("step() before start()"));
  if (done()) return error(invalidArgument("step() after the generation is done"));
  const int64_t fed = steps_ == 0 ? static_cast<int64_t>(sequences_[0].size()) : 1;
  auto begin = std::chrono::steady_clock::now();
  auto tokens = runStep(fed);
  if (!tokens.isOk()) {
    started_ = false;  // the cache went into the failed run: a new start() is needed
    return error(tokens.status());
  }
  (steps_ == 0 ? stats_.prefill_ms : stats_.decode_ms) += msSince(begin);
  stats_.prefilled = true;
  if (steps_ > 0) ++stats_.decode_steps;
  ++steps_;
  for (size_t r = 0; r < sequences_.size(); ++r) {
    sequences_[r].push_back((*tokens)[r]);
    mask_[r].push_back(1);
  }
  return tokens;
}

StatusOr<std::vector<std::vector<int64_t>>> Generator::generate(const Prompt& prompt,
                                                                const TokenCallback& callback) {
  RETURN_IF_ERROR(start(prompt));
  while (!done()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> tokens, step());
    if (callback && !callback(steps_ - 1, tokens)) break;
  }
  return sequences_;
}

}  // namespace onnxopt::runtime
