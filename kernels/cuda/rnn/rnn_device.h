// The device entry points of the recurrent family (rnn.h: LSTM, GRU, RNN): plain types and
// cudaError_t only, so that rnn.cc (host C++) parses the node and drives the time loop, and rnn.cu
// holds the kernels alone (fmt's compile-time format strings do not build under nvcc).
//
// Buffers, all in device memory (D directions, B batch entries, H hidden, G gates, S steps):
//   xw  float [rows, D*G*H]: X W^T for every step at once (row t*B+b, or b*S+t with layout 1)
//   hr  float [D, B, G*H]:   H R^T of the current step (GRU with linear_before_reset 0: z and r
//                            only, the candidate block in hn)
//   hn  float [D, B, H]:     GRU, linear_before_reset 0: (r . H) Rh^T
//   h   T     [D, B, H]:     the hidden state as the next step's GEMM reads it
//   rh  T     [D, B, H]:     GRU, linear_before_reset 0: r . H, the operand of hn's GEMM
//   hf  float [D, B, H]:     the hidden state in float (what the gates and the outputs read)
//   c   float [D, B, H]:     LSTM's cell state
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

enum class RnnCell { kRnn, kGru, kLstm };

/// The activation functions ONNX lists for the recurrent ops.
enum class RnnActivationKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus
};

struct RnnActivation {
  RnnActivationKind kind = RnnActivationKind::kTanh;
  float alpha = 0;
  float beta = 0;
};

/// Activations per direction: RNN 1 (f), GRU 2 (f, g), LSTM 3 (f, g, h); two directions at most.
inline constexpr int kMaxRnnActivations = 6;

struct RnnDeviceArgs {
  RnnCell cell = RnnCell::kLstm;
  DataType dtype = DataType::kFloat;  ///< of X, W, R, B, P, initial states and the outputs
  int64_t seq = 0, batch = 0, hidden = 0, dirs = 1;
  bool reverse_only = false;         ///< direction "reverse"
  bool batch_first = false;          ///< layout 1
  bool linear_before_reset = false;  ///< GRU
  bool input_forget = false;         ///< LSTM
  bool clipped = false;
  float clip = 0;
  RnnActivation acts[kMaxRnnActivations];  ///< direction d's k-th at d * per + k

  const void* bias = nullptr;         ///< T [D, 2*G*H] (Wb then Rb), or nullptr
  const void* peephole = nullptr;     ///< T [D, 3*H] (i, o, f), or nullptr
  const int32_t* seq_lens = nullptr;  ///< [B], or nullptr: every entry runs S steps
  const void* initial_h = nullptr;    ///< T, the states' layout, or nullptr (zeros)
  const void* initial_c = nullptr;    ///< T, or nullptr
  const float* xw = nullptr;
  const float* hr = nullptr;
  const float* hn = nullptr;
  void* h = nullptr;
  void* rh = nullptr;
  float* hf = nullptr;
  float* c = nullptr;
  void* y = nullptr;    ///< T Y, or nullptr
  void* y_h = nullptr;  ///< T Y_h, or nullptr
  void* y_c = nullptr;  ///< T Y_c, or nullptr
};

/// A batch of products D = A B^T: A of `dtype`, row-major [m, k]; B of `dtype`, row-major [n, k];
/// D float, row-major [m, n]; matrix i at A + i * stride_a (elements), and so on.
struct RnnProductArgs {
  DataType dtype = DataType::kFloat;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  const void* a = nullptr;
  const void* b = nullptr;
  float* d = nullptr;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
};

/// Whether rnn.cu instantiates the kernels for `dtype` (float, float16, bfloat16).
bool rnnKernelExists(DataType dtype);

/// Sets h, hf and c from initial_h and initial_c (zeros where absent).
cudaError_t launchRnnInit(const RnnDeviceArgs& args, cudaStream_t stream);
/// GRU with linear_before_reset 0, step `step`: r from xw and hr, then rh = r . H.
cudaError_t launchRnnReset(const RnnDeviceArgs& args, int64_t step, cudaStream_t stream);
/// Step `step` (0-based, in each direction's own order): the gates, the new state in h, hf (and
/// c), and Y at the step's time; a batch entry past its sequence length keeps its state and
/// zeroes Y at time `step`.
cudaError_t launchRnnStep(const RnnDeviceArgs& args, int64_t step, cudaStream_t stream);
/// The products of `args` by a plain kernel (one thread per output, float accumulation): where
/// cuBLASLt has no algorithm for the buffers' alignment.
cudaError_t launchRnnProduct(const RnnProductArgs& args, cudaStream_t stream);
/// Y_h and Y_c from the final state (zeros for a sequence length of 0).
cudaError_t launchRnnFinal(const RnnDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
