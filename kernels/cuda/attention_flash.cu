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
#include <cstdlib>
#include <type_traits>

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

/// A lane's running state for its row: half its output dims, the max m and sum l so far, and
/// whether the NaN guard poisoned it.
template <int kOut>
struct RowState {
  float o[kOut];
  float m = -INFINITY, l = 0.0f;
  bool poisoned = false;
  __device__ RowState() {
#pragma unroll
    for (int i = 0; i < kOut; ++i) o[i] = 0.0f;
  }
};

/// One warp's 16 x kN product of A (16 x kK, row-major, row stride a_ld) and B (kK x kN, tile
/// (kk, n) at b + n * b_n + kk * b_k, row stride b_ld, BLayout), into `scratch` (float, row
/// stride sld): S = Q K^T (B = K col-major) and P V (B = V row-major).
template <typename T, int kN, int kK, typename BLayout>
__device__ __forceinline__ void warpProduct(const T* a, int a_ld, const T* b, int b_ld, int b_n,
                                            int b_k, float* scratch, int sld) {
#pragma unroll
  for (int n = 0; n < kN / 16; ++n) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < kK / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BLayout> fb;
      wmma::load_matrix_sync(fa, a + kk * 16, a_ld);
      wmma::load_matrix_sync(fb, b + n * b_n + kk * b_k, b_ld);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(scratch + n * 16, acc, sld, wmma::mem_row_major);
  }
  __syncwarp();
}

/// S = Q K^T for one warp's 16 query rows (`q`) and kKeys keys (`k`), both of row stride ld.
template <typename T, int D, int kKeys>
__device__ __forceinline__ void warpScores(const T* q, int ld, const T* k, float* scratch,
                                           int sld) {
  warpProduct<T, kKeys, D, wmma::col_major>(q, ld, k, ld, 16 * ld, 16, scratch, sld);
}

/// The online softmax of row r (lanes 2r and 2r + 1, half `part` of the keys each) over one tile
/// of kKeys keys from kt, its scores in `scratch`: scale, mask, running max m and sum l (NaN
/// where a score is, without the guard; `poisoned` with it), P = exp(S - m) stored as T in `p`.
/// Returns the factor O is rescaled by.
template <typename T, int kKeys>
__device__ __forceinline__ float onlineSoftmax(const AttentionDeviceArgs& a, const float* scratch,
                                               int sld, T* p, int p_ld, int64_t kt, int64_t key_end,
                                               int64_t qi, int64_t mask_row, int r, int part,
                                               float& m, float& l, bool& poisoned) {
  constexpr int kHalf = kKeys / 2;
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
      const float full = scratch[r * sld + col] * a.scale + bias;
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
    const float e = skip || s[c] == -INFINITY ? 0.0f : expf(s[c] - m_new);
    sum += e;
    p[r * p_ld + part * kHalf + c] = T(e);
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  if (!skip) {
    l = l * corr + sum;
    m = m_new;
  }
  // Without the guard a NaN score makes the row NaN, as softmax does (fmaxf skipped it).
  if (bad && !a.nan_guard) l = NAN;
  __syncwarp();  // P is stored; the scratch's scores are read
  return corr;
}

/// P(16 x kKeys, `p`) V(kKeys x D, `v`, row stride ld) for one warp, into `scratch` (the caller
/// adds it to O).
template <typename T, int D, int kKeys>
__device__ __forceinline__ void warpPv(const T* p, int p_ld, const T* v, int ld, float* scratch,
                                       int sld) {
  warpProduct<T, D, kKeys, wmma::row_major>(p, p_ld, v, ld, 16, 16 * ld, scratch, sld);
}

/// Where one warp's tile stands: its first key, the keys' end, and lane's row (qi, its mask row,
/// r of the warp's 16, half `part`).
struct TileRows {
  int64_t kt, key_end, qi, mask_row;
  int r, part;
};

/// One warp's step over a tile of kKeys keys: S = Q K^T, the online softmax, O = O * corr + P V.
/// K, V and Q share row stride ld; scratch (float, sld) and P (T, p_ld) are the warp's own.
template <typename T, int D, int kKeys>
__device__ __forceinline__ void warpTile(const AttentionDeviceArgs& a, const T* q, const T* k,
                                         const T* v, int ld, float* scratch, int sld, T* p,
                                         int p_ld, const TileRows& t, RowState<D / 2>& st) {
  constexpr int kOut = D / 2;
  warpScores<T, D, kKeys>(q, ld, k, scratch, sld);
  const float corr = onlineSoftmax<T, kKeys>(a, scratch, sld, p, p_ld, t.kt, t.key_end, t.qi,
                                             t.mask_row, t.r, t.part, st.m, st.l, st.poisoned);
  warpPv<T, D, kKeys>(p, p_ld, v, ld, scratch, sld);
#pragma unroll
  for (int i = 0; i < kOut; ++i) st.o[i] = st.o[i] * corr + scratch[t.r * sld + t.part * kOut + i];
  __syncwarp();  // the scratch is free for the next tile
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

  const HeadBlock<T> hb = headBlock<T>(a, q_blocks, kFlashRows);
  const int64_t b = hb.b, h = hb.h, q0 = hb.q0, key_end = hb.key_end;
  const T *q = hb.q, *k = hb.k, *v = hb.v;
  loadRows<T, D>(q_s, q, a.q_strides.seq, q0, kFlashRows, a.q_seq, vec);

  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  float* scratch = scratch_all + warp * 16 * L::kScratchLd;
  T* p_s = p_all + warp * 16 * L::kPLd;
  // Lanes 2r and 2r + 1 own row r of the warp's 16: half `part` of its keys and output dims.
  const int r = lane / 2, part = lane % 2;
  const int64_t qi = q0 + warp * 16 + r;
  const int64_t mask_row = maskRow(a, b, h, qi);
  constexpr int kOut = D / 2;
  RowState<kOut> st;

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

    warpTile<T, D, kFlashKeys>(a, q_s + warp * 16 * L::kLd, k_s, v_s, L::kLd, scratch,
                               L::kScratchLd, p_s, L::kPLd,
                               TileRows{kt, key_end, qi, mask_row, r, part},
                               st);  // then the scratch is free for the next tile's scores
  }

  if (qi >= a.q_seq) return;
  // A row that attends to nothing (every key masked), or a poisoned one, is 0.
  const float inv = st.poisoned ? 0.0f : isnan(st.l) ? NAN : st.l > 0.0f ? 1.0f / st.l : 0.0f;
  T* y = static_cast<T*>(a.y) + b * a.y_strides.batch + h * a.y_strides.head +
         qi * a.y_strides.seq + part * kOut;
  if (vec) {
#pragma unroll
    for (int i = 0; i < kOut; i += 8) {
      alignas(16) T w[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) w[e] = T(st.o[i + e] * inv);
      *reinterpret_cast<uint4*>(y + i) = *reinterpret_cast<const uint4*>(w);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kOut; ++i) y[i] = T(st.o[i] * inv);
  }
}

// The split-key variant, for grids too small to fill the GPU (batch 1, short sequences: 24
// blocks of the kernel above for BERT's 12 heads at 128 tokens, on 132 SMs):
//
//   one block = 4 warps = 16 query rows; warp w takes the key tiles w, w + 4, ... of 32 keys
//     K, V tile -> the warp's own shared memory
//     S = Q K^T, the online softmax and O += P V as above, on the warp's keys only
//   then the warps' (m, l, O) combine: M = max m_w, O = sum exp(m_w - M) O_w, L likewise,
//   Y = O / L
//
// Four times the blocks and a quarter of the serial tile chain per warp. Masks, the causal
// diagonal, the NaN guard and rows attending to nothing follow the kernel above.
constexpr int kSplitWarps = 4;
constexpr int kSplitRows = 16;
constexpr int kSplitKeys = 32;

template <int D>
struct SplitLayout {
  static constexpr int kLd = D + kPad;
  static constexpr int kScratchLd = (D > kSplitKeys ? D : kSplitKeys) + 4;  // floats
  static constexpr int kPLd = kSplitKeys + kPad;
  static constexpr size_t kWarpBytes = size_t{kSplitKeys} * kLd * 2 * 2 +
                                       size_t{kSplitRows} * kScratchLd * 4 +
                                       size_t{kSplitRows} * kPLd * 2;
  static constexpr size_t kQ = 0;
  static constexpr size_t kWarps = size_t{kSplitRows} * kLd * 2;
  static constexpr size_t kStats = kWarps + kSplitWarps * kWarpBytes;  // m, l per warp and row
  static constexpr size_t kBytes = kStats + size_t{kSplitWarps} * kSplitRows * 2 * 4 + 64;
};

template <typename T, int D>
__global__ void __launch_bounds__(kSplitWarps * 32)
    flashAttentionSplitKernel(AttentionDeviceArgs a, int q_blocks, bool vec) {
  using L = SplitLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  T* q_s = reinterpret_cast<T*>(smem + L::kQ);
  unsigned char* mine = smem + L::kWarps + warp * L::kWarpBytes;
  T* k_s = reinterpret_cast<T*>(mine);
  T* v_s = k_s + kSplitKeys * L::kLd;
  float* scratch = reinterpret_cast<float*>(v_s + kSplitKeys * L::kLd);
  T* p_s = reinterpret_cast<T*>(scratch + kSplitRows * L::kScratchLd);
  float* stats = reinterpret_cast<float*>(smem + L::kStats);  // [warp][row]: m, then l
  int* poison = reinterpret_cast<int*>(stats + kSplitWarps * kSplitRows * 2);  // [row]

  const HeadBlock<T> hb = headBlock<T>(a, q_blocks, kSplitRows);
  const int64_t b = hb.b, h = hb.h, q0 = hb.q0, key_end = hb.key_end;
  const T *q = hb.q, *k = hb.k, *v = hb.v;
  loadRows<T, D>(q_s, q, a.q_strides.seq, q0, kSplitRows, a.q_seq, vec);
  if (threadIdx.x < kSplitRows) poison[threadIdx.x] = 0;
  __syncthreads();

  const int r = lane / 2, part = lane % 2;
  const int64_t qi = q0 + r;
  const int64_t mask_row = maskRow(a, b, h, qi);
  constexpr int kOut = D / 2;
  RowState<kOut> st;

  for (int64_t kt = int64_t{warp} * kSplitKeys; kt < key_end;
       kt += int64_t{kSplitWarps} * kSplitKeys) {
    // The warp's tile of K and V (its lanes only: no block barrier).
    if (vec) {
      constexpr int kChunks = D / 8;
      for (int idx = lane; idx < kSplitKeys * kChunks; idx += 32) {
        const int row = idx / kChunks, c = idx % kChunks;
        uint4 kw = make_uint4(0, 0, 0, 0), vw = make_uint4(0, 0, 0, 0);
        if (kt + row < key_end) {
          kw = *reinterpret_cast<const uint4*>(k + (kt + row) * a.k_strides.seq + c * 8);
          vw = *reinterpret_cast<const uint4*>(v + (kt + row) * a.v_strides.seq + c * 8);
        }
        *reinterpret_cast<uint4*>(k_s + row * L::kLd + c * 8) = kw;
        *reinterpret_cast<uint4*>(v_s + row * L::kLd + c * 8) = vw;
      }
    } else {
      for (int idx = lane; idx < kSplitKeys * D; idx += 32) {
        const int row = idx / D, c = idx % D;
        const bool live = kt + row < key_end;
        k_s[row * L::kLd + c] = live ? k[(kt + row) * a.k_strides.seq + c] : T(0.0f);
        v_s[row * L::kLd + c] = live ? v[(kt + row) * a.v_strides.seq + c] : T(0.0f);
      }
    }
    __syncwarp();

    warpTile<T, D, kSplitKeys>(
        a, q_s, k_s, v_s, L::kLd, scratch, L::kScratchLd, p_s, L::kPLd,
        TileRows{kt, key_end, qi, mask_row, r, part},
        st);  // then the K, V tiles and the scratch are free for the next tile
  }

  // Combine the warps: each publishes m and l per row, and its O through its scratch.
  if (part == 0) {
    stats[warp * kSplitRows + r] = st.m;
    stats[(kSplitWarps + warp) * kSplitRows + r] = st.l;
    if (st.poisoned) atomicOr(&poison[r], 1);
  }
#pragma unroll
  for (int i = 0; i < kOut; ++i) scratch[r * L::kScratchLd + part * kOut + i] = st.o[i];
  __syncthreads();
  // Thread t writes row t / 8, dims [(t % 8) * D / 8, ...): 128 threads, 16 rows.
  const int row = static_cast<int>(threadIdx.x) / 8, seg = static_cast<int>(threadIdx.x) % 8;
  const int64_t out_row = q0 + row;
  if (out_row >= a.q_seq) return;
  float big = -INFINITY;
  for (int w = 0; w < kSplitWarps; ++w) big = fmaxf(big, stats[w * kSplitRows + row]);
  float weight[kSplitWarps];
  float total = 0.0f;
  bool nan_row = false;
  for (int w = 0; w < kSplitWarps; ++w) {
    const float mw = stats[w * kSplitRows + row], lw = stats[(kSplitWarps + w) * kSplitRows + row];
    nan_row = nan_row || isnan(lw);
    weight[w] = mw == -INFINITY ? 0.0f : expf(mw - big);
    total += weight[w] * (isnan(lw) ? 0.0f : lw);
  }
  const float inv = poison[row] != 0 ? 0.0f : nan_row ? NAN : total > 0.0f ? 1.0f / total : 0.0f;
  constexpr int kSeg = D / 8;
  T* y = static_cast<T*>(a.y) + b * a.y_strides.batch + h * a.y_strides.head +
         out_row * a.y_strides.seq + seg * kSeg;
  const float* base =
      reinterpret_cast<const float*>(smem + L::kWarps + 2 * size_t{kSplitKeys} * L::kLd * 2);
  for (int i = 0; i < kSeg; ++i) {
    float acc = 0.0f;
    for (int w = 0; w < kSplitWarps; ++w) {
      const float* sw = reinterpret_cast<const float*>(
          reinterpret_cast<const unsigned char*>(base) + w * L::kWarpBytes);
      acc += weight[w] * sw[row * L::kScratchLd + seg * kSeg + i];
    }
    y[i] = T(acc * inv);
  }
}

// The register-resident variant, for the grids that fill the GPU when every row start is 16-byte
// aligned (FlashAttention-2's layout of the work, on the warp-level mma.sync instruction):
//
//   one block = 4 warps = 64 query rows of one (batch, head); Q's fragments stay in registers
//   per tile of 64 keys, double-buffered: cp.async brings tile t + 1's K and V into shared
//   memory while the warps work on tile t
//     S = Q K^T      mma.m16n8k16 (K through ldmatrix), each warp its 16 rows x 64 keys in
//                    registers: lane 4g + c holds rows g and g + 8, keys 8n + 2c and 8n + 2c + 1
//     online softmax on those registers, the row's max and sum over the lane's quad (shuffles)
//     O += P V       P's accumulators are, rounded to T, the A operand of the next mma as they
//                    stand (the k = 16 chunk j is S's key tiles 2j and 2j + 1); V through
//                    ldmatrix.trans; O (16 x D floats per warp) in registers
//   Y = O / l
//
// Nothing goes through shared memory but K and V (and Q once); masks, the causal diagonal, the
// NaN guard and rows attending to nothing follow the kernels above, element for element.
constexpr int kMmaWarps = 4;
constexpr int kMmaRows = 16 * kMmaWarps;
constexpr int kMmaKeys = 64;

template <int D>
struct MmaLayout {
  static constexpr int kLd = D + kPad;  // 16-byte rows, 8 of them on distinct banks (ldmatrix)
  static constexpr size_t kQ = 0;
  static constexpr size_t kTile = size_t{kMmaKeys} * kLd * 2;     // one K or V tile
  static constexpr size_t kKv = kQ + size_t{kMmaRows} * kLd * 2;  // [buffer][K, V]
  static constexpr size_t kBytes = kKv + 4 * kTile;
};

__device__ __forceinline__ unsigned sharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// 16 bytes from global `src` to shared `dst`, asynchronously; zeros where `valid` is false.
__device__ __forceinline__ void copyAsync16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sharedAddress(dst)),
               "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void commitAsync() {
  asm volatile("cp.async.commit_group;\n" ::);
}

__device__ __forceinline__ void waitAsyncAll() {
  asm volatile("cp.async.wait_group 0;\n" ::);
}

/// kRows rows from row0 of one head (D elements each, `seq_stride` apart) into shared `dst` (row
/// stride kLd), asynchronously; rows from `valid` on are zeros. A fixed count of 16-byte words a
/// thread (unrolled; no loop bound or division at run time).
template <typename T, int D, int kRows>
__device__ __forceinline__ void copyRowsAsync(T* dst, const T* src, int64_t seq_stride,
                                              int64_t row0, int64_t valid) {
  constexpr int kChunks = D / 8;
  constexpr int kThreads = kMmaWarps * 32;
  static_assert(kRows * kChunks % kThreads == 0, "whole words a thread");
#pragma unroll
  for (int n = 0; n < kRows * kChunks / kThreads; ++n) {
    const int idx = static_cast<int>(threadIdx.x) + n * kThreads;
    const int r = idx / kChunks, c = idx % kChunks;
    const bool live = row0 + r < valid;
    copyAsync16(dst + r * MmaLayout<D>::kLd + c * 8,
                live ? src + (row0 + r) * seq_stride + c * 8 : src, live);
  }
}

/// Four 8 x 8 matrices of 16-bit elements from shared memory (lane l gives row l % 8 of matrix
/// l / 8); `trans` hands each lane column elements instead of row ones.
template <bool kTrans>
__device__ __forceinline__ void loadMatrices(unsigned (&r)[4], const void* row) {
  if constexpr (kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(sharedAddress(row)));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(sharedAddress(row)));
  }
}

/// c += a b for one 16 x 8 x 16 tile (a row-major, b column-major, float accumulators).
template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

/// Two floats as T, the first in the low half (an mma operand register).
template <typename T>
__device__ __forceinline__ unsigned packPair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 p = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&p);
  } else {
    __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&p);
  }
}

constexpr float kLog2e = 1.4426950408889634f;

/// 2^x by the SFU alone (ex2.approx.ftz: exp2f adds a denormal-range fix-up of four instructions
/// a call); a result below 2^-126 is 0 (P is stored as T, whose smallest is 2^-24 or 2^-133).
/// 2^-inf is 0 and 2^NaN is NaN.
__device__ __forceinline__ float fastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// The mask's biases of the lane's keys of one tile (key 8n + 2c + e of the tile at bias[n][e],
/// read from `row`, the mask row's element at the tile's first key), for keys below `keys` (the
/// others are 0, not read); 0 without a mask. The element type is switched on once, not per key.
template <int kKeyTiles>
__device__ __forceinline__ void maskBiases(const AttentionDeviceArgs& a, int64_t row, int c,
                                           int keys, float (&bias)[kKeyTiles][2]) {
  auto fill = [&](auto read) {
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int j = n * 8 + 2 * c + e;
        bias[n][e] = j < keys ? read(row + j) : 0.0f;
      }
    }
  };
  if (a.mask == nullptr) {
    fill([](int64_t) { return 0.0f; });
  } else {
    withMaskReader(a, fill);
  }
}

/// What one warp's softmax over a tile reads: the tile's first key, its keys in range, the
/// lane's accumulator column pair and its two rows (index, mask row).
struct MmaTile {
  int64_t kt;
  int tile_keys, c;
  const int64_t (&qi)[2];
  const int64_t (&mask_row)[2];
};

/// The online softmax of the lane's two rows (h2 = 0: row g, 1: row g + 8 of the warp's 16) over
/// its 16 keys of each in the tile, on S's accumulators `s` (replaced by P = exp(x - m)): the
/// row's max and sum over the lane's quad (shuffles), the running m and l, O rescaled.
///
/// Per key: x = s scale + bias, or -inf where the bias is -inf or (not kFull) the key is out of
/// range (the mask's length, the causal diagonal); exp(x - m) as 2^((x - m) log2 e), after the
/// subtraction (a bias of -FLT_MAX stays finite). m is replaced by 0 while it is -inf, so a
/// masked key's exp is 0 with no test and a NaN x stays NaN: without the guard a NaN or +inf x
/// makes the row's sum NaN (+inf through m = +inf), as the other kernels make it; with it
/// (kGuard) any score in range that is NaN or +inf, masked keys' included (NaN + -inf is NaN),
/// poisons the row: its later P are 0 and its output is 0.
template <bool kFull, bool kGuard, typename T, int kKeyTiles, int kOutTiles>
__device__ __forceinline__ void mmaTileSoftmax(const AttentionDeviceArgs& a, const MmaTile& t,
                                               float (&s)[kKeyTiles][4], float (&o)[kOutTiles][4],
                                               float (&m)[2], float (&l)[2], bool (&poisoned)[2]) {
  constexpr int kKeys = kKeyTiles * 8;
  float bias[kKeyTiles][2];
#pragma unroll
  for (int h2 = 0; h2 < 2; ++h2) {
    // Keys [0, live) of the tile are in range for this row.
    const int live =
        kFull ? kKeys
        : a.causal
            ? static_cast<int>(max(min(t.qi[h2] - t.kt + 1, int64_t{t.tile_keys}), int64_t{0}))
            : t.tile_keys;
    maskBiases(a, t.mask_row[h2] + t.kt, t.c, kFull ? kKeys : t.tile_keys, bias);
    float tile_max = -INFINITY;
    bool bad = false;
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float full = fmaf(s[n][2 * h2 + e], a.scale, bias[n][e]);
        const float in_range = kFull || n * 8 + 2 * t.c + e < live ? full : -INFINITY;
        if constexpr (kGuard) bad = bad || !(in_range < INFINITY);  // NaN or +inf
        const float x = bias[n][e] == -INFINITY ? -INFINITY : in_range;
        s[n][2 * h2 + e] = x;
        tile_max = fmaxf(tile_max, x);
      }
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    if constexpr (kGuard) {
      int any = static_cast<int>(bad);
      any |= __shfl_xor_sync(0xffffffffu, any, 1);
      any |= __shfl_xor_sync(0xffffffffu, any, 2);
      poisoned[h2] = poisoned[h2] || any != 0;
    }
    const float m_new = fmaxf(m[h2], tile_max);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    const bool off = kGuard && poisoned[h2];  // a poisoned row keeps O and l as they are
    const float corr = off ? 1.0f : fastExp2((m[h2] - m_use) * kLog2e);
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float p = fastExp2((s[n][2 * h2 + e] - m_use) * kLog2e);
        if constexpr (kGuard) p = off ? 0.0f : p;
        sum += p;
        s[n][2 * h2 + e] = p;
      }
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    l[h2] = l[h2] * corr + sum;
    m[h2] = m_new;
#pragma unroll
    for (int n = 0; n < kOutTiles; ++n) {
      o[n][2 * h2] *= corr;
      o[n][2 * h2 + 1] *= corr;
    }
  }
}

// At D = 64, three blocks an SM: no spills (ptxas, CUDA 13; four blocks would cap the registers
// at 128 and spill); at D = 128 the bound would spill, so it stays unbounded.
template <typename T, int D, bool kGuard>
__global__ void __launch_bounds__(kMmaWarps * 32, D == 64 ? 3 : 1)
    flashAttentionMmaKernel(AttentionDeviceArgs a, int q_blocks, bool /*vec: always*/) {
  using L = MmaLayout<D>;
  constexpr int kLd = L::kLd;
  constexpr int kKeyTiles = kMmaKeys / 8;  // S's n-tiles per key tile
  constexpr int kOutTiles = D / 8;         // O's n-tiles
  extern __shared__ __align__(128) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem + L::kQ);
  auto kv_s = [&](int buffer, int which) {  // which: 0 K, 1 V
    return reinterpret_cast<T*>(smem + L::kKv + (2 * buffer + which) * L::kTile);
  };

  const HeadBlock<T> hb = headBlock<T>(a, q_blocks, kMmaRows);
  const int64_t b = hb.b, h = hb.h, q0 = hb.q0, key_end = hb.key_end;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, c = lane % 4;    // the accumulators' row group and column pair
  const int64_t warp_q0 = q0 + warp * 16;  // the warp's first row

  copyRowsAsync<T, D, kMmaRows>(q_s, hb.q, a.q_strides.seq, q0, a.q_seq);
  if (key_end > 0) {
    copyRowsAsync<T, D, kMmaKeys>(kv_s(0, 0), hb.k, a.k_strides.seq, 0, key_end);
    copyRowsAsync<T, D, kMmaKeys>(kv_s(0, 1), hb.v, a.v_strides.seq, 0, key_end);
  }
  commitAsync();

  // This lane's two rows (h2 = 0: row g of the warp's 16, h2 = 1: row g + 8).
  int64_t qi[2], mask_row[2];
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  bool poisoned[2] = {false, false};
#pragma unroll
  for (int h2 = 0; h2 < 2; ++h2) {
    qi[h2] = warp_q0 + g + 8 * h2;
    mask_row[h2] = maskRow(a, b, h, qi[h2]);
  }
  float o[kOutTiles][4];
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  unsigned qf[D / 16][4];

  int buffer = 0;
  for (int64_t kt = 0; kt < key_end || kt == 0; kt += kMmaKeys) {
    waitAsyncAll();
    __syncthreads();  // tile kt (and Q) arrived; every warp is done with the other buffer
    if (kt == 0) {
      // Q's A fragments, once: matrix i of each 16 x 16 chunk holds rows 8 (i % 2).., dims 8 (i / 2)..
      const T* row = q_s + (warp * 16 + (lane / 8 % 2) * 8 + lane % 8) * kLd + (lane / 16) * 8;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) loadMatrices<false>(qf[kk], row + kk * 16);
      if (key_end <= 0) break;
    }
    if (kt + kMmaKeys < key_end) {
      copyRowsAsync<T, D, kMmaKeys>(kv_s(buffer ^ 1, 0), hb.k, a.k_strides.seq, kt + kMmaKeys,
                                    key_end);
      copyRowsAsync<T, D, kMmaKeys>(kv_s(buffer ^ 1, 1), hb.v, a.v_strides.seq, kt + kMmaKeys,
                                    key_end);
    }
    commitAsync();
    const T* k_s = kv_s(buffer, 0);
    const T* v_s = kv_s(buffer, 1);
    buffer ^= 1;

    // The tile's keys any of the warp's rows sees (none where the warp's rows are all past the
    // queries; with is_causal, up to its last row's diagonal): 16-key chunks past them are all
    // masked for every row of the warp, so their products are skipped (P is 0 there).
    const int tile_keys = static_cast<int>(min(key_end - kt, int64_t{kMmaKeys}));
    int warp_keys = warp_q0 < a.q_seq ? tile_keys : 0;
    if (a.causal) {
      warp_keys = static_cast<int>(max(min(warp_q0 + 16 - kt, int64_t{warp_keys}), int64_t{0}));
    }
    if (warp_keys == 0) continue;

    // S = Q K^T: key tiles 2j and 2j + 1 from one ldmatrix.x4 (matrices: tile 2j dims 0-7, 8-15,
    // tile 2j + 1 dims 0-7, 8-15 of the chunk).
    float s[kKeyTiles][4];
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int j = 0; j < kKeyTiles / 2; ++j) {
      if (j * 16 >= warp_keys) break;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        unsigned kb[4];
        loadMatrices<false>(
            kb, k_s + (j * 16 + (lane / 16) * 8 + lane % 8) * kLd + kk * 16 + (lane / 8 % 2) * 8);
        mma16816<T>(s[2 * j], qf[kk], kb[0], kb[1]);
        mma16816<T>(s[2 * j + 1], qf[kk], kb[2], kb[3]);
      }
    }

    // The softmax; without a per-key range test where every row of the warp sees all 64 keys.
    const MmaTile tile{kt, tile_keys, c, qi, mask_row};
    const bool full = tile_keys == kMmaKeys && (!a.causal || warp_q0 + 1 - kt >= kMmaKeys);
    if (full) {
      mmaTileSoftmax<true, kGuard, T>(a, tile, s, o, m, l, poisoned);
    } else {
      mmaTileSoftmax<false, kGuard, T>(a, tile, s, o, m, l, poisoned);
    }

    // O += P V: P's k = 16 chunk j is S's key tiles 2j, 2j + 1 as they stand; V's matrices for
    // dims 16i.. are keys 0-7, 8-15 of dims 16i..16i+7, then of 16i+8..16i+15 (transposed).
#pragma unroll
    for (int j = 0; j < kKeyTiles / 2; ++j) {
      if (j * 16 >= warp_keys) break;
      const unsigned pa[4] = {packPair<T>(s[2 * j][0], s[2 * j][1]),
                              packPair<T>(s[2 * j][2], s[2 * j][3]),
                              packPair<T>(s[2 * j + 1][0], s[2 * j + 1][1]),
                              packPair<T>(s[2 * j + 1][2], s[2 * j + 1][3])};
#pragma unroll
      for (int i = 0; i < D / 16; ++i) {
        unsigned vb[4];
        loadMatrices<true>(
            vb, v_s + (j * 16 + (lane / 8 % 2) * 8 + lane % 8) * kLd + i * 16 + (lane / 16) * 8);
        mma16816<T>(o[2 * i], pa, vb[0], vb[1]);
        mma16816<T>(o[2 * i + 1], pa, vb[2], vb[3]);
      }
    }
  }

#pragma unroll
  for (int h2 = 0; h2 < 2; ++h2) {
    if (qi[h2] >= a.q_seq) continue;
    const float inv = poisoned[h2] ? 0.0f : isnan(l[h2]) ? NAN : l[h2] > 0.0f ? 1.0f / l[h2] : 0.0f;
    T* y = static_cast<T*>(a.y) + b * a.y_strides.batch + h * a.y_strides.head +
           qi[h2] * a.y_strides.seq + 2 * c;
#pragma unroll
    for (int n = 0; n < kOutTiles; ++n) {
      *reinterpret_cast<unsigned*>(y + n * 8) =
          packPair<T>(o[n][2 * h2] * inv, o[n][2 * h2 + 1] * inv);
    }
  }
}

bool aligned16Elements(const void* p, const HeadStrides& s) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0 && s.batch % 8 == 0 && s.head % 8 == 0 &&
         s.seq % 8 == 0;
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

template <typename T, int D>
cudaError_t launchFlashTyped(const AttentionDeviceArgs& a, FlashKernel which, cudaStream_t stream) {
  const int q_blocks = static_cast<int>((a.q_seq + kFlashRows - 1) / kFlashRows);
  const auto blocks = static_cast<unsigned>(a.batch * a.q_heads * q_blocks);
  const bool vec = flashAttentionAligned(a);
  if (which == FlashKernel::kSplit) {
    const int split_q = static_cast<int>((a.q_seq + kSplitRows - 1) / kSplitRows);
    return launchWithSmem(flashAttentionSplitKernel<T, D>,
                          static_cast<unsigned>(a.batch * a.q_heads * split_q), kSplitWarps,
                          SplitLayout<D>::kBytes, stream, a, split_q, vec);
  }
  static_assert(kMmaRows == kFlashRows, "one grid for both kernels");
  if (which == FlashKernel::kMma) {
    if (!vec) return cudaErrorInvalidValue;
    auto kernel =
        a.nan_guard ? flashAttentionMmaKernel<T, D, true> : flashAttentionMmaKernel<T, D, false>;
    return launchWithSmem(kernel, blocks, kMmaWarps, MmaLayout<D>::kBytes, stream, a, q_blocks,
                          vec);
  }
  return launchWithSmem(flashAttentionKernel<T, D>, blocks, kFlashWarps, FlashLayout<D>::kBytes,
                        stream, a, q_blocks, vec);
}

template <typename T>
cudaError_t launchFlashSized(const AttentionDeviceArgs& a, FlashKernel which, cudaStream_t stream) {
  switch (a.qk_size) {
    case 64:
      return launchFlashTyped<T, 64>(a, which, stream);
    case 128:
      return launchFlashTyped<T, 128>(a, which, stream);
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
  return a.batch * a.q_heads * ((a.q_seq + kFlashRows - 1) / kFlashRows);
}

cudaError_t launchFlashAttention(const AttentionDeviceArgs& a, FlashKernel which,
                                 cudaStream_t stream) {
  if (a.batch * a.q_heads * a.q_seq == 0) return cudaSuccess;
  if (!flashAttentionApplies(a)) return cudaErrorInvalidValue;
  if (a.dtype == DataType::kFloat16) return launchFlashSized<__half>(a, which, stream);
  return launchFlashSized<__nv_bfloat16>(a, which, stream);
}

}  // namespace onnxopt::kernels::cuda
