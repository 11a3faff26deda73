// Conversions between IR tensors/attributes and the kernels' host tensors. The kernels never see IR
// types; this bridge (ir + kernels, the runtime's dependencies) serves the reference executor and
// constant folding, which runs the reference kernels.
#pragma once

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/host_tensor.h"

namespace onnxopt::runtime {

/// Copies an IR tensor's data into a host tensor.
kernels::HostTensor toHost(const ir::Tensor& tensor);
/// Moves a host tensor's data into an IR tensor.
ir::Tensor fromHost(kernels::HostTensor&& tensor);
/// The node's attributes as kernel attributes (graph and sparse attributes are left out).
kernels::KernelAttrs toKernelAttrs(const ir::Node& node);

}  // namespace onnxopt::runtime
