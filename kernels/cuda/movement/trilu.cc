// Host half of Trilu (trilu.h): k (a constant read here, or a device scalar the kernel reads),
// the checks, the launch.
#include "kernels/cuda/movement/trilu.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<TriluArgs> argsFromCall<TriluArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 1, 2, 1));
  TriluArgs args{call.op, call.inputs[0], inputOf(call, 1), call.outputs[0], {}};
  if (args.x.rank() < 2) return invalidArgument("{}: the input must have rank >= 2", call.op);
  TriluDeviceArgs& d = args.device;
  d.element_bytes = movableElementBytes(args.x.dtype);
  d.mode = attrsOf(call).getInt("upper", 1) != 0 ? TriangleMode::kUpper : TriangleMode::kLower;
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

// --- EyeLike --------------------------------------------------------------------------------------

namespace {

/// The bits of 1 as an element of `type`, or nullopt for a type without them here.
std::optional<uint64_t> oneBits(DataType type) {
  switch (type) {
    case DataType::kFloat:
      return 0x3F800000u;
    case DataType::kDouble:
      return 0x3FF0000000000000u;
    case DataType::kFloat16:
      return 0x3C00u;
    case DataType::kBfloat16:
      return 0x3F80u;
    case DataType::kBool:
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kInt16:
    case DataType::kUint16:
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kInt64:
    case DataType::kUint64:
      return 1u;
    default:
      return std::nullopt;
  }
}

}  // namespace

template <>
StatusOr<EyeLikeArgs> argsFromCall<EyeLikeArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
  EyeLikeArgs args{call.op, call.inputs[0], call.outputs[0], {}};
  if (args.x.rank() != 2) return invalidArgument("{}: the input must be 2-D", call.op);
  const KernelAttrs& attrs = attrsOf(call);
  DataType type =
      attrs.has("dtype") ? static_cast<DataType>(attrs.getInt("dtype", 0)) : args.x.dtype;
  if (type != args.y.dtype) {
    return invalidArgument("{}: dtype is {} but the output is {}", call.op, dataTypeName(type),
                           dataTypeName(args.y.dtype));
  }
  std::optional<uint64_t> one = oneBits(type);
  if (!one) {
    return makeError(StatusCode::kUnimplemented, "{}: no CUDA kernel for {}", call.op,
                     dataTypeName(type));
  }
  TriluDeviceArgs& d = args.device;
  d.element_bytes = movableElementBytes(type);
  d.mode = TriangleMode::kDiagonal;
  d.one_bits = *one;
  d.rows = args.x.dims[0];
  d.cols = args.x.dims[1];
  d.count = d.rows * d.cols;
  d.k_value = attrs.getInt("k", 0);
  d.out = args.y.data;
  return args;
}

Support canImplement(const EyeLikeArgs& args) {
  if (Support s = requireDevice(args.op, args.y, "output 0"); !s) return s;
  if (args.x.dims != args.y.dims) {
    return Support::no(fmt::format("{}: the output is {}, the input {}", args.op,
                                   dimsText(args.y.dims), dimsText(args.x.dims)));
  }
  if (!args.y.isContiguous()) {
    return Support::no(fmt::format("{}: the output view is not contiguous", args.op));
  }
  return Support::yes();
}

size_t workspaceBytes(const EyeLikeArgs&) {
  return 0;
}

Status launch(const EyeLikeArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ONNXOPT_CUDA_CHECK(launchTrilu(args.device, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
