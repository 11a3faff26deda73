// The device entry points of the fused Attention kernel (attention.cu): plain types and
// cudaError_t only (the host half, attention.cc, parses the node and checks it; .cu files include
// no Status or fmt). Every tensor is addressed as [batch, head, sequence, dim] through element
// strides, so 3-D [B, S, H * D] and 4-D [B, H, S, D] inputs take one code path.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

/// The largest query/key and value head sizes the kernel's shared-memory tiles hold.
inline constexpr int64_t kAttentionMaxHeadSize = 256;

/// Element strides of a [batch, head, sequence, dim] tensor (dim stride 1).
struct HeadStrides {
  int64_t batch = 0, head = 0, seq = 0;
};

struct AttentionDeviceArgs {
  DataType dtype;  ///< of Q, K, V, past_key, past_value, Y and the present outputs
  int64_t batch, q_heads, kv_heads, q_seq, kv_seq, past_seq, qk_size, v_size;
  const void* q;
  const void* k;
  const void* v;
  const void* past_key;    ///< [batch, kv_heads, past_seq, qk_size], or nullptr
  const void* past_value;  ///< [batch, kv_heads, past_seq, v_size], or nullptr
  HeadStrides q_strides, k_strides, v_strides, y_strides;
  void* y;
  void* present_key;  ///< [batch, kv_heads, past_seq + kv_seq, qk_size], or nullptr
  void* present_value;
  /// The additive mask, or nullptr: bool (false masks) or a float type, element (b, h, i, j) at
  /// b * mask_strides.batch + h * .head + i * .seq + j for j < mask_len (later keys are masked).
  const void* mask;
  DataType mask_dtype;
  HeadStrides mask_strides;
  int64_t mask_len;
  /// nonpad_kv_seqlen (int64 [batch], opset 24), or nullptr: keys from nonpad[b] on are masked
  /// and the causal diagonal ends at the last valid key (values are clamped to [0, kv total]).
  const int64_t* nonpad;
  bool causal;
  float scale;
  float softcap;  ///< 0: none
  /// qk_matmul_output [batch, q_heads, q_seq, past_seq + kv_seq], or nullptr; what it holds
  /// follows the reference kernel: modes 0 and 1 the scaled (and softcapped) scores, 2 those plus
  /// the mask's bias, 3 the softmax probabilities.
  void* qk_output;
  int qk_mode;
  /// ai.onnxopt.SafeAttention: a row is 0 when a score plus its bias is NaN or +inf, masked keys
  /// included (softmax with its NaNs made 0, as torch exports it), where Attention's is NaN.
  bool nan_guard;
};

/// Whether the tensor-core kernel (attention_flash.cu) runs these arguments: fp16 or bf16, head
/// sizes 64 or 128 (Q, K and V alike), no past or present, no qk_matmul_output, no
/// nonpad_kv_seqlen, no softcap.
bool flashAttentionApplies(const AttentionDeviceArgs& args);

/// The tensor-core kernel's three forms (attention_variants.h chooses one): split-key (several
/// blocks share a query tile's keys, for grids smaller than the GPU), mma.sync (16-byte aligned
/// operands only) and WMMA.
enum class FlashKernel { kSplit, kMma, kWmma };

/// Whether Q, K, V and Y start on 16 bytes and every stride is a multiple of 8 elements (the
/// vectorized loads; FlashKernel::kMma needs them).
bool flashAttentionAligned(const AttentionDeviceArgs& args);

/// The blocks of the kMma/kWmma grid (one per 64 query rows of each batch and head).
int64_t flashAttentionBlocks(const AttentionDeviceArgs& args);

/// The tensor-core kernel `which`: Y on `stream` (cudaErrorInvalidValue where it does not apply).
cudaError_t launchFlashAttention(const AttentionDeviceArgs& args, FlashKernel which,
                                 cudaStream_t stream);

/// Whether attention.cu instantiates the kernel for these element types.
bool attentionKernelExists(DataType dtype, DataType mask_dtype);

/// Writes the present outputs (when asked) and Y on `stream`; returns the launch status.
cudaError_t launchAttention(const AttentionDeviceArgs& args, cudaStream_t stream);

/// The tensor-core path's middle step (attention.cc runs Q K^T and P V through cuBLASLt):
/// `scores` holds the scaled float scores [batch, q_heads, q_seq, kv_seq] (no past, no
/// nonpad_kv_seqlen, no softcap); writes `probs` (Q's type, same shape) = softmax over each row
/// of scores + the mask's bias, with is_causal and the mask's length masking keys as the fused
/// kernel does (a row with every key masked is 0).
cudaError_t launchAttentionSoftmax(const AttentionDeviceArgs& args, const float* scores,
                                   void* probs, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
