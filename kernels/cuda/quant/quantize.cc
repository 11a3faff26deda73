// Host half of QuantizeLinear and DequantizeLinear (quantize.h): attributes, the checks, the
// launch.
#include "kernels/cuda/quant/quantize.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The scale's layout over x seen as [outer, axis_dim, inner] (quantize_device.h).
struct ScaleLayout {
  int64_t inner = 1, axis_dim = 1, block = 0;
};

StatusOr<ScaleLayout> scaleLayoutOf(const QuantizeArgs& args) {
  ScaleLayout l;
  const ConstTensorView& s = args.scale;
  if (args.zero.dtype != DataType::kUndefined && args.zero.dims != s.dims &&
      !(args.zero.numElements() == 1 && s.numElements() == 1 && args.zero.rank() <= 1 &&
        s.rank() <= 1)) {
    return invalidArgument("{}: zero point and scale have different shapes", args.op);
  }
  if (args.block_size < 0) return invalidArgument("{}: negative block_size", args.op);
  if (args.block_size == 0 && s.rank() <= 1 && s.numElements() == 1) return l;
  int64_t rank = args.x.rank();
  int64_t axis = args.axis < 0 ? args.axis + rank : args.axis;
  if (axis < 0 || axis >= rank) {
    return invalidArgument("{}: axis {} out of range", args.op, args.axis);
  }
  int64_t dim = args.x.dims[static_cast<size_t>(axis)];
  for (int64_t d = axis + 1; d < rank; ++d) l.inner *= args.x.dims[static_cast<size_t>(d)];
  l.axis_dim = dim;
  if (args.block_size == 0) {
    if (s.rank() != 1 || s.dims[0] != dim) {
      return invalidArgument("{}: per-axis scale must be 1-D of length {}", args.op, dim);
    }
    return l;
  }
  l.block = args.block_size;
  std::vector<int64_t> want = args.x.dims;
  want[static_cast<size_t>(axis)] = (dim + l.block - 1) / l.block;
  if (s.dims != want) {
    return invalidArgument("{}: a blocked scale of {} must have x's shape with {} blocks", args.op,
                           fmt::format("[{}]", fmt::join(s.dims, ", ")), want[axis]);
  }
  return l;
}

}  // namespace

template <>
StatusOr<QuantizeArgs> argsFromCall<QuantizeArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 2, 3, 1));
  const KernelAttrs& attrs = attrsOf(call);
  QuantizeArgs args;
  args.op = call.op;
  args.dequantize = call.op == "DequantizeLinear";
  args.x = call.inputs[0];
  args.scale = call.inputs[1];
  args.zero = inputOf(call, 2);
  args.y = call.outputs[0];
  args.axis = attrs.getInt("axis", 1);
  if (call.opset >= 21) {
    args.block_size = attrs.getInt("block_size", 0);
    args.output_dtype = attrs.getInt("output_dtype", 0);
  }
  if (call.opset >= 23) args.precision = attrs.getInt("precision", 0);
  if (call.opset >= 19 && !args.dequantize) args.saturate = attrs.getInt("saturate", 1) != 0;
  return args;
}

Support canImplement(const QuantizeArgs& args) {
  DataType want_y = args.dequantize                           ? args.scale.dtype
                    : args.zero.dtype != DataType::kUndefined ? args.zero.dtype
                                                              : DataType::kUint8;
  if (!args.dequantize && args.zero.dtype == DataType::kUndefined && args.output_dtype != 0) {
    want_y = static_cast<DataType>(args.output_dtype);
  }
  if (args.output_dtype != 0 && args.output_dtype != static_cast<int64_t>(want_y)) {
    return Support::no(fmt::format("{}: output_dtype {} differs from the {}'s type", args.op,
                                   args.output_dtype, args.dequantize ? "scale" : "zero point"));
  }
  if (args.y.dtype != want_y) {
    return Support::no(fmt::format("{}: the output is {}, not {}", args.op,
                                   dataTypeName(args.y.dtype), dataTypeName(want_y)));
  }
  if (!quantizeKernelExists(args.dequantize, args.x.dtype, args.scale.dtype, args.y.dtype)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {} with a {} scale to {}", args.op,
                                   dataTypeName(args.x.dtype), dataTypeName(args.scale.dtype),
                                   dataTypeName(args.y.dtype)));
  }
  if (args.dequantize && args.zero.dtype != DataType::kUndefined &&
      args.zero.dtype != args.x.dtype) {
    return Support::no(fmt::format("{}: the zero point is {}, the input {}", args.op,
                                   dataTypeName(args.zero.dtype), dataTypeName(args.x.dtype)));
  }
  if (args.precision != 0 && args.precision != static_cast<int64_t>(DataType::kFloat)) {
    return Support::no(fmt::format("{}: precision {} has no CUDA kernel", args.op, args.precision));
  }
  StatusOr<ScaleLayout> l = scaleLayoutOf(args);
  if (!l.isOk()) return Support::no(l.status().message());
  if (args.y.dims != args.x.dims) {
    return Support::no(fmt::format("{}: the output's shape differs from the input's", args.op));
  }
  for (const auto& [view, what] : {std::pair{&args.x, "x"}, std::pair{&args.scale, "scale"},
                                   std::pair{&args.zero, "zero point"}}) {
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
    if (view->dtype != DataType::kUndefined && !view->isContiguous()) {
      return Support::no(fmt::format("{}: the CUDA kernel reads a contiguous {}", args.op, what));
    }
  }
  if (Support s = requireDevice(args.op, args.y, "output 0"); !s) return s;
  if (!args.y.isContiguous()) {
    return Support::no(fmt::format("{}: the CUDA kernel writes a contiguous output", args.op));
  }
  return Support::yes();
}

size_t workspaceBytes(const QuantizeArgs&) {
  return 0;
}

Status launch(const QuantizeArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(ScaleLayout l, scaleLayoutOf(args));
  QuantizeDeviceArgs d;
  d.dequantize = args.dequantize;
  d.x_type = args.x.dtype;
  d.scale_type = args.scale.dtype;
  d.y_type = args.y.dtype;
  d.zero_type = args.zero.dtype;
  d.count = args.x.numElements();
  d.inner = l.inner;
  d.axis_dim = l.axis_dim;
  d.block = l.block;
  d.saturate = args.saturate;
  d.x = args.x.data;
  d.scale = args.scale.data;
  d.zero = args.zero.data;
  d.y = args.y.data;
  ONNXOPT_CUDA_CHECK(launchQuantize(d, streamOf(stream)), args.op);
  return Status::ok();
}

template <>
StatusOr<DynamicQuantizeArgs> argsFromCall<DynamicQuantizeArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 1, 1, 3));
  DynamicQuantizeArgs args;
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  args.y_scale = call.outputs[1];
  args.y_zero = call.outputs[2];
  args.workspace = call.workspace;
  args.workspace_bytes = call.workspace_bytes;
  return args;
}

Support canImplement(const DynamicQuantizeArgs& args) {
  if (args.x.dtype != DataType::kFloat) {
    return Support::no(
        fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(args.x.dtype)));
  }
  const std::pair<const TensorView*, DataType> outs[] = {{&args.y, DataType::kUint8},
                                                         {&args.y_scale, DataType::kFloat},
                                                         {&args.y_zero, DataType::kUint8}};
  for (size_t i = 0; i < 3; ++i) {
    const TensorView& v = *outs[i].first;
    if (v.dtype != outs[i].second || (i > 0 && v.numElements() != 1)) {
      return Support::no(fmt::format("{}: output {} must be {}{}", args.op, i,
                                     i == 0 ? "uint8 of x's shape" : "a scalar of ",
                                     i == 0 ? "" : dataTypeName(outs[i].second)));
    }
    if (Support s = requireDevice(args.op, v, "an output"); !s) return s;
  }
  if (args.y.dims != args.x.dims) {
    return Support::no(fmt::format("{}: output 0 must be uint8 of x's shape", args.op));
  }
  if (Support s = requireDevice(args.op, args.x, "x"); !s) return s;
  if (!args.x.isContiguous() || !args.y.isContiguous()) {
    return Support::no(fmt::format("{}: the CUDA kernel takes contiguous tensors", args.op));
  }
  return Support::yes();
}

size_t workspaceBytes(const DynamicQuantizeArgs&) {
  return 2 * kDynamicQuantizeBlocks * sizeof(float);
}

Status launch(const DynamicQuantizeArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  if (args.workspace == nullptr || args.workspace_bytes < workspaceBytes(args)) {
    return invalidArgument("{}: the workspace has {} bytes; the kernel needs {}", args.op,
                           args.workspace_bytes, workspaceBytes(args));
  }
  DynamicQuantizeDeviceArgs d;
  d.count = args.x.numElements();
  d.x = static_cast<const float*>(args.x.data);
  d.partials = static_cast<float*>(args.workspace);
  d.y = static_cast<uint8_t*>(args.y.data);
  d.y_scale = static_cast<float*>(args.y_scale.data);
  d.y_zero = static_cast<uint8_t*>(args.y_zero.data);
  ONNXOPT_CUDA_CHECK(launchDynamicQuantize(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
