// Host half of Trilu (trilu.h): k (a constant read here, or a device scalar the kernel reads),
// the checks, the launch.
#include "trilu.h"

#include <fmt/format.h>

#include "copy.h"
#include "device.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<TriluArgs> argsFromCall<TriluArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 1, 2, 1));
  TriluArgs args{call.op, call.inputs[0], inputOf(call, 1), call.outputs[0], {}};
  if (args.x.rank() < 2) return invalidArgument("{}: the input must have rank >= 2", call.op);
  TriluDeviceArgs& d = args.device;
  d.element_bytes = movableElementBytes(args.x.dtype);
  d.upper = attrsOf(call).getInt("upper", 1) != 0;
  d.rows = args.x.dims[args.x.dims.size() - 2];
  d.cols = args.x.dims.back();
  d.count = args.x.numElements();
  if (args.k.dtype != DataType::kUndefined) {
    if (args.k.dtype != DataType::kInt64 || args.k.numElements() != 1) {
      return invalidArgument("{}: k must be an int64 scalar", call.op);
    }
    if (constantInput(call, 1) != nullptr) {
      ASSIGN_OR_RETURN(std::vector<int64_t> k, constantInts(call, 1, "k"));
      d.k_value = k.at(0);
      args.k = ConstTensorView();  // read here: the kernel needs no device k
    } else {
      d.k = static_cast<const int64_t*>(args.k.data);
    }
  }
  d.in = args.x.data;
  d.out = args.y.data;
  return args;
}

Support canImplement(const TriluArgs& args) {
  if (Support s = movableSupport(args.op, args.x, args.y); !s) return s;
  if (Support s = requireDevice(args.op, args.k, "k"); !s) return s;
  if (args.x.dims != args.y.dims) {
    return Support::no(fmt::format("{}: the output is {}, the input {}", args.op,
                                   dimsText(args.y.dims), dimsText(args.x.dims)));
  }
  if (!args.x.isContiguous() || !args.y.isContiguous()) {
    return Support::no(fmt::format("{}: the input and output views must be contiguous", args.op));
  }
  return Support::yes();
}

size_t workspaceBytes(const TriluArgs&) {
  return 0;
}

Status launch(const TriluArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ONNXOPT_CUDA_CHECK(launchTrilu(args.device, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
