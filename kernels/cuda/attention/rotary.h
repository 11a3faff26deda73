// RotaryEmbedding (opset 23) on CUDA for float, float16 and bfloat16 (rotary.cu): the first
// rotary_embedding_dim features of each head rotated by the cached cos/sin of the token's
// position (halves, or even/odd pairs when interleaved), the rest passed through; X 4-D
// [B, heads, S, head] or 3-D [B, S, heads * head] (num_heads); caches [max_pos, rot / 2] read at
// position_ids [B, S], or [B, S, rot / 2]. Host half (this header, rotary.cc).
//
// canImplement refuses what the op's contract forbids (the reference kernel's checks) and caches
// of another type than X. A constant position_ids is checked against the cache when planning; a
// run-time one is clamped to the cache's rows by the kernel.
#pragma once

#include <string>

#include "kernels/cuda/args.h"

namespace onnxopt::kernels::cuda {

struct RotaryArgs {
  std::string op = "RotaryEmbedding";
  ConstTensorView x, cos, sin, positions;       ///< positions: dtype kUndefined when absent
  const HostTensor* position_values = nullptr;  ///< position_ids' host data when constant
  TensorView y;
  bool interleaved = false;
  int64_t num_heads = 0;
  int64_t rotary_dim = 0;  ///< 0: the head size
};

template <>
StatusOr<RotaryArgs> argsFromCall<RotaryArgs>(const CudaKernelCall& call);

Support canImplement(const RotaryArgs& args);
size_t workspaceBytes(const RotaryArgs& args);
Status launch(const RotaryArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
