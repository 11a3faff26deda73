// Seeded random inputs for the GPU kernel tests of attention_test.cc and einsum_test.cc.
#pragma once

#include <random>
#include <vector>

#include "../test_tensors.h"

namespace onnxopt::kernels::test {

/// A tensor of `t` and `dims` with values uniform in [lo, hi), rounded to `t`.
inline HostTensor randomTensor(DataType t, const std::vector<int64_t>& dims, std::mt19937& rng,
                               double lo = -1, double hi = 1) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values) v = std::uniform_real_distribution<>(lo, hi)(rng);
  return tensorOf(t, dims, values);
}

}  // namespace onnxopt::kernels::test
