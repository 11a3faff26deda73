#include "onnxopt/runtime/check.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

namespace onnxopt::runtime {
namespace {

bool isFloat(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

/// Rank of a float type by the width of its default tolerance: float < float16 < bfloat16.
int looseness(DataType t) {
  return t == DataType::kBfloat16 ? 3 : t == DataType::kFloat16 ? 2 : t == DataType::kFloat ? 1 : 0;
}

Tolerance toleranceFor(DataType dtype, const CompareOptions& options, DataType other = {}) {
  // Float values compare at the loosest of their types and the compute type: a float32 output of
  // a model computed in float16 is held to float16's tolerance, as is a value float32 in one run
  // and float16 in the other (--per-layer across a conversion).
  DataType use = dtype;
  if (isFloat(dtype)) {
    for (DataType t : {other, options.compute_type}) {
      if (isFloat(t) && looseness(t) > looseness(use)) use = t;
    }
  }
  Tolerance t = defaultTolerance(use);
  if (options.atol) t.atol = *options.atol;
  if (options.rtol) t.rtol = *options.rtol;
  return t;
}

std::string labelOf(const std::string& path, const char* fallback) {
  return path.empty() ? std::string(fallback) : path;
}

/// The context of an error from running a model: which model, then the caller's note.
Status runFailure(const Status& status, const std::string& label, const std::string& note) {
  return status.withContext(note.empty() ? label : label + " " + note);
}

/// Moves the values into feeds by name (and back with restoreInputs: inputs can be large).
Feeds takeFeeds(std::vector<InputValue>& inputs) {
  Feeds feeds;
  for (InputValue& in : inputs) feeds[in.name] = std::move(in.value);
  return feeds;
}
void restoreInputs(std::vector<InputValue>& inputs, Feeds& feeds) {
  for (InputValue& in : inputs) in.value = std::move(feeds[in.name]);
}

}  // namespace

DataType narrowestFloatType(const ir::Model& model) {
  DataType out = DataType::kUndefined;
  auto see = [&out](const ir::Value* v) {
    if (v == nullptr || !v->type().isTensor()) return;
    DataType t = v->type().elem_type;
    if (isFloat(t) && looseness(t) > looseness(out)) out = t;
  };
  for (const ir::Value* v : model.graph->initializers()) see(v);
  for (const ir::Node* n : *model.graph) {
    for (const ir::Value* v : n->outputs()) see(v);
    // A model saved without value types (convert-precision at -O0) still says so in its Casts.
    if (n->opType() == "Cast" && (n->domain().empty() || n->domain() == "ai.onnx")) {
      if (const ir::Attribute* to = n->findAttribute("to")) {
        auto t = static_cast<DataType>(to->i);
        if (isFloat(t) && looseness(t) > looseness(out)) out = t;
      }
    }
  }
  return out;
}

ModelComparison compareRuns(const ExecutionResult& expected, const ExecutionResult& actual,
                            const CompareOptions& options) {
  ModelComparison result;
  result.passed = true;
  for (size_t i = 0; i < expected.names.size(); ++i) {
    const std::string& name = expected.names[i];
    auto j = static_cast<size_t>(std::find(actual.names.begin(), actual.names.end(), name) -
                                 actual.names.begin());
    TensorComparison c;
    if (j == actual.names.size()) {
      c.name = name;
      c.dtype = expected.outputs[i].dtype;
      c.dims = expected.outputs[i].dims;
      c.problem = "missing from the optimized model";
    } else {
      c = compareTensors(name, expected.outputs[i], actual.outputs[j],
                         toleranceFor(expected.outputs[i].dtype, options, actual.outputs[j].dtype));
    }
    result.passed &= c.passed;
    result.outputs.push_back(std::move(c));
  }
  if (!options.per_layer) return result;
  std::map<std::string, const kernels::HostTensor*> before;
  for (const RecordedValue& v : expected.intermediates) before[v.name] = &v.value;
  for (const RecordedValue& v : actual.intermediates) {
    auto it = before.find(v.name);
    if (it == before.end()) continue;
    // One name, but not one value (a layout the optimizer changed under it, say): pairing them
    // would report a difference that is no error.
    if (std::string why = incomparable(*it->second, v.value); !why.empty()) {
      TensorComparison c;
      c.name = v.name;
      c.dtype = it->second->dtype;
      c.dims = it->second->dims;
      c.problem = std::move(why);
      result.unpaired.push_back(std::move(c));
      continue;
    }
    TensorComparison c = compareTensors(v.name, *it->second, v.value,
                                        toleranceFor(it->second->dtype, options, v.value.dtype));
    if (!c.passed && result.first_failing_layer.empty()) {
      result.first_failing_layer = v.name;
      result.first_failing_op = v.op;
    }
    result.layers.push_back(std::move(c));
  }
  return result;
}

StatusOr<ModelComparison> compareModels(Executor& original, Executor& optimized, const Feeds& feeds,
                                        const CompareOptions& options) {
  ExecutionOptions exec;
  exec.record_intermediates = options.per_layer;
  auto expected = original.run(feeds, exec);
  if (!expected.isOk()) {
    return runFailure(expected.status(), "the original model",
                      "(the " + original.name() + " runner)");
  }
  auto actual = optimized.run(feeds, exec);
  if (!actual.isOk()) {
    return runFailure(actual.status(), "the optimized model",
                      "(the " + optimized.name() + " runner)");
  }
  return compareRuns(*expected, *actual, options);
}

Status checkSameInputs(const ir::Model& original, const ir::Model& optimized,
                       const CheckOptions& options) {
  std::string original_label = labelOf(options.original_path, "the original model");
  std::string optimized_label = labelOf(options.optimized_path, "the optimized model");
  for (const ir::Value* in : original.graph->inputs()) {
    if (in->initializer() != nullptr) continue;
    const ir::Value* found = nullptr;
    for (const ir::Value* o : optimized.graph->inputs()) {
      if (o->name() == in->name()) found = o;
    }
    if (found == nullptr) {
      return invalidArgument("{}: input '{}' of {} is missing", optimized_label, in->name(),
                             original_label);
    }
    const ir::Type &a = in->type(), &b = found->type();
    if (a.isTensor() && b.isTensor() && a.elem_type != DataType::kUndefined &&
        b.elem_type != DataType::kUndefined && a.elem_type != b.elem_type) {
      return invalidArgument("{}: input '{}' is {}, but {} in {}", optimized_label, in->name(),
                             dataTypeName(b.elem_type), dataTypeName(a.elem_type), original_label);
    }
  }
  return Status::ok();
}

StatusOr<CheckResult> checkModels(const ir::Model& original, const ir::Model& optimized,
                                  const CheckOptions& options) {
  if (!hasRunner(options.runner)) return createExecutor(options.runner, original).status();
  const std::string& expected_runner = options.against.empty() ? options.runner : options.against;
  if (!hasRunner(expected_runner)) return createExecutor(expected_runner, original).status();
  RETURN_IF_ERROR(checkSameInputs(original, optimized, options));
  std::string original_label = labelOf(options.original_path, "the original model");
  std::string optimized_label = labelOf(options.optimized_path, "the optimized model");
  const ir::Graph& graph = *original.graph;
  auto inputOf = [&](const std::string& name) -> const ir::Value* {
    for (const ir::Value* in : graph.inputs()) {
      if (in->name() == name) return in;
    }
    return nullptr;
  };
  for (const auto& [name, value] : options.inputs) {
    const ir::Value* in = inputOf(name);
    if (in == nullptr) return invalidArgument("{} has no input '{}'", original_label, name);
    RETURN_IF_ERROR(checkGivenInput(*in, value, fmt::format("the value of input '{}'", name)));
  }
  for (const auto& [name, dims] : options.shapes) {
    const ir::Value* in = inputOf(name);
    if (in == nullptr) return invalidArgument("{} has no input '{}'", original_label, name);
    RETURN_IF_ERROR(checkPinnedShape(*in, dims, fmt::format("the shape of input '{}'", name)));
  }
  // Named symbolic dims get 2, so that broadcasting and attention see more than one element;
  // spatial dims of inputs feeding a convolution or pooling get enough for every window.
  RandomInputOptions random = randomInputOptions(graph, options.seed, options.shapes, 2);
  ExecutionOptions exec;
  exec.record_intermediates = options.compare.per_layer;
  exec.limits = options.limits;
  CheckResult result;
  result.runner = options.against.empty() || options.against == options.runner
                      ? options.runner
                      : options.runner + " against " + options.against;
  result.seed = options.seed;
  Feeds feeds;
  std::unique_ptr<Executor> original_exec;
  std::optional<ExecutionResult> expected;
  // A model whose spatial sizes were guessed too small for its windows is retried with larger
  // ones (a Reshape to a fixed size or a pooling the guess does not see); other failures stand.
  for (int attempt = 0;; ++attempt) {
    // Symbols and lengths follow the sizes of this attempt.
    if (attempt > 0) deriveInputSizes(graph, random);
    auto made = makeInputs(graph, options.inputs, random);
    if (!made.isOk()) return made.status().withContext(original_label);
    result.inputs = std::move(made).value();
    feeds = takeFeeds(result.inputs);
    if (original_exec == nullptr) {
      // An executor may check the model as it prepares it (the cuda runner uploads the weights).
      auto made_exec = createExecutor(expected_runner, {&original, options.original_path});
      if (!made_exec.isOk()) {
        return runFailure(made_exec.status(), original_label, options.failure_note);
      }
      original_exec = std::move(made_exec).value();
    }
    auto run = original_exec->run(feeds, exec);
    if (run.isOk()) {
      expected = std::move(run).value();
      break;
    }
    bool grew = false;
    for (auto& [name, size] : random.spatial) {
      if (options.inputs.count(name) || random.shapes.count(name)) continue;
      const ir::Value* in = inputOf(name);
      int64_t cap =
          in != nullptr && in->type().shape ? maxSpatialSize(in->type().shape->size()) : size;
      if (size < cap) {
        size = std::min(size * 2, cap);
        grew = true;
      }
    }
    if (!grew || attempt >= 4) {
      return runFailure(run.status(), original_label, options.failure_note);
    }
  }
  auto optimized_exec = createExecutor(options.runner, {&optimized, options.optimized_path});
  if (!optimized_exec.isOk()) {
    return runFailure(optimized_exec.status(), optimized_label, options.failure_note);
  }
  auto actual = (*optimized_exec)->run(feeds, exec);
  if (!actual.isOk()) {
    return runFailure(actual.status(), optimized_label, options.failure_note);
  }
  CompareOptions compare = options.compare;
  if (compare.compute_type == DataType::kUndefined) {
    compare.compute_type = narrowestFloatType(optimized);
  }
  static_cast<ModelComparison&>(result) = compareRuns(*expected, *actual, compare);
  restoreInputs(result.inputs, feeds);
  return result;
}

}  // namespace onnxopt::runtime
