// Host half of Softmax, LogSoftmax and Hardmax (softmax.h): the axis and the rows it implies,
// the checks, the launch.
#include "kernels/cuda/reduce/softmax.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"
#include "kernels/cuda/reduce/row_args.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<SoftmaxArgs> argsFromCall<SoftmaxArgs>(const CudaKernelCall& call) {
  const bool lp = call.op == "LpNormalization";
  if (call.op != "Softmax" && call.op != "LogSoftmax" && call.op != "Hardmax" && !lp) {
    return invalidArgument("{}: not a Softmax CUDA kernel", call.op);
  }
  RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
  const KernelAttrs& attrs = attrsOf(call);
  SoftmaxArgs args;
  args.op = call.op;
  args.kind = call.op == "LogSoftmax" ? SoftmaxKind::kLogSoftmax
              : call.op == "Hardmax"  ? SoftmaxKind::kHardmax
                                      : SoftmaxKind::kSoftmax;
  if (lp) {
    int64_t p = attrs.getInt("p", 2);
    if (p != 1 && p != 2) return invalidArgument("LpNormalization: p must be 1 or 2, got {}", p);
    args.kind = p == 1 ? SoftmaxKind::kLpNorm1 : SoftmaxKind::kLpNorm2;
  }
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  const std::vector<int64_t>& dims = args.x.dims;
  // LpNormalization has always taken one axis (default -1); the others from opset 13.
  const bool coerced = !lp && call.opset < 13;
  ASSIGN_OR_RETURN(int64_t axis,
                   normalizedAxis(call.op, attrs.getInt("axis", coerced ? 1 : -1), args.x.rank()));
  args.outer = dimsProduct(dims, 0, axis);
  if (coerced) {
    args.n = dimsProduct(dims, axis, args.x.rank());
    args.inner = 1;
  } else {
    args.n = dims[static_cast<size_t>(axis)];
    args.inner = dimsProduct(dims, axis + 1, args.x.rank());
  }
  return args;
}

Support canImplement(const SoftmaxArgs& args) {
  return floatRowSupport(args.op, args.x, args.y);
}

size_t workspaceBytes(const SoftmaxArgs&) {
  return 0;
}

Status launch(const SoftmaxArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  SoftmaxDeviceArgs d{args.kind,  args.x.dtype, args.x.data, args.y.data,
                      args.outer, args.n,       args.inner};
  ONNXOPT_CUDA_CHECK(launchSoftmax(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
