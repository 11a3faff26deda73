// Device code of Softmax, LogSoftmax, Hardmax and LpNormalization (softmax.h): max-subtracted,
// float accumulation; Hardmax marks the first maximum (the reference's strict > scan: a NaN is never
// larger, a NaN first element stays the pick). Rows along the last axis (inner == 1) go to a warp each when short and to a block each when long;
// a non-last axis (inner > 1) gives each thread one (outer, inner) column, so that neighbouring
// threads read neighbouring elements.
#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/norm/norm_device.h"
#include "kernels/cuda/reduce/row_reduce.cuh"

namespace onnxopt::kernels::cuda {

namespace {

template <typename T>
__device__ __forceinline__ void writeSoftmax(SoftmaxKind kind, T* y, int64_t i, float v, float mx,
                                             float sum, float log_sum) {
  store(y, i, kind == SoftmaxKind::kLogSoftmax ? (v - mx) - log_sum : expf(v - mx) / sum);
}

/// |x| or x^2: what LpNormalization sums.
__device__ __forceinline__ float lpTerm(SoftmaxKind kind, float v) {
  return kind == SoftmaxKind::kLpNorm1 ? fabsf(v) : v * v;
}

__device__ __forceinline__ float lpScale(SoftmaxKind kind, float sum, float v) {
  const float norm = kind == SoftmaxKind::kLpNorm1 ? sum : sqrtf(sum);
  return norm == 0.0f ? 0.0f : v / norm;
}

/// Shared memory of the row reductions (block rows).
struct RowScratch {
  float values[32];
  long long indices[32];
};

/// The row's maximum (NaN skipped), on every thread of the row.
template <bool kWarpRow, typename T>
__device__ __forceinline__ float rowMax(const SoftmaxDeviceArgs& a, const T* xr,
                                        const RowSlot<kWarpRow>& slot, RowScratch& scratch) {
  float mx = MaxOp::kIdentity;
  for (int64_t j = slot.lane; j < a.n; j += slot.lanes) mx = fmaxf(mx, load(xr, j));
  return rowReduce<kWarpRow>(mx, MaxOp{}, scratch.values);
}

/// One row of n elements, xr and yr, on the threads of `slot`: Softmax and LogSoftmax.
template <bool kWarpRow, typename T>
__device__ __forceinline__ void softmaxRow(const SoftmaxDeviceArgs& a, const T* xr, T* yr,
                                           const RowSlot<kWarpRow>& slot, RowScratch& scratch) {
  const float mx = rowMax(a, xr, slot, scratch);
  float sum = 0.0f;
  for (int64_t j = slot.lane; j < a.n; j += slot.lanes) sum += expf(load(xr, j) - mx);
  sum = rowReduce<kWarpRow>(sum, SumOp{}, scratch.values);
  const float log_sum = logf(sum);
  for (int64_t j = slot.lane; j < a.n; j += slot.lanes) {
    writeSoftmax(a.kind, yr, j, load(xr, j), mx, sum, log_sum);
  }
}

/// Hardmax: the first maximum's index through an index reduction.
template <bool kWarpRow, typename T>
__device__ __forceinline__ void hardmaxRow(const SoftmaxDeviceArgs& a, const T* xr, T* yr,
                                           const RowSlot<kWarpRow>& slot, RowScratch& scratch) {
  const float mx = rowMax(a, xr, slot, scratch);
  long long best = MinIndexOp::kIdentity;
  for (int64_t j = slot.lane; j < a.n; j += slot.lanes) {
    if (load(xr, j) == mx && j < best) best = j;
  }
  best = rowReduce<kWarpRow>(best, MinIndexOp{}, scratch.indices);
  // No element equals the maximum when the row is all NaN; a NaN first element wins anyway.
  if (best == MinIndexOp::kIdentity || isnan(load(xr, 0))) best = 0;
  for (int64_t j = slot.lane; j < a.n; j += slot.lanes) store(yr, j, j == best ? 1.0f : 0.0f);
}

/// LpNormalization.
template <bool kWarpRow, typename T>
__device__ __forceinline__ void lpNormRow(const SoftmaxDeviceArgs& a, const T* xr, T* yr,
                                          const RowSlot<kWarpRow>& slot, RowScratch& scratch) {
  float sum = 0.0f;
  for (int64_t j = slot.lane; j < a.n; j += slot.lanes) sum += lpTerm(a.kind, load(xr, j));
  sum = rowReduce<kWarpRow>(sum, SumOp{}, scratch.values);
  for (int64_t j = slot.lane; j < a.n; j += slot.lanes) {
    store(yr, j, lpScale(a.kind, sum, load(xr, j)));
  }
}

/// Rows along the last axis (inner == 1), each on a warp or a block.
template <typename T, bool kWarpRow>
__global__ void softmaxRowsKernel(SoftmaxDeviceArgs a) {
  __shared__ RowScratch scratch;
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  RowSlot<kWarpRow> slot;
  for (int64_t row = slot.row; row < a.outer; row += slot.stride) {
    const T* xr = x + row * a.n;
    T* yr = y + row * a.n;
    switch (a.kind) {
      case SoftmaxKind::kHardmax:
        hardmaxRow(a, xr, yr, slot, scratch);
        break;
      case SoftmaxKind::kLpNorm1:
      case SoftmaxKind::kLpNorm2:
        lpNormRow(a, xr, yr, slot, scratch);
        break;
      default:
        softmaxRow(a, xr, yr, slot, scratch);
        break;
    }
  }
}

/// The register-cached form of softmaxRowsKernel for Softmax and LogSoftmax over rows of at most
/// 32 * kChunks vectors of 16 bytes, every row start 16-byte aligned: one warp per row reads it
/// once, 16 bytes per lane and load, keeps it in registers through the max, the sum of exps and
/// the output, and writes 16 bytes at a time, where the row kernel reads the row three times an
/// element at a time. Each element's arithmetic is softmaxRow's (the same expf, computed once and
/// kept, the same division); the reductions' order differs (last-place differences only).
template <typename T, int kChunks>
__global__ void softmaxRowsVecKernel(SoftmaxDeviceArgs a) {
  constexpr int kV = kVecElements<T>;
  const RowSlot<true> slot;
  const int lane = slot.lane;
  const int64_t vectors = a.n / kV;
  const bool log_softmax = a.kind == SoftmaxKind::kLogSoftmax;
  for (int64_t row = slot.row; row < a.outer; row += slot.stride) {
    const auto* xr = static_cast<const Vec16<T>*>(a.x) + row * vectors;
    float v[kChunks][kV];
    float mx = MaxOp::kIdentity;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t i = lane + 32 * c;
      if (i >= vectors) break;
      const Vec16<T> xv = xr[i];
#pragma unroll
      for (int k = 0; k < kV; ++k) {
        v[c][k] = load(xv.v, k);
        mx = fmaxf(mx, v[c][k]);
      }
    }
    mx = warpReduce(mx, MaxOp{});
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if (lane + 32 * c >= vectors) break;
#pragma unroll
      for (int k = 0; k < kV; ++k) {
        const float e = expf(v[c][k] - mx);
        sum += e;
        if (!log_softmax) v[c][k] = e;  // the exp softmaxRow computes again for the output
      }
    }
    sum = warpReduce(sum, SumOp{});
    const float log_sum = logf(sum);
    auto* yr = static_cast<Vec16<T>*>(a.y) + row * vectors;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t i = lane + 32 * c;
      if (i >= vectors) break;
      Vec16<T> out;
#pragma unroll
      for (int k = 0; k < kV; ++k) {
        store(out.v, k, log_softmax ? (v[c][k] - mx) - log_sum : v[c][k] / sum);
      }
      yr[i] = out;
    }
  }
}

template <typename T>
__global__ void softmaxColumnsKernel(SoftmaxDeviceArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  ONNXOPT_GRID_STRIDE(c, a.outer * a.inner) {
    const int64_t base = (c / a.inner) * a.n * a.inner + c % a.inner;
    if (a.kind == SoftmaxKind::kLpNorm1 || a.kind == SoftmaxKind::kLpNorm2) {
      float sum = 0.0f;
      for (int64_t j = 0; j < a.n; ++j) sum += lpTerm(a.kind, load(x, base + j * a.inner));
      for (int64_t j = 0; j < a.n; ++j) {
        const int64_t i = base + j * a.inner;
        store(y, i, lpScale(a.kind, sum, load(x, i)));
      }
      continue;
    }
    if (a.kind == SoftmaxKind::kHardmax) {
      int64_t best = 0;
      for (int64_t j = 1; j < a.n; ++j) {
        if (load(x, base + j * a.inner) > load(x, base + best * a.inner)) best = j;
      }
      for (int64_t j = 0; j < a.n; ++j) store(y, base + j * a.inner, j == best ? 1.0f : 0.0f);
      continue;
    }
    float mx = MaxOp::kIdentity;
    for (int64_t j = 0; j < a.n; ++j) mx = fmaxf(mx, load(x, base + j * a.inner));
    float sum = 0.0f;
    for (int64_t j = 0; j < a.n; ++j) sum += expf(load(x, base + j * a.inner) - mx);
    const float log_sum = logf(sum);
    for (int64_t j = 0; j < a.n; ++j) {
      const int64_t i = base + j * a.inner;
      writeSoftmax(a.kind, y, i, load(x, i), mx, sum, log_sum);
    }
  }
}

}  // namespace

bool rowKernelExists(DataType dtype) {
  return dtype == DataType::kFloat || dtype == DataType::kFloat16 || dtype == DataType::kBfloat16;
}

cudaError_t launchSoftmax(const SoftmaxDeviceArgs& args, cudaStream_t stream) {
  if (args.outer == 0 || args.n == 0 || args.inner == 0) return cudaSuccess;
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      const int64_t vectors = args.n / kVecElements<T>;
      const bool vec =
          args.inner == 1 && args.n % kVecElements<T> == 0 && vectors <= 32 * kMaxRowChunks &&
          (args.kind == SoftmaxKind::kSoftmax || args.kind == SoftmaxKind::kLogSoftmax) &&
          aligned16(args.x) && aligned16(args.y);
      if (vec) {
        withRowChunks(vectors, [&](auto chunks) {
          softmaxRowsVecKernel<T, decltype(chunks)::value>
              <<<rowBlocks(args.outer, true), kRowThreads, 0, stream>>>(args);
        });
      } else if (args.inner > 1) {
        softmaxColumnsKernel<T><<<blocksFor(args.outer * args.inner), kThreads, 0, stream>>>(args);
      } else if (args.n <= kWarpRowMax) {
        softmaxRowsKernel<T, true><<<rowBlocks(args.outer, true), kRowThreads, 0, stream>>>(args);
      } else {
        softmaxRowsKernel<T, false><<<rowBlocks(args.outer, false), kRowThreads, 0, stream>>>(args);
      }
    }
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
