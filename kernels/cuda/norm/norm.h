// The normalizations on CUDA, for float, float16 and bfloat16 with float statistics:
// - NormArgs, over rows of contiguous elements: LayerNormalization (17+: axis, epsilon, Scale and
//   the optional B broadcast unidirectionally to X.shape[axis:]), RMSNormalization (23+),
//   InstanceNormalization (6+: per (n, c), scale and B per channel) and GroupNormalization (18:
//   scale and bias per group; 21: per channel); LayerNormalization's optional Mean and InvStdDev
//   outputs (float). Refused: a stash_type other than 1 (float), which the reference kernels
//   refuse too. SkipNormArgs: ai.onnxopt.SkipLayerNormalization and SkipRMSNormalization, the
//   residual Add in the same kernel (X + Skip read once per pass, the sum written as the optional second output).
// - BatchNormArgs: BatchNormalization in inference mode (7 with `spatial`, 9, 14, 15: from 14
//   input_mean/input_var and from 15 scale/B may have float types of their own); training mode
//   (training_mode=1, or the statistics outputs before 14) is refused.
// - LrnArgs: LRN (1, 13), local response normalization across channels.
// Host half (this header, norm.cc); device half: norm.cu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/norm/norm_device.h"

namespace onnxopt::kernels::cuda {

struct NormArgs {
  std::string op;  ///< for messages
  ConstTensorView x;
  ConstTensorView scale;
  ConstTensorView bias;  ///< dtype kUndefined: none
  TensorView y;
  TensorView mean, inv_std;  ///< LayerNormalization's optional outputs (dtype kUndefined: none)
  /// ai.onnxopt.SkipLayerNormalization: X + skip is normalized, and written to `sum` (its optional
  /// second output); dtype kUndefined: none.
  ConstTensorView skip;
  TensorView sum;
  int64_t rows = 0;  ///< rows of `size` contiguous elements, normalized each
  int64_t size = 0;
  float epsilon = 1e-5f;
  bool rms = false;
  NormParamIndex index = NormParamIndex::kColumn;
  std::vector<int64_t> row_dims;  ///< kColumn: the dims of a row (X.shape[axis:])
  int64_t params = 0;             ///< kRow, kChannelInGroup: the elements scale and bias have
  int64_t period = 1, group_stride = 0, spatial = 1;
};

template <>
StatusOr<NormArgs> argsFromCall<NormArgs>(const CudaKernelCall& call);

/// ai.onnxopt.SkipLayerNormalization<axis, epsilon>(X, Skip, Scale, B?) -> (Y, Sum?):
/// LayerNormalization of X + Skip (Skip of X's shape), the sum as the optional second output;
/// ai.onnxopt.SkipRMSNormalization<axis, epsilon>(X, Skip, Scale) -> (Y, Sum?) likewise with
/// RMSNormalization (the same kernel's rms path).
struct SkipNormArgs : NormArgs {};
template <>
StatusOr<SkipNormArgs> argsFromCall<SkipNormArgs>(const CudaKernelCall& call);

/// Host-only: types, parameter shapes, contiguity, device memory.
Support canImplement(const NormArgs& args);
size_t workspaceBytes(const NormArgs& args);
Status launch(const NormArgs& args, CudaStream stream);

struct BatchNormArgs {
  std::string op = "BatchNormalization";
  ConstTensorView x, scale, bias, mean, var;
  TensorView y;
  int64_t channels = 0;  ///< parameters per sample (C, or C * spatial with spatial=0 at opset 7)
  int64_t inner = 0;     ///< elements per parameter and sample
  std::vector<int64_t> param_dims;
  float epsilon = 1e-5f;
  bool own_scale_type = false;  ///< opset 15+: scale and B share a float type of their own
  bool own_stats_type = false;  ///< opset 14+: input_mean and input_var share one
};

template <>
StatusOr<BatchNormArgs> argsFromCall<BatchNormArgs>(const CudaKernelCall& call);

Support canImplement(const BatchNormArgs& args);
size_t workspaceBytes(const BatchNormArgs& args);
Status launch(const BatchNormArgs& args, CudaStream stream);

/// LRN (1, 13): the cross-channel window of `size` channels (floor((size - 1) / 2) before the
/// channel, the rest after), alpha, beta, bias; float statistics.
struct LrnArgs {
  std::string op = "LRN";
  ConstTensorView x;
  TensorView y;
  int64_t channels = 0, inner = 0, before = 0, after = 0;
  float alpha_over_size = 0, beta = 0, bias = 0;
};

template <>
StatusOr<LrnArgs> argsFromCall<LrnArgs>(const CudaKernelCall& call);

Support canImplement(const LrnArgs& args);
size_t workspaceBytes(const LrnArgs& args);
Status launch(const LrnArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
