// BatchNormalization in inference mode as a per-channel affine map, for the fusions that absorb it
// into the weights of the product before it (fuse-conv-affine, fuse-gemm):
//
//   BN(W x + b) = (W * s) x + (b - mean) * s + beta,   s = gamma / sqrt(var + eps)
#pragma once

#include <optional>
#include <vector>

#include "onnxopt/rewrite/pattern.h"

namespace onnxopt::passes {

/// True when `bn` is in inference mode with every statistic given: no training_mode, no used
/// output but the first, five inputs. Otherwise false, with the reason on ctx.
bool isInferenceBatchNorm(const ir::Node& bn, rewrite::PatternContext& ctx);

/// The per-channel scale s and the new bias (b - mean) * s + beta, b = `bias` (one value per
/// channel).
struct BatchNormFold {
  std::vector<double> scale;
  std::vector<double> bias;
};

/// Folds `bn`'s statistics over `bias`; nullopt (with the reason on ctx) when one of them is not a
/// constant float vector of one value per channel.
std::optional<BatchNormFold> foldBatchNorm(const ir::Node& bn, std::vector<double> bias,
                                           rewrite::PatternContext& ctx);

}  // namespace onnxopt::passes
