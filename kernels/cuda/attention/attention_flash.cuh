// What the flash-attention kernels share (attention_flash.cu dispatches to them): the padding of
// shared-memory rows, a block's place in the grid and its keys, a row's mask offset, the launch
// with a dynamic shared-memory size, and each variant's typed entry point.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/attention/attention_device.h"

namespace onnxopt::kernels::cuda::flash {

constexpr int kPad = 8;  // T elements past each shared row (banks)

/// What a block of `rows` query rows of one (batch, head) works on: its place, the keys it reads
/// (past the mask's length and, with is_causal, its last row's diagonal are masked) and the
/// head's Q, K and V (GQA: the query head's group).
template <typename T>
struct HeadBlock {
  int64_t b, h, q0, key_end;
  const T *q, *k, *v;
};

template <typename T>
__device__ __forceinline__ HeadBlock<T> headBlock(const AttentionDeviceArgs& a, int q_blocks,
                                                  int rows) {
  HeadBlock<T> hb;
  const int qb = static_cast<int>(blockIdx.x % q_blocks);
  hb.h = (blockIdx.x / q_blocks) % a.q_heads;
  hb.b = blockIdx.x / q_blocks / a.q_heads;
  const int64_t hk = hb.h / (a.q_heads / a.kv_heads);
  hb.q0 = int64_t{qb} * rows;
  const int64_t q_last = min(hb.q0 + rows, a.q_seq) - 1;
  hb.key_end = a.kv_seq;
  if (a.mask != nullptr) hb.key_end = min(hb.key_end, a.mask_len);
  if (a.causal) hb.key_end = min(hb.key_end, q_last + 1);
  hb.q = static_cast<const T*>(a.q) + hb.b * a.q_strides.batch + hb.h * a.q_strides.head;
  hb.k = static_cast<const T*>(a.k) + hb.b * a.k_strides.batch + hk * a.k_strides.head;
  hb.v = static_cast<const T*>(a.v) + hb.b * a.v_strides.batch + hk * a.v_strides.head;
  return hb;
}

/// Where row qi's mask biases start (the last row's for rows past the queries).
__device__ __forceinline__ int64_t maskRow(const AttentionDeviceArgs& a, int64_t b, int64_t h,
                                           int64_t qi) {
  return b * a.mask_strides.batch + h * a.mask_strides.head +
         min(qi, a.q_seq - 1) * a.mask_strides.seq;
}

/// `kernel` over `blocks` blocks of `warps` warps with `smem` bytes of dynamic shared memory
/// (raising the limit past the default 48 KiB where needed).
template <typename Kernel>
cudaError_t launchWithSmem(Kernel kernel, unsigned blocks, int warps, size_t smem,
                           cudaStream_t stream, const AttentionDeviceArgs& a, int q_blocks,
                           bool vec) {
  if (smem > 48 * 1024) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  kernel<<<blocks, warps * 32, smem, stream>>>(a, q_blocks, vec);
  return cudaGetLastError();
}

/// Query rows per block of the wmma and mma kernels (one grid for both).
constexpr int kBlockRows = 64;

/// The wmma kernel (FlashKernel::kWmma) or its split-key form (kSplit), T = __half or
/// __nv_bfloat16, D = 64 or 128 (attention_flash_wmma.cu).
template <typename T, int D>
cudaError_t launchWmma(const AttentionDeviceArgs& a, bool split, bool vec, cudaStream_t stream);

/// The register-resident mma.sync kernel (FlashKernel::kMma; 16-byte aligned rows only),
/// attention_flash_mma.cu.
template <typename T, int D>
cudaError_t launchMma(const AttentionDeviceArgs& a, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda::flash
