// The Generator on toy decoders whose next token is a table lookup (so every id is known in
// advance), and the host sampler: determinism by seed, top-k/top-p limits, and the errors.
#include "onnxopt/runtime/generator.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/runtime/reference_executor.h"
#include "test_models.h"

namespace onnxopt::runtime {
namespace {

using test::parse;

// Token t is followed by (t + 1) % 4; the cache holds an embedding of each id, one head.
constexpr const char* kNextToken = R"(
<ir_version: 8, opset_import: ["" : 18]>
toy (int64[B, S] input_ids, int64[B, T] attention_mask, float[B, 1, P, 2] past_key_values_0_key,
     float[B, 1, P, 2] past_key_values_0_value)
 => (float[B, S, 4] logits, float[B, 1, Q, 2] present_0_key, float[B, 1, Q, 2] present_0_value)
<float[4, 4] next = {0,1,0,0, 0,0,1,0, 0,0,0,1, 1,0,0,0}, float[4, 2] embed = {0,0, 1,1, 2,2, 3,3},
 int64[1] one = {1}>
{
  logits = Gather(next, input_ids)
  e = Gather(embed, input_ids)
  k = Unsqueeze(e, one)
  present_0_key = Concat<axis = 2>(past_key_values_0_key, k)
  present_0_value = Concat<axis = 2>(past_key_values_0_value, k)
}
)";

// The next-token model with one change of text (`from` to `to`): a broken decoder.
std::string broken(const std::string& from, const std::string& to) {
  std::string text = kNextToken;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// The next token is the position (mod 4) of the last id, from an input position_ids: shows the
// positions fed.
std::string positionModel() {
  std::string text = broken("int64[B, T] attention_mask,",
                            "int64[B, T] attention_mask, int64[B, S] position_ids,");
  const std::string from = "logits = Gather(next, input_ids)";
  text.replace(text.find(from), from.size(), "logits = Gather(table, position_ids)");
  const std::string table =
      "<float[8, 4] table = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1, "
      "1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}, ";
  return text.replace(text.find('<', text.find("=>")), 1, table);
}

StatusOr<std::unique_ptr<Generator>> makeGenerator(const ir::Model& model,
                                                   GenerationOptions options = {}) {
  return Generator::create(model, createReferenceExecutor(model), options, "toy.onnx");
}

using Rows = std::vector<std::vector<int64_t>>;

Prompt prompt(Rows ids, Rows mask = {}) {
  return Prompt{std::move(ids), std::move(mask)};
}

/// The generation of `prompt`, or the error message.
std::string generated(const std::string& text, const Prompt& prompt, GenerationOptions options) {
  auto model = parse(text);
  auto gen = makeGenerator(*model, options);
  if (!gen.isOk()) return gen.status().message();
  auto out = (*gen)->generate(prompt);
  if (!out.isOk()) return out.status().message();
  std::string s;
  for (const auto& row : *out) {
    s += s.empty() ? "" : " | ";
    for (size_t i = 0; i < row.size(); ++i) s += (i ? "," : "") + std::to_string(row[i]);
  }
  return s;
}

GenerationOptions tokens(int64_t n) {
  GenerationOptions o;
  o.max_new_tokens = n;
  return o;
}

TEST(GeneratorTest, GreedyFeedsEachTokenBack) {
  EXPECT_EQ(generated(kNextToken, prompt({{1, 2}}), tokens(5)), "1,2,3,0,1,2,3");
  EXPECT_EQ(generated(kNextToken, prompt({{1, 2}, {0, 0}}), tokens(3)), "1,2,3,0,1 | 0,0,1,2,3");
  EXPECT_EQ(generated(kNextToken, prompt({{1, 2}}), tokens(0)), "1,2");
}

TEST(GeneratorTest, StepWiseIsTheWholeGeneration) {
  auto model = parse(kNextToken);
  auto gen = makeGenerator(*model, tokens(4));
  ASSERT_TRUE(gen.isOk()) << gen.status().toString();
  ASSERT_TRUE((*gen)->start(prompt({{3}})).isOk());
  std::vector<int64_t> taken;
  while (!(*gen)->done()) {
    auto step = (*gen)->step();
    ASSERT_TRUE(step.isOk()) << step.status().toString();
    taken.push_back(step->at(0));
  }
  EXPECT_EQ(taken, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ((*gen)->sequences()[0], (std::vector<int64_t>{3, 0, 1, 2, 3}));
  EXPECT_EQ((*gen)->stats().decode_steps, 3);
  EXPECT_TRUE((*gen)->stats().prefilled);
  EXPECT_FALSE((*gen)->step().isOk());  // done
  // The callback sees every step and can end the generation.
  std::vector<int64_t> seen;
  auto out = (*gen)->generate(prompt({{3}}), [&](int64_t step, const std::vector<int64_t>& t) {
    seen.push_back(step * 10 + t[0]);
    return step < 1;
  });
  ASSERT_TRUE(out.isOk());
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 11}));
  EXPECT_EQ(out->at(0), (std::vector<int64_t>{3, 0, 1}));
}

TEST(GeneratorTest, EosFinishesARowAndMaxLengthStops) {
  GenerationOptions o = tokens(8);
  o.eos_token_id = 2;
  // Row 0 takes 2 at its second token and is padded with it until row 1 takes 2 too: with every
  // row finished the generation ends.
  EXPECT_EQ(generated(kNextToken, prompt({{0}, {3}}), o), "0,1,2,2 | 3,0,1,2");
  o = tokens(8);
  o.max_length = 4;
  EXPECT_EQ(generated(kNextToken, prompt({{1, 2}}), o), "1,2,3,0");
  EXPECT_EQ(generated(kNextToken, prompt({{1, 2, 3, 0}}), o),
            "toy.onnx: the prompt (4 ids) leaves no room under max_length 4");
}

TEST(GeneratorTest, PositionsComeFromTheMask) {
  // Unpadded: positions 0,1,2 then 3, 4. Left-padded (mask 0,1,1): positions 1,0,1 then 2, 3.
  Prompt p = prompt({{1, 1, 1}, {0, 1, 1}}, {{1, 1, 1}, {0, 1, 1}});
  EXPECT_EQ(generated(positionModel(), p, tokens(3)), "1,1,1,2,3,0 | 0,1,1,1,2,3");
}

TEST(GeneratorTest, SamplingIsFixedBySeed) {
  GenerationOptions o = tokens(16);
  o.sampling.temperature = 1.0;
  o.sampling.seed = 5;
  std::string a = generated(kNextToken, prompt({{1}}), o);
  EXPECT_EQ(a, generated(kNextToken, prompt({{1}}), o));
  o.sampling.seed = 6;
  EXPECT_NE(a, generated(kNextToken, prompt({{1}}), o));
  // top_k = 1 and a tiny top_p leave only the greedy token.
  o.sampling.top_k = 1;
  EXPECT_EQ(generated(kNextToken, prompt({{1}}), o),
            generated(kNextToken, prompt({{1}}), tokens(16)));
  o.sampling.top_k = 0;
  o.sampling.top_p = 0.01;
  EXPECT_EQ(generated(kNextToken, prompt({{1}}), o),
            generated(kNextToken, prompt({{1}}), tokens(16)));
}

TEST(SamplerTest, DrawsFollowTheProbabilities) {
  SamplingOptions o;
  o.temperature = 1.0;
  o.seed = 11;
  Sampler sampler(o);
  const std::vector<float> logits{0.0f, 0.0f, 1.0986123f, -1e30f};  // p = 0.2, 0.2, 0.6, 0
  std::map<int64_t, int> counts;
  for (int i = 0; i < 20000; ++i) ++counts[sampler.pick(logits)];
  EXPECT_NEAR(counts[0] / 20000.0, 0.2, 0.015);
  EXPECT_NEAR(counts[2] / 20000.0, 0.6, 0.015);
  EXPECT_EQ(counts[3], 0);
  // top_k = 2 keeps 2 and the first 0 (ties by index); top_p = 0.7 keeps 2 and one 0.2.
  o.top_k = 2;
  Sampler top_k(o);
  o.top_k = 0;
  o.top_p = 0.7;
  Sampler top_p(o);
  for (int i = 0; i < 2000; ++i) {
    EXPECT_NE(top_k.pick(logits), 1);
    EXPECT_NE(top_p.pick(logits), 1);
  }
  o.temperature = 0.0;
  EXPECT_EQ(Sampler(o).pick(std::vector<float>{1.0f, 3.0f, 3.0f}), 1);  // the first largest
}

TEST(SamplerTest, OptionsAreChecked) {
  SamplingOptions o;
  o.temperature = -1.0;
  EXPECT_FALSE(checkSamplingOptions(o).isOk());
  o = {};
  o.top_p = 0.0;
  EXPECT_FALSE(checkSamplingOptions(o).isOk());
  o = {};
  o.top_k = -2;
  EXPECT_FALSE(checkSamplingOptions(o).isOk());
  EXPECT_TRUE(checkSamplingOptions({}).isOk());
}

TEST(GeneratorTest, BadModelsAreRefusedWithTheReason) {
  auto error = [](const std::string& text) { return generated(text, prompt({{1}}), tokens(2)); };
  EXPECT_EQ(error(R"(<ir_version: 8, opset_import: ["" : 18]>
plain (int64[B, S] input_ids) => (int64[B, S] logits) { logits = Identity(input_ids) })"),
            "toy.onnx: no KV-cache inputs (past_key_values.{i}.key/value): generation needs a "
            "decoder exported with its cache");
  EXPECT_EQ(error(broken("float[B, 1, Q, 2] present_0_value", "float[B, 2, Q, 2] present_0_value")),
            "toy.onnx: mismatched cache shapes: 'past_key_values_0_value' is float[B,1,P,2], "
            "'present_0_value' is float[B,2,Q,2]");
  EXPECT_EQ(error(broken("float[B, 1, P, 2] past_key_values_0_key",
                         "float[B, 1, P] "
                         "past_key_values_0_key")),
            "toy.onnx: cache tensor 'past_key_values_0_key' is not of rank 4 ([batch, heads, "
            "seq, head_dim])");
  EXPECT_EQ(error(broken("int64[B, T] attention_mask", "int64[B, T] attention_mask, float[3] x")),
            "toy.onnx: input 'x' is not one that generation feeds (input_ids, attention_mask, "
            "position_ids, past_key_values.{i}.key/value)");
  // A present that does not grow by the ids fed is found at the first decode run.
  EXPECT_EQ(error(broken("present_0_key = Concat<axis = 2>(past_key_values_0_key, k)",
                         "present_0_key = Identity(k)")),
            "toy.onnx: mismatched cache shapes: present 'present_0_key' is [1,1,1,2] after 2 ids, "
            "not [1,1,2,2]");
}

TEST(GeneratorTest, BadPromptsAreRefusedWithTheReason) {
  EXPECT_EQ(generated(kNextToken, prompt({{1, 4}}), tokens(2)),
            "toy.onnx: input id 4 (row 0, position 1) is out of the vocabulary (0..3)");
  EXPECT_EQ(generated(kNextToken, prompt({{-1}}), tokens(2)),
            "toy.onnx: input id -1 (row 0, position 0) is out of the vocabulary (0..3)");
  // Where the logits do not declare the vocabulary, a negative id is still refused up front.
  EXPECT_EQ(generated(broken("float[B, S, 4] logits", "float[B, S, V] logits"), prompt({{-1}}),
                      tokens(2)),
            "toy.onnx: input id -1 (row 0, position 0) is negative");
  EXPECT_EQ(
      generated(broken("float[B, S, 4] logits", "float[B, S, V] logits"), prompt({{1}}), tokens(2)),
      "1,2,3");
  EXPECT_EQ(generated(kNextToken, prompt({{1, 2}, {3}}), tokens(2)),
            "toy.onnx: rows of input_ids have different lengths (2 and 1) and no attention_mask "
            "says which ids are padding");
  EXPECT_EQ(generated(kNextToken, prompt({{1, 2}}, {{1, 2}}), tokens(2)),
            "toy.onnx: attention_mask holds 2, not 0 or 1");
  EXPECT_EQ(generated(kNextToken, prompt({{1, 2}}, {{0, 0}}), tokens(2)),
            "toy.onnx: row 0 of attention_mask has no token (all 0)");
  EXPECT_EQ(generated(kNextToken, prompt({}), tokens(2)), "toy.onnx: input_ids has no rows");
  GenerationOptions o = tokens(2);
  o.sampling.top_p = 2.0;
  EXPECT_EQ(generated(kNextToken, prompt({{1}}), o), "toy.onnx: top_p must be in (0, 1], not 2");
}

}  // namespace
}  // namespace onnxopt::runtime
