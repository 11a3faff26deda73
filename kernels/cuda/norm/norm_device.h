// The device entry points of the row-wise families (softmax.cu, norm.cu) and Resize (resize.cu):
// plain types and cudaError_t only, so that each family's host half (its .cc) does the argument
// checks and Status messages and the .cu files hold kernels alone (fmt does not build under nvcc).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/elementwise/broadcast_plan.h"
#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

// --- Softmax, LogSoftmax, Hardmax (softmax.cu) --------------------------------------------------

/// kLpNorm1/kLpNorm2: LpNormalization, x / ||x||_p along the axis (0 where the norm is 0).
enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax, kLpNorm1, kLpNorm2 };

/// Rows of `n` elements at stride `inner` (element (o, j, i) at (o * n + j) * inner + i), over
/// contiguous x and y of one float type.
struct SoftmaxDeviceArgs {
  SoftmaxKind kind;
  DataType dtype;
  const void* x;
  void* y;
  int64_t outer;
  int64_t n;
  int64_t inner;
};

// --- the normalizations (norm.cu) ----------------------------------------------------------------

/// Which scale/bias element applies to element `col` of row `row`.
enum class NormParamIndex {
  kColumn,          ///< LayerNormalization, RMSNormalization: `params` over the row's dims
  kRow,             ///< InstanceNormalization, GroupNormalization-18: row % period
  kChannelInGroup,  ///< GroupNormalization-21: (row % period) * group_stride + col / spatial
};

/// y = (x - mean) / sqrt(var + epsilon) * scale + bias over `rows` contiguous rows of `size`
/// elements (rms: mean is 0 and var the mean square), statistics in float.
struct NormDeviceArgs {
  DataType dtype;  ///< of x, y, scale and bias
  const void* x;
  void* y;
  const void* scale;
  const void* bias;  ///< nullptr: none
  /// ai.onnxopt.SkipLayerNormalization: x + skip (rounded to dtype) is what is normalized, and
  /// written to `sum` where that is not nullptr; nullptr: plain x.
  const void* skip;
  void* sum;
  float* mean;     ///< per row, or nullptr (LayerNormalization's optional outputs)
  float* inv_std;  ///< per row, or nullptr
  int64_t rows;
  int64_t size;
  float epsilon;
  bool rms;
  NormParamIndex index;
  BroadcastPlan params;  ///< kColumn: scale (operand 0) and bias (operand 1) over the row's dims
  int64_t period;
  int64_t group_stride;
  int64_t spatial;
};

/// BatchNormalization in inference mode: element i belongs to channel (i / inner) % channels,
/// y = x * scale_c / sqrt(var_c + epsilon) + (bias_c - mean_c * scale_c / sqrt(var_c + epsilon)).
struct BatchNormDeviceArgs {
  DataType dtype;        ///< of x and y
  DataType scale_dtype;  ///< of scale and bias
  DataType stats_dtype;  ///< of mean and var
  const void* x;
  void* y;
  const void* scale;
  const void* bias;
  const void* mean;
  const void* var;
  int64_t count;
  int64_t channels;
  int64_t inner;
  float epsilon;
};

/// LRN over dim 1 of [N, C, inner]: y = x / (bias + alpha / size * sum of x^2 over the channel
/// window [c - before, c + after]) ^ beta, in float.
struct LrnDeviceArgs {
  DataType dtype;
  const void* x;
  void* y;
  int64_t count;
  int64_t channels;
  int64_t inner;
  int64_t before;
  int64_t after;
  float alpha_over_size;
  float beta;
  float bias;
};

// --- Resize (resize.cu) --------------------------------------------------------------------------

inline constexpr int kMaxResizeRank = 8;

enum class ResizeCoord {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn,
};

enum class ResizeNearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

/// Resize of contiguous x into contiguous y: per dim, `resized` says whether the dim maps its
/// output coordinates through `coord` (the others copy their index). Coordinates, weights and
/// sums are computed in double with the reference kernel's operations in its order (no fused
/// multiply-add), so that the results match it bit for bit before the final rounding.
struct ResizeDeviceArgs {
  int element_bytes;  ///< nearest: 1, 2, 4 or 8 (it moves elements)
  DataType dtype;     ///< linear: any type the kernels handle
  bool linear;
  const void* x;
  void* y;
  int rank;
  int64_t count;  ///< output elements
  ResizeCoord coord;
  ResizeNearest nearest;
  bool exclude_outside;
  double extrapolation;         ///< linear: the value written outside the input
  uint64_t extrapolation_bits;  ///< nearest: the element written outside the input, as stored
  int64_t in_dims[kMaxResizeRank];
  int64_t out_dims[kMaxResizeRank];
  bool resized[kMaxResizeRank];
  double scale[kMaxResizeRank];
  double roi_start[kMaxResizeRank];
  double roi_end[kMaxResizeRank];
  /// Linear: the resized dims in the reference's pass order (downsampling ones first), `levels`
  /// of them; the first is the innermost sum.
  int order[kMaxResizeRank];
  int levels;
};

/// What the device code instantiates (the host's canImplement asks).
bool rowKernelExists(DataType dtype);

/// Launch on `stream`; the launch status (cudaGetLastError) is returned. Nothing is launched for
/// an empty tensor. Arguments are not checked here: the host half did.
cudaError_t launchSoftmax(const SoftmaxDeviceArgs& args, cudaStream_t stream);
cudaError_t launchNorm(const NormDeviceArgs& args, cudaStream_t stream);
cudaError_t launchBatchNorm(const BatchNormDeviceArgs& args, cudaStream_t stream);
cudaError_t launchLrn(const LrnDeviceArgs& args, cudaStream_t stream);
cudaError_t launchResize(const ResizeDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
