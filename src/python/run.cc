// check, run and generate: a model (or two) read, prepared for a runner and run without the GIL;
// the results cross back as Python lists and dicts.
#include <exception>

#include "module_shared.h"

namespace onnxopt::python {

nb::dict comparisonToPython(const runtime::TensorComparison& c) {
  nb::dict d;
  d["name"] = c.name;
  d["dtype"] = dataTypeName(c.dtype);
  d["shape"] = c.dims;
  d["max_abs_error"] = c.max_abs;
  d["max_rel_error"] = c.max_rel;
  d["mean_abs_error"] = c.mean_abs;
  d["cosine_similarity"] = c.cosine;
  d["atol"] = c.tolerance.atol;
  d["rtol"] = c.tolerance.rtol;
  d["mismatches"] = c.mismatches;
  d["passed"] = c.passed;
  d["problem"] = c.problem;
  return d;
}

/// run's and check's max_iterations and max_memory (None: RunLimits' defaults).
runtime::RunLimits runLimits(std::optional<int64_t> max_iterations,
                             std::optional<uint64_t> max_memory) {
  runtime::RunLimits limits;
  if (max_iterations) {
    if (*max_iterations < 1) throw StatusError(invalidArgument("max_iterations must be positive"));
    limits.max_iterations = *max_iterations;
  }
  if (max_memory) {
    if (*max_memory < 1) throw StatusError(invalidArgument("max_memory must be positive"));
    limits.max_memory = *max_memory;
  }
  return limits;
}

nb::dict checkModels(const Source& original_src, const Source& optimized_src,
                     const runtime::Feeds& given, const std::string& runner, bool per_layer,
                     std::optional<double> atol, std::optional<double> rtol, uint64_t seed,
                     const runtime::RunLimits& limits) {
  runtime::CheckResult result;
  {
    nb::gil_scoped_release unlocked;
    if (!runtime::hasRunner(runner)) {
      throw StatusError(invalidArgument("no runner '{}' (runners: {})", runner,
                                        fmt::join(runtime::runnerNames(), ", ")));
    }
    auto original = loadSource(original_src, nullptr);
    auto optimized = loadSource(optimized_src, nullptr);
    throwIfError(prepareForRunner(*original, runner).withContext(original_src.label()));
    throwIfError(prepareForRunner(*optimized, runner).withContext(optimized_src.label()));
    checkFeedNames(*original, given, original_src.label());
    runtime::CheckOptions options;
    options.runner = runner;
    options.inputs = given;
    options.seed = seed;
    options.compare.atol = atol;
    options.compare.rtol = rtol;
    options.compare.per_layer = per_layer;
    options.limits = limits;
    options.original_path = original_src.path.value_or("");
    options.optimized_path = optimized_src.path.value_or("");
    result = valueOrThrow(runtime::checkModels(*original, *optimized, options));
  }
  nb::dict d;
  d["runner"] = result.runner;
  d["seed"] = result.seed;
  d["passed"] = result.passed;
  nb::list inputs;
  for (const runtime::InputValue& in : result.inputs) {
    nb::dict i;
    i["name"] = in.name;
    i["dtype"] = dataTypeName(in.value.dtype);
    i["shape"] = in.value.dims;
    i["dynamic_dims"] = in.dynamic_dims;
    inputs.append(i);
  }
  d["inputs"] = inputs;
  nb::list outputs, layers;
  for (const auto& c : result.outputs) outputs.append(comparisonToPython(c));
  for (const auto& c : result.layers) layers.append(comparisonToPython(c));
  d["outputs"] = outputs;
  d["per_layer"] = layers;
  d["first_failing_value"] = result.first_failing_layer;
  d["first_failing_op"] = result.first_failing_op;
  return d;
}

nb::list runModel(const Source& src, const runtime::Feeds& given, const std::string& runner,
                  uint64_t seed, const runtime::RunLimits& limits) {
  runtime::ExecutionResult result;
  {
    nb::gil_scoped_release unlocked;
    auto model = loadSource(src, nullptr);
    throwIfError(prepareForRunner(*model, runner).withContext(src.label()));
    checkFeedNames(*model, given, src.label());
    runtime::Feeds feeds = completeFeeds(*model, given, seed, src.label());
    auto executor =
        valueOrThrow(runtime::createExecutor(runner, {model.get(), src.path.value_or("")}));
    runtime::ExecutionOptions exec;
    exec.non_tensor_outputs = true;
    exec.limits = limits;
    auto ran = executor->run(feeds, exec);
    if (!ran.isOk()) throw StatusError(ran.status().withContext(src.label()));
    result = std::move(ran).value();
  }
  return resultToPython(std::move(result));
}

namespace {

nb::dict statsToPython(const runtime::GenerationStats& s) {
  nb::dict d;
  d["batch"] = s.batch;
  d["prompt_tokens"] = s.prompt_tokens;
  d["prefilled"] = s.prefilled;
  d["prefill_ms"] = s.prefill_ms;
  d["decode_steps"] = s.decode_steps;
  d["decode_ms"] = s.decode_ms;
  d["decode_tokens_per_second"] = s.decodeTokensPerSecond();
  return d;
}

}  // namespace

nb::tuple generateIds(const Source& src, std::vector<std::vector<int64_t>> input_ids,
                      std::vector<std::vector<int64_t>> attention_mask, const GenerateArgs& args,
                      nb::object callback) {
  // An exception of the callback ends the generation and is raised once the GIL is back.
  std::exception_ptr raised;
  runtime::TokenCallback stream;
  if (!callback.is_none()) {
    stream = [&](int64_t step, const std::vector<int64_t>& tokens) {
      nb::gil_scoped_acquire locked;
      try {
        nb::object r = callback(step, tokens);
        return r.is_none() || nb::cast<bool>(r);
      } catch (...) {
        raised = std::current_exception();
        return false;
      }
    };
  }
  GenerateResult result;
  {
    nb::gil_scoped_release unlocked;
    auto model = loadSource(src, nullptr);
    GenerateRequest request;
    request.prompt = {std::move(input_ids), std::move(attention_mask)};
    request.options = args.options;
    request.runner = args.runner;
    request.model_path = src.label();
    result = valueOrThrow(generate(*model, request, stream));
  }
  if (raised) std::rethrow_exception(raised);
  return nb::make_tuple(result.sequences, statsToPython(result.stats));
}

GeneratorSession::GeneratorSession(const Source& src, const GenerateArgs& args)
    : label_(src.label()) {
  nb::gil_scoped_release unlocked;
  model_ = loadSource(src, nullptr, Lifetime::kOwn);
  generator_ = valueOrThrow(createGenerator(*model_, args.runner, args.options, label_));
}

void GeneratorSession::start(std::vector<std::vector<int64_t>> input_ids,
                             std::vector<std::vector<int64_t>> attention_mask) {
  nb::gil_scoped_release unlocked;
  std::lock_guard<std::mutex> lock(mu_);
  throwIfError(generator_->start({std::move(input_ids), std::move(attention_mask)}));
}

std::vector<int64_t> GeneratorSession::step() {
  nb::gil_scoped_release unlocked;
  std::lock_guard<std::mutex> lock(mu_);
  return valueOrThrow(generator_->step());
}

bool GeneratorSession::done() {
  nb::gil_scoped_release unlocked;
  std::lock_guard<std::mutex> lock(mu_);
  return generator_->done();
}

std::vector<std::vector<int64_t>> GeneratorSession::sequences() {
  nb::gil_scoped_release unlocked;
  std::lock_guard<std::mutex> lock(mu_);
  return generator_->sequences();
}

nb::dict GeneratorSession::stats() {
  runtime::GenerationStats stats;
  {
    nb::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    stats = generator_->stats();
  }
  return statsToPython(stats);
}

}  // namespace onnxopt::python
