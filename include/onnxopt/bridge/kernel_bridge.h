// Conversions between IR tensors/attributes and the kernels' host tensors: the adapter between the
// two layers that must not see each other (kernels know no IR types). It depends on ir and kernels
// only, so both the runtime (the reference executor) and the passes (constant folding runs the
// reference kernels) may use it without the passes depending on the runtime.
#pragma once

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/host_tensor.h"

namespace onnxopt::bridge {

/// Copies an IR tensor's data into a host tensor.
kernels::HostTensor toHost(const ir::Tensor& tensor);
/// Moves a host tensor's data into an IR tensor.
ir::Tensor fromHost(kernels::HostTensor&& tensor);
/// The node's attributes as kernel attributes (graph and sparse attributes are left out).
kernels::KernelAttrs toKernelAttrs(const ir::Node& node);
/// The capability query for `node` at `opset` (the model's opset of the node's domain): domain, op,
/// the element type of each input (a constant's own, else the declared one; kUndefined when
/// omitted or not known) and each output (declared), layout kAny.
kernels::OpQuery opQuery(const ir::Node& node, int64_t opset);

}  // namespace onnxopt::bridge
