// Generating tokens with a decoder that has a KV cache, over any Executor (the runner registry,
// executor.h): a prefill run on the prompt with an empty cache, then one decode run per token,
// each feeding the previous run's present.{i}.key/value back as past_key_values.{i}.key/value.
// The next token is chosen on the host (sampling.h). Over the CUDA executor the cache stays on
// the device instead (src/runtime/generator_device.h: buffers allocated once per generation,
// past and present swapped by pointer) and greedy tokens are chosen there, so that a step copies
// only the ids to the host. Step-wise (start, step) or whole (generate).
//
//   auto gen = Generator::create(model, createReferenceExecutor(model), options, "model.onnx");
//   auto sequences = (*gen)->generate({{{1, 2, 3}}});   // prompt, then the new ids, per row
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/runtime/decoder_signature.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/runtime/sampling.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

struct GenerationOptions {
  int64_t max_new_tokens = 32;
  /// The longest a row may grow, prompt included (a model's position tables end somewhere); 0:
  /// no limit but max_new_tokens.
  int64_t max_length = 0;
  /// A row that produces it is finished: it takes this id from then on (Hugging Face pads with
  /// it too). Negative: none, every row runs to max_new_tokens.
  int64_t eos_token_id = -1;
  SamplingOptions sampling;
};

/// What generation starts from: rows of token ids and, for rows padded to one length, a mask
/// (1 for a token, 0 for padding) as Hugging Face tokenizers make it. Without a mask every row
/// must have the same length.
struct Prompt {
  std::vector<std::vector<int64_t>> input_ids;
  std::vector<std::vector<int64_t>> attention_mask;  ///< empty: all ones
};

/// Called after each step with its index (0: the prefill) and the token each row took; returning
/// false ends the generation after that step.
using TokenCallback = std::function<bool(int64_t step, const std::vector<int64_t>& tokens)>;

/// Where the time went: the prefill run (prompt_tokens per row) and the decode runs after it,
/// each run timed around the executor (choosing the tokens included, on the host or the device).
struct GenerationStats {
  int64_t batch = 0;
  int64_t prompt_tokens = 0;
  bool prefilled = false;  ///< false until the first step (max_new_tokens 0 takes none)
  double prefill_ms = 0.0;
  int64_t decode_steps = 0;
  double decode_ms = 0.0;
  /// New tokens per second of decoding, over all rows (batch * decode_steps / decode time).
  double decodeTokensPerSecond() const;
};

class DeviceKvCache;  // src/runtime/generator_device.h

class Generator {
 public:
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  /// A generator for `model` (which must outlive it) run by `executor`. Errors (prefixed with
  /// `model_path` where given) are decoderSignature's and the options' (sampling, a negative
  /// max_new_tokens or max_length).
  static StatusOr<std::unique_ptr<Generator>> create(const ir::Model& model,
                                                     std::unique_ptr<Executor> executor,
                                                     const GenerationOptions& options,
                                                     const std::string& model_path = "");

  /// Sets the prompt and forgets any earlier generation. kInvalidArgument for an empty batch or
  /// row, rows of different lengths without a mask, a mask not of the ids' shape or not 0/1, a
  /// row with no token, ids outside the vocabulary, or a prompt that leaves no room under
  /// max_length.
  Status start(const Prompt& prompt);
  /// The next step: the prefill on the first call, then one decode run. The token each row took
  /// (a finished row: eos_token_id). Errors name the file and what the run returned wrong.
  StatusOr<std::vector<int64_t>> step();
  /// max_new_tokens taken, max_length reached, or every row finished.
  bool done() const;

  /// start, then step until done (or until `callback` returns false); the sequences.
  StatusOr<std::vector<std::vector<int64_t>>> generate(const Prompt& prompt,
                                                       const TokenCallback& callback = {});

  /// Each row: its prompt (padding included), then the ids taken so far.
  const std::vector<std::vector<int64_t>>& sequences() const { return sequences_; }
  const GenerationStats& stats() const { return stats_; }
  const DecoderSignature& signature() const { return signature_; }
  const Executor& executor() const { return *executor_; }
  /// Whether the KV cache stays in the executor's device memory (the CUDA executor).
  bool cacheOnDevice() const { return device_ != nullptr; }

 private:
  Generator(std::unique_ptr<Executor> executor, DecoderSignature signature,
            const GenerationOptions& options, std::string model_path);
  Status checkPrompt(const Prompt& prompt) const;
  Feeds stepFeeds();
  /// One run and the tokens it gives, on the host path or the device one.
  StatusOr<std::vector<int64_t>> runStep(int64_t fed);
  StatusOr<std::vector<int64_t>> takeResult(ExecutionResult result, int64_t fed);
  /// The logits' dims fit the batch and vocabulary, and every id so far lies in it.
  Status checkLogits(const std::vector<int64_t>& dims, int64_t fed) const;
  /// Each unfinished row's token from its last logits, on the host (Sampler).
  StatusOr<std::vector<int64_t>> pickOnHost(const kernels::HostTensor& logits);
  /// The tokens the rows take given each row's pick: finished rows keep eos_token_id.
  std::vector<int64_t> finishRows(std::vector<int64_t> picked);
  Status error(const Status& status) const;

  std::unique_ptr<Executor> executor_;
  /// The cache on the device where the executor keeps it there (declared after executor_, whose
  /// memory it holds, so that it is released first).
  std::unique_ptr<DeviceKvCache> device_;
  DecoderSignature signature_;
  GenerationOptions options_;
  std::string model_path_;
  Sampler sampler_;
  std::vector<std::vector<int64_t>> sequences_;
  std::vector<std::vector<int64_t>> mask_;  ///< per row, one entry per id of sequences_
  std::vector<kernels::HostTensor> cache_;  ///< the last present tensors, signature_.cache order
  std::vector<bool> finished_;
  int64_t steps_ = 0;  ///< steps taken since start (0: the prefill is next)
  bool started_ = false;
  GenerationStats stats_;
};

}  // namespace onnxopt::runtime
