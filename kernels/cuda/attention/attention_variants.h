// Attention's variants as one table (attention_variants.cc), walked in order: the first row whose
// `applies` holds (and whose `worthwhile` heuristic, if any, agrees) runs the node. The order is
// the preference: the tensor-core flash kernels, then cuBLASLt products around a softmax kernel,
// then the fused CUDA-core kernel that runs everything canImplement accepts.
//
//   flash-split    fp16/bf16, head size 64 or 128, no caches/qk output/nonpad/softcap; only where
//                  the grid has fewer blocks than the GPU has SMs
//   flash-mma      as flash-split, operands 16-byte aligned (mma.sync)
//   flash-wmma     as flash-split (WMMA)
//   cublaslt-gemm  no caches/qk output/nonpad/softcap, Hq == Hkv, float scores within 1 GiB
//   fused          always
//
// Overrides (environment): ONNXOPT_ATTENTION_VARIANT=NAME takes row NAME where it applies;
// ONNXOPT_FLASH_SPLIT=1 is ONNXOPT_ATTENTION_VARIANT=flash-split, ONNXOPT_FLASH_SPLIT=0 skips
// flash-split, ONNXOPT_FLASH_MMA=0 skips flash-mma.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kernels/cuda/attention/attention.h"

namespace onnxopt::kernels::cuda {

/// What a row's heuristic may ask of the device (a host test fills it in).
struct AttentionDevice {
  int sm_count = 0;  ///< 0: unknown (no split-key variant)
};

struct AttentionVariant {
  const char* name;
  /// Whether the row can run these arguments (why not, when not); host-only.
  Support (*applies)(const AttentionDeviceArgs& d);
  /// Whether the row is the better choice on `device` (nullptr: always); an override that names
  /// the row bypasses it.
  Support (*worthwhile)(const AttentionDeviceArgs& d, const AttentionDevice& device);
  size_t (*workspace)(const AttentionDeviceArgs& d);
  Status (*launch)(const AttentionArgs& args, const AttentionDeviceArgs& d, CudaDeviceContext& ctx);
};

/// The rows, in the order of preference.
std::span<const AttentionVariant> attentionVariants();

/// The row named `name`, or nullptr.
const AttentionVariant* findAttentionVariant(const std::string& name);

/// The environment's overrides as rows: `prefer` (empty: none), the rows to skip.
struct AttentionOverride {
  std::string prefer;
  std::vector<std::string> skip;
};

/// ONNXOPT_ATTENTION_VARIANT, ONNXOPT_FLASH_SPLIT and ONNXOPT_FLASH_MMA (file comment), read now.
AttentionOverride attentionOverrideFromEnv();

/// The row that runs `d`: the preferred row where it applies, else the first row not skipped
/// whose applies and worthwhile hold. kInvalidArgument for an override naming no row.
StatusOr<const AttentionVariant*> chooseAttentionVariant(const AttentionDeviceArgs& d,
                                                         const AttentionDevice& device,
                                                         const AttentionOverride& override);

/// The device arguments of `args` (attention.cc), or why the kernel cannot run them.
StatusOr<AttentionDeviceArgs> attentionDeviceArgs(const AttentionArgs& args);

/// cublaslt-gemm (attention_gemm.cc): whether it applies, its workspace, its launch.
bool gemmAttentionApplies(const AttentionDeviceArgs& d);
size_t gemmAttentionWorkspace(const AttentionDeviceArgs& d);
Status launchGemmAttention(const AttentionArgs& args, const AttentionDeviceArgs& d,
                           CudaDeviceContext& ctx);

}  // namespace onnxopt::kernels::cuda
