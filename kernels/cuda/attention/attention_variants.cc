// Attention's variant table (attention_variants.h): each row's predicate, workspace and launch,
// the walk that picks one, and the environment's overrides mapped onto row names.
#include "kernels/cuda/attention/attention_variants.h"

#include <fmt/format.h>

#include <cstdlib>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

namespace {

Support flashApplies(const AttentionDeviceArgs& d) {
  if (flashAttentionApplies(d)) return Support::yes();
  return Support::no(
      "flash: needs fp16/bf16, head sizes 64 or 128 (Q, K, V alike) and no past/present, "
      "qk_matmul_output, nonpad_kv_seqlen or softcap");
}

/// The split-key kernel pays for its extra reduction only where the plain grid leaves SMs idle.
Support splitWorthwhile(const AttentionDeviceArgs& d, const AttentionDevice& device) {
  const int64_t blocks = flashAttentionBlocks(d);
  if (blocks < device.sm_count) return Support::yes();
  return Support::no(
      fmt::format("flash-split: {} blocks fill the device's {} SMs", blocks, device.sm_count));
}

Support mmaApplies(const AttentionDeviceArgs& d) {
  if (Support s = flashApplies(d); !s) return s;
  if (flashAttentionAligned(d)) return Support::yes();
  return Support::no("flash-mma: Q, K, V or Y is not 16-byte aligned");
}

Support gemmApplies(const AttentionDeviceArgs& d) {
  if (gemmAttentionApplies(d)) return Support::yes();
  return Support::no(
      "cublaslt-gemm: needs no past/present, qk_matmul_output, nonpad_kv_seqlen or softcap, as "
      "many key/value heads as query heads and float scores within 1 GiB");
}

Support always(const AttentionDeviceArgs&) {
  return Support::yes();
}

size_t noWorkspace(const AttentionDeviceArgs&) {
  return 0;
}

template <FlashKernel kWhich>
Status launchFlash(const AttentionArgs& args, const AttentionDeviceArgs& d,
                   CudaDeviceContext& ctx) {
  ONNXOPT_CUDA_CHECK(launchFlashAttention(d, kWhich, streamOf(ctx.stream())), args.op);
  return Status::ok();
}

Status launchFused(const AttentionArgs& args, const AttentionDeviceArgs& d,
                   CudaDeviceContext& ctx) {
  ONNXOPT_CUDA_CHECK(launchAttention(d, streamOf(ctx.stream())), args.op);
  return Status::ok();
}

const AttentionVariant kVariants[] = {
    {"flash-split", &flashApplies, &splitWorthwhile, &noWorkspace,
     &launchFlash<FlashKernel::kSplit>},
    {"flash-mma", &mmaApplies, nullptr, &noWorkspace, &launchFlash<FlashKernel::kMma>},
    {"flash-wmma", &flashApplies, nullptr, &noWorkspace, &launchFlash<FlashKernel::kWmma>},
    {"cublaslt-gemm", &gemmApplies, nullptr, &gemmAttentionWorkspace, &launchGemmAttention},
    {"fused", &always, nullptr, &noWorkspace, &launchFused},
};

bool skipped(const AttentionOverride& o, const char* name) {
  for (const std::string& s : o.skip) {
    if (s == name) return true;
  }
  return false;
}

std::string envOf(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

}  // namespace

std::span<const AttentionVariant> attentionVariants() {
  return kVariants;
}

const AttentionVariant* findAttentionVariant(const std::string& name) {
  for (const AttentionVariant& v : kVariants) {
    if (name == v.name) return &v;
  }
  return nullptr;
}

AttentionOverride attentionOverrideFromEnv() {
  AttentionOverride o;
  o.prefer = envOf("ONNXOPT_ATTENTION_VARIANT");
  // The older switches: ONNXOPT_FLASH_SPLIT=1 forces the split-key kernel, any other value turns
  // it off; ONNXOPT_FLASH_MMA=0 keeps the WMMA kernel where mma.sync would run.
  if (std::string split = envOf("ONNXOPT_FLASH_SPLIT"); !split.empty()) {
    if (split[0] == '1' && o.prefer.empty()) {
      o.prefer = "flash-split";
    } else if (split[0] != '1') {
      o.skip.emplace_back("flash-split");
    }
  }
  if (std::string mma = envOf("ONNXOPT_FLASH_MMA"); !mma.empty() && mma[0] == '0') {
    o.skip.emplace_back("flash-mma");
  }
  return o;
}

StatusOr<const AttentionVariant*> chooseAttentionVariant(const AttentionDeviceArgs& d,
                                                         const AttentionDevice& device,
                                                         const AttentionOverride& override) {
  if (!override.prefer.empty()) {
    const AttentionVariant* preferred = findAttentionVariant(override.prefer);
    if (preferred == nullptr) {
      std::vector<std::string> names;
      for (const AttentionVariant& v : kVariants) names.emplace_back(v.name);
      return invalidArgument("Attention: no variant '{}' (ONNXOPT_ATTENTION_VARIANT); the rows: {}",
                             override.prefer, fmt::join(names, ", "));
    }
    if (preferred->applies(d)) return preferred;
  }
  for (const AttentionVariant& v : kVariants) {
    if (skipped(override, v.name) || !v.applies(d)) continue;
    if (v.worthwhile != nullptr && !v.worthwhile(d, device)) continue;
    return &v;
  }
  return makeError(StatusCode::kInternal, "Attention: no variant runs these arguments");
}

}  // namespace onnxopt::kernels::cuda
