// Finding and loading libonnxopt_cuda.so (provider.h), and createCudaDeviceApi over it: the
// provider's device with the process's plugin kernels in front of the built-in launch table.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "device_api.h"
#include "provider.h"

namespace onnxopt::runtime::cuda_detail {
namespace {

Status notLoaded(const std::string& why) {
  return Status(StatusCode::kUnimplemented, "the CUDA runtime could not be loaded: " + why);
}

/// The folder of the object (executable or shared library) this code was linked into.
std::filesystem::path ownFolder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&loadCudaProvider), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  std::error_code ec;
  std::filesystem::path self = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::filesystem::path() : self.parent_path();
}

/// The file to load: the first of these that exists, beside this object (a wheel), in its ../lib
/// (the build tree and an install: bin/opt, lib/libonnxopt_cuda.so); else the bare name, which the
/// dynamic linker searches for (LD_LIBRARY_PATH, the caller's RUNPATH, the system folders). The
/// first found is the one loaded: a provider there that fails (libcudnn missing) is reported, not
/// hidden behind a later "not found".
std::string providerPath() {
  if (const char* forced = std::getenv(kCudaProviderEnv); forced != nullptr && *forced != '\0') {
    return forced;
  }
  std::filesystem::path folder = ownFolder();
  if (!folder.empty()) {
    for (const std::filesystem::path& p :
         {folder / kCudaProviderFile, folder.parent_path() / "lib" / kCudaProviderFile}) {
      if (std::filesystem::exists(p)) return p.string();
    }
  }
  return kCudaProviderFile;
}

StatusOr<const CudaProviderV1*> openProvider(const std::string& path) {
  // RTLD_NOW: a missing libcudnn or symbol fails here, with dlerror's text, not mid-run.
  // RTLD_LOCAL: the provider's copies of the layers stay its own. Never closed: executors and
  // their devices hold its code.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return notLoaded(why != nullptr ? why : path);
  }
  void* entry = dlsym(handle, kCudaProviderEntry);
  if (entry == nullptr) {
    return notLoaded(fmt::format("{}: no entry point {} (not an onnxopt CUDA provider)", path,
                                 kCudaProviderEntry));
  }
  const CudaProviderV1* table = reinterpret_cast<OnnxoptCudaProviderEntry>(entry)();
  if (table == nullptr || table->abi != kCudaProviderAbi ||
      std::string(table->onnxopt_version != nullptr ? table->onnxopt_version : "") !=
          ONNXOPT_VERSION ||
      table->create_device_api == nullptr) {
    return notLoaded(fmt::format(
        "{}: built for onnxopt {} (provider ABI {}), this is onnxopt {} (ABI {})", path,
        table != nullptr && table->onnxopt_version != nullptr ? table->onnxopt_version : "?",
        table != nullptr ? table->abi : 0, ONNXOPT_VERSION, kCudaProviderAbi));
  }
  return table;
}

/// The provider's device with plugin kernels (kernels::registerCudaKernel, a registry of this
/// process that the provider cannot see) answered here, before the built-in table.
class PluginKernelDevice : public DeviceApi {
 public:
  explicit PluginKernelDevice(std::unique_ptr<DeviceApi> inner) : inner_(std::move(inner)) {}
  StatusOr<kernels::CudaDeviceInfo> probe() override { return inner_->probe(); }
  StatusOr<void*> allocate(size_t bytes) override { return inner_->allocate(bytes); }
  void release(void* data) override { inner_->release(data); }
  StatusOr<void*> allocateHost(size_t bytes) override { return inner_->allocateHost(bytes); }
  void releaseHost(void* data) override { inner_->releaseHost(data); }
  Status copyToDevice(void* dst, const void* src, size_t bytes) override {
    return inner_->copyToDevice(dst, src, bytes);
  }
  Status copyToHost(void* dst, const void* src, size_t bytes) override {
    return inner_->copyToHost(dst, src, bytes);
  }
  Status fill(void* dst, int value, size_t bytes) override {
    return inner_->fill(dst, value, bytes);
  }
  Status copyOnDevice(void* dst, const void* src, size_t bytes) override {
    return inner_->copyOnDevice(dst, src, bytes);
  }
  void* nativeStream() override { return inner_->nativeStream(); }
  Status synchronize(const std::string& what) override { return inner_->synchronize(what); }
  kernels::Support canImplement(const kernels::CudaKernelCall& call) override {
    const kernels::CudaPluginKernel* plugin = findPlugin(call);
    if (plugin == nullptr) return inner_->canImplement(call);
    return plugin->can_implement ? plugin->can_implement(call) : kernels::Support::yes();
  }
  StatusOr<std::unique_ptr<kernels::PreparedCudaKernel>> prepare(
      const kernels::CudaKernelCall& call) override {
    const kernels::CudaPluginKernel* plugin = findPlugin(call);
    if (plugin == nullptr) return inner_->prepare(call);
    return kernels::preparePluginKernel(*plugin, call);
  }
  // A plugin's prepared kernel is code of this process: the provider's launch calls its run()
  // with the provider's context, whose stream it launches on.
  Status launch(const kernels::PreparedCudaKernel& kernel) override {
    return inner_->launch(kernel);
  }
  StatusOr<size_t> recordMarker() override { return inner_->recordMarker(); }
  StatusOr<double> elapsedMs(size_t from, size_t to) override {
    return inner_->elapsedMs(from, to);
  }
  void clearMarkers() override { inner_->clearMarkers(); }
  Status beginCapture() override { return inner_->beginCapture(); }
  StatusOr<std::unique_ptr<CapturedGraph>> endCapture() override { return inner_->endCapture(); }
  Status replay(const CapturedGraph& graph) override { return inner_->replay(graph); }

 private:
  static const kernels::CudaPluginKernel* findPlugin(const kernels::CudaKernelCall& call) {
    return kernels::findCudaPluginKernel(call.domain, call.op, call.opset);
  }
  std::unique_ptr<DeviceApi> inner_;
};

}  // namespace

StatusOr<const CudaProviderV1*> loadCudaProvider() {
  // The loaded library is process state by nature (dlopen keeps it either way); only a success
  // is remembered, so that a fixed environment is seen by the next attempt.
  static std::mutex mu;
  static const CudaProviderV1* loaded = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded != nullptr) return loaded;
  ASSIGN_OR_RETURN(loaded, openProvider(providerPath()));
  return loaded;
}

StatusOr<std::unique_ptr<DeviceApi>> createCudaDeviceApi(
    int device_id, [[maybe_unused]] const kernels::CudaContextOptions& options) {
#if ONNXOPT_CUDA_PROVIDER_BUILT
  auto provider = loadCudaProvider();
  if (!provider.isOk()) return provider.status().withContext("cuda runner");
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceApi> device,
                   provider.value()->create_device_api(device_id, options));
  return std::unique_ptr<DeviceApi>(std::make_unique<PluginKernelDevice>(std::move(device)));
#else
  return Status(StatusCode::kUnimplemented,
                fmt::format("cuda runner: no usable CUDA device {}: cuda: onnxopt was built "
                            "without CUDA",
                            device_id));
#endif
}

}  // namespace onnxopt::runtime::cuda_detail
