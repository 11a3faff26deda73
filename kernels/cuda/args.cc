// Shared helpers of the kernel families' argument parsing (args.h).
#include "kernels/cuda/args.h"

#include <fmt/format.h>

#include "kernels/cuda/elementwise/broadcast.h"

namespace onnxopt::kernels::cuda {

ConstTensorView inputOf(const CudaKernelCall& call, size_t i) {
  return i < call.inputs.size() ? call.inputs[i] : ConstTensorView{};
}

const HostTensor* constantInput(const CudaKernelCall& call, size_t i) {
  return i < call.constant_inputs.size() ? call.constant_inputs[i] : nullptr;
}

StatusOr<std::vector<int64_t>> constantInts(const CudaKernelCall& call, size_t i,
                                            const char* what) {
  const HostTensor* t = constantInput(call, i);
  if (t == nullptr) {
    return Status(StatusCode::kUnimplemented,
                  fmt::format("{}: {} is not a constant (the CUDA kernel reads it when planning)",
                              call.op, what));
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t->numElements()));
  for (int64_t k = 0; k < t->numElements(); ++k) {
    if (t->dtype == DataType::kInt64) {
      out.push_back(t->get<int64_t>(k));
    } else if (t->dtype == DataType::kInt32) {
      out.push_back(t->get<int32_t>(k));
    } else {
      return invalidArgument("{}: {} is {}, not an integer tensor", call.op, what,
                             dataTypeName(t->dtype));
    }
  }
  return out;
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

Support requireDenseDevice(const std::string& op, const ConstTensorView& view, const char* what,
                           bool output) {
  if (Support s = requireDevice(op, view, what); !s) return s;
  if (view.dtype == DataType::kUndefined || view.isContiguous()) return Support::yes();
  return Support::no(
      fmt::format("{}: the CUDA kernel {} a contiguous {}", op, output ? "writes" : "reads", what));
}

bool storedChannelsLast(const ConstTensorView& view) {
  if (view.dims.size() < 3 || view.strides.size() != view.dims.size()) return view.isContiguous();
  ConstTensorView stored = view;
  stored.dims.push_back(view.dims[1]);
  stored.dims.erase(stored.dims.begin() + 1);
  stored.strides.push_back(view.strides[1]);
  stored.strides.erase(stored.strides.begin() + 1);
  return stored.isContiguous();
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
