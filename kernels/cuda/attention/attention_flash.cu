// The flash-attention kernels' entry points (attention_device.h): which calls they take, and the
// dispatch on the variant, element type and head size. Three kernels compute the same thing on
// the tensor cores, fp16 or bf16 in, float accumulation and statistics: the wmma kernel and its
// split-key form (attention_flash_wmma.cu) and the register-resident mma.sync kernel
// (attention_flash_mma.cu); attention_variants.cc chooses among them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/attention/attention_flash.cuh"

namespace onnxopt::kernels::cuda {

namespace {

bool aligned16Elements(const void* p, const HeadStrides& s) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0 && s.batch % 8 == 0 && s.head % 8 == 0 &&
         s.seq % 8 == 0;
}

template <typename T>
cudaError_t launchFlashTyped(const AttentionDeviceArgs& a, FlashKernel which, bool vec,
                             cudaStream_t stream) {
  if (which == FlashKernel::kMma && !vec) return cudaErrorInvalidValue;
  switch (a.qk_size) {
    case 64:
      return which == FlashKernel::kMma
                 ? flash::launchMma<T, 64>(a, stream)
                 : flash::launchWmma<T, 64>(a, which == FlashKernel::kSplit, vec, stream);
    case 128:
      return which == FlashKernel::kMma
                 ? flash::launchMma<T, 128>(a, stream)
                 : flash::launchWmma<T, 128>(a, which == FlashKernel::kSplit, vec, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

bool flashAttentionApplies(const AttentionDeviceArgs& a) {
  return (a.dtype == DataType::kFloat16 || a.dtype == DataType::kBfloat16) &&
         (a.qk_size == 64 || a.qk_size == 128) && a.v_size == a.qk_size && a.past_key == nullptr &&
         a.present_key == nullptr && a.present_value == nullptr && a.qk_output == nullptr &&
         a.nonpad == nullptr && a.softcap == 0.0f && a.q_heads % a.kv_heads == 0 &&
         a.batch * a.q_heads * ((a.q_seq + 15) / 16) <= INT32_MAX;
}

bool flashAttentionAligned(const AttentionDeviceArgs& a) {
  return aligned16Elements(a.q, a.q_strides) && aligned16Elements(a.k, a.k_strides) &&
         aligned16Elements(a.v, a.v_strides) && aligned16Elements(a.y, a.y_strides);
}

int64_t flashAttentionBlocks(const AttentionDeviceArgs& a) {
  return a.batch * a.q_heads * ((a.q_seq + flash::kBlockRows - 1) / flash::kBlockRows);
}
cudaError_t launchFlashAttention(const AttentionDeviceArgs& a, FlashKernel which,
                                 cudaStream_t stream) {
  if (a.batch * a.q_heads * a.q_seq == 0) return cudaSuccess;
  if (!flashAttentionApplies(a)) return cudaErrorInvalidValue;
  const bool vec = flashAttentionAligned(a);
  if (a.dtype == DataType::kFloat16) return launchFlashTyped<__half>(a, which, vec, stream);
  return launchFlashTyped<__nv_bfloat16>(a, which, vec, stream);
}

}  // namespace onnxopt::kernels::cuda
