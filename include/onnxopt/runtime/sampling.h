// Choosing the next token from a row of logits, on the host: greedy, or sampled after temperature,
// top-k and top-p (Hugging Face's order), from a seeded generator whose draws are the same on
// every platform (no std:: distribution, whose algorithms the standard leaves open).
#pragma once

#include <cstdint>
#include <span>

#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

struct SamplingOptions {
  /// 0: greedy (the first largest logit). Above 0: logits are divided by it, then sampled.
  double temperature = 0.0;
  int64_t top_k = 0;   ///< keep the k most likely tokens; 0: all
  double top_p = 1.0;  ///< keep the fewest most likely tokens whose probability reaches p; 1: all
  uint64_t seed = 0;
};

/// kInvalidArgument for a negative temperature or top_k, or a top_p outside (0, 1].
Status checkSamplingOptions(const SamplingOptions& options);

/// Picks tokens from rows of logits. One sampler serves a whole generation, so that a seed fixes
/// every token of it: each draw advances the generator.
class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);

  /// The chosen index of `logits` (one row, the vocabulary; not empty). Greedy needs no draw; a
  /// row whose logits are all -inf or NaN gives the first index.
  int64_t pick(std::span<const float> logits);

  /// The next uniform double in [0, 1): 53 bits of a SplitMix64 stream.
  double uniform();

 private:
  SamplingOptions options_;
  uint64_t state_;
};

}  // namespace onnxopt::runtime
