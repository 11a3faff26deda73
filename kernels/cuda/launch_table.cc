// The launch table (CUDA builds): kernels/cuda/ops.def expanded into one entry per row. An entry
// prepares a node's kernel (CUTLASS's can_implement / initialize / run): it parses the node into its
// family's XArgs once (argsFromCall), asks the family's canImplement, workspaceBytes and
// variantName once, and keeps the parsed arguments in a PreparedCudaKernel whose run() calls the
// family's launch with the device context, so that a launch never parses its node again. A row
// whose family has no XArgs, parser or launch does not build, so the capability table never claims
// a kernel this table lacks.
#include <fmt/format.h>

#include <cstdint>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/elementwise/binary.h"
#include "kernels/cuda/elementwise/cast.h"
#include "kernels/cuda/elementwise/glu.h"
#include "kernels/cuda/elementwise/unary.h"
#include "kernels/cuda/elementwise/where.h"
#include "kernels/cuda/gemm/matmul.h"
#include "onnxopt/kernels/cuda.h"
// attn: fused Attention and Einsum
#include "kernels/cuda/attention/attention.h"
#include "kernels/cuda/attention/rotary.h"
#include "kernels/cuda/gemm/einsum.h"
// reductions, scans, TopK, fills
#include "kernels/cuda/elementwise/fill.h"
#include "kernels/cuda/elementwise/variadic.h"
#include "kernels/cuda/reduce/arg_reduce.h"
#include "kernels/cuda/reduce/reduce.h"
#include "kernels/cuda/reduce/scan.h"
#include "kernels/cuda/reduce/topk.h"
// data movement and indexing (engineer "move")
#include "kernels/cuda/movement/concat.h"
#include "kernels/cuda/movement/expand.h"
#include "kernels/cuda/movement/gather.h"
#include "kernels/cuda/movement/pad.h"
#include "kernels/cuda/movement/scatter.h"
#include "kernels/cuda/movement/slice.h"
#include "kernels/cuda/movement/split.h"
#include "kernels/cuda/movement/tile.h"
#include "kernels/cuda/movement/transpose.h"
#include "kernels/cuda/movement/trilu.h"
// The recurrent family, QuantizeLinear/DequantizeLinear and the integer products.
#include "kernels/cuda/gemm/quant_matmul.h"
#include "kernels/cuda/quant/quantize.h"
#include "kernels/cuda/rnn/rnn.h"
// normalization family and Resize
#include "kernels/cuda/movement/resize.h"
#include "kernels/cuda/norm/norm.h"
#include "kernels/cuda/reduce/softmax.h"
// conv family (cuDNN): Conv, ConvTranspose; the pools; ConvInteger, QLinearConv; RoiAlign
#include "kernels/cuda/conv/conv.h"
#include "kernels/cuda/conv/pool.h"
#include "kernels/cuda/conv/quant_conv.h"
#include "kernels/cuda/conv/roi_align.h"

namespace onnxopt::kernels {

namespace {

using cuda::argsFromCall;

/// A family's calls, with the device context where the family takes one (the families that use
/// a library handle, a cache or the SM count) and its stream otherwise.
template <typename Args>
struct Family {
  static StatusOr<size_t> workspace(const Args& args, CudaDeviceContext& ctx) {
    if constexpr (requires(CudaDeviceContext & c) { cuda::workspaceBytes(args, c); }) {
      return cuda::workspaceBytes(args, ctx);
    } else {
      return cuda::workspaceBytes(args);
    }
  }
  static Status launch(const Args& args, CudaDeviceContext& ctx) {
    if constexpr (requires(CudaDeviceContext & c) { cuda::launch(args, c); }) {
      return cuda::launch(args, ctx);
    } else {
      return cuda::launch(args, ctx.stream());
    }
  }
  /// The family's variantName where it has one (a table of variants), else empty.
  static std::string variant(const Args& args, int sm_count) {
    if constexpr (requires { cuda::variantName(args, sm_count); }) {
      return cuda::variantName(args, sm_count);
    } else {
      return {};
    }
  }
  /// Whether the family's arguments carry the workspace pointer (those whose workspace may be
  /// nonzero).
  static constexpr bool kTakesWorkspace = requires(Args & a) {
    a.workspace = nullptr;
    a.workspace_bytes = size_t{0};
  };
};

/// A kernel that refuses its node (no kernel, a call that does not parse, canImplement's no):
/// run() returns `why` (the parser's error as launch returned it, or the refusal).
class RefusedKernel final : public PreparedCudaKernel {
 public:
  explicit RefusedKernel(Support support) : support_(std::move(support)) {
    why_ = cuda::refused(support_);
  }
  RefusedKernel(Support support, Status why) : support_(std::move(support)), why_(std::move(why)) {}
  const Support& support() const override { return support_; }
  size_t workspaceBytes() const override { return 0; }
  void setWorkspace(void*, size_t) override {}
  const std::string& variant() const override { return variant_; }
  Status run(CudaDeviceContext&) const override { return why_; }

 private:
  Support support_;
  Status why_ = Status::ok();
  std::string variant_;
};

StatusOr<std::unique_ptr<PreparedCudaKernel>> refusedKernel(Support support) {
  return std::unique_ptr<PreparedCudaKernel>(std::make_unique<RefusedKernel>(std::move(support)));
}

/// A built-in family's prepared kernel: the parsed arguments, the answers asked once.
template <typename Args>
class PreparedFamilyKernel final : public PreparedCudaKernel {
 public:
  PreparedFamilyKernel(Args args, size_t workspace, std::string variant)
      : args_(std::move(args)), workspace_(workspace), variant_(std::move(variant)) {}

  const Support& support() const override { return support_; }
  size_t workspaceBytes() const override { return workspace_; }
  void setWorkspace(void* workspace, size_t bytes) override {
    if constexpr (Family<Args>::kTakesWorkspace) {
      args_.workspace = workspace;
      args_.workspace_bytes = bytes;
    }
  }
  const std::string& variant() const override { return variant_; }
  Status run(CudaDeviceContext& ctx) const override { return Family<Args>::launch(args_, ctx); }

 private:
  Support support_ = Support::yes();
  Args args_;
  size_t workspace_ = 0;
  std::string variant_;
};

template <typename Args>
StatusOr<std::unique_ptr<PreparedCudaKernel>> prepareFamily(const CudaKernelCall& call,
                                                            CudaDeviceContext& ctx) {
  StatusOr<Args> args = argsFromCall<Args>(call);
  if (!args.isOk()) {
    return std::unique_ptr<PreparedCudaKernel>(
        std::make_unique<RefusedKernel>(Support::no(args.status().message()), args.status()));
  }
  if (Support s = cuda::canImplement(*args); !s) return refusedKernel(std::move(s));
  ASSIGN_OR_RETURN(size_t workspace, Family<Args>::workspace(*args, ctx));
  if (workspace > 0 && !Family<Args>::kTakesWorkspace) {
    return makeError(StatusCode::kInternal,
                     "{}: the kernel asks for {} bytes of workspace it has no pointer for", call.op,
                     workspace);
  }
  std::string variant = Family<Args>::variant(*args, ctx.smCount());
  auto kernel =
      std::make_unique<PreparedFamilyKernel<Args>>(std::move(args).value(), workspace, variant);
  kernel->setWorkspace(call.workspace, call.workspace_bytes);
  return std::unique_ptr<PreparedCudaKernel>(std::move(kernel));
}

/// A family's answers for one call without a prepared kernel (cudaCanImplement and the
/// one-off queries of tests): canImplement on the host; workspaceBytes and variantName with a
/// device context made for the call where the family's need one.
template <typename Args>
struct OneOff {
  static Support check(const CudaKernelCall& call) {
    StatusOr<Args> args = argsFromCall<Args>(call);
    if (!args.isOk()) return Support::no(args.status().message());
    return cuda::canImplement(*args);
  }
  static StatusOr<size_t> workspace(const CudaKernelCall& call) {
    ASSIGN_OR_RETURN(Args args, argsFromCall<Args>(call));
    if constexpr (requires(CudaDeviceContext & c) { cuda::workspaceBytes(args, c); }) {
      ASSIGN_OR_RETURN(std::unique_ptr<CudaDeviceContext> ctx, CudaDeviceContext::create(nullptr));
      return cuda::workspaceBytes(args, *ctx);
    } else {
      return cuda::workspaceBytes(args);
    }
  }
  static std::string variant(const CudaKernelCall& call) {
    if constexpr (requires(const Args& a) { cuda::variantName(a, 0); }) {
      StatusOr<Args> args = argsFromCall<Args>(call);
      if (!args.isOk()) return {};
      // The SM count of the current device where there is one (0 otherwise: no split variant).
      auto ctx = CudaDeviceContext::create(nullptr);
      return cuda::variantName(*args, ctx.isOk() ? (*ctx)->smCount() : 0);
    } else {
      return {};
    }
  }
};

struct LaunchEntry {
  const char* domain;
  const char* op;
  int64_t since;
  int64_t until;
  Support (*check)(const CudaKernelCall&);
  StatusOr<size_t> (*workspace)(const CudaKernelCall&);
  std::string (*variant)(const CudaKernelCall&);
  StatusOr<std::unique_ptr<PreparedCudaKernel>> (*prepare)(const CudaKernelCall&,
                                                           CudaDeviceContext&);
};

constexpr int64_t kOpen = kCudaOpenOpset;

// The type and layout columns of ops.def are the capability table's (capabilities.cc).
#define CUDA_KERNEL(domain, op, since, until, family, ...) \
  LaunchEntry{domain,                                      \
              #op,                                         \
              since,                                       \
              until,                                       \
              &OneOff<cuda::family##Args>::check,          \
              &OneOff<cuda::family##Args>::workspace,      \
              &OneOff<cuda::family##Args>::variant,        \
              &prepareFamily<cuda::family##Args>},
const LaunchEntry kLaunchTable[] = {
#include "ops.def"
};
#undef CUDA_KERNEL

bool isDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

const LaunchEntry* findEntry(const std::string& domain, const std::string& op, int64_t opset) {
  for (const LaunchEntry& e : kLaunchTable) {
    if (e.op != op || isDefaultDomain(e.domain) != isDefaultDomain(domain)) continue;
    if (!isDefaultDomain(domain) && domain != e.domain) continue;
    if (opset >= e.since && opset <= e.until) return &e;
  }
  return nullptr;
}

Support noKernel(const CudaKernelCall& call) {
  return Support::no(fmt::format("no CUDA kernel for {} at opset {}", call.op, call.opset));
}

}  // namespace

bool hasCudaLaunch(const std::string& domain, const std::string& op, int64_t opset) {
  return findEntry(domain, op, opset) != nullptr ||
         findCudaPluginKernel(domain, op, opset) != nullptr;
}

Support cudaCanImplement(const CudaKernelCall& call) {
  const LaunchEntry* e = findEntry(call.domain, call.op, call.opset);
  if (e != nullptr) return e->check(call);
  const CudaPluginKernel* plugin = findCudaPluginKernel(call.domain, call.op, call.opset);
  if (plugin == nullptr) return noKernel(call);
  return plugin->can_implement ? plugin->can_implement(call) : Support::yes();
}

StatusOr<std::unique_ptr<PreparedCudaKernel>> prepareCudaKernel(const CudaKernelCall& call,
                                                                CudaDeviceContext& ctx) {
  const LaunchEntry* e = findEntry(call.domain, call.op, call.opset);
  if (e != nullptr) return e->prepare(call, ctx);
  const CudaPluginKernel* plugin = findCudaPluginKernel(call.domain, call.op, call.opset);
  if (plugin == nullptr) return refusedKernel(noKernel(call));
  return preparePluginKernel(*plugin, call);
}

StatusOr<size_t> cudaWorkspaceBytes(const CudaKernelCall& call) {
  const LaunchEntry* e = findEntry(call.domain, call.op, call.opset);
  if (e != nullptr) return e->workspace(call);
  const CudaPluginKernel* plugin = findCudaPluginKernel(call.domain, call.op, call.opset);
  if (plugin == nullptr) return cuda::refused(noKernel(call));
  return plugin->workspace_bytes ? plugin->workspace_bytes(call) : StatusOr<size_t>(size_t{0});
}

std::string cudaKernelVariant(const CudaKernelCall& call) {
  const LaunchEntry* e = findEntry(call.domain, call.op, call.opset);
  return e != nullptr ? e->variant(call) : std::string();
}

Status launchCudaKernel(const CudaKernelCall& call, CudaDeviceContext& ctx) {
  ASSIGN_OR_RETURN(std::unique_ptr<PreparedCudaKernel> kernel, prepareCudaKernel(call, ctx));
  return kernel->run(ctx);
}

Status launchCudaKernel(const CudaKernelCall& call, CudaStream stream) {
  // No kernel at all is said before any device is asked for.
  if (!hasCudaLaunch(call.domain, call.op, call.opset)) return cuda::refused(noKernel(call));
  ASSIGN_OR_RETURN(std::unique_ptr<CudaDeviceContext> ctx, CudaDeviceContext::create(stream));
  return launchCudaKernel(call, *ctx);
}

}  // namespace onnxopt::kernels
