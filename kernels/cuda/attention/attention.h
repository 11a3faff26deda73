// Attention (opset 23; 24 with nonpad_kv_seqlen) on CUDA as one fused kernel (attention.cu): Y =
// softmax(softcap(Q K^T * scale) + mask) V with an online softmax in float, for float, float16 and
// bfloat16. Q, K, V 4-D [B, H, S, D] or 3-D [B, S, H * D] (q_num_heads, kv_num_heads), grouped-
// query attention (query head h reads kv head h / (Hq / Hkv)), a bool or float attn_mask
// broadcast to [B, Hq, Sq, total] (a shorter last dim masks the later keys), is_causal (the
// diagonal shifted by the past length, or by nonpad_kv_seqlen - Sq), scale, softcap,
// past_key/past_value and the present_key/present_value outputs. Host half (this header,
// attention.cc): parsing the node, canImplement, launch.
//
// Which kernel runs a node is attention_variants.h's table: the flash tensor-core kernels
// (attention_flash.cu), cuBLASLt products around a softmax kernel (attention_gemm.cc), or the
// fused kernel, which computes on CUDA cores in float, several times slower
// (docs/gpu_benchmarks.md, "Measurements behind design choices").
//
// qk_matmul_output (output 3) is a separate kernel (one warp per query row), as the reference
// defines its modes. canImplement refuses (so the node runs on the CPU): head sizes above 256,
// Q/K/V/past of different types, and what the op's contract forbids.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/attention/attention_device.h"

namespace onnxopt::kernels::cuda {

struct AttentionArgs {
  std::string op = "Attention";
  int64_t opset = 23;
  ConstTensorView q, k, v;
  ConstTensorView mask;                       ///< dtype kUndefined: none
  ConstTensorView past_key, past_value;       ///< dtype kUndefined: none
  ConstTensorView nonpad;                     ///< nonpad_kv_seqlen (opset 24), or none
  const HostTensor* nonpad_values = nullptr;  ///< its host data when it is a constant
  TensorView y;
  TensorView present_key, present_value;  ///< dtype kUndefined: not asked for
  TensorView qk_output;                   ///< qk_matmul_output (dtype kUndefined: not asked for)
  int64_t q_num_heads = 0, kv_num_heads = 0;  ///< 0: not given
  bool has_q_heads = false, has_kv_heads = false;
  bool causal = false;
  bool has_scale = false;
  float scale = 1.0f;
  float softcap = 0.0f;
  int64_t qk_matmul_output_mode = 0;
  bool nan_guard = false;     ///< ai.onnxopt.SafeAttention (attention_device.h)
  void* workspace = nullptr;  ///< the tensor-core path's scores, probabilities, cuBLASLt scratch
  size_t workspace_bytes = 0;
};

template <>
StatusOr<AttentionArgs> argsFromCall<AttentionArgs>(const CudaKernelCall& call);

/// Host-only: types, ranks, head counts and sizes, the mask's broadcast, the output shapes,
/// device memory, and what the kernel does not implement (see the file comment).
Support canImplement(const AttentionArgs& args);
size_t workspaceBytes(const AttentionArgs& args);
/// The name of the variant (attention_variants.h) that launch runs on a device of `sm_count` SMs
/// (0: unknown, no split-key variant), or empty where it runs none.
std::string variantName(const AttentionArgs& args, int sm_count = 0);
/// Runs the chosen variant on `ctx` (its stream, SM count, cuBLASLt handle).
Status launch(const AttentionArgs& args, CudaDeviceContext& ctx);

}  // namespace onnxopt::kernels::cuda
