// Host half of CumSum and CumProd (scan.h).
#include "kernels/cuda/reduce/scan.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"
#include "kernels/cuda/reduce/reduce_plan.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<CumSumArgs> argsFromCall<CumSumArgs>(const CudaKernelCall& call) {
  if (call.op != "CumSum" && call.op != "CumProd") {
    return invalidArgument("{}: not a CUDA scan", call.op);
  }
  RETURN_IF_ERROR(checkArity(call, 2, 2, 1));
  const KernelAttrs& attrs = attrsOf(call);
  CumSumArgs args;
  args.op = call.op;
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  args.prod = call.op == "CumProd";
  args.exclusive = attrs.getInt("exclusive", 0) != 0;
  args.reverse = attrs.getInt("reverse", 0) != 0;
  StatusOr<std::vector<int64_t>> axis = constantInts(call, 1, "axis");
  if (axis.status().code() == StatusCode::kUnimplemented && args.x.rank() == 1) {
    axis = std::vector<int64_t>{0};  // known only at run time, but a vector has one axis
  }
  if (!axis.isOk()) return axis.status();
  if (axis->size() != 1 || call.inputs[1].rank() > 1) {
    return invalidArgument("{}: axis must be a scalar, not {}", call.op,
                           shapeText(call.inputs[1].dims));
  }
  if (args.x.rank() == 0) return invalidArgument("{}: the input must have rank >= 1", call.op);
  ASSIGN_OR_RETURN(args.axis, normalizeAxis(call.op, axis->at(0), args.x.rank()));
  return args;
}

Support canImplement(const CumSumArgs& args) {
  if (!cumSumKernelExists(args.x.dtype)) {
    return Support::no(
        fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(args.x.dtype)));
  }
  if (Support s = reduceInputSupport(args.op, args.x, "input 0"); !s) return s;
  return reduceOutputSupport(args.op, args.y, args.x.dtype, args.x.dims, "output 0");
}

size_t workspaceBytes(const CumSumArgs&) {
  return 0;
}

Status launch(const CumSumArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  CumSumDeviceArgs d{args.x.dtype,
                     args.prod,
                     args.exclusive,
                     args.reverse,
                     planAxis(args.x, args.axis),
                     innerSize(args.x.dims, args.axis),
                     args.x.data,
                     args.y.data};
  ONNXOPT_CUDA_CHECK(launchCumSum(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
