// Host half of Where (where.h).
#include "kernels/cuda/elementwise/where.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

namespace {

/// Bytes per element of a type Where can move, or 0.
int elementBytes(DataType t) {
  if (t == DataType::kString) return 0;
  int bits = dataTypeBits(t);
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? bits / 8 : 0;
}

}  // namespace

template <>
StatusOr<WhereArgs> argsFromCall<WhereArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 3, 3, 1));
  return WhereArgs{call.op, call.inputs[0], call.inputs[1], call.inputs[2], call.outputs[0]};
}

Support canImplement(const WhereArgs& args) {
  if (args.cond.dtype != DataType::kBool) {
    return Support::no(
        fmt::format("{}: the condition is {}, not bool", args.op, dataTypeName(args.cond.dtype)));
  }
  if (args.x.dtype != args.y.dtype || args.out.dtype != args.x.dtype) {
    return Support::no(fmt::format("{}: x, y and the output are {}, {} and {}; one type needed",
                                   args.op, dataTypeName(args.x.dtype), dataTypeName(args.y.dtype),
                                   dataTypeName(args.out.dtype)));
  }
  if (elementBytes(args.x.dtype) == 0) {
    return Support::no(
        fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(args.x.dtype)));
  }
  for (const auto& [view, what] : {std::pair{&args.cond, "input 0"}, std::pair{&args.x, "input 1"},
                                   std::pair{&args.y, "input 2"}}) {
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
  }
  if (Support s = requireDevice(args.op, args.out, "output 0"); !s) return s;
  return broadcastSupport({args.cond, args.x, args.y}, args.out, args.op);
}

size_t workspaceBytes(const WhereArgs&) {
  return 0;
}

Status launch(const WhereArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(BroadcastPlan plan,
                   planBroadcast({args.cond, args.x, args.y}, args.out, args.op));
  WhereDeviceArgs d{
      elementBytes(args.x.dtype), plan, args.cond.data, args.x.data, args.y.data, args.out.data};
  ONNXOPT_CUDA_CHECK(launchWhere(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
