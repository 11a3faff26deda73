// Host sampling: p_i = softmax(logits / T) over the top-k, then the smallest prefix of them (by
// probability) whose mass reaches top_p, renormalized; one uniform draw picks within it.
#include "onnxopt/runtime/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace onnxopt::runtime {

Status checkSamplingOptions(const SamplingOptions& options) {
  if (!(options.temperature >= 0.0) || !std::isfinite(options.temperature)) {
    return invalidArgument("temperature must be 0 (greedy) or positive, not {}",
                           options.temperature);
  }
  if (options.top_k < 0) return invalidArgument("top_k must be 0 (all) or positive");
  if (!(options.top_p > 0.0 && options.top_p <= 1.0)) {
    return invalidArgument("top_p must be in (0, 1], not {}", options.top_p);
  }
  return Status::ok();
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), state_(options.seed) {}

double Sampler::uniform() {
  // SplitMix64 (Steele, Lea and Flood): a full-period 64-bit stream, fixed by the seed alone.
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int64_t Sampler::pick(std::span<const float> logits) {
  const int64_t n = static_cast<int64_t>(logits.size());
  if (options_.temperature == 0.0) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
      if (logits[i] > logits[best]) best = i;
    }
    return best;
  }
  // Candidates by logit, largest first; ties by index so the order is the same everywhere.
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  auto larger = [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  int64_t keep = options_.top_k > 0 ? std::min(options_.top_k, n) : n;
  std::partial_sort(order.begin(), order.begin() + keep, order.end(), larger);
  order.resize(keep);
  std::vector<double> probs(keep);
  const double top = logits[order[0]] / options_.temperature;
  if (!std::isfinite(top)) return order[0];
  double sum = 0.0;
  for (int64_t i = 0; i < keep; ++i) {
    probs[i] = std::exp(logits[order[i]] / options_.temperature - top);
    sum += probs[i];
  }
  // top-p: the fewest leading tokens whose mass reaches p (at least one).
  double mass = 0.0;
  int64_t cut = 0;
  while (cut < keep) {
    mass += probs[cut++] / sum;
    if (mass >= options_.top_p) break;
  }
  double total = std::accumulate(probs.begin(), probs.begin() + cut, 0.0);
  double u = uniform() * total;
  for (int64_t i = 0; i < cut; ++i) {
    if (u < probs[i]) return order[i];
    u -= probs[i];
  }
  return order[cut - 1];
}

}  // namespace onnxopt::runtime
