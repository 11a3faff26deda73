// Comparing tensors from two runs of a model (`opt check`): error statistics and a verdict against
// absolute and relative tolerances, numpy.allclose style: |a - e| <= atol + rtol * |e|.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/kernels/host_tensor.h"

namespace onnxopt::runtime {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

/// The elements of a numeric tensor as doubles; nullopt for strings and sub-byte types.
std::optional<std::vector<double>> tensorAsDoubles(const kernels::HostTensor& tensor);

/// Defaults per element type: float 1e-5/1e-4, float16 1e-3/1e-2, bfloat16 1e-2/2e-2, double
/// 1e-9/1e-7; integers, bool and strings exact.
Tolerance defaultTolerance(DataType dtype);

struct TensorComparison {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  int64_t elements = 0;
  int64_t mismatches = 0;  ///< elements past tolerance
  double max_abs = 0;      ///< max |actual - expected|
  double max_rel = 0;      ///< max |actual - expected| / |expected| over nonzero expected
  double mean_abs = 0;
  double cosine = 1;  ///< cosine similarity of the two tensors as vectors (1 when both are zero)
  Tolerance tolerance;
  bool passed = false;
  std::string problem;  ///< set when the tensors cannot be compared (type or shape differ)
};

/// Why `actual` cannot be compared with `expected` element by element: another element type
/// (float types excepted, which compare as numbers) or another shape; "" when it can.
std::string incomparable(const kernels::HostTensor& expected, const kernels::HostTensor& actual);

/// Compares `actual` against `expected`. NaNs at the same place and equal infinities count as
/// equal; a NaN or infinity against anything else is a mismatch with infinite error. Float types
/// (float, float16, bfloat16, double) compare as numbers across types; other types must match.
TensorComparison compareTensors(const std::string& name, const kernels::HostTensor& expected,
                                const kernels::HostTensor& actual, Tolerance tolerance);

}  // namespace onnxopt::runtime
