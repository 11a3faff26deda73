// The versions of every default-domain op (passes/opset/op_versions.inc, generated from onnx's
// schema history by tools/gen_opset_changes.py): what upgrade-opset and rewrite-rules ask of an op
// at an opset. Internal to the passes library.
#pragma once

#include <cstdint>
#include <string>

namespace onnxopt::passes {

struct OpVersion {
  const char* op;
  int since;
  bool runs_on_ort_cpu;  ///< onnxruntime's CPU provider has a kernel for this version
};

/// The version of `op` that a node resolves to at `opset` (the newest since_version <= opset), or
/// nullptr for an op the table does not know (or one that does not exist yet at `opset`).
const OpVersion* resolveOpVersion(const std::string& op, int64_t opset);

}  // namespace onnxopt::passes
