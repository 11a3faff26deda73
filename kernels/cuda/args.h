// What the kernel families share when they turn a CudaKernelCall (a node described by device views)
// into their XArgs: the per-family parser the launch table instantiates (argsFromCall<XArgs>,
// specialized in each family's header), input access, and Support <-> Status.
#pragma once

#include <string>

#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels::cuda {

/// Parses a node into a family's arguments: kInvalidArgument naming the op for a node that breaks
/// the op's contract (input count, attribute values). Each family specializes it in its header;
/// a family named in ops.def without one does not link.
template <typename Args>
StatusOr<Args> argsFromCall(const CudaKernelCall& call);

/// Input `i`, or an empty view (dtype kUndefined) when the node omits it.
ConstTensorView inputOf(const CudaKernelCall& call, size_t i);

/// kInvalidArgument unless the call has min..max inputs and exactly `outputs` outputs.
Status checkArity(const CudaKernelCall& call, size_t min_inputs, size_t max_inputs, size_t outputs);

/// A refusal as the Status launch returns (kUnimplemented, the reason).
Status refused(const Support& support);

/// No when a present view is not in device memory.
Support requireDevice(const std::string& op, const ConstTensorView& view, const char* what);

/// A one-input elementwise kernel's last checks (unary, Cast): input and output in device memory,
/// and the input broadcasts to the output.
Support oneInputDeviceSupport(const std::string& op, const ConstTensorView& x,
                              const ConstTensorView& y);

/// The node's attributes (an empty set when the call has none).
const KernelAttrs& attrsOf(const CudaKernelCall& call);

}  // namespace onnxopt::kernels::cuda
