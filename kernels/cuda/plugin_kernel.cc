// A plugin's CUDA kernel prepared for one call (preparePluginKernel, include/onnxopt/kernels/
// cuda.h): host C++ in every build, since plugins register into the process that loads the CUDA
// provider, and the provider's launch table sees none of them.
#include <memory>
#include <string>
#include <utility>

#include "onnxopt/kernels/cuda.h"

namespace onnxopt::kernels {

namespace {

/// The call kept (with its own pointers), the plugin's answers asked once.
class PreparedPluginKernel final : public PreparedCudaKernel {
 public:
  PreparedPluginKernel(const CudaPluginKernel& plugin, const CudaKernelCall& call, Support support,
                       size_t workspace)
      : plugin_(plugin), call_(call), support_(std::move(support)), workspace_(workspace) {}
  const Support& support() const override { return support_; }
  size_t workspaceBytes() const override { return workspace_; }
  void setWorkspace(void* workspace, size_t bytes) override {
    call_.workspace = workspace;
    call_.workspace_bytes = bytes;
  }
  const std::string& variant() const override { return variant_; }
  Status run(CudaDeviceContext& ctx) const override {
    if (!support_) return Status(StatusCode::kUnimplemented, support_.reason);
    return plugin_.launch(call_, ctx.stream());
  }

 private:
  const CudaPluginKernel& plugin_;
  CudaKernelCall call_;
  Support support_;
  size_t workspace_ = 0;
  std::string variant_;
};

}  // namespace

StatusOr<std::unique_ptr<PreparedCudaKernel>> preparePluginKernel(const CudaPluginKernel& plugin,
                                                                  const CudaKernelCall& call) {
  Support s = plugin.can_implement ? plugin.can_implement(call) : Support::yes();
  size_t workspace = 0;
  if (s && plugin.workspace_bytes) {
    ASSIGN_OR_RETURN(workspace, plugin.workspace_bytes(call));
  }
  return std::unique_ptr<PreparedCudaKernel>(
      std::make_unique<PreparedPluginKernel>(plugin, call, std::move(s), workspace));
}

}  // namespace onnxopt::kernels
