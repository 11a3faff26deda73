// Input tensors for `opt run`: .npy and TensorProto .pb files, and seeded random values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::tools {

/// Reads a .npy (format 1.0/2.0, C order) or a TensorProto .pb file.
StatusOr<kernels::HostTensor> readTensorFile(const std::string& path);

/// Inclusive bounds for the values of a random integer input.
struct IntRange {
  int64_t lo = 0;
  int64_t hi = 3;
};

struct RandomInputOptions {
  uint64_t seed = 0;
  /// Shapes pinned by name (`--input-shape NAME=d0,d1,...`).
  std::map<std::string, std::vector<int64_t>> shapes;
  /// The size of a named symbolic dim (the same symbol gets the same size); unnamed unknown dims
  /// get 1.
  int64_t symbolic_dim = 1;
  /// Ranges of integer inputs by name; others get 0..3.
  std::map<std::string, IntRange> int_ranges;
};

/// A seeded random value for graph input `input`: normal floats, integers in their range, random
/// bools.
StatusOr<kernels::HostTensor> randomInput(const ir::Value& input,
                                          const RandomInputOptions& options);

/// Sensible ranges for the graph's integer inputs: one used (through Cast, Reshape, Unsqueeze,
/// Squeeze or Flatten) as Gather indices into a tensor whose gathered axis has a static size n
/// gets 0..n-1 (token ids within the embedding table); one named like a mask gets 0..1; one named
/// like a length gets 1..4.
std::map<std::string, IntRange> inferIntRanges(const ir::Graph& graph);

/// Parses `NAME=d0,d1,...` specs.
StatusOr<std::map<std::string, std::vector<int64_t>>> parseShapeSpecs(
    const std::vector<std::string>& specs);
/// Reads `NAME=FILE` specs (.npy or TensorProto .pb).
StatusOr<std::map<std::string, kernels::HostTensor>> readInputSpecs(
    const std::vector<std::string>& specs);

/// Writes a numeric tensor as a .npy file (format 1.0, C order).
Status writeNpy(const std::string& path, const kernels::HostTensor& t);

/// One line per output: type, shape, min/max/mean and the first values.
std::string summarize(const std::string& name, const kernels::HostTensor& t);

}  // namespace onnxopt::tools
