// Device code of the normalizations (norm.h). A row (LayerNormalization's X.shape[axis:], an
// instance, a group) goes to a warp when short and to a block when long; its mean and variance
// are two passes in float (no cancellation from E[x^2] - E[x]^2), then a third pass writes
// (x - mean) * inv_std * scale + bias. BatchNormalization is elementwise over its channels.
#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/norm/norm_device.h"
#include "kernels/cuda/reduce/row_reduce.cuh"

namespace onnxopt::kernels::cuda {

namespace {

/// The scale/bias element of column `col` of row `row`: operand 1 (scale) or 2 (bias) of the
/// params plan for kColumn.
template <int kOperand>
__device__ __forceinline__ int64_t paramIndex(const NormDeviceArgs& a, int64_t row, int64_t col) {
  switch (a.index) {
    case NormParamIndex::kColumn: {
      if (a.params.linear) return col;
      int64_t off[3];
      broadcastOffsets<3>(a.params, col, off);
      return off[kOperand];
    }
    case NormParamIndex::kRow:
      return row % a.period;
    case NormParamIndex::kChannelInGroup:
      return (row % a.period) * a.group_stride + col / a.spatial;
  }
  return 0;
}

/// Element j of the row: x, or x + skip rounded to T as the Add of SkipLayerNormalization's
/// decomposition stores it.
template <typename T>
__device__ __forceinline__ float rowInput(const T* xr, const T* sr, int64_t j) {
  if (sr == nullptr) return load(xr, j);
  T rounded;
  store(&rounded, 0, load(xr, j) + load(sr, j));
  return load(&rounded, 0);
}

template <typename T, bool kWarpRow>
__global__ void normRowsKernel(NormDeviceArgs a) {
  __shared__ float scratch[32];
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const T* scale = static_cast<const T*>(a.scale);
  const T* bias = static_cast<const T*>(a.bias);
  const T* skip = static_cast<const T*>(a.skip);
  T* sum_out = static_cast<T*>(a.sum);
  const float count = static_cast<float>(a.size);
  RowSlot<kWarpRow> slot;
  for (int64_t row = slot.row; row < a.rows; row += slot.stride) {
    const T* xr = x + row * a.size;
    const T* sr = skip == nullptr ? nullptr : skip + row * a.size;
    T* yr = y + row * a.size;
    float mean = 0.0f;
    if (!a.rms) {
      float sum = 0.0f;
      for (int64_t j = slot.lane; j < a.size; j += slot.lanes) sum += rowInput(xr, sr, j);
      mean = rowReduce<kWarpRow>(sum, SumOp{}, scratch) / count;
    }
    float sq = 0.0f;
    for (int64_t j = slot.lane; j < a.size; j += slot.lanes) {
      float d = rowInput(xr, sr, j) - mean;
      sq += d * d;
    }
    const float var = rowReduce<kWarpRow>(sq, SumOp{}, scratch) / count;
    const float inv_std = 1.0f / sqrtf(var + a.epsilon);
    if (slot.lane == 0) {
      if (a.mean != nullptr) a.mean[row] = mean;
      if (a.inv_std != nullptr) a.inv_std[row] = inv_std;
    }
    T* sumr = sum_out == nullptr ? nullptr : sum_out + row * a.size;
    for (int64_t j = slot.lane; j < a.size; j += slot.lanes) {
      const float in = rowInput(xr, sr, j);
      if (sumr != nullptr) store(sumr, j, in);
      float v = (in - mean) * inv_std * load(scale, paramIndex<1>(a, row, j));
      if (bias != nullptr) v += load(bias, paramIndex<2>(a, row, j));
      store(yr, j, v);
    }
  }
}

/// The register-cached form of normRowsKernel for rows of at most 32 * kChunks vectors of 16
/// bytes (LayerNormalization and SkipLayerNormalization over a hidden size up to 2048 fp16
/// elements): one warp per row reads x (and skip) once, 16 bytes per lane and load, keeps the
/// row in registers through the mean, variance and normalization passes, and writes y (and the
/// sum) 16 bytes at a time, where the three-pass kernel reads the row three times element by
/// element. Same arithmetic in the same order per element as normRowsKernel's; the reductions'
/// order differs (last-place differences only).
template <typename T, int kChunks>
__global__ void normRowsVecKernel(NormDeviceArgs a) {
  constexpr int kV = kVecElements<T>;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int64_t vectors = a.size / kV;
  const float count = static_cast<float>(a.size);
  const auto* scale = static_cast<const Vec16<T>*>(a.scale);
  const auto* bias = static_cast<const Vec16<T>*>(a.bias);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
       row < a.rows; row += warps) {
    const auto* xr = static_cast<const Vec16<T>*>(a.x) + row * vectors;
    const auto* sr =
        a.skip == nullptr ? nullptr : static_cast<const Vec16<T>*>(a.skip) + row * vectors;
    float v[kChunks][kV];
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t i = lane + 32 * c;
      if (i >= vectors) break;
      Vec16<T> xv = xr[i];
      if (sr != nullptr) {
        Vec16<T> sv = sr[i];
#pragma unroll
        for (int k = 0; k < kV; ++k) store(xv.v, k, load(xv.v, k) + load(sv.v, k));  // rounded
        if (a.sum != nullptr) static_cast<Vec16<T>*>(a.sum)[row * vectors + i] = xv;
      }
#pragma unroll
      for (int k = 0; k < kV; ++k) {
        v[c][k] = load(xv.v, k);
        sum += v[c][k];
      }
    }
    const float mean = a.rms ? 0.0f : warpReduce(sum, SumOp{}) / count;
    float sq = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if (lane + 32 * c >= vectors) break;
#pragma unroll
      for (int k = 0; k < kV; ++k) {
        const float d = v[c][k] - mean;
        sq += d * d;
      }
    }
    const float var = warpReduce(sq, SumOp{}) / count;
    const float inv_std = 1.0f / sqrtf(var + a.epsilon);
    if (lane == 0) {
      if (a.mean != nullptr) a.mean[row] = mean;
      if (a.inv_std != nullptr) a.inv_std[row] = inv_std;
    }
    auto* yr = static_cast<Vec16<T>*>(a.y) + row * vectors;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t i = lane + 32 * c;
      if (i >= vectors) break;
      const Vec16<T> sc = scale[i];
      Vec16<T> out;
      if (bias != nullptr) {
        const Vec16<T> bv = bias[i];
#pragma unroll
        for (int k = 0; k < kV; ++k) {
          store(out.v, k, (v[c][k] - mean) * inv_std * load(sc.v, k) + load(bv.v, k));
        }
      } else {
#pragma unroll
        for (int k = 0; k < kV; ++k) store(out.v, k, (v[c][k] - mean) * inv_std * load(sc.v, k));
      }
      yr[i] = out;
    }
  }
}

/// Whether normRowsVecKernel<T, ...> takes the rows: per-column parameters read linearly, a row
/// of whole 16-byte vectors (at most 32 * kMaxRowChunks of them), every pointer 16-byte aligned.
template <typename T>
bool vecRows(const NormDeviceArgs& a) {
  if (a.index != NormParamIndex::kColumn || !a.params.linear) return false;
  if (a.size % kVecElements<T> != 0 || a.size / kVecElements < T >> 32 * kMaxRowChunks)
    return false;
  for (const void* p : {a.x, static_cast<const void*>(a.y), a.scale, a.bias, a.skip,
                        static_cast<const void*>(a.sum)}) {
    if (p != nullptr && !aligned16(p)) return false;
  }
  return true;
}

/// Element i of a float-type parameter whose type is known at run time only.
__device__ __forceinline__ float loadParam(const void* p, DataType dtype, int64_t i) {
  switch (dtype) {
    case DataType::kFloat16:
      return load(static_cast<const __half*>(p), i);
    case DataType::kBfloat16:
      return load(static_cast<const __nv_bfloat16*>(p), i);
    default:
      return static_cast<const float*>(p)[i];
  }
}

template <typename T>
__global__ void batchNormKernel(BatchNormDeviceArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    const int64_t c = (i / a.inner) % a.channels;
    // The reference kernel's order: scale / sqrt(var + eps), then bias - mean * that.
    const float s = loadParam(a.scale, a.scale_dtype, c) /
                    sqrtf(loadParam(a.var, a.stats_dtype, c) + a.epsilon);
    const float shift =
        loadParam(a.bias, a.scale_dtype, c) - loadParam(a.mean, a.stats_dtype, c) * s;
    store(y, i, load(x, i) * s + shift);
  }
}

template <typename T>
__global__ void lrnKernel(LrnDeviceArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    const int64_t c = (i / a.inner) % a.channels;
    const int64_t base = i - (c * a.inner);  // channel 0 of this (n, s)
    const int64_t lo = c - (a.before < c ? a.before : c);
    const int64_t hi = c + a.after < a.channels - 1 ? c + a.after : a.channels - 1;
    float sq = 0.0f;
    for (int64_t j = lo; j <= hi; ++j) {
      const float e = load(x, base + j * a.inner);
      sq += e * e;
    }
    store(y, i, load(x, i) / powf(a.bias + a.alpha_over_size * sq, a.beta));
  }
}

}  // namespace

cudaError_t launchNorm(const NormDeviceArgs& args, cudaStream_t stream) {
  if (args.rows == 0 || args.size == 0) return cudaSuccess;
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      if (vecRows<T>(args)) {
        withRowChunks(args.size / kVecElements<T>, [&](auto chunks) {
          normRowsVecKernel<T, decltype(chunks)::value>
              <<<rowBlocks(args.rows, true), kRowThreads, 0, stream>>>(args);
        });
      } else if (args.size <= kWarpRowMax) {
        normRowsKernel<T, true><<<rowBlocks(args.rows, true), kRowThreads, 0, stream>>>(args);
      } else {
        normRowsKernel<T, false><<<rowBlocks(args.rows, false), kRowThreads, 0, stream>>>(args);
      }
    }
  });
  return cudaGetLastError();
}

cudaError_t launchBatchNorm(const BatchNormDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      batchNormKernel<T><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
    }
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda

namespace onnxopt::kernels::cuda {

cudaError_t launchLrn(const LrnDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>)
      lrnKernel<T><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
