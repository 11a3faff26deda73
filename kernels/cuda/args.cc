// Shared helpers of the kernel families' argument parsing (args.h).
#include "args.h"

#include <fmt/format.h>

#include "broadcast.h"

namespace onnxopt::kernels::cuda {

ConstTensorView inputOf(const CudaKernelCall& call, size_t i) {
  return i < call.inputs.size() ? call.inputs[i] : ConstTensorView{};
}

Status checkArity(const CudaKernelCall& call, size_t min_inputs, size_t max_inputs,
                  size_t outputs) {
  if (call.inputs.size() < min_inputs || call.inputs.size() > max_inputs) {
    return invalidArgument("{}: {} inputs; the op takes {} to {}", call.op, call.inputs.size(),
                           min_inputs, max_inputs);
  }
  if (call.outputs.size() != outputs) {
    return invalidArgument("{}: {} outputs; the op has {}", call.op, call.outputs.size(), outputs);
  }
  for (size_t i = 0; i < min_inputs; ++i) {
    if (call.inputs[i].dtype == DataType::kUndefined) {
      return invalidArgument("{}: input {} is required", call.op, i);
    }
  }
  return Status::ok();
}

Status refused(const Support& support) {
  return Status(StatusCode::kUnimplemented, support.reason);
}

Support requireDevice(const std::string& op, const ConstTensorView& view, const char* what) {
  if (view.dtype == DataType::kUndefined || view.memory == MemoryKind::kDevice) {
    return Support::yes();
  }
  return Support::no(
      fmt::format("{}: {} is in host memory; the CUDA kernel reads device memory", op, what));
}

Support oneInputDeviceSupport(const std::string& op, const ConstTensorView& x,
                              const ConstTensorView& y) {
  if (Support s = requireDevice(op, x, "input 0"); !s) return s;
  if (Support s = requireDevice(op, y, "output 0"); !s) return s;
  return broadcastSupport({x}, y, op);
}

const KernelAttrs& attrsOf(const CudaKernelCall& call) {
  static const KernelAttrs kNone;
  return call.attrs != nullptr ? *call.attrs : kNone;
}

}  // namespace onnxopt::kernels::cuda
