// Multidirectional (numpy-style) broadcasting for the CUDA elementwise kernels, planned on the
// host (BroadcastPlan, broadcast_plan.h). Plain C++ (built with or without nvcc), so that it is
// tested without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/elementwise/broadcast_plan.h"
#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/tensor_view.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels::cuda {

/// The broadcast of `shapes` (ONNX multidirectional broadcasting), or kInvalidArgument naming
/// `op` and the two dims that do not broadcast.
StatusOr<std::vector<int64_t>> broadcastDims(const std::vector<std::vector<int64_t>>& shapes,
                                             const std::string& op);

/// The plan for reading `inputs` (1 to kMaxOperands, any strides) in the order of `output`,
/// which must be contiguous, of rank at most kMaxRank, with exactly the broadcast dims of the
/// inputs. Errors name `op`. With `coalesce`, the plan's dims are fewer where they can be: size-1
/// dims go, and neighbouring dims that every input steps through as one (its outer stride is its
/// inner stride times the inner dim, 0 and 0 included) merge, so [32, 128, 768] + [768] is
/// planned as [4096, 768] with strides [768, 1] and [0, 1]. Without it the plan keeps the
/// output's dims (a caller that pairs plans of several inputs dim by dim).
StatusOr<BroadcastPlan> planBroadcast(const std::vector<ConstTensorView>& inputs,
                                      const ConstTensorView& output, const std::string& op,
                                      bool coalesce = true);

/// planBroadcast's verdict as a Support (for canImplement).
Support broadcastSupport(const std::vector<ConstTensorView>& inputs, const ConstTensorView& output,
                         const std::string& op);

}  // namespace onnxopt::kernels::cuda
