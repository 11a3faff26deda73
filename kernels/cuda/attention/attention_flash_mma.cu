// The register-resident flash-attention kernel (FlashKernel::kMma), for the grids that fill the GPU when every row start is 16-byte
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
// NaN guard and rows attending to nothing follow the wmma kernels (attention_flash_wmma.cu), element for element.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <type_traits>

#include "kernels/cuda/attention/attention_flash.cuh"
#include "kernels/cuda/attention/attention_mask.cuh"
#include "kernels/cuda/element_types.cuh"

namespace onnxopt::kernels::cuda::flash {

namespace {

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

/// S = Q K^T for one warp over the tile's keys below `warp_keys` (16-key chunks past them stay 0):
/// key tiles 2j and 2j + 1 from one ldmatrix.x4 (matrices: tile 2j dims 0-7, 8-15, tile 2j + 1
/// dims 0-7, 8-15 of the chunk); `qf` holds Q's A fragments, `k_s` the tile (row stride kLd).
template <typename T, int D>
__device__ __forceinline__ void mmaScores(float (&s)[kMmaKeys / 8][4],
                                          const unsigned (&qf)[D / 16][4], const T* k_s,
                                          int warp_keys, int lane) {
  constexpr int kLd = MmaLayout<D>::kLd;
#pragma unroll
  for (int n = 0; n < kMmaKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
  for (int j = 0; j < kMmaKeys / 16; ++j) {
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
}

/// O += P V for one warp: P's k = 16 chunk j is S's key tiles 2j, 2j + 1 as they stand (`s`, after
/// the softmax); V's matrices for dims 16i.. are keys 0-7, 8-15 of dims 16i..16i+7, then of
/// 16i+8..16i+15 (transposed).
template <typename T, int D>
__device__ __forceinline__ void mmaPv(float (&o)[D / 8][4], const float (&s)[kMmaKeys / 8][4],
                                      const T* v_s, int warp_keys, int lane) {
  constexpr int kLd = MmaLayout<D>::kLd;
#pragma unroll
  for (int j = 0; j < kMmaKeys / 16; ++j) {
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

    float s[kKeyTiles][4];
    mmaScores<T, D>(s, qf, k_s, warp_keys, lane);

    // The softmax; without a per-key range test where every row of the warp sees all 64 keys.
    const MmaTile tile{kt, tile_keys, c, qi, mask_row};
    const bool full = tile_keys == kMmaKeys && (!a.causal || warp_q0 + 1 - kt >= kMmaKeys);
    if (full) {
      mmaTileSoftmax<true, kGuard, T>(a, tile, s, o, m, l, poisoned);
    } else {
      mmaTileSoftmax<false, kGuard, T>(a, tile, s, o, m, l, poisoned);
    }

    mmaPv<T, D>(o, s, v_s, warp_keys, lane);
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

}  // namespace

template <typename T, int D>
cudaError_t launchMma(const AttentionDeviceArgs& a, cudaStream_t stream) {
  static_assert(kMmaRows == kBlockRows, "one grid for the wmma and mma kernels");
  const int q_blocks = static_cast<int>((a.q_seq + kMmaRows - 1) / kMmaRows);
  auto kernel =
      a.nan_guard ? flashAttentionMmaKernel<T, D, true> : flashAttentionMmaKernel<T, D, false>;
  return launchWithSmem(kernel, static_cast<unsigned>(a.batch * a.q_heads * q_blocks), kMmaWarps,
                        MmaLayout<D>::kBytes, stream, a, q_blocks, true);
}

template cudaError_t launchMma<__half, 64>(const AttentionDeviceArgs&, cudaStream_t);
template cudaError_t launchMma<__half, 128>(const AttentionDeviceArgs&, cudaStream_t);
template cudaError_t launchMma<__nv_bfloat16, 64>(const AttentionDeviceArgs&, cudaStream_t);
template cudaError_t launchMma<__nv_bfloat16, 128>(const AttentionDeviceArgs&, cudaStream_t);

}  // namespace onnxopt::kernels::cuda::flash
