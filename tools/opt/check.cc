#include "check.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "inputs.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/runtime/reference_executor.h"

#ifndef ONNXOPT_ORT_RUNNER_SOURCE
#define ONNXOPT_ORT_RUNNER_SOURCE ""
#endif
#ifndef ONNXOPT_ORT_RUNNER_INSTALLED
#define ONNXOPT_ORT_RUNNER_INSTALLED ""
#endif

namespace onnxopt::tools {
namespace {

namespace fs = std::filesystem;

/// Named values from one run: the outputs, then (per-layer) the intermediates.
struct RunValues {
  std::vector<std::string> output_names;
  std::vector<kernels::HostTensor> outputs;
  std::vector<std::pair<std::string, kernels::HostTensor>> intermediates;
};

/// A temporary folder, removed with its contents when this goes out of scope.
class TempDir {
 public:
  static StatusOr<TempDir> create() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base ? base : "/tmp") + "/onnxopt-check-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return makeError(StatusCode::kInternal, "cannot create a temporary folder under {}",
                       pattern.substr(0, pattern.rfind('/')));
    }
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

/// Runs argv (no shell), waits, and returns the exit status; stderr goes to `err_file`.
StatusOr<int> runProcess(const std::vector<std::string>& argv, const std::string& err_file) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return makeError(StatusCode::kInternal, "cannot start {}", argv[0]);
  if (pid == 0) {
    int fd = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, STDERR_FILENO);
      dup2(fd, STDOUT_FILENO);
      close(fd);
    }
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return makeError(StatusCode::kInternal, "waitpid failed");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// The last non-empty line of a file (where a Python error message ends).
std::string lastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

StatusOr<std::string> ortRunnerScript() {
  const char* env = std::getenv("ONNXOPT_ORT_RUNNER");
  for (const char* candidate :
       {static_cast<const char*>(env), ONNXOPT_ORT_RUNNER_INSTALLED, ONNXOPT_ORT_RUNNER_SOURCE}) {
    if (candidate != nullptr && *candidate && fs::is_regular_file(candidate)) {
      return std::string(candidate);
    }
  }
  return makeError(StatusCode::kNotFound,
                   "the onnxruntime runner helper (ort_runner.py) is not installed; set "
                   "ONNXOPT_ORT_RUNNER to its path");
}

bool isTextModel(const std::string& path) {
  auto ends = [&](const char* s) {
    std::string suffix(s);
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".onnxtxt") || ends(".txt");
}

StatusOr<RunValues> runWithOnnxruntime(const std::string& path, const ir::Model& model,
                                       const std::map<std::string, kernels::HostTensor>& feeds,
                                       bool per_layer) {
  ASSIGN_OR_RETURN(std::string script, ortRunnerScript());
  ASSIGN_OR_RETURN(TempDir tmp, TempDir::create());
  std::string model_path = path;
  if (isTextModel(path) || !fs::is_regular_file(path)) {  // onnxruntime reads binary files only
    model_path = tmp.path() + "/model.onnx";
    RETURN_IF_ERROR(io::saveModel(model, model_path));
  }
  std::string in_dir = tmp.path() + "/in", out_dir = tmp.path() + "/out";
  fs::create_directories(in_dir);
  std::string names;
  size_t i = 0;
  for (const auto& [name, tensor] : feeds) {
    RETURN_IF_ERROR(writeNpy(fmt::format("{}/input_{}.npy", in_dir, i++), tensor));
    names += name + "\n";
  }
  RETURN_IF_ERROR(io::writeFileAtomically(in_dir + "/inputs.txt", names));
  const char* python = std::getenv("ONNXOPT_PYTHON");
  std::vector<std::string> argv{python != nullptr && *python ? python : "python3", script,
                                model_path, in_dir, out_dir};
  if (per_layer) argv.push_back("--all-values");
  std::string err = tmp.path() + "/stderr.txt";
  ASSIGN_OR_RETURN(int code, runProcess(argv, err));
  if (code != 0) {
    std::string why = lastLine(err);
    if (code == 127) why = fmt::format("cannot run '{}' (set ONNXOPT_PYTHON)", argv[0]);
    return makeError(StatusCode::kIoError, "onnxruntime runner: {}", why);
  }
  std::ifstream listing(out_dir + "/outputs.txt");
  std::map<std::string, kernels::HostTensor> by_name;
  std::string name;
  for (size_t k = 0; std::getline(listing, name); ++k) {
    ASSIGN_OR_RETURN(by_name[name], readTensorFile(fmt::format("{}/output_{}.npy", out_dir, k)));
  }
  RunValues values;
  for (const ir::Value* o : model.graph->outputs()) {
    auto it = by_name.find(o->name());
    if (it == by_name.end()) continue;  // not a tensor (sequence, map, string)
    values.output_names.push_back(o->name());
    values.outputs.push_back(it->second);
  }
  if (per_layer) {  // in node order, graph outputs included, as the reference runner gives them
    for (const ir::Node* n : *model.graph) {
      for (const ir::Value* v : n->outputs()) {
        if (v == nullptr) continue;
        auto it = by_name.find(v->name());
        if (it != by_name.end()) values.intermediates.emplace_back(v->name(), it->second);
      }
    }
  }
  return values;
}

StatusOr<RunValues> runModelWith(const std::string& runner, const std::string& path,
                                 const ir::Model& model,
                                 const std::map<std::string, kernels::HostTensor>& feeds,
                                 bool per_layer) {
  if (runner == "onnxruntime") return runWithOnnxruntime(path, model, feeds, per_layer);
  runtime::ExecutionOptions exec;
  exec.record_intermediates = per_layer;
  auto result = runtime::runModel(model, feeds, exec);
  if (!result.isOk()) {
    return result.status().withContext(
        fmt::format("{} (the reference runner; try --runner onnxruntime)", path));
  }
  return RunValues{std::move(result->names), std::move(result->outputs),
                   std::move(result->intermediates)};
}

runtime::Tolerance toleranceFor(DataType dtype, const CheckOptions& options) {
  runtime::Tolerance t = runtime::defaultTolerance(dtype);
  if (options.atol) t.atol = *options.atol;
  if (options.rtol) t.rtol = *options.rtol;
  return t;
}

std::string opProducing(const ir::Model& model, const std::string& name) {
  for (const ir::Node* n : *model.graph) {
    for (const ir::Value* v : n->outputs()) {
      if (v != nullptr && v->name() == name) return n->opType();
    }
  }
  return "";
}

}  // namespace

StatusOr<CheckResult> checkModels(const std::string& original_path, const ir::Model& original,
                                  const std::string& optimized_path, const ir::Model& optimized,
                                  const CheckOptions& options) {
  if (options.runner != "reference" && options.runner != "onnxruntime") {
    return invalidArgument("unknown runner '{}' (use reference or onnxruntime)", options.runner);
  }
  // Inputs: those of the original without a default; the optimized model must take the same.
  std::vector<const ir::Value*> needed;
  for (const ir::Value* in : original.graph->inputs()) {
    if (in->initializer() == nullptr) needed.push_back(in);
  }
  for (const ir::Value* in : needed) {
    const ir::Value* found = nullptr;
    for (const ir::Value* o : optimized.graph->inputs()) {
      if (o->name() == in->name()) found = o;
    }
    if (found == nullptr) {
      return invalidArgument("{}: input '{}' of {} is missing", optimized_path, in->name(),
                             original_path);
    }
    const ir::Type &a = in->type(), &b = found->type();
    if (a.isTensor() && b.isTensor() && a.elem_type != DataType::kUndefined &&
        b.elem_type != DataType::kUndefined && a.elem_type != b.elem_type) {
      return invalidArgument("{}: input '{}' is {}, but {} in {}", optimized_path, in->name(),
                             dataTypeName(b.elem_type), dataTypeName(a.elem_type), original_path);
    }
  }
  RETURN_IF_ERROR(checkInputNames(*original.graph, options.inputs, "--input"));
  RETURN_IF_ERROR(checkInputNames(*original.graph, options.shapes, "--input-shape"));
  ASSIGN_OR_RETURN(auto given, readInputSpecs(options.inputs));
  RandomInputOptions random;
  random.seed = options.seed;
  ASSIGN_OR_RETURN(random.shapes, parseShapeSpecs(options.shapes));
  for (const ir::Value* in : original.graph->inputs()) {
    if (auto it = given.find(in->name()); it != given.end()) {
      RETURN_IF_ERROR(checkGivenInput(*in, it->second, inputFileOf(options.inputs, in->name())));
    }
    if (auto it = random.shapes.find(in->name()); it != random.shapes.end()) {
      RETURN_IF_ERROR(checkPinnedShape(*in, it->second));
    }
  }
  // Named symbolic dims get 2, so that broadcasting and attention see more than one element;
  // spatial dims of inputs feeding a convolution or pooling get enough for every window.
  random.symbolic_dim = 2;
  random.spatial = spatialInputSizes(*original.graph);
  random.int_ranges = inferIntRanges(*original.graph);
  CheckResult result;
  result.runner = options.runner;
  result.seed = options.seed;
  std::map<std::string, kernels::HostTensor> feeds;
  std::optional<RunValues> expected_values;
  // A model whose spatial sizes were guessed too small for its windows is retried with larger
  // ones (a Reshape to a fixed size or a pooling the guess does not see); other failures stand.
  for (int attempt = 0;; ++attempt) {
    feeds.clear();
    result.inputs.clear();
    for (const ir::Value* in : needed) {
      std::vector<std::string> chosen;
      auto it = given.find(in->name());
      if (it != given.end()) {
        feeds[in->name()] = it->second;
      } else {
        auto t = randomInput(*in, random, &chosen);
        if (!t.isOk()) return t.status().withContext(original_path);
        feeds[in->name()] = std::move(t).value();
      }
      result.inputs.push_back({in->name(), summarize(in->name(), feeds[in->name()]),
                               fmt::format("{}", fmt::join(chosen, ", "))});
    }
    auto expected = runModelWith(options.runner, original_path, original, feeds, options.per_layer);
    if (expected.isOk()) {
      expected_values = std::move(expected).value();
      break;
    }
    bool grew = false;
    for (auto& [name, size] : random.spatial) {
      if (given.count(name) || random.shapes.count(name)) continue;
      const ir::Value* in = nullptr;
      for (const ir::Value* v : original.graph->inputs()) {
        if (v->name() == name) in = v;
      }
      int64_t cap =
          in != nullptr && in->type().shape ? maxSpatialSize(in->type().shape->size()) : size;
      if (size < cap) {
        size = std::min(size * 2, cap);
        grew = true;
      }
    }
    if (!grew || attempt >= 4) return expected.status();
  }
  RunValues& expected = *expected_values;
  ASSIGN_OR_RETURN(RunValues actual, runModelWith(options.runner, optimized_path, optimized, feeds,
                                                  options.per_layer));
  result.passed = true;
  for (size_t i = 0; i < expected.output_names.size(); ++i) {
    const std::string& name = expected.output_names[i];
    size_t j = 0;
    while (j < actual.output_names.size() && actual.output_names[j] != name) ++j;
    runtime::TensorComparison c;
    if (j == actual.output_names.size()) {
      c.name = name;
      c.dtype = expected.outputs[i].dtype;
      c.dims = expected.outputs[i].dims;
      c.problem = "missing from the optimized model";
    } else {
      c = runtime::compareTensors(name, expected.outputs[i], actual.outputs[j],
                                  toleranceFor(expected.outputs[i].dtype, options));
    }
    result.passed &= c.passed;
    result.outputs.push_back(std::move(c));
  }
  if (options.per_layer) {
    std::map<std::string, const kernels::HostTensor*> before;
    for (const auto& [name, t] : expected.intermediates) before[name] = &t;
    for (const auto& [name, t] : actual.intermediates) {
      auto it = before.find(name);
      if (it == before.end()) continue;
      runtime::TensorComparison c =
          runtime::compareTensors(name, *it->second, t, toleranceFor(it->second->dtype, options));
      if (!c.passed && result.first_failing_layer.empty()) {
        result.first_failing_layer = name;
        result.first_failing_op = opProducing(optimized, name);
      }
      result.layers.push_back(std::move(c));
    }
  }
  return result;
}

std::string formatCheck(const CheckResult& r) {
  std::string out = fmt::format("check: runner {}, seed {}\n", r.runner, r.seed);
  for (const CheckInput& in : r.inputs) out += fmt::format("input  {}\n", in.summary);
  for (const CheckInput& in : r.inputs) {
    if (!in.dynamic_dims.empty()) {
      out += fmt::format("dims   {}: {} (dynamic; pin with --input-shape)\n", in.name,
                         in.dynamic_dims);
    }
  }
  auto row = [](const runtime::TensorComparison& c) {
    std::string verdict = c.passed ? "pass" : "FAIL";
    if (!c.problem.empty()) {
      return fmt::format("  {:<40} {}: {}\n", c.name, verdict, c.problem);
    }
    return fmt::format(
        "  {:<40} {:<8} {:>10.3g} {:>10.3g} {:>10.3g} {:>10.6f} {:>9.0e}/{:<7.0e} {}\n", c.name,
        dataTypeName(c.dtype), c.max_abs, c.max_rel, c.mean_abs, c.cosine, c.tolerance.atol,
        c.tolerance.rtol, verdict);
  };
  std::string header =
      fmt::format("  {:<40} {:<8} {:>10} {:>10} {:>10} {:>10} {:>17} {}\n", "value", "type",
                  "max abs", "max rel", "mean abs", "cosine", "atol/rtol", "result");
  out += "outputs:\n" + header;
  for (const auto& c : r.outputs) out += row(c);
  if (!r.layers.empty()) {
    out += fmt::format("per layer ({} values in both models, in the optimized model's order):\n",
                       r.layers.size());
    out += header;
    for (const auto& c : r.layers) out += row(c);
    if (!r.first_failing_layer.empty()) {
      out +=
          fmt::format("first value past tolerance: '{}'{}\n", r.first_failing_layer,
                      r.first_failing_op.empty() ? "" : fmt::format(" ({})", r.first_failing_op));
    } else {
      out += "every shared value is within tolerance\n";
    }
  }
  std::vector<std::string> failed;
  for (const auto& c : r.outputs) {
    if (!c.passed) failed.push_back("'" + c.name + "'");
  }
  out += failed.empty() ? fmt::format("check: passed ({} outputs)\n", r.outputs.size())
                        : fmt::format("check: FAILED: output{} {} past tolerance\n",
                                      failed.size() > 1 ? "s" : "", fmt::join(failed, ", "));
  return out;
}

}  // namespace onnxopt::tools
