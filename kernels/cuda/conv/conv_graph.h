// A channels-last forward convolution with its epilogue as one cuDNN graph (the backend API of
// cudnn_graph.h), for float16 and bfloat16:
//
//   X [N,C,H,W] (NHWC memory) --conv(W)--> acc (fp32, virtual) --+B--> --+Z--> --ReLU--> Y
//
// each of +B, +Z and ReLU present only when asked for. cuDNN's legacy API offers channels-last
// fp16 only its old algorithms 0 and 1 (implicit_convolve_sgemm, convolve_common_engine_float_NHWC;
// docs/gpu_benchmarks.md, "Kernel measurements", has their times) while its graph engines run the
// Hopper tensor-core kernels (sm90_xmma_fprop, cutlass) and fuse the epilogue into them. The
// engine configurations come from cuDNN's heuristics (mode A), less those that compile at run
// time (NVRTC: seconds per geometry at planning), fp16 accumulation or down-converted inputs;
// conv.cc times them against its legacy algorithms and keeps the fastest.
// Host code only.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "onnxopt/support/data_type.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels::cuda {

/// What the graph computes: NCHW dims with the element strides of the channels-last memory.
struct ConvGraphSpec {
  std::string op;  ///< for messages
  DataType dtype = DataType::kFloat16;
  std::vector<int64_t> x_dims, x_strides, w_dims, w_strides, y_dims, y_strides;
  std::vector<int64_t> pad_begin, pad_end, strides, dilations;  ///< 2 spatial dims each
  bool bias = false;                                            ///< B [M], added per output channel
  bool z = false;                                               ///< Z, Y's shape and strides
  bool relu = false;
};

/// Whether the graph path takes this spec at all (fp16/bf16, 4-D, one group).
bool convGraphApplies(const ConvGraphSpec& spec);

/// One finalized execution plan of the spec's graph (its descriptors kept alive with it).
class ConvGraphPlan {
 public:
  ~ConvGraphPlan();
  ConvGraphPlan(const ConvGraphPlan&) = delete;
  ConvGraphPlan& operator=(const ConvGraphPlan&) = delete;

  size_t workspaceBytes() const { return workspace_bytes_; }
  /// "engine E (heuristic rank R, finalized in T ms)", for traces.
  const std::string& name() const { return name_; }
  /// Whether the graph adds Z and applies the ReLU (its spec's z and relu).
  bool fusesZ() const { return fuses_z_; }
  bool fusesRelu() const { return fuses_relu_; }

  /// Runs the plan on the handle's stream. Every pointer must be 16-byte aligned
  /// (convGraphAligned), `workspace` hold workspaceBytes().
  Status execute(cudnnHandle_t handle, const void* x, const void* w, const void* b, const void* z,
                 void* y, void* workspace) const;

 private:
  friend StatusOr<std::vector<std::unique_ptr<ConvGraphPlan>>> convGraphPlans(const ConvGraphSpec&,
                                                                              cudnnHandle_t, size_t,
                                                                              size_t);
  ConvGraphPlan() = default;

  std::string op_;
  std::shared_ptr<void> shared_;  ///< the graph and engine configurations, shared with siblings
  std::vector<cudnnBackendDescriptor_t> owned_;  ///< the engine and plan, destroyed last first
  cudnnBackendDescriptor_t plan_ = nullptr;
  std::vector<int64_t> uids_;  ///< X, W, (B), (Z), Y
  size_t workspace_bytes_ = 0;
  bool fuses_z_ = false, fuses_relu_ = false;
  std::string name_;
};

/// The finalized plans for the spec's graph, in cuDNN's heuristic order, at most `max_plans`,
/// each within `max_workspace` bytes; empty when no engine takes the graph (not an error).
StatusOr<std::vector<std::unique_ptr<ConvGraphPlan>>> convGraphPlans(const ConvGraphSpec& spec,
                                                                     cudnnHandle_t handle,
                                                                     size_t max_workspace,
                                                                     size_t max_plans);

/// Whether environment variable `name` is set to something other than "" or "0" (read once per
/// name by the callers' statics): ONNXOPT_CONV_TRACE, ONNXOPT_CONV_GRAPH_RTC.
bool convEnvFlag(const char* name);

/// Whether every non-null pointer is 16-byte aligned (the plans' declared tensor alignment).
bool convGraphAligned(std::initializer_list<const void*> pointers);

}  // namespace onnxopt::kernels::cuda
