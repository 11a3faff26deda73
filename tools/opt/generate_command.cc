// `opt generate MODEL --input-ids 1,2,3`: token generation with a decoder that has a KV cache
// (onnxopt::generate, api/generate.h) on the reference runner or another of the registry; prints
// each row's ids (the prompt, then the new ones) and the prefill time and decode throughput.
#include <charconv>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "onnxopt/api/generate.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/support/diagnostics.h"

namespace onnxopt::tools {
namespace {

constexpr const char* kGenerateExamples = R"(
Examples:
  opt generate decoder.onnx --input-ids 1,2,3 --max-new-tokens 64       greedy, CPU reference
  opt generate decoder.onnx --input-ids 1,2,3 --input-ids 4,5,6         a batch of two rows
  opt generate decoder.onnx --input-ids 0,0,7,8 --attention-mask 0,0,1,1 --input-ids 5,6,7,8 \
      --attention-mask 1,1,1,1                                           a left-padded row
  opt generate decoder.onnx --input-ids 1,2,3 --temperature 0.8 --top-k 40 --top-p 0.95 --seed 7
  opt generate decoder.onnx --input-ids 1,2,3 --device cuda --stream

The model must be a decoder exported with its KV cache: inputs input_ids, attention_mask
(optional), position_ids (optional) and past_key_values.{i}.key/value; outputs logits and
present.{i}.key/value. The first run (prefill) takes the prompt with an empty cache, each later
run one token per row and the cache the run before returned.
)";

/// "1,2,3" as integers; `flag` names the option in the message.
StatusOr<std::vector<int64_t>> parseIds(const std::string& text, const char* flag) {
  std::vector<int64_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      return invalidArgument("{} '{}': '{}' is not an integer", flag, text, item);
    }
    ids.push_back(v);
    pos = end + 1;
  }
  return ids;
}

StatusOr<runtime::Prompt> parsePrompt(const GenerateCommandOptions& opts) {
  runtime::Prompt prompt;
  for (const std::string& row : opts.input_ids) {
    ASSIGN_OR_RETURN(std::vector<int64_t> ids, parseIds(row, "--input-ids"));
    prompt.input_ids.push_back(std::move(ids));
  }
  for (const std::string& row : opts.attention_mask) {
    ASSIGN_OR_RETURN(std::vector<int64_t> mask, parseIds(row, "--attention-mask"));
    prompt.attention_mask.push_back(std::move(mask));
  }
  return prompt;
}

void printStats(const runtime::GenerationStats& s) {
  if (!s.prefilled) {
    fmt::print("prefill not run (no new tokens asked)\n");
    return;
  }
  fmt::print("prefill {:.3f} ms ({} x {} tokens)\n", s.prefill_ms, s.batch, s.prompt_tokens);
  if (s.decode_steps == 0) {
    fmt::print("decode  no steps\n");
    return;
  }
  fmt::print("decode  {} steps in {:.3f} ms: {:.1f} tokens/s ({:.3f} ms per step)\n",
             s.decode_steps, s.decode_ms, s.decodeTokensPerSecond(),
             s.decode_ms / static_cast<double>(s.decode_steps));
}

}  // namespace

CLI::App* addGenerateCommand(CLI::App& app, GenerateCommandOptions& opts) {
  CLI::App* cmd = app.add_subcommand(
      "generate",
      "Generate tokens with a decoder exported with its KV cache: a prefill run, then one run "
      "per token; prints the ids, the prefill time and the decode tokens per second");
  cmd->footer(kGenerateExamples);
  cmd->add_option("model", opts.model, "Decoder model")->required();
  cmd->add_option("--input-ids", opts.input_ids,
                  "ID,ID,...: one row of the prompt (repeatable: a batch, one row each)")
      ->required();
  cmd->add_option("--attention-mask", opts.attention_mask,
                  "M,M,...: the mask of the row given in the same place (1 a token, 0 padding); "
                  "rows of different lengths must be padded to one length and masked");
  cmd->add_option("--max-new-tokens", opts.options.max_new_tokens,
                  "Tokens to generate per row (default 32)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-length", opts.options.max_length,
                  "Stop when a row is this long, prompt included (default: no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--eos-token-id", opts.options.eos_token_id,
                  "A row that takes this id is finished (default: none)");
  cmd->add_option("--device", opts.device,
                  "The runner: reference (the CPU reference kernels, default), cuda, or another "
                  "registered one")
      ->check(CLI::IsMember(runtime::runnerNames()));
  cmd->add_option("--temperature", opts.options.sampling.temperature,
                  "0: greedy (default); above 0: sample from softmax(logits / T)");
  cmd->add_option("--top-k", opts.options.sampling.top_k,
                  "Sample among the K most likely tokens (default 0: all)");
  cmd->add_option("--top-p", opts.options.sampling.top_p,
                  "Sample among the fewest most likely tokens whose probability reaches P "
                  "(default 1)");
  cmd->add_option("--seed", opts.options.sampling.seed, "Seed of the sampling (default 0)");
  cmd->add_flag("--stream", opts.stream, "Print each step's tokens as it is taken");
  return cmd;
}

int generateCommand(const GenerateCommandOptions& opts) {
  auto prompt = parsePrompt(opts);
  if (!prompt.isOk()) return usage(prompt.status());
  StreamDiagnosticSink diagnostics(std::cerr);
  io::LoadLimits limits;
  limits.diagnostics = &diagnostics;
  auto model = io::loadModel(opts.model, limits);
  if (!model.isOk()) return fail(model.status());
  GenerateRequest request;
  request.prompt = std::move(prompt).value();
  request.options = opts.options;
  request.runner = opts.device;
  request.model_path = opts.model;
  runtime::TokenCallback stream;
  if (opts.stream) {
    stream = [](int64_t step, const std::vector<int64_t>& tokens) {
      fmt::print("step {}: {}\n", step, fmt::join(tokens, ","));
      std::fflush(stdout);
      return true;
    };
  }
  auto result = generate(**model, request, stream);
  if (!result.isOk()) return fail(result.status());
  for (size_t r = 0; r < result->sequences.size(); ++r) {
    fmt::print("ids {}: {}\n", r, fmt::join(result->sequences[r], ","));
  }
  printStats(result->stats);
  return 0;
}

}  // namespace onnxopt::tools
