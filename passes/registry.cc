#include "onnxopt/passes/registry.h"

namespace onnxopt::passes {

#define ONNXOPT_PASS(factory) std::unique_ptr<pass::Pass> factory();
#include "registry.def"
#undef ONNXOPT_PASS

namespace {
using Factory = std::unique_ptr<pass::Pass> (*)();
constexpr Factory kFactories[] = {
#define ONNXOPT_PASS(factory) &factory,
#include "registry.def"
#undef ONNXOPT_PASS
};
}  // namespace

std::unique_ptr<pass::Pass> createPass(const std::string& id) {
  for (Factory f : kFactories) {
    auto p = f();
    if (p->id() == id) return p;
  }
  return nullptr;
}

std::vector<std::unique_ptr<pass::Pass>> allPasses() {
  std::vector<std::unique_ptr<pass::Pass>> out;
  for (Factory f : kFactories) out.push_back(f());
  return out;
}

}  // namespace onnxopt::passes
