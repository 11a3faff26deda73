#include "onnxopt/passes/registry.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <unordered_map>

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

namespace {
std::vector<std::string>& pipelineIds() {
  static std::vector<std::string> ids;
  return ids;
}
std::vector<std::shared_ptr<const ir::Function>>& opFunctions() {
  static std::vector<std::shared_ptr<const ir::Function>> fns;
  return fns;
}
}  // namespace

void registerPipelinePass(const std::string& id) {
  std::lock_guard<std::mutex> lock(extraMutex());
  auto& ids = pipelineIds();
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

std::vector<std::string> pipelinePasses() {
  std::lock_guard<std::mutex> lock(extraMutex());
  return pipelineIds();
}

Status registerOpFunction(std::shared_ptr<const ir::Function> fn) {
  if (fn == nullptr || fn->body == nullptr) return invalidArgument("registerOpFunction: no body");
  std::lock_guard<std::mutex> lock(extraMutex());
  for (const auto& f : opFunctions()) {
    if (f->domain == fn->domain && f->name == fn->name) {
      return invalidArgument("the function of {}.{} is registered twice", fn->domain, fn->name);
    }
  }
  opFunctions().push_back(std::move(fn));
  return Status::ok();
}

StatusOr<int64_t> attachRegisteredFunctions(ir::Model& model) {
  std::vector<std::shared_ptr<const ir::Function>> fns;
  {
    std::lock_guard<std::mutex> lock(extraMutex());
    fns = opFunctions();
  }
  if (fns.empty()) return int64_t{0};
  std::set<std::pair<std::string, std::string>> called;
  for (ir::Graph* g : rewrite::allGraphs(model, /*include_functions=*/true)) {
    for (const ir::Node* n : *g) called.insert({n->domain(), n->opType()});
  }
  rewrite::Rewriter rw;
  int64_t added = 0;
  int64_t opset = model.opsetVersion("").value_or(0);
  for (const auto& fn : fns) {
    if (called.count({fn->domain, fn->name}) == 0) continue;
    bool present = std::any_of(model.functions.begin(), model.functions.end(), [&](const auto& f) {
      return f->domain == fn->domain && f->name == fn->name;
    });
    if (present) continue;
    std::vector<ir::Value*> outs = fn->body->outputs();
    std::vector<ir::OpsetImport> imports = fn->opset_imports;
    for (auto& imp : imports) {
      if ((imp.domain.empty() || imp.domain == "ai.onnx") && opset > 0) imp.version = opset;
    }
    auto copy = rewrite::copyToFunction(*fn->body, fn->domain, fn->name,
                                        {fn->body->inputs().begin(), fn->body->inputs().end()},
                                        {outs.begin(), outs.end()}, fn->attribute_names, imports);
    copy->doc_string = fn->doc_string;
    if (!model.opsetVersion(fn->domain)) rw.addOpsetImport(model, fn->domain, 1);
    rw.addFunction(model, std::move(copy));
    ++added;
  }
  return added;
}

std::unique_ptr<pass::Pass> createPass(const std::string& id) {
  // The factory of each id (the first one that makes it), found once: looking one up by making
  // every pass cost a third of optimizing a small model (some 40 lookups per pipeline). Built
  // again after a plugin registers more factories (none is ever removed). Factories run under
  // the index's own lock, never under the registry's.
  static std::mutex index_mu;
  static std::unordered_map<std::string, PassFactory> by_id;
  static size_t indexed = 0;
  size_t count = 0;
  {
    std::lock_guard<std::mutex> lock(extraMutex());
    count = std::size(kFactories) + extraFactories().size();
  }
  PassFactory factory = nullptr;
  {
    std::lock_guard<std::mutex> lock(index_mu);
    if (indexed != count) {
      std::vector<PassFactory> all = factories();
      by_id.clear();
      for (PassFactory f : all) by_id.emplace(f()->id(), f);
      indexed = all.size();
    }
    auto it = by_id.find(id);
    if (it != by_id.end()) factory = it->second;
  }
  return factory != nullptr ? factory() : nullptr;
}

std::vector<std::unique_ptr<pass::Pass>> allPasses() {
  std::vector<std::unique_ptr<pass::Pass>> out;
  for (PassFactory f : factories()) out.push_back(f());
  return out;
}

}  // namespace onnxopt::passes
