// BroadcastPlan: how an elementwise kernel finds each input's element for output element i (the
// output dims and, per input, element strides in output order, 0 on a broadcast dim). A
// fixed-size struct passed by value to the kernel; planned on the host by planBroadcast
// (broadcast.h). No Status or fmt here: .cu files include it, and fmt does not build under nvcc.
#pragma once

#include <cstdint>

namespace onnxopt::kernels::cuda {

/// The highest output rank the elementwise kernels index.
inline constexpr int kMaxRank = 8;
/// The most inputs one elementwise kernel reads (Where: 3).
inline constexpr int kMaxOperands = 3;

/// How a kernel finds each input's element for output element i (row-major over `dims`).
struct BroadcastPlan {
  int rank = 0;
  int operands = 0;
  int64_t count = 0;    ///< output elements
  bool linear = false;  ///< every input is contiguous with the output's dims: element i is at i
  /// Every output index and input offset fits in 31 bits: the kernels index in 32-bit arithmetic
  /// (a 64-bit division is a long software sequence on the GPU, a 32-bit one a few instructions).
  bool index32 = false;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxOperands][kMaxRank] = {};  ///< in elements, per input
};

}  // namespace onnxopt::kernels::cuda
