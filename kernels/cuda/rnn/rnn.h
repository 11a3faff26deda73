// The recurrent family on CUDA: LSTM, GRU and RNN (opsets 7 to 13 and 14+, layout 1 from 14),
// for float, float16 and bfloat16 (float arithmetic in the gates, float accumulation in the
// products). One cuBLASLt product computes X W^T for every step and direction at once; then each
// step runs, from a host loop on the stream (no synchronization), one product H R^T batched over
// the directions and one fused gate kernel (GRU with linear_before_reset 0: the r gate, then
// (r . H) Rh^T, then the rest). sequence_lens is read on the device, so a run-time value works as
// well as a constant (a constant is also checked when planning). Host half (this header, rnn.cc):
// arguments, canImplement, workspace, the time loop; device half: rnn.cu behind rnn_device.h.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/rnn/rnn_device.h"

namespace onnxopt::kernels::cuda {

struct RnnArgs {
  std::string op;  ///< "LSTM", "GRU" or "RNN", for messages
  RnnCell cell = RnnCell::kLstm;
  ConstTensorView x, w, r;
  ConstTensorView b, seq_lens, initial_h, initial_c, p;  ///< dtype kUndefined: absent
  TensorView y, y_h, y_c;                                ///< dtype kUndefined: not asked for
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse_only = false;
  bool batch_first = false;
  bool linear_before_reset = false;
  bool input_forget = false;
  bool clipped = false;
  float clip = 0;
  std::vector<RnnActivation> acts;  ///< per direction, in the op's order (f, g, h)
  /// sequence_lens' values when it is a constant (checked to lie in [0, seq]), else empty.
  std::vector<int64_t> constant_lens;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

/// kInvalidArgument for a node that breaks the op's contract: input or output counts, X or R not
/// of rank 3, an unknown direction, layout or activation, a non-positive clip, a hidden_size that
/// R contradicts.
template <>
StatusOr<RnnArgs> argsFromCall<RnnArgs>(const CudaKernelCall& call);

/// Host-only: one float type for X, W, R, B, the states, P and the outputs, int32 sequence_lens,
/// every shape, contiguous device tensors, a constant sequence_lens within [0, seq].
Support canImplement(const RnnArgs& args);
/// The gates of every step (X W^T, in float), the per-step products and states, and cuBLASLt's.
size_t workspaceBytes(const RnnArgs& args);
/// Runs on `ctx` (its stream and cuBLASLt handle).
Status launch(const RnnArgs& args, CudaDeviceContext& ctx);

}  // namespace onnxopt::kernels::cuda
