// Device half of the pool family (pool_device.h): one thread per output element for the windowed
// pools (taps visited in the reference kernels' order, so ties and NaNs pick the same element),
// one block per channel with a shared-memory reduction for the global pools. Accumulation in float
// (LpPool's powers and root in double, rounded as the reference rounds them).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/conv/pool_device.h"
#include "kernels/cuda/element_types.cuh"

namespace onnxopt::kernels::cuda {

namespace {

/// MaxPool's value where every tap falls into padding: -inf, or the integer type's lowest.
template <typename T>
__device__ __forceinline__ Compute<T> lowestOf() {
  if constexpr (kIsFloating<T>) {
    return -INFINITY;
  } else if constexpr (std::is_same_v<T, int8_t>) {
    return -128;
  } else {
    return 0;  // uint8
  }
}

template <typename T>
__global__ void windowPool(PoolDeviceArgs a, int64_t total) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  ONNXOPT_GRID_STRIDE(i, total) {
    int64_t rest = i;
    // Channels-last: i = ((n * out0 + o0) * out1 + o1) * out2 + o2) * C + c, taps C apart.
    int64_t c = 0, tap = 1;
    if (a.channels_last > 0) {
      c = rest % a.channels_last;
      rest /= a.channels_last;
      tap = a.channels_last;
    }
    int64_t o2 = rest % a.out[2];
    rest /= a.out[2];
    int64_t o1 = rest % a.out[1];
    rest /= a.out[1];
    int64_t o0 = rest % a.out[0];
    int64_t nc = rest / a.out[0];
    int64_t start0 = o0 * a.strides[0] - a.pad_begin[0];
    int64_t start1 = o1 * a.strides[1] - a.pad_begin[1];
    int64_t start2 = o2 * a.strides[2] - a.pad_begin[2];
    // nc: n * C + c channels-first, n channels-last.
    const T* xp = a.channels_last > 0 ? x + nc * a.in_volume * tap + c : x + nc * a.in_volume;
    if (a.kind == PoolKind::kMax) {
      Compute<T> best = lowestOf<T>();
      int64_t best_idx = -1;
      for (int64_t k0 = 0; k0 < a.kernel[0]; ++k0) {
        int64_t p0 = start0 + k0 * a.dilations[0];
        if (p0 < 0 || p0 >= a.in[0]) continue;
        for (int64_t k1 = 0; k1 < a.kernel[1]; ++k1) {
          int64_t p1 = start1 + k1 * a.dilations[1];
          if (p1 < 0 || p1 >= a.in[1]) continue;
          for (int64_t k2 = 0; k2 < a.kernel[2]; ++k2) {
            int64_t p2 = start2 + k2 * a.dilations[2];
            if (p2 < 0 || p2 >= a.in[2]) continue;
            int64_t idx = (p0 * a.in[1] + p1) * a.in[2] + p2;
            Compute<T> v = load(xp, idx * tap);
            if (best_idx < 0 || v > best) {
              best = v;
              best_idx = idx;
            }
          }
        }
      }
      store(y, i, best);
      if (a.indices != nullptr) {
        int64_t idx = best_idx < 0 ? 0 : best_idx;
        if (a.column_major && best_idx >= 0) {
          // The first spatial dim varies fastest; the leading unit dims (coordinate 0, size 1)
          // drop out, so one formula serves every rank.
          int64_t c2 = best_idx % a.in[2], c1 = (best_idx / a.in[2]) % a.in[1];
          int64_t c0 = best_idx / (a.in[2] * a.in[1]);
          idx = c0 + a.in[0] * (c1 + a.in[1] * c2);
        }
        a.indices[i] = nc * a.in_volume + idx;
      }
      continue;
    }
    if constexpr (kIsFloating<T>) {  // AveragePool, LpPool
      float sum = 0;
      int64_t count = 0, padded = 0;
      for (int64_t k0 = 0; k0 < a.kernel[0]; ++k0) {
        int64_t p0 = start0 + k0 * a.dilations[0];
        bool in0 = p0 >= 0 && p0 < a.in[0];
        bool pad0 = p0 >= -a.pad_begin[0] && p0 < a.in[0] + a.pad_end[0];
        for (int64_t k1 = 0; k1 < a.kernel[1]; ++k1) {
          int64_t p1 = start1 + k1 * a.dilations[1];
          bool in1 = in0 && p1 >= 0 && p1 < a.in[1];
          bool pad1 = pad0 && p1 >= -a.pad_begin[1] && p1 < a.in[1] + a.pad_end[1];
          for (int64_t k2 = 0; k2 < a.kernel[2]; ++k2) {
            int64_t p2 = start2 + k2 * a.dilations[2];
            if (pad1 && p2 >= -a.pad_begin[2] && p2 < a.in[2] + a.pad_end[2]) ++padded;
            if (!in1 || p2 < 0 || p2 >= a.in[2]) continue;
            float v = static_cast<float>(load(xp, ((p0 * a.in[1] + p1) * a.in[2] + p2) * tap));
            if (a.kind == PoolKind::kLp) {
              sum += static_cast<float>(pow(fabs(static_cast<double>(v)), a.p));
            } else {
              sum += v;
            }
            ++count;
          }
        }
      }
      if (a.kind == PoolKind::kLp) {
        // As the reference: each power rounded to float, summed in float, the root in double.
        store(y, i, static_cast<float>(pow(static_cast<double>(sum), 1.0 / a.p)));
      } else {
        if (a.count_include_pad) count = padded;
        store(y, i, sum / static_cast<float>(count));
      }
    }
  }
}

/// Channels-last 2-D MaxPool without Indices, kLanes channels per thread through one 16-byte
/// load per tap (windowPool's generic form, one element per thread and 64-bit index arithmetic,
/// was memory-bound far below the bandwidth: docs/gpu_benchmarks.md). Same choice per
/// channel as windowPool: a tap replaces the best when it is the first or compares greater, so a
/// NaN is kept only when it is the first tap. Every index fits int (checked by the launcher).
template <typename T>
__global__ void maxPoolNhwcVector(PoolDeviceArgs a, int total) {
  constexpr int kLanes = 16 / sizeof(T);
  const int groups = static_cast<int>(a.channels_last) / kLanes;
  const int in_h = static_cast<int>(a.in[1]), in_w = static_cast<int>(a.in[2]);
  const int out_h = static_cast<int>(a.out[1]), out_w = static_cast<int>(a.out[2]);
  const int k_h = static_cast<int>(a.kernel[1]), k_w = static_cast<int>(a.kernel[2]);
  const int s_h = static_cast<int>(a.strides[1]), s_w = static_cast<int>(a.strides[2]);
  const int d_h = static_cast<int>(a.dilations[1]), d_w = static_cast<int>(a.dilations[2]);
  const int p_h = static_cast<int>(a.pad_begin[1]), p_w = static_cast<int>(a.pad_begin[2]);
  const uint4* x = static_cast<const uint4*>(a.x);
  uint4* y = static_cast<uint4*>(a.y);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    int g = i % groups;
    int rest = i / groups;
    int ow = rest % out_w;
    rest /= out_w;
    int oh = rest % out_h;
    int n = rest / out_h;
    float best[kLanes];
    bool any = false;
    for (int kh = 0; kh < k_h; ++kh) {
      int ih = oh * s_h - p_h + kh * d_h;
      if (ih < 0 || ih >= in_h) continue;
      for (int kw = 0; kw < k_w; ++kw) {
        int iw = ow * s_w - p_w + kw * d_w;
        if (iw < 0 || iw >= in_w) continue;
        uint4 raw = __ldg(x + ((n * in_h + ih) * in_w + iw) * groups + g);
        const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int l = 0; l < kLanes; ++l) {
          float f = static_cast<float>(v[l]);
          if (!any || f > best[l]) best[l] = f;
        }
        any = true;
      }
    }
    uint4 out;
    T* o = reinterpret_cast<T*>(&out);
#pragma unroll
    for (int l = 0; l < kLanes; ++l) o[l] = static_cast<T>(any ? best[l] : -INFINITY);
    y[i] = out;
  }
}

/// Whether maxPoolNhwcVector takes these arguments: channels-last 2-D MaxPool of a float type
/// without Indices, C a multiple of the lanes, 16-byte aligned X and Y, int-sized indices.
bool vectorNhwcMax(const PoolDeviceArgs& a, int64_t total) {
  size_t bytes = a.dtype == DataType::kFloat ? 4 : 2;
  int64_t lanes = static_cast<int64_t>(16 / bytes);
  bool floating = a.dtype == DataType::kFloat || a.dtype == DataType::kFloat16 ||
                  a.dtype == DataType::kBfloat16;
  int64_t in_elems = a.nc * a.in_volume;  // N * C * H * W
  return a.kind == PoolKind::kMax && floating && a.channels_last > 0 && a.indices == nullptr &&
         a.in[0] == 1 && a.out[0] == 1 && a.kernel[0] == 1 && a.channels_last % lanes == 0 &&
         reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && reinterpret_cast<uintptr_t>(a.y) % 16 == 0 &&
         total <= INT32_MAX && in_elems <= INT32_MAX;
}

template <typename T, bool kIsMax>
__global__ void globalPool(const T* x, T* y, int64_t nc, int64_t s) {
  __shared__ float partial[kThreads];
  for (int64_t row = blockIdx.x; row < nc; row += gridDim.x) {
    const T* xp = x + row * s;
    float acc = kIsMax ? -INFINITY : 0.0f;
    for (int64_t j = threadIdx.x; j < s; j += blockDim.x) {
      float v = static_cast<float>(load(xp, j));
      acc = kIsMax ? (acc < v ? v : acc) : acc + v;  // max as std::max: NaNs are skipped
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        float a = partial[threadIdx.x], b = partial[threadIdx.x + half];
        partial[threadIdx.x] = kIsMax ? (a < b ? b : a) : a + b;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      float r = partial[0];
      store(y, row, static_cast<Compute<T>>(kIsMax ? r : r / static_cast<float>(s)));
    }
    __syncthreads();
  }
}

}  // namespace

cudaError_t launchPool(const PoolDeviceArgs& args, cudaStream_t stream) {
  bool is_float = args.dtype == DataType::kFloat || args.dtype == DataType::kFloat16 ||
                  args.dtype == DataType::kBfloat16;
  bool is_byte = args.dtype == DataType::kInt8 || args.dtype == DataType::kUint8;
  if (!is_float && !(is_byte && args.kind == PoolKind::kMax)) return cudaErrorInvalidValue;
  bool global = args.kind == PoolKind::kGlobalMax || args.kind == PoolKind::kGlobalAverage;
  int64_t total = global ? args.nc : args.nc * args.out[0] * args.out[1] * args.out[2];
  if (total == 0) return cudaSuccess;
  bool launched = visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, int64_t>) {
      return;
    } else if constexpr (!kIsFloating<T>) {
      windowPool<T><<<blocksFor(total), kThreads, 0, stream>>>(args, total);
    } else {
      if (args.kind == PoolKind::kGlobalMax || args.kind == PoolKind::kGlobalAverage) {
        unsigned blocks =
            static_cast<unsigned>(total < (int64_t{1} << 20) ? total : (int64_t{1} << 20));
        const T* x = static_cast<const T*>(args.x);
        T* y = static_cast<T*>(args.y);
        if (args.kind == PoolKind::kGlobalMax) {
          globalPool<T, true><<<blocks, kThreads, 0, stream>>>(x, y, args.nc, args.in_volume);
        } else {
          globalPool<T, false><<<blocks, kThreads, 0, stream>>>(x, y, args.nc, args.in_volume);
        }
      } else if (vectorNhwcMax(args, total)) {
        // total / lanes threads, each kLanes channels of one output position.
        int64_t vec_total = total / static_cast<int64_t>(16 / sizeof(T));
        maxPoolNhwcVector<T>
            <<<blocksFor(vec_total), kThreads, 0, stream>>>(args, static_cast<int>(vec_total));
      } else {
        windowPool<T><<<blocksFor(total), kThreads, 0, stream>>>(args, total);
      }
    }
  });
  if (!launched) return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
