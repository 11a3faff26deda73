// Host half of Cast (cast.h).
#include "kernels/cuda/elementwise/cast.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

namespace {

/// Cast's and CastLike's `saturate` (19+) and `round_mode` (24+).
Status readRounding(const CudaKernelCall& call, CastArgs& args) {
  const KernelAttrs& attrs = attrsOf(call);
  if (call.opset >= 19) args.saturate = attrs.getInt("saturate", 1) != 0;
  if (call.opset < 24) return Status::ok();
  std::string mode = attrs.getString("round_mode", "up");
  if (mode == "up") {
    args.round_mode = 0;
  } else if (mode == "down") {
    args.round_mode = 1;
  } else if (mode == "nearest") {
    args.round_mode = 2;
  } else {
    return invalidArgument("{}: bad round_mode '{}'", call.op, mode);
  }
  return Status::ok();
}

}  // namespace

template <>
StatusOr<CastArgs> argsFromCall<CastArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
  const KernelAttrs& attrs = attrsOf(call);
  if (!attrs.ints.count("to"))
    return invalidArgument("{}: the attribute 'to' is required", call.op);
  auto to = static_cast<DataType>(attrs.getInt("to", 0));
  if (to != call.outputs[0].dtype) {
    return invalidArgument("{}: 'to' is {} but the output is {}", call.op, dataTypeName(to),
                           dataTypeName(call.outputs[0].dtype));
  }
  CastArgs args{call.op, call.inputs[0], call.outputs[0]};
  RETURN_IF_ERROR(readRounding(call, args));
  return args;
}

template <>
StatusOr<CastLikeArgs> argsFromCall<CastLikeArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 2, 2, 1));
  if (call.inputs[1].dtype != call.outputs[0].dtype) {
    return invalidArgument("{}: target_type is {} but the output is {}", call.op,
                           dataTypeName(call.inputs[1].dtype), dataTypeName(call.outputs[0].dtype));
  }
  CastLikeArgs args;
  static_cast<CastArgs&>(args) = CastArgs{call.op, call.inputs[0], call.outputs[0]};
  RETURN_IF_ERROR(readRounding(call, args));
  return args;
}

Support canImplement(const CastArgs& args) {
  if (!castKernelExists(args.x.dtype, args.y.dtype)) {
    return Support::no(fmt::format("{}: no CUDA kernel from {} to {}", args.op,
                                   dataTypeName(args.x.dtype), dataTypeName(args.y.dtype)));
  }
  if (!isLowPrecisionCast(args.x.dtype, args.y.dtype)) {
    return oneInputDeviceSupport(args.op, args.x, args.y);
  }
  if (Support s = requireDevice(args.op, args.x, "input 0"); !s) return s;
  if (Support s = requireDevice(args.op, args.y, "output 0"); !s) return s;
  if (args.x.dims != args.y.dims || !args.x.isContiguous() || !args.y.isContiguous()) {
    return Support::no(fmt::format("{}: a cast from {} to {} takes contiguous tensors of one shape",
                                   args.op, dataTypeName(args.x.dtype),
                                   dataTypeName(args.y.dtype)));
  }
  return Support::yes();
}

size_t workspaceBytes(const CastArgs&) {
  return 0;
}

Status launch(const CastArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  CastDeviceArgs d{args.x.dtype, args.y.dtype, {}, args.x.data, args.y.data};
  if (isLowPrecisionCast(args.x.dtype, args.y.dtype)) {
    d.plan.count = args.y.numElements();
    d.plan.linear = true;
  } else {
    ASSIGN_OR_RETURN(d.plan, planBroadcast({args.x}, args.y, args.op));
  }
  d.saturate = args.saturate;
  d.round_mode = args.round_mode;
  ONNXOPT_CUDA_CHECK(launchCast(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
