// What the kernel families share when they turn a CudaKernelCall (a node described by device views)
// into their XArgs: the per-family parser the launch table instantiates (argsFromCall<XArgs>,
// specialized in each family's header), input access, and Support <-> Status.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

/// Input `i`'s host data when it is a constant known when planning (CudaKernelCall::
/// constant_inputs), else nullptr.
const HostTensor* constantInput(const CudaKernelCall& call, size_t i);

/// A constant integer input (int32 or int64) as int64 values, e.g. Slice's starts or ReduceSum's
/// axes; kUnimplemented "OP: WHAT is not a constant" when the input is not known when planning
/// (the node then runs on the CPU), kInvalidArgument for another element type.
StatusOr<std::vector<int64_t>> constantInts(const CudaKernelCall& call, size_t i, const char* what);

/// kInvalidArgument unless the call has min..max inputs and exactly `outputs` outputs.
Status checkArity(const CudaKernelCall& call, size_t min_inputs, size_t max_inputs, size_t outputs);

/// A refusal as the Status launch returns (kUnimplemented, the reason).
Status refused(const Support& support);

/// No when a present view is not in device memory.
Support requireDevice(const std::string& op, const ConstTensorView& view, const char* what);

/// No when a present view is not in device memory or not contiguous: what a kernel that indexes
/// its operand densely needs (`output`: the kernel writes it).
Support requireDenseDevice(const std::string& op, const ConstTensorView& view, const char* what,
                           bool output = false);

/// A one-input elementwise kernel's last checks (unary, Cast): input and output in device memory,
/// and the input broadcasts to the output.
Support oneInputDeviceSupport(const std::string& op, const ConstTensorView& x,
                              const ConstTensorView& y);

/// The channels-first view of a tensor stored channels-last: dims [N, S1, ..., Sk, C] become
/// [N, C, S1, ..., Sk] with the strides that address the same memory (rank >= 3; other views are
/// returned as they are).
template <typename View>
View channelsFirstView(View v) {
  if (v.dims.size() < 3 || v.strides.size() != v.dims.size()) return v;
  v.dims.insert(v.dims.begin() + 1, v.dims.back());
  v.dims.pop_back();
  v.strides.insert(v.strides.begin() + 1, v.strides.back());
  v.strides.pop_back();
  return v;
}

/// Whether a channels-first view (channelsFirstView) is contiguous channels-last memory.
bool storedChannelsLast(const ConstTensorView& view);

/// The node's attributes (an empty set when the call has none).
const KernelAttrs& attrsOf(const CudaKernelCall& call);

}  // namespace onnxopt::kernels::cuda
