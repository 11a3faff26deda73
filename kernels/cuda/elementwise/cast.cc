// Host half of Cast (cast.h).
#include "kernels/cuda/elementwise/cast.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

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
  return CastArgs{call.op, call.inputs[0], call.outputs[0]};
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
  return args;
}

Support canImplement(const CastArgs& args) {
  if (!castKernelExists(args.x.dtype, args.y.dtype)) {
    return Support::no(fmt::format("{}: no CUDA kernel from {} to {}", args.op,
                                   dataTypeName(args.x.dtype), dataTypeName(args.y.dtype)));
  }
  return oneInputDeviceSupport(args.op, args.x, args.y);
}

size_t workspaceBytes(const CastArgs&) {
  return 0;
}

Status launch(const CastArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(BroadcastPlan plan, planBroadcast({args.x}, args.y, args.op));
  CastDeviceArgs d{args.x.dtype, args.y.dtype, plan, args.x.data, args.y.data};
  ONNXOPT_CUDA_CHECK(launchCast(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
