// The Generator over the CUDA executor, on the host-memory fake device (fake_device.h, which runs
// the reference kernels). There the KV cache stays in device memory: each decoder of
// models/decoders gives Hugging Face's greedy ids (generate_golden.json) and the reference
// runner's, its cache buffers are allocated once per generation (never per step), and a decode
// step copies only the token ids to the host. Each step has a new past length, so each is a new
// plan; the prefill's past is empty ([batch, heads, 0, head_dim]). The decoders after -O3
// --target cuda too, with their fused ai.onnxopt calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "../../src/runtime/cuda/caching_device_api.h"
#include "fake_device.h"
#include "model_feeds.h"
#include "onnxopt/api/optimize.h"
#include "onnxopt/api/run.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/generator.h"
#include "onnxopt/runtime/reference_executor.h"

namespace onnxopt::runtime {
namespace {

constexpr const char* kDecoders[] = {"llama", "qwen2", "phi", "gptj", "mistral", "gemma"};

std::string modelPath(const std::string& name) {
  return fmt::format("models/decoders/{}_kv_dynamo/model.onnx", name);
}

/// A case of generate_golden.json beside decoder `name`: its prompt (ids and mask), new tokens,
/// end-of-sequence id (-1: none) and Hugging Face's sequences. The file is written by
/// models/decoders/generate_golden.py, whose layout this reads (lists of ints after each key).
struct GoldenCase {
  Prompt prompt;
  int64_t max_new_tokens = 0;
  int64_t eos_token_id = -1;
  std::vector<std::vector<int64_t>> sequences;
};

/// The rows of the int list of lists following `key` in `text` from `from`.
std::vector<std::vector<int64_t>> rowsAfter(const std::string& text, const std::string& key,
                                            size_t from, size_t to) {
  std::vector<std::vector<int64_t>> rows;
  size_t at = text.find("\"" + key + "\"", from);
  if (at == std::string::npos || at >= to) return rows;
  at = text.find("[[", at);
  for (size_t i = at + 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '[') {
      rows.emplace_back();
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = 0;
      rows.back().push_back(std::stoll(text.substr(i), &end));
      i += end - 1;
    } else if (c == ']' && text[i - 1] == ']') {
      break;
    }
  }
  return rows;
}

GoldenCase golden(const std::string& name, const std::string& case_name) {
  std::ifstream in(std::string(ONNXOPT_SOURCE_DIR) +
                   fmt::format("/models/decoders/{}_kv_dynamo/generate_golden.json", name));
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  size_t from = s.find(fmt::format("\"name\": \"{}\"", case_name));
  EXPECT_NE(from, std::string::npos) << case_name;
  size_t to = std::min(s.size(), s.find("\"name\"", from + 1));
  GoldenCase c;
  c.prompt.input_ids = rowsAfter(s, "input_ids", from, to);
  c.prompt.attention_mask = rowsAfter(s, "attention_mask", from, to);
  c.sequences = rowsAfter(s, "sequences", from, to);
  size_t n = s.find("\"max_new_tokens\": ", from);
  c.max_new_tokens = std::stoll(s.substr(n + 18));
  size_t eos = s.find("\"eos_token_id\": ", from);
  if (s.compare(eos + 16, 4, "null") != 0) c.eos_token_id = std::stoll(s.substr(eos + 16));
  return c;
}

GenerationOptions greedyOptions(int64_t max_new_tokens, int64_t eos_token_id = -1) {
  GenerationOptions options;
  options.max_new_tokens = max_new_tokens;
  options.eos_token_id = eos_token_id;
  return options;
}

/// A Generator over the CUDA executor on a fake device logging into `log`.
std::unique_ptr<Generator> onFakeDevice(const ir::Model& model,
                                        std::shared_ptr<test::FakeDeviceLog> log,
                                        const GenerationOptions& options) {
  auto cuda = CudaExecutor::createOn(model, {}, std::make_unique<test::FakeDevice>(log));
  EXPECT_TRUE(cuda.isOk()) << cuda.status().toString();
  if (!cuda.isOk()) return nullptr;
  auto generator = Generator::create(model, std::move(cuda).value(), options);
  EXPECT_TRUE(generator.isOk()) << generator.status().toString();
  return generator.isOk() ? std::move(generator).value() : nullptr;
}

TEST(GeneratorOnFakeDevice, DecodersGiveTheGoldenAndTheReferenceIds) {
  for (const char* name : kDecoders) {
    SCOPED_TRACE(name);
    auto model = test::loadInferred(modelPath(name));
    ASSERT_TRUE(model);
    for (const char* case_name : {"batch", "padded", "eos"}) {
      SCOPED_TRACE(case_name);
      GoldenCase c = golden(name, case_name);
      ASSERT_FALSE(c.sequences.empty());
      GenerationOptions options = greedyOptions(c.max_new_tokens, c.eos_token_id);
      auto log = std::make_shared<test::FakeDeviceLog>();
      auto on_device = onFakeDevice(*model, log, options);
      ASSERT_TRUE(on_device);
      EXPECT_TRUE(on_device->cacheOnDevice());
      auto ids = on_device->generate(c.prompt);
      ASSERT_TRUE(ids.isOk()) << ids.status().toString();
      EXPECT_EQ(*ids, c.sequences);
      EXPECT_GT(log->launches, 0);
      EXPECT_TRUE(log->errors.empty()) << log->errors.front();
      if (std::string(case_name) != "batch") continue;
      auto on_host = Generator::create(*model, createReferenceExecutor(*model), options);
      ASSERT_TRUE(on_host.isOk()) << on_host.status().toString();
      EXPECT_FALSE((*on_host)->cacheOnDevice());
      auto host_ids = (*on_host)->generate(c.prompt);
      ASSERT_TRUE(host_ids.isOk()) << host_ids.status().toString();
      EXPECT_EQ(*ids, *host_ids);
    }
  }
}

/// The bytes of `n` elements of `dtype`.
size_t bytesOf(DataType dtype, int64_t n) {
  return static_cast<size_t>(dataTypeStorageBytes(dtype, static_cast<uint64_t>(n)).value_or(0));
}

// Sampling downloads only the logits from the device: the seed gives the reference runner's
// tokens, with one row finishing early at its end-of-sequence id.
TEST(GeneratorOnFakeDevice, SampledTokensAreTheReferenceRunners) {
  const Prompt prompt{{{170, 173, 168, 245, 182}, {114, 140, 197, 133, 126}}, {}};
  auto model = test::loadInferred(modelPath("llama"));
  ASSERT_TRUE(model);
  GenerationOptions options = greedyOptions(10);
  options.sampling = {0.8, 40, 0.95, 7};
  auto onHost = [&]() -> StatusOr<std::vector<std::vector<int64_t>>> {
    ASSIGN_OR_RETURN(auto generator,
                     Generator::create(*model, createReferenceExecutor(*model), options));
    return generator->generate(prompt);
  };
  auto unended = onHost();
  ASSERT_TRUE(unended.isOk()) << unended.status().toString();
  options.eos_token_id = unended->at(1).at(7);  // row 1's third new token ends it there
  auto host_ids = onHost();
  ASSERT_TRUE(host_ids.isOk()) << host_ids.status().toString();
  auto log = std::make_shared<test::FakeDeviceLog>();
  auto on_device = onFakeDevice(*model, log, options);
  ASSERT_TRUE(on_device);
  auto ids = on_device->generate(prompt);
  ASSERT_TRUE(ids.isOk()) << ids.status().toString();
  EXPECT_EQ(*ids, *host_ids);
  EXPECT_NE(*ids, *unended);
  // Down: each step's logits ([2, 5, vocab] at the prefill, then [2, 1, vocab]), no cache.
  const int64_t vocab = on_device->signature().vocab;
  ASSERT_GT(vocab, 0);
  EXPECT_EQ(log->to_host_bytes, static_cast<int64_t>(bytesOf(DataType::kFloat, 2 * 5 * vocab) +
                                                     9 * bytesOf(DataType::kFloat, 2 * vocab)));
  EXPECT_TRUE(log->errors.empty()) << log->errors.front();
}

// After -O3 --target cuda --target-opset 23 the cache is Attention-23's past and present (and our
// fused ops run as calls): the present is still computed straight into the next step's past.
TEST(GeneratorOnFakeDevice, FusedDecodersKeepTheCacheOnTheDeviceToo) {
  for (const char* name : kDecoders) {
    SCOPED_TRACE(name);
    auto model = test::loadInferred(modelPath(name));
    ASSERT_TRUE(model);
    OptimizeOptions optimize;
    optimize.level = 3;
    optimize.target = "cuda";
    optimize.target_opset = 23;
    ASSERT_TRUE(onnxopt::optimize(*model, optimize).isOk());
    ASSERT_TRUE(prepareForRunner(*model, "cuda").isOk());
    // Llama's and Qwen2's packed QKV Splits, SwiGlu and SkipRMSNormalization calls are planned
    // (shapes inferred, outputs allocated) and launched like any device node.
    std::set<std::string> ops;
    for (const ir::Node* n : *model->graph) ops.insert(n->domain() + "." + n->opType());
    for (const char* fused : {"ai.onnxopt.SwiGlu", "ai.onnxopt.SkipRMSNormalization", ".Split"}) {
      if (std::string(name) == "llama" || std::string(name) == "qwen2") {
        EXPECT_TRUE(ops.count(fused)) << fused << " not in the optimized model";
      }
    }
    GoldenCase c = golden(name, "batch");
    auto log = std::make_shared<test::FakeDeviceLog>();
    auto generator = onFakeDevice(*model, log, greedyOptions(c.max_new_tokens));
    ASSERT_TRUE(generator);
    auto ids = generator->generate(c.prompt);
    ASSERT_TRUE(ids.isOk()) << ids.status().toString();
    EXPECT_EQ(*ids, c.sequences);
    // Down: each step's ids alone. On the device: no copy of a cache tensor.
    const auto batch = static_cast<int64_t>(c.prompt.input_ids.size());
    EXPECT_EQ(log->to_host_bytes, c.max_new_tokens * batch * 8);
    EXPECT_EQ(log->device_copies, 0);
    EXPECT_TRUE(log->errors.empty()) << log->errors.front();
  }
}

// Each decode step is a new plan (the past grows by one), and the plan cache keeps 8: once it is
// full, each step's plan evicts the oldest, and takes its memory over from what that one gave
// back (caching_device_api.h) rather than from the device.
TEST(GeneratorOnFakeDevice, DecodeStepsStopAllocatingOnceThePlanCacheIsFull) {
  auto model = test::loadInferred(modelPath("llama"));
  ASSERT_TRUE(model);
  auto log = std::make_shared<test::FakeDeviceLog>();
  auto generator = onFakeDevice(*model, log, greedyOptions(24));
  ASSERT_TRUE(generator);
  // A prompt long enough that 8 steps grow the plans' buffers by less than a size class (a
  // decoder's arena at a realistic context), so that what the evicted plan gave back fits.
  std::vector<int64_t> prompt(120);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int64_t>(7 + 13 * i % 240);
  ASSERT_TRUE(generator->start({{prompt}, {}}).isOk());
  const int64_t capacity = static_cast<int64_t>(CudaOptions{}.plan_cache_capacity);
  for (int64_t step = 0; !generator->done(); ++step) {
    const int64_t before = log->allocations;
    ASSERT_TRUE(generator->step().isOk());
    if (step > capacity + 1) {
      EXPECT_EQ(log->allocations - before, 0) << "step " << step;
    }
  }
  EXPECT_TRUE(log->errors.empty()) << log->errors.front();
}

/// How many of `sizes[from..]` equal `bytes`.
int64_t countSized(const std::vector<size_t>& sizes, size_t from, size_t bytes) {
  return std::count(sizes.begin() + static_cast<std::ptrdiff_t>(from), sizes.end(), bytes);
}

/// How many of `sizes[from..]` a plan could have taken for a buffer of `bytes`: plans take their
/// memory through the executor's cache, which asks the device for the size class of an eighth
/// more (caching_device_api.h), or for the class alone where that fails.
int64_t countPlanSized(const std::vector<size_t>& sizes, size_t from, size_t bytes) {
  using cuda_detail::CachingDeviceApi;
  const size_t size_class = CachingDeviceApi::sizeClass(bytes);
  const size_t with_headroom = CachingDeviceApi::newBlockBytes(size_class);
  return countSized(sizes, from, size_class) +
         (with_headroom != size_class ? countSized(sizes, from, with_headroom) : 0);
}

TEST(GeneratorOnFakeDevice, CacheBuffersAreAllocatedOncePerGeneration) {
  // Three rows (an odd batch: no cache size equals the fake's 1024-byte workspace).
  const Prompt prompt{{{170, 173, 168, 245, 182}, {114, 140, 197, 133, 126}, {1, 2, 3, 4, 5}}, {}};
  const int64_t batch = 3, prompt_len = 5, new_tokens = 6;
  for (const char* name : kDecoders) {
    SCOPED_TRACE(name);
    auto model = test::loadInferred(modelPath(name));
    ASSERT_TRUE(model);
    auto log = std::make_shared<test::FakeDeviceLog>();
    auto generator = onFakeDevice(*model, log, greedyOptions(new_tokens));
    ASSERT_TRUE(generator);
    const auto& cache = generator->signature().cache;
    auto cacheBytes = [&](const KvCacheEntry& e, int64_t positions) {
      return bytesOf(e.dtype, batch * e.heads * positions * e.head_dim);
    };
    for (int generation = 0; generation < 2; ++generation) {
      SCOPED_TRACE(generation);
      const size_t before = log->allocated_bytes.size();
      ASSERT_TRUE(generator->start(prompt).isOk());
      while (!generator->done()) {
        const size_t step_start = log->allocated_bytes.size();
        const int64_t past = static_cast<int64_t>(generator->sequences()[0].size()) -
                             (generator->stats().prefilled ? 1 : prompt_len);
        auto tokens = generator->step();
        ASSERT_TRUE(tokens.isOk()) << tokens.status().toString();
        // No step allocates a buffer for its past or its present (the present's place in the
        // plan's arena goes unused: the run computes it into the cache buffer).
        const int64_t total = static_cast<int64_t>(generator->sequences()[0].size()) - 1;
        for (const KvCacheEntry& e : cache) {
          if (past > 0) {
            EXPECT_EQ(countPlanSized(log->allocated_bytes, step_start, cacheBytes(e, past)), 0)
                << e.past << " at past " << past;
          }
          EXPECT_EQ(countPlanSized(log->allocated_bytes, step_start, cacheBytes(e, total)), 0)
              << e.present << " of " << total << " positions";
        }
      }
      // Two buffers (past and present by turns) per cache tensor at the longest length, in the
      // first generation; the second reuses them.
      for (const KvCacheEntry& e : cache) {
        int64_t same_size = std::count_if(cache.begin(), cache.end(), [&](const KvCacheEntry& o) {
          return cacheBytes(o, prompt_len + new_tokens) == cacheBytes(e, prompt_len + new_tokens);
        });
        EXPECT_EQ(countSized(log->allocated_bytes, before, cacheBytes(e, prompt_len + new_tokens)),
                  generation == 0 ? 2 * same_size : 0)
            << e.past;
      }
    }
    EXPECT_TRUE(log->errors.empty()) << log->errors.front();
  }
}

TEST(GeneratorOnFakeDevice, DecodeStepsCopyOnlyTheIdsToTheHost) {
  const Prompt prompt{{{170, 173, 168, 245, 182}, {114, 140, 197, 133, 126}}, {}};
  const int64_t batch = 2;
  for (const char* name : kDecoders) {
    SCOPED_TRACE(name);
    auto model = test::loadInferred(modelPath(name));
    ASSERT_TRUE(model);
    auto log = std::make_shared<test::FakeDeviceLog>();
    auto generator = onFakeDevice(*model, log, greedyOptions(6));
    ASSERT_TRUE(generator);
    const DecoderSignature& sig = generator->signature();
    const auto& cuda = dynamic_cast<const CudaExecutor&>(generator->executor());
    ASSERT_TRUE(generator->start(prompt).isOk());
    ASSERT_TRUE(generator->step().isOk());  // the prefill
    while (!generator->done()) {
      const int64_t total = static_cast<int64_t>(generator->sequences()[0].size());
      const test::FakeDeviceLog at_start = *log;
      const int64_t misses = cuda.planMisses();
      auto tokens = generator->step();
      ASSERT_TRUE(tokens.isOk()) << tokens.status().toString();
      // Down: one copy of the ids. Up: the new ids, the mask and the positions, no cache; and
      // as each new past length is a new plan, that plan's folded constants (mask pieces and
      // indices computed from the length when planning), uploaded once when it is made.
      EXPECT_EQ(log->to_host_copies - at_start.to_host_copies, 1);
      EXPECT_EQ(log->to_host_bytes - at_start.to_host_bytes,
                static_cast<int64_t>(bytesOf(DataType::kInt64, batch)));
      size_t up = bytesOf(sig.ids_dtype, batch);
      if (!sig.attention_mask.empty()) up += bytesOf(sig.mask_dtype, batch * total);
      if (!sig.position_ids.empty()) up += bytesOf(sig.position_dtype, batch);
      EXPECT_EQ(cuda.planMisses(), misses + 1);
      for (const PlannedValue& v : cuda.lastPlan()->values) {
        if (v.location == Location::kConstant && v.weight < 0 && v.upload && v.base < 0) {
          up += static_cast<size_t>(v.bytes);
        }
      }
      EXPECT_EQ(log->to_device_bytes - at_start.to_device_bytes, static_cast<int64_t>(up));
      // The present is computed into the next step's past: no copy on the device either.
      EXPECT_EQ(log->device_copies - at_start.device_copies, 0);
    }
    EXPECT_TRUE(log->errors.empty()) << log->errors.front();
  }
}

}  // namespace
}  // namespace onnxopt::runtime
