// Host half of the binary elementwise family (binary.h).
#include "kernels/cuda/elementwise/binary.h"

#include <fmt/format.h>

#include <map>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<BinaryArgs> argsFromCall<BinaryArgs>(const CudaKernelCall& call) {
  static const std::map<std::string, BinaryOp> kOps = {
#define CUDA_BINARY(op, ...) {#op, BinaryOp::k##op},
#include "kernels/cuda/ops.def"
  };
  auto it = kOps.find(call.op);
  if (it == kOps.end()) return invalidArgument("{}: not a binary CUDA kernel", call.op);
  RETURN_IF_ERROR(checkArity(call, 2, 2, 1));
  return BinaryArgs{call.op, it->second, call.inputs[0], call.inputs[1], call.outputs[0]};
}

template <>
StatusOr<ModArgs> argsFromCall<ModArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 2, 2, 1));
  bool fmod = attrsOf(call).getInt("fmod", 0) != 0;
  DataType t = call.inputs[0].dtype;
  if (!fmod && (t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16)) {
    return invalidArgument("{}: fmod must be 1 for floating-point inputs", call.op);
  }
  ModArgs args;
  static_cast<BinaryArgs&>(args) = BinaryArgs{call.op, fmod ? BinaryOp::kFmod : BinaryOp::kMod,
                                              call.inputs[0], call.inputs[1], call.outputs[0]};
  return args;
}

Support canImplement(const BinaryArgs& args) {
  if (args.a.dtype != args.b.dtype) {
    if (args.kind == BinaryOp::kPow) {
      if (!mixedPowKernelExists(args.a.dtype, args.b.dtype)) {
        return Support::no(fmt::format("{}: no CUDA kernel for a {} base with a {} exponent",
                                       args.op, dataTypeName(args.a.dtype),
                                       dataTypeName(args.b.dtype)));
      }
    } else {
      return Support::no(
          fmt::format("{}: inputs of types {} and {}; the CUDA kernel takes one type", args.op,
                      dataTypeName(args.a.dtype), dataTypeName(args.b.dtype)));
    }
  } else if (!binaryKernelExists(args.kind, args.a.dtype)) {
    return Support::no(
        fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(args.a.dtype)));
  }
  DataType out = writesBool(args.kind) ? DataType::kBool : args.a.dtype;
  if (args.y.dtype != out) {
    return Support::no(fmt::format("{}: the output is {}; the op writes {}", args.op,
                                   dataTypeName(args.y.dtype), dataTypeName(out)));
  }
  if (Support s = requireDevice(args.op, args.a, "input 0"); !s) return s;
  if (Support s = requireDevice(args.op, args.b, "input 1"); !s) return s;
  if (Support s = requireDevice(args.op, args.y, "output 0"); !s) return s;
  return broadcastSupport({args.a, args.b}, args.y, args.op);
}

size_t workspaceBytes(const BinaryArgs&) {
  return 0;
}

Status launch(const BinaryArgs& args, CudaDeviceContext& ctx) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(BroadcastPlan plan, planBroadcast({args.a, args.b}, args.y, args.op));
  BinaryDeviceArgs d{args.kind,   args.a.dtype, plan,        args.a.data,
                     args.b.data, args.y.data,  args.b.dtype};
  ONNXOPT_CUDA_CHECK(launchBinary(d, ctx.smCount(), streamOf(ctx.stream())), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
