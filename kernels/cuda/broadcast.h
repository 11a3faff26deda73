// Multidirectional (numpy-style) broadcasting for the CUDA elementwise kernels, planned on the
// host (BroadcastPlan, broadcast_plan.h). Plain C++ (built with or without nvcc), so that it is
// tested without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "broadcast_plan.h"
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
/// inputs. Errors name `op`.
StatusOr<BroadcastPlan> planBroadcast(const std::vector<ConstTensorView>& inputs,
                                      const ConstTensorView& output, const std::string& op);

/// planBroadcast's verdict as a Support (for canImplement).
Support broadcastSupport(const std::vector<ConstTensorView>& inputs, const ConstTensorView& output,
                         const std::string& op);

}  // namespace onnxopt::kernels::cuda
