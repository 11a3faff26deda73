// The algorithm behind each Conv and ConvTranspose geometry (conv.h): cuDNN's legacy algorithms
// under each math type allowed for the type, and its graph plans (conv_graph.h), each timed as the
// launch will run it; the fastest is chosen once per geometry and device and cached for the
// process, and each thread keeps what a launch needs (descriptors, B's, the plan). Host code only.
#pragma once

#include <memory>

#include "kernels/cuda/conv/conv_geometry.h"

namespace onnxopt::kernels::cuda::conv_detail {

/// The algorithm chosen for one geometry, its math type and workspace, and whether a cuDNN graph
/// plan (conv_graph.h) won over it.
struct AlgoChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t bytes = 0;
  int graph = -1;              ///< the winning plan's index among convGraphPlans'; -1: none
  bool graph_reduced = false;  ///< that plan is of reducedSpec (Z and ReLU in our epilogue)
  size_t graph_bytes = 0;      ///< that plan's workspace
};

/// What a launch of one geometry needs from cuDNN besides the data: its descriptors (the chosen
/// algorithm's math type set), the algorithm, B's descriptor, and the graph plan where one won
/// (the legacy algorithm then stays as the fallback for unaligned data).
struct Prepared {
  Descriptors d;
  AlgoChoice choice;
  TensorDesc bias;  ///< null without B
  std::unique_ptr<ConvGraphPlan> graph;
};

/// The Prepared of this geometry, chosen and built once per device context (kept in its conv
/// cache, device_context.h): a repeated launch makes no descriptor or algorithm calls. `handle`
/// is the context's cuDNN handle.
StatusOr<const Prepared*> preparedFor(const ConvArgs& args, const Geometry& g,
                                      CudaDeviceContext& ctx, cudnnHandle_t handle, bool transpose);

}  // namespace onnxopt::kernels::cuda::conv_detail
