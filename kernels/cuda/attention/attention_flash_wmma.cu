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
#include <type_traits>

#include "kernels/cuda/attention/attention_flash.cuh"
#include "kernels/cuda/attention/attention_mask.cuh"
#include "kernels/cuda/element_types.cuh"

namespace onnxopt::kernels::cuda::flash {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kFlashWarps = 4;
constexpr int kFlashRows = 16 * kFlashWarps;  // query rows per block
constexpr int kFlashKeys = 64;                // keys per tile

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

}  // namespace

template <typename T, int D>
cudaError_t launchWmma(const AttentionDeviceArgs& a, bool split, bool vec, cudaStream_t stream) {
  if (split) {
    const int split_q = static_cast<int>((a.q_seq + kSplitRows - 1) / kSplitRows);
    return launchWithSmem(flashAttentionSplitKernel<T, D>,
                          static_cast<unsigned>(a.batch * a.q_heads * split_q), kSplitWarps,
                          SplitLayout<D>::kBytes, stream, a, split_q, vec);
  }
  static_assert(kFlashRows == kBlockRows, "one grid for the wmma and mma kernels");
  const int q_blocks = static_cast<int>((a.q_seq + kFlashRows - 1) / kFlashRows);
  return launchWithSmem(flashAttentionKernel<T, D>,
                        static_cast<unsigned>(a.batch * a.q_heads * q_blocks), kFlashWarps,
                        FlashLayout<D>::kBytes, stream, a, q_blocks, vec);
}

template cudaError_t launchWmma<__half, 64>(const AttentionDeviceArgs&, bool, bool, cudaStream_t);
template cudaError_t launchWmma<__half, 128>(const AttentionDeviceArgs&, bool, bool, cudaStream_t);
template cudaError_t launchWmma<__nv_bfloat16, 64>(const AttentionDeviceArgs&, bool, bool,
                                                   cudaStream_t);
template cudaError_t launchWmma<__nv_bfloat16, 128>(const AttentionDeviceArgs&, bool, bool,
                                                    cudaStream_t);

}  // namespace onnxopt::kernels::cuda::flash
