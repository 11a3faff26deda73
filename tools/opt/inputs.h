// Input tensors for `opt run` and `opt check`: .npy and TensorProto .pb files, the NAME=... specs
// of the command line, and the one-line summaries opt prints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/runtime/inputs.h"
#include "onnxopt/support/status.h"

namespace onnxopt::tools {

/// Reads a .npy (format 1.0/2.0, C order) or a TensorProto .pb file.
StatusOr<kernels::HostTensor> readTensorFile(const std::string& path);

// Random inputs and the checks of given values are the library's (runtime/inputs.h).
using runtime::checkedByteSize;
using runtime::checkGivenInput;
using runtime::firstSpatialAxis;
using runtime::IntRange;
using runtime::kMaxInputBytes;
using runtime::maxSpatialSize;
using runtime::randomInput;
using runtime::RandomInputOptions;

/// Checks that NAME in each NAME=... spec is an input of `graph` that needs a value (not an
/// initializer-only input); the error names the flag and lists the graph's inputs.
Status checkInputNames(const ir::Graph& graph, const std::vector<std::string>& specs,
                       const char* flag);

/// runtime::checkPinnedShape for `--input-shape NAME=...`.
Status checkPinnedShape(const ir::Value& input, const std::vector<int64_t>& dims);

/// Parses `NAME=d0,d1,...` specs.
StatusOr<std::map<std::string, std::vector<int64_t>>> parseShapeSpecs(
    const std::vector<std::string>& specs);
/// Reads `NAME=FILE` specs (.npy or TensorProto .pb); each error names the file and the reason.
StatusOr<std::map<std::string, kernels::HostTensor>> readInputSpecs(
    const std::vector<std::string>& specs);
/// The FILE of the `NAME=FILE` spec for `name` (for messages), or "".
std::string inputFileOf(const std::vector<std::string>& specs, const std::string& name);

/// Writes a numeric tensor as a .npy file (format 1.0, C order).
Status writeNpy(const std::string& path, const kernels::HostTensor& t);
/// Writes `t` as a TensorProto .pb file: every element type (bfloat16, float8, int4, strings),
/// where .npy has no encoding for some.
Status writeTensorPb(const std::string& path, const kernels::HostTensor& t);

/// One line per output: type, shape, min/max/mean and the first values.
std::string summarize(const std::string& name, const kernels::HostTensor& t);

}  // namespace onnxopt::tools
