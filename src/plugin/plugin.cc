// Plugin loading (include/onnxopt/plugin/plugin.h): dlopen, the entry point, the ABI check, then
// the registration collected, checked as a whole, and handed to the registries of each layer
// (passes, shape inference, reference and CUDA kernels, op functions).
#include "onnxopt/plugin/plugin.h"

#include <dlfcn.h>

#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "onnxopt/io/model_io.h"

namespace onnxopt::plugin {

namespace {

/// Domains that are not a plugin's to add to.
bool reservedDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx" || domain == "ai.onnx.ml" ||
         domain == "ai.onnx.preview" || domain == "ai.onnx.preview.training" ||
         domain == "ai.onnxopt";
}

class CollectingRegistry final : public Registry {
 public:
  void addPass(passes::PassFactory factory, bool in_default_pipeline) override {
    passes_.push_back({factory, in_default_pipeline});
  }
  void addOpSchema(OpSchema schema) override { schemas_.push_back(std::move(schema)); }
  void addReferenceKernel(kernels::ReferencePluginKernel kernel) override {
    reference_.push_back(std::move(kernel));
  }
  void addCudaKernel(kernels::CudaPluginKernel kernel) override {
    cuda_.push_back(std::move(kernel));
  }

  struct PassEntry {
    passes::PassFactory factory;
    bool in_default_pipeline;
  };
  std::vector<PassEntry> passes_;
  std::vector<OpSchema> schemas_;
  std::vector<kernels::ReferencePluginKernel> reference_;
  std::vector<kernels::CudaPluginKernel> cuda_;
};

std::mutex& pluginsMutex() {
  static std::mutex mu;
  return mu;
}
std::vector<PluginInfo>& plugins() {
  static std::vector<PluginInfo> list;
  return list;
}
/// Loaded libraries by canonical path, so that loading one twice registers it once.
std::map<std::string, PluginInfo>& byPath() {
  static std::map<std::string, PluginInfo> map;
  return map;
}

/// Parses an op's function body, which must define exactly `domain`.`op`.
StatusOr<std::shared_ptr<const ir::Function>> parseBody(const OpSchema& schema,
                                                        const std::string& where) {
  ASSIGN_OR_RETURN(
      ir::FunctionFile file,
      io::parseFunctionFile(schema.function_body, fmt::format("{} ({}.{} function body)", where,
                                                              schema.domain, schema.op)));
  if (file.model->functions.size() != 1 || file.model->functions[0]->domain != schema.domain ||
      file.model->functions[0]->name != schema.op) {
    return invalidArgument("{}: the function body of {}.{} must define one function, {}.{}", where,
                           schema.domain, schema.op, schema.domain, schema.op);
  }
  std::shared_ptr<ir::Model> owner(std::move(file.model));
  return std::shared_ptr<const ir::Function>(owner, owner->functions[0].get());
}

/// Checks everything `r` holds before any of it is registered.
Status checkRegistration(const CollectingRegistry& r, const std::string& where) {
  std::set<std::string> ids;
  for (const auto& p : r.passes_) {
    if (p.factory == nullptr) return invalidArgument("{}: a pass with no factory", where);
    auto pass = p.factory();
    if (pass == nullptr) return invalidArgument("{}: a pass factory returned no pass", where);
    if (!ids.insert(pass->id()).second || passes::createPass(pass->id()) != nullptr) {
      return invalidArgument("{}: pass '{}' exists already", where, pass->id());
    }
  }
  auto checkDomain = [&](const std::string& what, const std::string& domain,
                         const std::string& op) -> Status {
    if (reservedDomain(domain)) {
      return invalidArgument("{}: {} {}.{}: a plugin adds ops of its own domain, not '{}'", where,
                             what, domain, op, domain);
    }
    if (op.empty())
      return invalidArgument("{}: {} of domain '{}' has no op name", where, what, domain);
    return Status::ok();
  };
  for (const OpSchema& s : r.schemas_) {
    RETURN_IF_ERROR(checkDomain("op schema", s.domain, s.op));
    if (s.infer == nullptr) {
      return invalidArgument("{}: op schema {}.{} has no inference function", where, s.domain,
                             s.op);
    }
  }
  for (const auto& k : r.reference_) {
    RETURN_IF_ERROR(checkDomain("reference kernel", k.domain, k.op));
    if (!k.run)
      return invalidArgument("{}: reference kernel {}.{} has no run", where, k.domain, k.op);
  }
  for (const auto& k : r.cuda_) {
    RETURN_IF_ERROR(checkDomain("CUDA kernel", k.domain, k.op));
    if (!k.launch) {
      return invalidArgument("{}: CUDA kernel {}.{} has no launch", where, k.domain, k.op);
    }
  }
  return Status::ok();
}

}  // namespace

StatusOr<PluginInfo> registerPlugin(const OnnxoptPluginInfo& info, const std::string& origin) {
  if (info.abi_version != ONNXOPT_PLUGIN_ABI_VERSION) {
    return invalidArgument(
        "{}: the plugin was built for plugin ABI version {}, this onnxopt has version {}: "
        "rebuild it against this onnxopt's headers (include/onnxopt/plugin/plugin.h)",
        origin, info.abi_version, ONNXOPT_PLUGIN_ABI_VERSION);
  }
  if (info.register_plugin == nullptr) {
    return invalidArgument("{}: the plugin has no registration function", origin);
  }
  PluginInfo out;
  out.path = origin;
  out.name = info.name != nullptr ? info.name : "";
  out.version = info.version != nullptr ? info.version : "";
  const std::string where = fmt::format("plugin '{}' ({})", out.name, origin);
  CollectingRegistry r;
  try {
    info.register_plugin(r);
  } catch (const std::exception& e) {
    return invalidArgument("{}: registration threw: {}", where, e.what());
  } catch (...) {
    return invalidArgument("{}: registration threw", where);
  }
  RETURN_IF_ERROR(checkRegistration(r, where));
  std::vector<std::shared_ptr<const ir::Function>> bodies;
  for (const OpSchema& s : r.schemas_) {
    if (s.function_body.empty()) continue;
    ASSIGN_OR_RETURN(auto body, parseBody(s, where));
    bodies.push_back(std::move(body));
  }
  // Past the checks, a registry that still refuses (an op some other plugin registered) stops the
  // rest; what was registered before it stays (registrations cannot be taken back).
  for (const OpSchema& s : r.schemas_) {
    Status st = ir::registerOpInference(s.domain, s.op, s.since_version, s.infer);
    if (!st.isOk()) return st.withContext(where);
    out.ops.push_back(s.domain + "." + s.op);
  }
  for (auto& fn : bodies) {
    Status st = passes::registerOpFunction(fn);
    if (!st.isOk()) return st.withContext(where);
  }
  for (auto& k : r.reference_) {
    std::string label = "reference:" + k.domain + "." + k.op;
    Status st = kernels::registerReferenceKernel(std::move(k));
    if (!st.isOk()) return st.withContext(where);
    out.kernels.push_back(label);
  }
  for (auto& k : r.cuda_) {
    std::string label = "cuda:" + k.domain + "." + k.op;
    Status st = kernels::registerCudaKernel(std::move(k));
    if (!st.isOk()) return st.withContext(where);
    out.kernels.push_back(label);
  }
  for (const auto& p : r.passes_) {
    passes::registerPass(p.factory);
    std::string id = p.factory()->id();
    if (p.in_default_pipeline) passes::registerPipelinePass(id);
    out.passes.push_back(id);
  }
  std::lock_guard<std::mutex> lock(pluginsMutex());
  plugins().push_back(out);
  return out;
}

StatusOr<PluginInfo> loadPlugin(const std::string& path) {
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  if (ec) canonical = path;
  {
    std::lock_guard<std::mutex> lock(pluginsMutex());
    auto it = byPath().find(canonical);
    if (it != byPath().end()) return it->second;
  }
  if (!std::filesystem::exists(path)) {
    return makeError(StatusCode::kNotFound, "plugin {}: no such file", path);
  }
  // RTLD_NOW: an undefined symbol is an error here, not a crash later. The library is never
  // closed: its kernels and passes stay registered for the life of the process.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return invalidArgument("plugin {}: cannot load it: {}", path, why != nullptr ? why : "?");
  }
  void* entry = dlsym(handle, ONNXOPT_PLUGIN_ENTRY_POINT);
  if (entry == nullptr) {
    return invalidArgument(
        "plugin {}: not an onnxopt plugin (it has no {} entry point; see "
        "ONNXOPT_DEFINE_PLUGIN in include/onnxopt/plugin/plugin.h)",
        path, ONNXOPT_PLUGIN_ENTRY_POINT);
  }
  using EntryFn = const OnnxoptPluginInfo* (*)();
  const OnnxoptPluginInfo* info = reinterpret_cast<EntryFn>(entry)();
  if (info == nullptr) return invalidArgument("plugin {}: the entry point returned nothing", path);
  ASSIGN_OR_RETURN(PluginInfo out, registerPlugin(*info, path));
  std::lock_guard<std::mutex> lock(pluginsMutex());
  byPath()[canonical] = out;
  return out;
}

std::vector<PluginInfo> loadedPlugins() {
  std::lock_guard<std::mutex> lock(pluginsMutex());
  return plugins();
}

}  // namespace onnxopt::plugin
