// Host half of ArgMax/ArgMin (arg_reduce.h).
#include "kernels/cuda/reduce/arg_reduce.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"
#include "kernels/cuda/reduce/reduce_plan.h"

namespace onnxopt::kernels::cuda {

namespace {

std::vector<bool> axisMask(const ArgReduceArgs& args) {
  std::vector<bool> reduced(static_cast<size_t>(args.x.rank()), false);
  reduced[static_cast<size_t>(args.axis)] = true;
  return reduced;
}

}  // namespace

template <>
StatusOr<ArgReduceArgs> argsFromCall<ArgReduceArgs>(const CudaKernelCall& call) {
  if (call.op != "ArgMax" && call.op != "ArgMin") {
    return invalidArgument("{}: not a CUDA arg reduction", call.op);
  }
  RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
  const KernelAttrs& attrs = attrsOf(call);
  ArgReduceArgs args;
  args.op = call.op;
  args.is_max = call.op == "ArgMax";
  args.select_last = call.opset >= 12 && attrs.getInt("select_last_index", 0) != 0;
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  args.keepdims = attrs.getInt("keepdims", 1) != 0;
  if (args.x.rank() == 0) return invalidArgument("{}: the input must have rank >= 1", call.op);
  ASSIGN_OR_RETURN(args.axis, normalizeAxis(call.op, attrs.getInt("axis", 0), args.x.rank()));
  return args;
}

Support canImplement(const ArgReduceArgs& args) {
  if (!argReduceKernelExists(args.x.dtype)) {
    return Support::no(
        fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(args.x.dtype)));
  }
  if (Support s = reduceInputSupport(args.op, args.x, "input 0"); !s) return s;
  std::vector<bool> reduced = axisMask(args);
  std::vector<int64_t> dims = reducedShape(args.x.dims, reduced, args.keepdims);
  if (Support s = reduceOutputSupport(args.op, args.y, DataType::kInt64, dims, "output 0"); !s) {
    return s;
  }
  if (args.x.dims[static_cast<size_t>(args.axis)] == 0 && args.y.numElements() > 0) {
    return Support::no(fmt::format("{}: axis {} is empty", args.op, args.axis));
  }
  return Support::yes();
}

size_t workspaceBytes(const ArgReduceArgs&) {
  return 0;
}

Status launch(const ArgReduceArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ArgReduceDeviceArgs d{args.is_max,  args.select_last,
                        args.x.dtype, planAxis(args.x, args.axis),
                        args.x.data,  static_cast<int64_t*>(args.y.data)};
  ONNXOPT_CUDA_CHECK(launchArgReduce(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
