// The launch table (CUDA builds): kernels/cuda/ops.def expanded into one entry per row, each
// parsing the node into its family's XArgs (argsFromCall) and calling the family's canImplement,
// workspaceBytes and launch. A row whose family has no XArgs, parser or launch does not build, so
// the capability table never claims a kernel this table lacks.
#include <fmt/format.h>

#include <cstdint>

#include "kernels/cuda/elementwise/binary.h"
#include "kernels/cuda/elementwise/cast.h"
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
// The recurrent family and QuantizeLinear/DequantizeLinear.
#include "kernels/cuda/quant/quantize.h"
#include "kernels/cuda/rnn/rnn.h"
// normalization family and Resize
#include "kernels/cuda/movement/resize.h"
#include "kernels/cuda/norm/norm.h"
#include "kernels/cuda/reduce/softmax.h"
// conv family (cuDNN): Conv, ConvTranspose; the pools; ConvInteger, QLinearConv
#include "kernels/cuda/conv/conv.h"
#include "kernels/cuda/conv/pool.h"
#include "kernels/cuda/conv/quant_conv.h"

namespace onnxopt::kernels {

namespace {

using cuda::argsFromCall;

struct LaunchEntry {
  const char* domain;
  const char* op;
  int64_t since;
  int64_t until;
  Support (*check)(const CudaKernelCall&);
  StatusOr<size_t> (*workspace)(const CudaKernelCall&);
  Status (*launch)(const CudaKernelCall&, CudaStream);
  std::string (*variant)(const CudaKernelCall&);
};

template <typename Args>
struct Family {
  static Support check(const CudaKernelCall& call) {
    StatusOr<Args> args = argsFromCall<Args>(call);
    if (!args.isOk()) return Support::no(args.status().message());
    return cuda::canImplement(*args);
  }
  static StatusOr<size_t> workspace(const CudaKernelCall& call) {
    ASSIGN_OR_RETURN(Args args, argsFromCall<Args>(call));
    return cuda::workspaceBytes(args);
  }
  static Status launch(const CudaKernelCall& call, CudaStream stream) {
    ASSIGN_OR_RETURN(Args args, argsFromCall<Args>(call));
    return cuda::launch(args, stream);
  }
  /// The family's variantName where it has one (a table of variants), else empty.
  static std::string variant(const CudaKernelCall& call) {
    if constexpr (requires(const Args& a) { cuda::variantName(a); }) {
      StatusOr<Args> args = argsFromCall<Args>(call);
      return args.isOk() ? cuda::variantName(*args) : std::string();
    } else {
      return {};
    }
  }
};

constexpr int64_t kOpen = kCudaOpenOpset;

// The type and layout columns of ops.def are the capability table's (capabilities.cc).
#define CUDA_KERNEL(domain, op, since, until, family, ...) \
  LaunchEntry{domain,                                      \
              #op,                                         \
              since,                                       \
              until,                                       \
              &Family<cuda::family##Args>::check,          \
              &Family<cuda::family##Args>::workspace,      \
              &Family<cuda::family##Args>::launch,         \
              &Family<cuda::family##Args>::variant},
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

Status launchCudaKernel(const CudaKernelCall& call, CudaStream stream) {
  const LaunchEntry* e = findEntry(call.domain, call.op, call.opset);
  if (e != nullptr) return e->launch(call, stream);
  const CudaPluginKernel* plugin = findCudaPluginKernel(call.domain, call.op, call.opset);
  if (plugin == nullptr) return cuda::refused(noKernel(call));
  if (Support s = plugin->can_implement ? plugin->can_implement(call) : Support::yes(); !s) {
    return cuda::refused(s);
  }
  return plugin->launch(call, stream);
}

}  // namespace onnxopt::kernels
