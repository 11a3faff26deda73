// Host half of the unary elementwise family (unary.h): op names and attributes, the checks, the
// launch.
#include "kernels/cuda/elementwise/unary.h"

#include <fmt/format.h>

#include <limits>
#include <map>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<UnaryArgs> argsFromCall<UnaryArgs>(const CudaKernelCall& call) {
  static const std::map<std::string, UnaryOp> kOps = {
#define CUDA_UNARY(op, ...) {#op, UnaryOp::k##op},
#include "kernels/cuda/ops.def"
  };
  auto it = kOps.find(call.op);
  if (it == kOps.end()) return invalidArgument("{}: not a unary CUDA kernel", call.op);
  bool clip_inputs = it->second == UnaryOp::kClip && call.opset >= 11;
  RETURN_IF_ERROR(checkArity(call, 1, clip_inputs ? 3 : 1, 1));
  const KernelAttrs& attrs = attrsOf(call);
  UnaryArgs args;
  args.op = call.op;
  args.kind = it->second;
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  switch (args.kind) {
    case UnaryOp::kLeakyRelu:
      args.alpha = attrs.getFloat("alpha", 0.01f);
      break;
    case UnaryOp::kElu:
    case UnaryOp::kSwish:
    case UnaryOp::kCelu:
    case UnaryOp::kThresholdedRelu:
      args.alpha = attrs.getFloat("alpha", 1.0f);
      break;
    case UnaryOp::kShrink:
      args.alpha = attrs.getFloat("lambd", 0.5f);
      args.beta = attrs.getFloat("bias", 0.0f);
      break;
    case UnaryOp::kIsInf:
      args.alpha = static_cast<float>(attrs.getInt("detect_negative", 1));
      args.beta = static_cast<float>(attrs.getInt("detect_positive", 1));
      break;
    case UnaryOp::kSelu:
      args.alpha = attrs.getFloat("alpha", 1.67326319217681884765625f);
      args.gamma = attrs.getFloat("gamma", 1.05070102214813232421875f);
      break;
    case UnaryOp::kHardSigmoid:
      args.alpha = attrs.getFloat("alpha", 0.2f);
      args.beta = attrs.getFloat("beta", 0.5f);
      break;
    case UnaryOp::kGelu: {
      std::string approx = attrs.getString("approximate", "none");
      if (approx == "tanh") {
        args.kind = UnaryOp::kGeluTanh;
      } else if (approx != "none") {
        return invalidArgument("Gelu: approximate must be none or tanh, not '{}'", approx);
      }
      break;
    }
    case UnaryOp::kClip:
      args.alpha = attrs.getFloat("min", -std::numeric_limits<float>::infinity());
      args.beta = attrs.getFloat("max", std::numeric_limits<float>::infinity());
      if (clip_inputs) {
        args.min = inputOf(call, 1);
        args.max = inputOf(call, 2);
      }
      break;
    default:
      break;
  }
  return args;
}

Support canImplement(const UnaryArgs& args) {
  if (!unaryKernelExists(args.kind, args.x.dtype)) {
    return Support::no(
        fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(args.x.dtype)));
  }
  bool predicate = args.kind == UnaryOp::kIsNaN || args.kind == UnaryOp::kIsInf;
  if (predicate ? args.y.dtype != DataType::kBool : args.y.dtype != args.x.dtype) {
    return Support::no(fmt::format("{}: the output is {}, the input {}", args.op,
                                   dataTypeName(args.y.dtype), dataTypeName(args.x.dtype)));
  }
  for (const auto& [view, what] : {std::pair{&args.min, "min"}, std::pair{&args.max, "max"}}) {
    if (view->dtype == DataType::kUndefined) continue;
    if (view->dtype != args.x.dtype || view->numElements() != 1) {
      return Support::no(fmt::format("{}: {} must be a scalar of the input's type", args.op, what));
    }
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
  }
  return oneInputDeviceSupport(args.op, args.x, args.y);
}

size_t workspaceBytes(const UnaryArgs&) {
  return 0;
}

Status launch(const UnaryArgs& args, CudaDeviceContext& ctx) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(BroadcastPlan plan, planBroadcast({args.x}, args.y, args.op));
  UnaryDeviceArgs d{args.kind,  args.x.dtype, plan,       args.x.data,   args.y.data,
                    args.alpha, args.beta,    args.gamma, args.min.data, args.max.data};
  ONNXOPT_CUDA_CHECK(launchUnary(d, ctx.smCount(), streamOf(ctx.stream())), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
