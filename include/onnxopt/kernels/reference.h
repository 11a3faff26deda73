// CPU reference kernels (kernels/reference): the semantics of ONNX ops on host tensors, used by
// constant folding and the reference executor, checked against ONNX's node conformance cases.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "onnxopt/kernels/capabilities.h"

#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels {

/// The name the reference kernels know an op by: `op` itself in the default domain ("" or
/// "ai.onnx"), `domain.op` in another one (e.g. "ai.onnx.ml.Binarizer"). Every function below takes
/// such a name, with the opset of the op's own domain.
std::string referenceOpName(const std::string& domain, const std::string& op);

/// Whether a reference kernel exists for the op at this opset (it may still reject a
/// particular element type with kUnimplemented: referenceCapabilities() in capabilities.h also
/// answers for element types and layouts).
bool hasReferenceKernel(const std::string& op, int64_t opset);

/// Every op with a reference kernel, by referenceOpName, sorted.
std::vector<std::string> referenceKernelOps();

/// Runs the reference kernel of `op`. `inputs` may hold nullptr for omitted optional inputs.
/// Returns `num_outputs` tensors, or kUnimplemented when the op, opset or an element type is not
/// supported, or kInvalidArgument when the inputs break the op's contract (shapes, indices out of
/// range).
StatusOr<std::vector<HostTensor>> runReferenceKernel(const std::string& op, int64_t opset,
                                                     const std::vector<const HostTensor*>& inputs,
                                                     const KernelAttrs& attrs, size_t num_outputs);

/// A reference kernel of an op in a plugin's own domain (include/onnxopt/plugin/plugin.h).
struct ReferencePluginKernel {
  std::string domain;  ///< the plugin's domain: not ONNX's, nor one with built-in kernels
  std::string op;
  int64_t since = 1;  ///< the first version of `domain` it covers (every later one too)
  /// Element types per input (the last repeats; empty: any) for referenceCapabilities().
  std::vector<TypeSet> inputs;
  /// Computes the outputs (exactly `num_outputs`); inputs may hold nullptr for omitted ones.
  std::function<StatusOr<std::vector<HostTensor>>(const std::vector<const HostTensor*>& inputs,
                                                  const KernelAttrs& attrs, size_t num_outputs)>
      run;
};

/// Adds `kernel` for this process: runReferenceKernel, hasReferenceKernel and
/// referenceCapabilities() answer for it from then on. A domain of ONNX or ours, an op already
/// registered, or a missing `run` is kInvalidArgument.
Status registerReferenceKernel(ReferencePluginKernel kernel);

}  // namespace onnxopt::kernels
