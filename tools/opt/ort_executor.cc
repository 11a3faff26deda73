#include "ort_executor.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "inputs.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/runtime/executor.h"

#ifndef ONNXOPT_ORT_RUNNER_SOURCE
#define ONNXOPT_ORT_RUNNER_SOURCE ""
#endif
#ifndef ONNXOPT_ORT_RUNNER_INSTALLED
#define ONNXOPT_ORT_RUNNER_INSTALLED ""
#endif

namespace onnxopt::tools {
namespace {

namespace fs = std::filesystem;

// setOnnxruntimeRunnerDefaults; set once at startup, before any run.
std::string& defaultScript() {
  static std::string script;
  return script;
}
std::string& defaultPython() {
  static std::string python;
  return python;
}

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
  for (const char* candidate : {static_cast<const char*>(env), defaultScript().c_str(),
                                ONNXOPT_ORT_RUNNER_INSTALLED, ONNXOPT_ORT_RUNNER_SOURCE}) {
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

class OnnxruntimeExecutor final : public runtime::Executor {
 public:
  static StatusOr<std::unique_ptr<runtime::Executor>> create(
      const runtime::ExecutorSource& source) {
    ASSIGN_OR_RETURN(std::string script, ortRunnerScript());
    ASSIGN_OR_RETURN(TempDir tmp, TempDir::create());
    std::string model_path = source.model_path;
    // onnxruntime reads binary files only: others are written out once, for every run.
    if (isTextModel(model_path) || !fs::is_regular_file(model_path)) {
      model_path = tmp.path() + "/model.onnx";
      RETURN_IF_ERROR(io::saveModel(*source.model, model_path));
    }
    return std::unique_ptr<runtime::Executor>(new OnnxruntimeExecutor(
        *source.model, std::move(script), std::move(model_path), std::move(tmp)));
  }

  std::string name() const override { return "onnxruntime"; }

  StatusOr<runtime::ExecutionResult> run(const runtime::Feeds& feeds,
                                         const runtime::ExecutionOptions& options) override {
    std::string dir = fmt::format("{}/run{}", tmp_.path(), runs_++);
    std::string in_dir = dir + "/in", out_dir = dir + "/out";
    fs::create_directories(in_dir);
    std::string names;
    size_t i = 0;
    for (const auto& [name, tensor] : feeds) {
      RETURN_IF_ERROR(writeNpy(fmt::format("{}/input_{}.npy", in_dir, i++), tensor));
      names += name + "\n";
    }
    RETURN_IF_ERROR(io::writeFileAtomically(in_dir + "/inputs.txt", names));
    const char* python = std::getenv("ONNXOPT_PYTHON");
    std::string interpreter = python != nullptr && *python ? python : defaultPython();
    if (interpreter.empty()) interpreter = "python3";
    std::vector<std::string> argv{interpreter, script_, model_path_, in_dir, out_dir};
    if (options.record_intermediates) argv.push_back("--all-values");
    std::string err = dir + "/stderr.txt";
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
    runtime::ExecutionResult result;
    for (const ir::Value* o : model_.graph->outputs()) {
      auto it = by_name.find(o->name());
      if (it == by_name.end()) continue;  // not a tensor (sequence, map, string)
      result.names.push_back(o->name());
      result.outputs.push_back(it->second);
    }
    if (options.record_intermediates) {
      // In node order, graph outputs included, as the reference executor records them.
      for (const ir::Node* n : *model_.graph) {
        for (const ir::Value* v : n->outputs()) {
          if (v == nullptr) continue;
          auto it = by_name.find(v->name());
          if (it != by_name.end())
            result.intermediates.push_back({v->name(), n->opType(), it->second});
        }
      }
    }
    fs::remove_all(dir);
    return result;
  }

 private:
  OnnxruntimeExecutor(const ir::Model& model, std::string script, std::string model_path,
                      TempDir tmp)
      : model_(model),
        script_(std::move(script)),
        model_path_(std::move(model_path)),
        tmp_(std::move(tmp)) {}

  const ir::Model& model_;
  std::string script_;
  std::string model_path_;
  TempDir tmp_;
  int runs_ = 0;
};

}  // namespace

void setOnnxruntimeRunnerDefaults(const std::string& script, const std::string& python) {
  defaultScript() = script;
  defaultPython() = python;
}

void registerOnnxruntimeRunner() {
  Status st = runtime::registerRunner("onnxruntime", &OnnxruntimeExecutor::create);
  ONNXOPT_CHECK(st.isOk(), "registering the onnxruntime runner failed");
}

}  // namespace onnxopt::tools
