// Host half of ConvInteger and QLinearConv (quant_conv.h): parsing, the checks, the launch.
#include "kernels/cuda/conv/quant_conv.h"

#include <fmt/format.h>

#include "kernels/cuda/conv/quant_conv_device.h"
#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

namespace {

bool isByteType(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUint8;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

bool present(const ConstTensorView& v) {
  return v.dtype != DataType::kUndefined;
}

}  // namespace

template <>
StatusOr<QuantConvArgs> argsFromCall<QuantConvArgs>(const CudaKernelCall& call) {
  QuantConvArgs args;
  args.op = call.op;
  args.requantize = call.op == "QLinearConv";
  if (!args.requantize && call.op != "ConvInteger") {
    return invalidArgument("{}: not a CUDA integer convolution", call.op);
  }
  RETURN_IF_ERROR(args.requantize ? checkArity(call, 8, 9, 1) : checkArity(call, 2, 4, 1));
  if (args.requantize) {
    args.x = call.inputs[0];
    args.x_scale = call.inputs[1];
    args.x_zero = call.inputs[2];
    args.w = call.inputs[3];
    args.w_scale = call.inputs[4];
    args.w_zero = call.inputs[5];
    args.y_scale = call.inputs[6];
    args.y_zero = call.inputs[7];
    args.bias = inputOf(call, 8);
  } else {
    args.x = call.inputs[0];
    args.w = call.inputs[1];
    args.x_zero = inputOf(call, 2);
    args.w_zero = inputOf(call, 3);
  }
  args.y = call.outputs[0];
  const KernelAttrs& attrs = attrsOf(call);
  if (args.x.dims.size() < 3 || args.w.dims.size() != args.x.dims.size()) {
    return invalidArgument("{}: X must have rank 3 or more and W the same rank, not {} and {}",
                           call.op, args.x.dims.size(), args.w.dims.size());
  }
  std::vector<int64_t> in(args.x.dims.begin() + 2, args.x.dims.end());
  std::vector<int64_t> kernel(args.w.dims.begin() + 2, args.w.dims.end());
  if (auto ks = attrs.getInts("kernel_shape"); ks && *ks != kernel) {
    return invalidArgument("{}: kernel_shape does not match W", call.op);
  }
  args.group = attrs.getInt("group", 1);
  int64_t c = args.x.dims[1], m = args.w.dims[0];
  if (args.group < 1 || c % args.group != 0 || args.w.dims[1] != c / args.group ||
      m % args.group != 0) {
    return invalidArgument("{}: group {} does not fit {} input and {} output channels", call.op,
                           args.group, c, m);
  }
  args.out_channels = m;
  ASSIGN_OR_RETURN(args.window, windowOf(call.op, attrs, in, kernel, false));
  return args;
}

Support canImplement(const QuantConvArgs& args) {
  const std::string& op = args.op;
  if (!isByteType(args.x.dtype) || !isByteType(args.w.dtype)) {
    return Support::no(fmt::format("{}: X and W must be int8 or uint8, not {} and {}", op,
                                   dataTypeName(args.x.dtype), dataTypeName(args.w.dtype)));
  }
  int64_t m = args.out_channels;
  if (present(args.x_zero) &&
      (args.x_zero.dtype != args.x.dtype || args.x_zero.numElements() != 1)) {
    return Support::no(fmt::format("{}: the X zero point must be one element of X's type", op));
  }
  if (present(args.w_zero) &&
      (args.w_zero.dtype != args.w.dtype ||
       (args.w_zero.numElements() != 1 && args.w_zero.numElements() != m))) {
    return Support::no(
        fmt::format("{}: the W zero point must be W's type, one or {} elements", op, m));
  }
  if (args.requantize) {
    for (const auto* s : {&args.x_scale, &args.w_scale, &args.y_scale}) {
      if (s->dtype != DataType::kFloat) {
        return Support::no(fmt::format("{}: the CUDA kernel takes float scales, not {}", op,
                                       dataTypeName(s->dtype)));
      }
    }
    if (args.x_scale.numElements() != 1 || args.y_scale.numElements() != 1 ||
        (args.w_scale.numElements() != 1 && args.w_scale.numElements() != m)) {
      return Support::no(fmt::format("{}: x and y scales must be scalars, w_scale 1 or {}", op, m));
    }
    if (!isByteType(args.y_zero.dtype) || args.y_zero.numElements() != 1 ||
        args.y.dtype != args.y_zero.dtype) {
      return Support::no(
          fmt::format("{}: Y and its zero point must be one int8 or uint8 type", op));
    }
    if (present(args.bias) && (args.bias.dtype != DataType::kInt32 || args.bias.dims.size() != 1 ||
                               args.bias.dims[0] != m)) {
      return Support::no(fmt::format("{}: B must be int32 of shape [{}]", op, m));
    }
  } else if (args.y.dtype != DataType::kInt32) {
    return Support::no(fmt::format("{}: Y must be int32, not {}", op, dataTypeName(args.y.dtype)));
  }
  size_t rank = args.window.in.size();
  if (rank < 1 || rank > 3) {
    return Support::no(
        fmt::format("{}: the CUDA kernel convolves 1 to 3 spatial dims, not {}", op, rank));
  }
  for (const auto& [view, what] :
       {std::pair{&args.x, "X"}, std::pair{&args.w, "W"}, std::pair{&args.x_zero, "x_zero_point"},
        std::pair{&args.w_zero, "w_zero_point"}, std::pair{&args.x_scale, "x_scale"},
        std::pair{&args.w_scale, "w_scale"}, std::pair{&args.y_scale, "y_scale"},
        std::pair{&args.y_zero, "y_zero_point"}, std::pair{&args.bias, "B"}}) {
    if (Support s = requireDevice(op, *view, what); !s) return s;
    if (present(*view) && !view->isContiguous()) {
      return Support::no(fmt::format("{}: the CUDA kernel reads a contiguous {}", op, what));
    }
  }
  if (Support s = requireDevice(op, args.y, "Y"); !s) return s;
  if (!args.y.isContiguous()) {
    return Support::no(fmt::format("{}: the CUDA kernel writes a contiguous Y", op));
  }
  std::vector<int64_t> want = {args.x.dims[0], m};
  want.insert(want.end(), args.window.out.begin(), args.window.out.end());
  if (args.y.dims != want) {
    return Support::no(fmt::format("{}: the output is {}; the convolution gives {}", op,
                                   dimsText(args.y.dims), dimsText(want)));
  }
  if (args.y.numElements() > 0 && args.x.numElements() == 0) {
    return Support::no(fmt::format("{}: X is empty but Y is not", op));
  }
  return Support::yes();
}

size_t workspaceBytes(const QuantConvArgs&) {
  return 0;
}

Status launch(const QuantConvArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  if (args.y.numElements() == 0) return Status::ok();
  QuantConvDeviceArgs d;
  d.requantize = args.requantize;
  d.x_signed = args.x.dtype == DataType::kInt8;
  d.w_signed = args.w.dtype == DataType::kInt8;
  d.y_signed = args.y.dtype == DataType::kInt8;
  d.n = args.x.dims[0];
  d.c = args.x.dims[1];
  d.m = args.out_channels;
  d.group = args.group;
  const Window& w = args.window;
  size_t shift = 3 - w.in.size();
  for (size_t i = 0; i < w.in.size(); ++i) {
    d.in[shift + i] = w.in[i];
    d.out[shift + i] = w.out[i];
    d.kernel[shift + i] = w.kernel[i];
    d.strides[shift + i] = w.strides[i];
    d.dilations[shift + i] = w.dilations[i];
    d.pad_begin[shift + i] = w.pad_begin[i];
  }
  d.x = args.x.data;
  d.w = args.w.data;
  d.x_zero = present(args.x_zero) ? args.x_zero.data : nullptr;
  d.w_zero = present(args.w_zero) ? args.w_zero.data : nullptr;
  d.w_zero_count = present(args.w_zero) ? args.w_zero.numElements() : 0;
  if (args.requantize) {
    d.x_scale = static_cast<const float*>(args.x_scale.data);
    d.w_scale = static_cast<const float*>(args.w_scale.data);
    d.w_scale_count = args.w_scale.numElements();
    d.y_scale = static_cast<const float*>(args.y_scale.data);
    d.y_zero = args.y_zero.data;
    d.bias = present(args.bias) ? static_cast<const int32_t*>(args.bias.data) : nullptr;
  }
  d.y = args.y.data;
  ONNXOPT_CUDA_CHECK(launchQuantConv(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
