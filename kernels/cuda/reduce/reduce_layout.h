// ReduceLayout: how a reduction kernel walks its input. The input's dims split into kept dims (one
// output element per index, in the output's row-major order) and reduced dims (the group of input
// elements each output combines), each with its input strides, after size-1 dims are dropped and
// neighbours adjacent in memory are merged. Planned on the host (reduce_plan.h), passed by value
// to the kernels. No Status or fmt here: .cu files include it.
#pragma once

#include <cstdint>

namespace onnxopt::kernels::cuda {

/// The highest input rank the reduction kernels walk.
inline constexpr int kMaxReduceRank = 8;

struct ReduceLayout {
  int64_t outputs = 1;  ///< product of the kept dims
  int64_t group = 1;    ///< product of the reduced dims: input elements per output
  int kept_rank = 0;
  int64_t kept_dims[kMaxReduceRank] = {};
  int64_t kept_strides[kMaxReduceRank] = {};  ///< in input elements
  int reduced_rank = 0;
  int64_t reduced_dims[kMaxReduceRank] = {};
  int64_t reduced_strides[kMaxReduceRank] = {};
  /// The reduced elements of one output lie farther apart than neighbouring outputs (a reduction
  /// over a leading axis): the kernel gives neighbouring threads neighbouring outputs.
  bool columns = false;
};

}  // namespace onnxopt::kernels::cuda
