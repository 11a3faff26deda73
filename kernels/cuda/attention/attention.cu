// Device code of the fused Attention kernel (attention.h): one block per (batch, query head,
// block of 16 query rows) streams over the keys in tiles of 32 held in shared memory, with an
// online softmax in float (a running max and sum per row, the accumulator rescaled when the max
// grows), then the weighted sum of V; nothing of size Sq x Skv is ever written. Each warp owns 4
// query rows; lane j scores key j of the tile (its dot product reads the tile's K row, padded to
// an odd stride so the 32 lanes hit 32 banks) and lane d accumulates output dims d, d + 32, ...
// The present outputs (past ++ current keys/values) are a separate copy kernel.
#include <cfloat>
#include <cmath>

#include "kernels/cuda/attention/attention_device.h"
#include "kernels/cuda/attention/attention_mask.cuh"
#include "kernels/cuda/element_types.cuh"

namespace onnxopt::kernels::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 4;
constexpr int kBlockRows = kWarps * kRowsPerWarp;
constexpr int kKeyTile = 32;

/// The shared-memory row stride of the K tile: odd, so lane j's reads of row j fall in distinct
/// banks.
__host__ __device__ inline int64_t keyTileStride(int64_t qk_size) {
  return qk_size % 2 == 0 ? qk_size + 1 : qk_size;
}

inline size_t sharedBytes(const AttentionDeviceArgs& a) {
  int64_t floats = kBlockRows * a.qk_size + kKeyTile * keyTileStride(a.qk_size) +
                   kKeyTile * a.v_size + kWarps * kKeyTile;
  return static_cast<size_t>(floats) * sizeof(float);
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Row `j` of the concatenated (past ++ current) keys or values of (b, kv head hk), element d.
template <typename T>
__device__ __forceinline__ float loadKv(const T* past, const T* cur, const HeadStrides& s,
                                        int64_t past_seq, int64_t size, int64_t heads, int64_t b,
                                        int64_t hk, int64_t j, int64_t d) {
  if (j < past_seq) return load(past, ((b * heads + hk) * past_seq + j) * size + d);
  return load(cur, b * s.batch + hk * s.head + (j - past_seq) * s.seq + d);
}

/// The keys any row of a block may attend: the valid ones (nonpad_kv_seqlen), those the mask
/// covers, and with is_causal those up to the diagonal of the block's last row `q_last`; `offset`
/// is where the current queries sit among the keys.
__device__ __forceinline__ void keyRange(const AttentionDeviceArgs& a, int64_t b, int64_t q_last,
                                         int64_t& offset, int64_t& key_end) {
  const int64_t total = a.past_seq + a.kv_seq;
  offset = a.past_seq;
  key_end = total;
  if (a.nonpad != nullptr) {
    key_end = min(max(a.nonpad[b], int64_t{0}), total);
    offset = key_end - a.q_seq;
  }
  if (a.mask != nullptr) key_end = min(key_end, a.mask_len);
  if (a.causal) key_end = min(key_end, max(q_last + offset + 1, int64_t{0}));
}

/// Keys and values kt .. kt + kKeyTile of (b, kv head hk) into shared memory (zeros past key_end).
template <typename T>
__device__ __forceinline__ void loadKvTile(const AttentionDeviceArgs& a, float* k_s, float* v_s,
                                           int64_t k_stride, int64_t kt, int64_t key_end, int64_t b,
                                           int64_t hk, int tid) {
  const int64_t dk = a.qk_size, dv = a.v_size;
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  const T* past_k = static_cast<const T*>(a.past_key);
  const T* past_v = static_cast<const T*>(a.past_value);
  for (int64_t idx = tid; idx < kKeyTile * dk; idx += blockDim.x) {
    int64_t jj = idx / dk, d = idx % dk, j = kt + jj;
    k_s[jj * k_stride + d] =
        j < key_end ? loadKv(past_k, k, a.k_strides, a.past_seq, dk, a.kv_heads, b, hk, j, d)
                    : 0.0f;
  }
  for (int64_t idx = tid; idx < kKeyTile * dv; idx += blockDim.x) {
    int64_t jj = idx / dv, d = idx % dv, j = kt + jj;
    v_s[idx] = j < key_end ? loadKv(past_v, v, a.v_strides, a.past_seq, dv, a.kv_heads, b, hk, j, d)
                           : 0.0f;
  }
}

/// A warp's finished rows (from `row0`, kRowsPerWarp of them) to Y. A row that attends to nothing
/// (every key masked) is 0, as the reference's; so is a poisoned one.
template <typename T, int kChunks>
__device__ __forceinline__ void storeRows(const AttentionDeviceArgs& a, const float* l,
                                          const bool* poisoned, const float (*acc)[kChunks],
                                          int64_t row0, int64_t b, int64_t h, int lane) {
  T* y = static_cast<T*>(a.y);
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t qi = row0 + r;
    if (qi >= a.q_seq) continue;
    const float inv = l[r] > 0.0f && !poisoned[r] ? 1.0f / l[r] : 0.0f;
    const int64_t base = b * a.y_strides.batch + h * a.y_strides.head + qi * a.y_strides.seq;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t d = lane + 32 * c;
      if (d >= a.v_size) break;
      store(y, base + d, acc[r][c] * inv);
    }
  }
}

/// kChunks: output dims per lane (V head sizes up to 32 * kChunks).
template <typename T, int kChunks>
__global__ void __launch_bounds__(kWarps * 32)
    attentionKernel(AttentionDeviceArgs a, int64_t q_blocks) {
  extern __shared__ float smem[];
  const int64_t dk = a.qk_size, dv = a.v_size, k_stride = keyTileStride(dk);
  float* q_s = smem;                       // [kBlockRows][dk]
  float* k_s = q_s + kBlockRows * dk;      // [kKeyTile][k_stride]
  float* v_s = k_s + kKeyTile * k_stride;  // [kKeyTile][dv]
  float* p_s = v_s + kKeyTile * dv;        // [kWarps][kKeyTile]
  const T* q = static_cast<const T*>(a.q);

  const int64_t block = blockIdx.x;
  const int64_t qb = block % q_blocks;
  const int64_t h = (block / q_blocks) % a.q_heads;
  const int64_t b = block / q_blocks / a.q_heads;
  const int64_t hk = h / (a.q_heads / a.kv_heads);
  const int64_t q0 = qb * kBlockRows;
  const int64_t q_last = min(q0 + kBlockRows, a.q_seq) - 1;

  int64_t offset = 0, key_end = 0;
  keyRange(a, b, q_last, offset, key_end);

  const int tid = static_cast<int>(threadIdx.x);
  for (int64_t idx = tid; idx < kBlockRows * dk; idx += blockDim.x) {
    int64_t r = idx / dk, d = idx % dk, qi = q0 + r;
    q_s[idx] =
        qi < a.q_seq
            ? load(q, b * a.q_strides.batch + h * a.q_strides.head + qi * a.q_strides.seq + d)
            : 0.0f;
  }

  const int warp = tid / 32, lane = tid % 32;
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kChunks];
  bool poisoned[kRowsPerWarp];  // nan_guard: a live score was NaN or +inf
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
    poisoned[r] = false;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[r][c] = 0.0f;
  }

  for (int64_t kt = 0; kt < key_end; kt += kKeyTile) {
    __syncthreads();  // the previous tile is consumed (and, the first time, Q is stored)
    loadKvTile<T>(a, k_s, v_s, k_stride, kt, key_end, b, hk, tid);
    __syncthreads();

    const int64_t j = kt + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = warp * kRowsPerWarp + r;
      const int64_t qi = q0 + row;
      if (qi >= a.q_seq) continue;  // uniform across the warp
      float s = -INFINITY;
      bool live = false, bad = false;
      if (j < key_end && !(a.causal && j > qi + offset)) {
        float bias = a.mask != nullptr
                         ? maskBias(a, b * a.mask_strides.batch + h * a.mask_strides.head +
                                           qi * a.mask_strides.seq + j)
                         : 0.0f;
        // A key is masked when its bias is -inf, whatever its score (as the reference decides);
        // the guard still sees its score plus bias (NaN + -inf is NaN).
        live = bias != -INFINITY;
        if (live || a.nan_guard) {
          const float* qr = q_s + row * dk;
          const float* kr = k_s + lane * k_stride;
          float dot = 0.0f;
          for (int64_t d = 0; d < dk; ++d) dot = fmaf(qr[d], kr[d], dot);
          s = dot * a.scale;
          if (a.softcap > 0.0f) s = a.softcap * tanhf(s / a.softcap);
          s += bias;
          bad = isnan(s) || s == INFINITY;
          if (!live) s = -INFINITY;
        }
      }
      if (a.nan_guard && __any_sync(0xffffffffu, bad)) poisoned[r] = true;
      const float tile_max = warpMax(live ? s : -INFINITY);
      if (tile_max == -INFINITY || poisoned[r]) continue;  // nothing to attend (uniform)
      const float m_new = fmaxf(m[r], tile_max);
      const float p = live ? expf(s - m_new) : 0.0f;
      const float corr = expf(m[r] - m_new);  // 0 while m is -inf
      l[r] = l[r] * corr + warpSum(p);
      p_s[warp * kKeyTile + lane] = p;
      __syncwarp();
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int64_t d = lane + 32 * c;
        if (d >= dv) break;
        float sum = 0.0f;
#pragma unroll 8
        for (int jj = 0; jj < kKeyTile; ++jj)
          sum = fmaf(p_s[warp * kKeyTile + jj], v_s[jj * dv + d], sum);
        acc[r][c] = acc[r][c] * corr + sum;
      }
      __syncwarp();
      m[r] = m_new;
    }
  }

  storeRows<T, kChunks>(a, l, poisoned, acc, q0 + warp * kRowsPerWarp, b, h, lane);
}

/// The score of query row qi against key j before the bias (scaled, softcapped) and the bias
/// (the mask, -inf for a padded, invalid or causal-masked key), as the reference computes them.
template <typename T>
__device__ __forceinline__ void scoreAt(const AttentionDeviceArgs& a, int64_t b, int64_t h,
                                        int64_t hk, int64_t qi, int64_t j, int64_t valid,
                                        int64_t offset, float* score, float* bias) {
  const T* q = static_cast<const T*>(a.q) + b * a.q_strides.batch + h * a.q_strides.head +
               qi * a.q_strides.seq;
  float dot = 0.0f;
  for (int64_t d = 0; d < a.qk_size; ++d) {
    dot = fmaf(load(q, d),
               loadKv(static_cast<const T*>(a.past_key), static_cast<const T*>(a.k), a.k_strides,
                      a.past_seq, a.qk_size, a.kv_heads, b, hk, j, d),
               dot);
  }
  float s = dot * a.scale;
  if (a.softcap > 0.0f) s = a.softcap * tanhf(s / a.softcap);
  *score = s;
  if (j >= valid || (a.mask != nullptr && j >= a.mask_len) || (a.causal && j > qi + offset)) {
    *bias = -INFINITY;
  } else if (a.mask != nullptr) {
    *bias = maskBias(
        a, b * a.mask_strides.batch + h * a.mask_strides.head + qi * a.mask_strides.seq + j);
  } else {
    *bias = 0.0f;
  }
}

/// qk_matmul_output: one warp per (batch, head, query row), its lanes over the keys (three
/// passes for the probabilities of mode 3: max, sum, write).
template <typename T>
__global__ void qkOutputKernel(AttentionDeviceArgs a) {
  const int64_t rows = a.batch * a.q_heads * a.q_seq, total = a.past_seq + a.kv_seq;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  T* out = static_cast<T*>(a.qk_output);
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < rows;
       row += warps) {
    const int64_t qi = row % a.q_seq, h = (row / a.q_seq) % a.q_heads;
    const int64_t b = row / a.q_seq / a.q_heads, hk = h / (a.q_heads / a.kv_heads);
    int64_t valid = total, offset = a.past_seq;
    if (a.nonpad != nullptr) {
      valid = min(max(a.nonpad[b], int64_t{0}), total);
      offset = valid - a.q_seq;
    }
    T* r = out + row * total;
    float mx = -INFINITY, sum = 0.0f;
    bool any = false;
    for (int pass = a.qk_mode == 3 ? 0 : 2; pass < 3; ++pass) {
      for (int64_t j = lane; j < total; j += 32) {
        float s, bias;
        scoreAt<T>(a, b, h, hk, qi, j, valid, offset, &s, &bias);
        if (a.qk_mode <= 1) {
          store(r, j, s);
        } else if (a.qk_mode == 2) {
          store(r, j, s + bias);
        } else if (pass == 0) {
          mx = fmaxf(mx, s + bias);
          any = any || bias != -INFINITY;
        } else if (pass == 1) {
          sum += expf(s + bias - mx);
        } else {
          store(r, j, any ? expf(s + bias - mx) / sum : 0.0f);
        }
      }
      if (pass == 0) {
        mx = warpMax(mx);
        any = __any_sync(0xffffffffu, any);
      } else if (pass == 1) {
        sum = warpSum(sum);
      }
    }
  }
}

/// present[b, h, t, d] = t < past_seq ? past[b, h, t, d] : cur[b, h, t - past_seq, d].
template <typename T>
__global__ void presentKernel(const T* past, const T* cur, HeadStrides s, int64_t past_seq,
                              int64_t total, int64_t heads, int64_t size, int64_t count,
                              T* present) {
  ONNXOPT_GRID_STRIDE(i, count) {
    int64_t d = i % size, t = (i / size) % total, bh = i / size / total;
    int64_t h = bh % heads, b = bh / heads;
    present[i] = t < past_seq ? past[((b * heads + h) * past_seq + t) * size + d]
                              : cur[b * s.batch + h * s.head + (t - past_seq) * s.seq + d];
  }
}

/// One warp per (batch, head, query row) of the scores: max, sum and write passes over the row
/// (a few hundred floats: L1 holds it between passes).
template <typename T>
__global__ void scoresSoftmaxKernel(AttentionDeviceArgs a, const float* scores, T* probs) {
  const int64_t rows = a.batch * a.q_heads * a.q_seq, keys = a.kv_seq;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  int64_t key_end = keys;
  if (a.mask != nullptr) key_end = min(key_end, a.mask_len);
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < rows;
       row += warps) {
    const int64_t qi = row % a.q_seq, h = (row / a.q_seq) % a.q_heads,
                  b = row / a.q_seq / a.q_heads;
    const float* s = scores + row * keys;
    T* p = probs + row * keys;
    const int64_t mask_row =
        b * a.mask_strides.batch + h * a.mask_strides.head + qi * a.mask_strides.seq;
    auto biasAt = [&](int64_t j) {
      if (j >= key_end || (a.causal && j > qi)) return -INFINITY;
      return a.mask != nullptr ? maskBias(a, mask_row + j) : 0.0f;
    };
    float mx = -INFINITY;
    bool any = false, bad = false;
    for (int64_t j = lane; j < keys; j += 32) {
      const float bias = biasAt(j);
      const float x = s[j] + bias;
      bad = bad || (j < key_end && (isnan(x) || x == INFINITY));  // masked keys' too
      if (bias == -INFINITY) continue;  // masked whatever its score, as the fused kernel
      mx = fmaxf(mx, x);
      any = true;
    }
    mx = warpMax(mx);
    any = __any_sync(0xffffffffu, any);
    // nan_guard: a row with a score plus bias NaN or +inf is 0.
    const bool zero_row = a.nan_guard && __any_sync(0xffffffffu, bad);
    float sum = 0.0f;
    for (int64_t j = lane; j < keys; j += 32) {
      const float bias = biasAt(j);
      if (bias != -INFINITY) sum += expf(s[j] + bias - mx);
    }
    sum = warpSum(sum);
    const float inv = any && sum > 0.0f ? 1.0f / sum : 0.0f;
    for (int64_t j = lane; j < keys; j += 32) {
      const float bias = biasAt(j);
      store(p, j, bias == -INFINITY || zero_row ? 0.0f : expf(s[j] + bias - mx) * inv);
    }
  }
}

template <typename T>
cudaError_t launchTyped(const AttentionDeviceArgs& a, cudaStream_t stream) {
  const int64_t total = a.past_seq + a.kv_seq;
  const struct {
    const void* past;
    const void* cur;
    HeadStrides strides;
    int64_t size;
    void* present;
  } caches[] = {{a.past_key, a.k, a.k_strides, a.qk_size, a.present_key},
                {a.past_value, a.v, a.v_strides, a.v_size, a.present_value}};
  for (const auto& c : caches) {
    if (c.present == nullptr) continue;
    int64_t count = a.batch * a.kv_heads * total * c.size;
    presentKernel<T><<<blocksFor(count), kThreads, 0, stream>>>(
        static_cast<const T*>(c.past), static_cast<const T*>(c.cur), c.strides, a.past_seq, total,
        a.kv_heads, c.size, count, static_cast<T*>(c.present));
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  const int64_t q_blocks = (a.q_seq + kBlockRows - 1) / kBlockRows;
  const auto blocks = static_cast<unsigned>(a.batch * a.q_heads * q_blocks);
  const size_t smem = sharedBytes(a);
  // V head sizes up to 128 keep 4 output dims per lane in registers; up to 256, 8 (and the tiles
  // then need more than the default 48 KiB of shared memory).
  auto run = [&](auto kernel) {
    if (smem > 48 * 1024) {
      cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
      if (e != cudaSuccess) return e;
    }
    kernel<<<blocks, kWarps * 32, smem, stream>>>(a, q_blocks);
    return cudaGetLastError();
  };
  if (a.qk_output != nullptr) {
    const int64_t rows = a.batch * a.q_heads * a.q_seq;
    qkOutputKernel<T><<<blocksFor(rows * 32), kThreads, 0, stream>>>(a);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (a.v_size <= 128) return run(attentionKernel<T, 4>);
  return run(attentionKernel<T, 8>);
}

}  // namespace

bool attentionKernelExists(DataType dtype, DataType mask_dtype) {
  bool float_type =
      dtype == DataType::kFloat || dtype == DataType::kFloat16 || dtype == DataType::kBfloat16;
  bool mask_ok = mask_dtype == DataType::kUndefined || mask_dtype == DataType::kBool ||
                 mask_dtype == DataType::kFloat || mask_dtype == DataType::kFloat16 ||
                 mask_dtype == DataType::kBfloat16;
  return float_type && mask_ok;
}

cudaError_t launchAttention(const AttentionDeviceArgs& args, cudaStream_t stream) {
  if (args.batch * args.q_heads * args.q_seq == 0) return cudaSuccess;
  switch (args.dtype) {
    case DataType::kFloat16:
      return launchTyped<__half>(args, stream);
    case DataType::kBfloat16:
      return launchTyped<__nv_bfloat16>(args, stream);
    default:
      return launchTyped<float>(args, stream);
  }
}

cudaError_t launchAttentionSoftmax(const AttentionDeviceArgs& args, const float* scores,
                                   void* probs, cudaStream_t stream) {
  const int64_t rows = args.batch * args.q_heads * args.q_seq;
  if (rows == 0 || args.kv_seq == 0) return cudaSuccess;
  const unsigned blocks = blocksFor(rows * 32);
  switch (args.dtype) {
    case DataType::kFloat16:
      scoresSoftmaxKernel<__half>
          <<<blocks, kThreads, 0, stream>>>(args, scores, static_cast<__half*>(probs));
      break;
    case DataType::kBfloat16:
      scoresSoftmaxKernel<__nv_bfloat16>
          <<<blocks, kThreads, 0, stream>>>(args, scores, static_cast<__nv_bfloat16*>(probs));
      break;
    default:
      scoresSoftmaxKernel<float>
          <<<blocks, kThreads, 0, stream>>>(args, scores, static_cast<float*>(probs));
      break;
  }
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
