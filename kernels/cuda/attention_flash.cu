// The tensor-core Attention kernel (attention_device.h, launchFlashAttention): flash attention
// on the warp matrix units, fp16 or bf16 in, float accumulation and statistics.
//
//   one block = 4 warps = 64 query rows of one (batch, head); per tile of 64 keys:
//     K, V tile -> shared memory (16-byte loads where the strides allow, fetched into registers
//                  during the previous tile's work)
//     S = Q K^T          each warp its 16 rows x 64 keys, wmma 16x16x16, float
//     online softmax     lanes 2r, 2r+1 own row r: scale, mask, running max m and sum l,
//                        O *= exp(m_old - m_new), P = exp(S - m_new) stored as T
//     O += P V           wmma again, through a float scratch into the lanes' registers
//   Y = O / l            (0 for a row that attends to nothing)
//
// A key is masked, whatever its score, when the mask's bias is -inf, it is past the mask's
// length or (is_causal) after the row's diagonal, as the other two Attention paths decide. With
// nan_guard (ai.onnxopt.SafeAttention: softmax with its NaNs made 0, as torch exports it) a row
// is 0 when a score plus its bias is NaN or +inf, masked keys included (NaN + -inf is NaN).
// Nothing of size Sq x Skv reaches global memory, and any element strides of [batch, head, seq,
// dim] work, so 3-D [B, S, H * D] inputs need no transpose.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cmath>

#include "attention_device.h"
#include "attention_mask.cuh"
#include "element_types.cuh"

namespace onnxopt::kernels::cuda {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kFlashWarps = 4;
constexpr int kFlashRows = 16 * kFlashWarps;  // query rows per block
constexpr int kFlashKeys = 64;                // keys per tile
constexpr int kPad = 8;                       // T elements past each shared row (banks)

template <int D>
struct FlashLayout {
  static constexpr int kLd = D + kPad;                                      // Q, K, V rows
  static constexpr int kScratchLd = (D > kFlashKeys ? D : kFlashKeys) + 4;  // floats
  static constexpr int kPLd = kFlashKeys + kPad;
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = kQ + size_t{kFlashRows} * kLd * 2;
  static constexpr size_t kV = kK + size_t{kFlashKeys} * kLd * 2;
  static constexpr size_t kScratch = kV + size_t{kFlashKeys} * kLd * 2;
  static constexpr size_t kP = kScratch + size_t{kFlashRows} * kScratchLd * 4;
  static constexpr size_t kBytes = kP + size_t{kFlashRows} * kPLd * 2;
};

/// Rows [row0, row0 + rows) of one head, D elements each, into shared `dst` (row stride kLd);
/// rows past `valid` are 0. `vec`: every row start is 16-byte aligned.
template <typename T, int D>
__device__ __forceinline__ void loadRows(T* dst, const T* src, int64_t seq_stride, int64_t row0,
                                         int rows, int64_t valid, bool vec) {
  constexpr int kLd = FlashLayout<D>::kLd;
  if (vec) {
    constexpr int kChunks = D / 8;  // 16 bytes = 8 halves
    for (int idx = threadIdx.x; idx < rows * kChunks; idx += blockDim.x) {
      const int r = idx / kChunks, c = idx % kChunks;
      uint4 word = make_uint4(0, 0, 0, 0);
      if (row0 + r < valid) {
        word = *reinterpret_cast<const uint4*>(src + (row0 + r) * seq_stride + c * 8);
      }
      *reinterpret_cast<uint4*>(dst + r * kLd + c * 8) = word;
    }
    return;
  }
  for (int idx = threadIdx.x; idx < rows * D; idx += blockDim.x) {
    const int r = idx / D, c = idx % D;
    dst[r * kLd + c] = row0 + r < valid ? src[(row0 + r) * seq_stride + c] : T(0.0f);
  }
}

/// The 16-byte words of a 64-row tile each thread moves (threads 128): D / 16.
template <int D>
inline constexpr int kTileWords = kFlashKeys* D / 8 / (kFlashWarps * 32);

/// This thread's words of rows [row0, row0 + 64) into registers (0 past `valid`): the next tile's
/// K or V, fetched before the current tile's products so that its latency hides behind them.
template <typename T, int D>
__device__ __forceinline__ void fetchTile(uint4 (&reg)[kTileWords<D>], const T* src,
                                          int64_t seq_stride, int64_t row0, int64_t valid) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int n = 0; n < kTileWords<D>; ++n) {
    const int idx = static_cast<int>(threadIdx.x) + n * kFlashWarps * 32;
    const int r = idx / kChunks, c = idx % kChunks;
    reg[n] = row0 + r < valid
                 ? *reinterpret_cast<const uint4*>(src + (row0 + r) * seq_stride + c * 8)
                 : make_uint4(0, 0, 0, 0);
  }
}

template <typename T, int D>
__device__ __forceinline__ void storeTile(T* dst, const uint4 (&reg)[kTileWords<D>]) {
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int n = 0; n < kTileWords<D>; ++n) {
    const int idx = static_cast<int>(threadIdx.x) + n * kFlashWarps * 32;
    const int r = idx / kChunks, c = idx % kChunks;
    *reinterpret_cast<uint4*>(dst + r * FlashLayout<D>::kLd + c * 8) = reg[n];
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kFlashWarps * 32)
    flashAttentionKernel(AttentionDeviceArgs a, int q_blocks, bool vec) {
  using L = FlashLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem + L::kQ);
  T* k_s = reinterpret_cast<T*>(smem + L::kK);
  T* v_s = reinterpret_cast<T*>(smem + L::kV);
  float* scratch_all = reinterpret_cast<float*>(smem + L::kScratch);
  T* p_all = reinterpret_cast<T*>(smem + L::kP);

  const int qb = static_cast<int>(blockIdx.x % q_blocks);
  const int64_t h = (blockIdx.x / q_blocks) % a.q_heads;
  const int64_t b = blockIdx.x / q_blocks / a.q_heads;
  const int64_t hk = h / (a.q_heads / a.kv_heads);
  const int64_t q0 = int64_t{qb} * kFlashRows;
  const int64_t q_last = min(q0 + kFlashRows, a.q_seq) - 1;
  int64_t key_end = a.kv_seq;
  if (a.mask != nullptr) key_end = min(key_end, a.mask_len);
  if (a.causal) key_end = min(key_end, q_last + 1);

  const T* q = static_cast<const T*>(a.q) + b * a.q_strides.batch + h * a.q_strides.head;
  const T* k = static_cast<const T*>(a.k) + b * a.k_strides.batch + hk * a.k_strides.head;
  const T* v = static_cast<const T*>(a.v) + b * a.v_strides.batch + hk * a.v_strides.head;
  loadRows<T, D>(q_s, q, a.q_strides.seq, q0, kFlashRows, a.q_seq, vec);

  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  float* scratch = scratch_all + warp * 16 * L::kScratchLd;
  T* p_s = p_all + warp * 16 * L::kPLd;
  // Lanes 2r and 2r + 1 own row r of the warp's 16: half `part` of its keys and output dims.
  const int r = lane / 2, part = lane % 2;
  const int64_t qi = q0 + warp * 16 + r;
  const int64_t mask_row = b * a.mask_strides.batch + h * a.mask_strides.head +
                           min(qi, a.q_seq - 1) * a.mask_strides.seq;
  constexpr int kOut = D / 2;
  float o[kOut];
#pragma unroll
  for (int i = 0; i < kOut; ++i) o[i] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  bool poisoned = false;

  uint4 k_next[kTileWords<D>], v_next[kTileWords<D>];
  if (vec && key_end > 0) {
    fetchTile<T, D>(k_next, k, a.k_strides.seq, 0, key_end);
    fetchTile<T, D>(v_next, v, a.v_strides.seq, 0, key_end);
  }
  for (int64_t kt = 0; kt < key_end; kt += kFlashKeys) {
    __syncthreads();  // the previous tile is consumed (and, the first time, Q is stored)
    if (vec) {
      storeTile<T, D>(k_s, k_next);
      storeTile<T, D>(v_s, v_next);
    } else {
      loadRows<T, D>(k_s, k, a.k_strides.seq, kt, kFlashKeys, key_end, false);
      loadRows<T, D>(v_s, v, a.v_strides.seq, kt, kFlashKeys, key_end, false);
    }
    __syncthreads();
    if (vec && kt + kFlashKeys < key_end) {  // the next tile's loads fly during this one's work
      fetchTile<T, D>(k_next, k, a.k_strides.seq, kt + kFlashKeys, key_end);
      fetchTile<T, D>(v_next, v, a.v_strides.seq, kt + kFlashKeys, key_end);
    }

    // S = Q K^T for the warp's 16 rows.
#pragma unroll
    for (int n = 0; n < kFlashKeys / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, q_s + warp * 16 * L::kLd + kk * 16, L::kLd);
        wmma::load_matrix_sync(fb, k_s + n * 16 * L::kLd + kk * 16, L::kLd);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(scratch + n * 16, acc, L::kScratchLd, wmma::mem_row_major);
    }
    __syncwarp();

    // The online softmax of row r over this tile's keys [kt, kt + 64).
    constexpr int kHalf = kFlashKeys / 2;
    float s[kHalf];
    float tile_max = -INFINITY;
    bool bad = false;
#pragma unroll
    for (int c = 0; c < kHalf; ++c) {
      const int col = part * kHalf + c;
      const int64_t j = kt + col;
      float x = -INFINITY;
      if (j < key_end && !(a.causal && j > qi)) {
        const float bias = a.mask != nullptr ? maskBias(a, mask_row + j) : 0.0f;
        const float full = scratch[r * L::kScratchLd + col] * a.scale + bias;
        if (bias != -INFINITY) x = full;
        // The guard sees every key's score as the decomposition does (NaN + -inf is NaN);
        // otherwise only the live ones propagate.
        bad = bad || isnan(a.nan_guard ? full : x) || full == INFINITY;
      }
      s[c] = x;
      tile_max = fmaxf(tile_max, x);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    if (a.nan_guard) {
      bad = __shfl_xor_sync(0xffffffffu, static_cast<int>(bad), 1) != 0 || bad;
      poisoned = poisoned || bad;
    }
    const float m_new = fmaxf(m, tile_max);
    // A row with nothing live yet (m_new -inf) or poisoned takes P = 0 and keeps O.
    const bool skip = m_new == -INFINITY || poisoned;
    const float corr = skip ? 1.0f : expf(m - m_new);  // 0 while m is -inf
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kHalf; ++c) {
      const float p = skip || s[c] == -INFINITY ? 0.0f : expf(s[c] - m_new);
      sum += p;
      p_s[r * L::kPLd + part * kHalf + c] = T(p);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    if (!skip) {
      l = l * corr + sum;
      m = m_new;
    }
    // Without the guard a NaN score makes the row NaN, as softmax does (fmaxf skipped it).
    if (bad && !a.nan_guard) l = NAN;
    __syncwarp();  // P is stored; the scratch's scores are read

    // O(16 x D) += P(16 x 64) V(64 x D), through the scratch.
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < kFlashKeys / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, p_s + kk * 16, L::kPLd);
        wmma::load_matrix_sync(fb, v_s + kk * 16 * L::kLd + n * 16, L::kLd);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(scratch + n * 16, acc, L::kScratchLd, wmma::mem_row_major);
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < kOut; ++i)
      o[i] = o[i] * corr + scratch[r * L::kScratchLd + part * kOut + i];
    __syncwarp();  // the scratch is free for the next tile's scores
  }

  if (qi >= a.q_seq) return;
  // A row that attends to nothing (every key masked), or a poisoned one, is 0.
  const float inv = poisoned ? 0.0f : isnan(l) ? NAN : l > 0.0f ? 1.0f / l : 0.0f;
  T* y = static_cast<T*>(a.y) + b * a.y_strides.batch + h * a.y_strides.head +
         qi * a.y_strides.seq + part * kOut;
  if (vec) {
#pragma unroll
    for (int i = 0; i < kOut; i += 8) {
      alignas(16) T w[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) w[e] = T(o[i + e] * inv);
      *reinterpret_cast<uint4*>(y + i) = *reinterpret_cast<const uint4*>(w);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kOut; ++i) y[i] = T(o[i] * inv);
  }
}

bool aligned16Elements(const void* p, const HeadStrides& s) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0 && s.batch % 8 == 0 && s.head % 8 == 0 &&
         s.seq % 8 == 0;
}

template <typename T, int D>
cudaError_t launchFlashTyped(const AttentionDeviceArgs& a, cudaStream_t stream) {
  const int q_blocks = static_cast<int>((a.q_seq + kFlashRows - 1) / kFlashRows);
  const auto blocks = static_cast<unsigned>(a.batch * a.q_heads * q_blocks);
  const bool vec = aligned16Elements(a.q, a.q_strides) && aligned16Elements(a.k, a.k_strides) &&
                   aligned16Elements(a.v, a.v_strides) && aligned16Elements(a.y, a.y_strides);
  constexpr size_t kSmem = FlashLayout<D>::kBytes;
  auto kernel = flashAttentionKernel<T, D>;
  if (kSmem > 48 * 1024) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kSmem));
    if (e != cudaSuccess) return e;
  }
  kernel<<<blocks, kFlashWarps * 32, kSmem, stream>>>(a, q_blocks, vec);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launchFlashSized(const AttentionDeviceArgs& a, cudaStream_t stream) {
  switch (a.qk_size) {
    case 64:
      return launchFlashTyped<T, 64>(a, stream);
    case 128:
      return launchFlashTyped<T, 128>(a, stream);
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
         a.batch * a.q_heads * ((a.q_seq + 63) / 64) <= INT32_MAX;
}

cudaError_t launchFlashAttention(const AttentionDeviceArgs& a, cudaStream_t stream) {
  if (a.batch * a.q_heads * a.q_seq == 0) return cudaSuccess;
  if (!flashAttentionApplies(a)) return cudaErrorInvalidValue;
  if (a.dtype == DataType::kFloat16) return launchFlashSized<__half>(a, stream);
  return launchFlashSized<__nv_bfloat16>(a, stream);
}

}  // namespace onnxopt::kernels::cuda
