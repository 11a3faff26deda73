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

/// A seeded random value for graph input `input`: normal floats, small non-negative integers
/// (0..3), random bools. Symbolic or unknown dims take `shapes[name]` when given, else 1.
StatusOr<kernels::HostTensor> randomInput(
    const ir::Value& input, uint64_t seed,
    const std::map<std::string, std::vector<int64_t>>& shapes);

/// Writes a numeric tensor as a .npy file (format 1.0, C order).
Status writeNpy(const std::string& path, const kernels::HostTensor& t);

/// One line per output: type, shape, min/max/mean and the first values.
std::string summarize(const std::string& name, const kernels::HostTensor& t);

}  // namespace onnxopt::tools
