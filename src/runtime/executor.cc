// The runner registry: an explicit table of the built-in runners, then those registered at run
// time (a static library drops self-registering objects nobody references, so there are none).
#include "onnxopt/runtime/executor.h"

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/reference_executor.h"

namespace onnxopt::runtime {
namespace {

StatusOr<std::unique_ptr<Executor>> createReference(const ExecutorSource& source) {
  return createReferenceExecutor(*source.model);
}

/// The CUDA executor with default options (device 0); its model must carry inferred types.
StatusOr<std::unique_ptr<Executor>> createCuda(const ExecutorSource& source) {
  return createCudaExecutor(*source.model);
}

struct BuiltinRunner {
  const char* name;
  StatusOr<std::unique_ptr<Executor>> (*create)(const ExecutorSource&);
};

constexpr BuiltinRunner kBuiltinRunners[] = {
    {"reference", &createReference},
    {"cuda", &createCuda},
};

struct RegisteredRunner {
  std::string name;
  ExecutorFactory factory;
};

std::mutex& registeredMutex() {
  static std::mutex mu;
  return mu;
}
std::vector<RegisteredRunner>& registered() {
  static std::vector<RegisteredRunner> runners;
  return runners;
}

const BuiltinRunner* findBuiltin(const std::string& name) {
  for (const BuiltinRunner& r : kBuiltinRunners) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

/// "a", "a or b", "a, b or c".
std::string orList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

Status registerRunner(const std::string& name, ExecutorFactory factory) {
  if (name.empty()) return invalidArgument("registerRunner: the name is empty");
  if (findBuiltin(name) != nullptr) {
    return invalidArgument("registerRunner: '{}' is a built-in runner", name);
  }
  if (!factory) return invalidArgument("registerRunner: '{}' has no factory", name);
  std::lock_guard<std::mutex> lock(registeredMutex());
  auto& runners = registered();
  auto it = std::find_if(runners.begin(), runners.end(),
                         [&](const RegisteredRunner& r) { return r.name == name; });
  if (it != runners.end()) {
    it->factory = std::move(factory);
  } else {
    runners.push_back({name, std::move(factory)});
  }
  return Status::ok();
}

std::vector<std::string> runnerNames() {
  std::vector<std::string> names;
  for (const BuiltinRunner& r : kBuiltinRunners) names.emplace_back(r.name);
  std::lock_guard<std::mutex> lock(registeredMutex());
  for (const RegisteredRunner& r : registered()) names.push_back(r.name);
  return names;
}

bool hasRunner(const std::string& name) {
  auto names = runnerNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

StatusOr<std::unique_ptr<Executor>> createExecutor(const std::string& name,
                                                   const ExecutorSource& source) {
  if (source.model == nullptr) {
    return invalidArgument("runner '{}': no model to create an executor from", name);
  }
  if (const BuiltinRunner* builtin = findBuiltin(name)) return builtin->create(source);
  ExecutorFactory factory;
  {
    std::lock_guard<std::mutex> lock(registeredMutex());
    for (const RegisteredRunner& r : registered()) {
      if (r.name == name) factory = r.factory;
    }
  }
  if (!factory) return invalidArgument("unknown runner '{}' (use {})", name, orList(runnerNames()));
  return factory(source);
}

StatusOr<std::unique_ptr<Executor>> createExecutor(const std::string& name,
                                                   const ir::Model& model) {
  ExecutorSource source;
  source.model = &model;
  return createExecutor(name, source);
}

}  // namespace onnxopt::runtime
