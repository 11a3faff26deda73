#include "onnxopt/passes/registry.h"

#include <algorithm>
#include <mutex>

namespace onnxopt::passes {

#define ONNXOPT_PASS(factory) std::unique_ptr<pass::Pass> factory();
#include "registry.def"
#undef ONNXOPT_PASS

namespace {
constexpr PassFactory kFactories[] = {
#define ONNXOPT_PASS(factory) &factory,
#include "registry.def"
#undef ONNXOPT_PASS
};

std::mutex& extraMutex() {
  static std::mutex mu;
  return mu;
}
std::vector<PassFactory>& extraFactories() {
  static std::vector<PassFactory> extra;
  return extra;
}

/// The built-in factories, then the registered ones.
std::vector<PassFactory> factories() {
  std::vector<PassFactory> out(std::begin(kFactories), std::end(kFactories));
  std::lock_guard<std::mutex> lock(extraMutex());
  out.insert(out.end(), extraFactories().begin(), extraFactories().end());
  return out;
}
}  // namespace

void registerPass(PassFactory factory) {
  std::lock_guard<std::mutex> lock(extraMutex());
  auto& extra = extraFactories();
  if (std::find(extra.begin(), extra.end(), factory) == extra.end()) extra.push_back(factory);
}

std::unique_ptr<pass::Pass> createPass(const std::string& id) {
  for (PassFactory f : factories()) {
    auto p = f();
    if (p->id() == id) return p;
  }
  return nullptr;
}

std::vector<std::unique_ptr<pass::Pass>> allPasses() {
  std::vector<std::unique_ptr<pass::Pass>> out;
  for (PassFactory f : factories()) out.push_back(f());
  return out;
}

}  // namespace onnxopt::passes
