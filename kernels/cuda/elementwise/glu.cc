// Host half of the gated activations (glu.h).
#include "kernels/cuda/elementwise/glu.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<GluArgs> argsFromCall<GluArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
  GluArgs args;
  args.op = call.op;
  args.a = call.inputs[0];
  args.y = call.outputs[0];
  if (args.a.rank() == 0 || args.a.dims.back() % 2 != 0) {
    return invalidArgument("{}: A must have an even last dim ([..., 2N])", call.op);
  }
  args.width = args.a.dims.back() / 2;
  args.rows = args.width == 0 ? 0 : args.a.numElements() / (2 * args.width);
  if (call.op == "GeGlu") {
    const std::string approximate = attrsOf(call).getString("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      return invalidArgument("{}: approximate is '{}', not none or tanh", call.op, approximate);
    }
    args.activation = approximate == "tanh" ? GluActivation::kGeluTanh : GluActivation::kGelu;
  }
  return args;
}

Support canImplement(const GluArgs& args) {
  const DataType t = args.a.dtype;
  if (t != DataType::kFloat && t != DataType::kFloat16 && t != DataType::kBfloat16) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(t)));
  }
  std::vector<int64_t> half = args.a.dims;
  half.back() = args.width;
  if (args.y.dtype != t || args.y.dims != half) {
    return Support::no(fmt::format("{}: the output is {} [{}], not A's type and [{}]", args.op,
                                   dataTypeName(args.y.dtype), fmt::join(args.y.dims, ", "),
                                   fmt::join(half, ", ")));
  }
  if (!args.a.isContiguous() || !args.y.isContiguous()) {
    return Support::no(
        fmt::format("{}: the CUDA kernel reads and writes contiguous tensors", args.op));
  }
  if (Support s = requireDevice(args.op, args.a, "input 0"); !s) return s;
  return requireDevice(args.op, args.y, "output 0");
}

size_t workspaceBytes(const GluArgs&) {
  return 0;
}

Status launch(const GluArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  GluDeviceArgs d{args.activation, args.a.dtype, args.rows, args.width, args.a.data, args.y.data};
  ONNXOPT_CUDA_CHECK(launchGlu(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
