// Host half of the normalizations (norm.h): each op's rows and parameter layout, the checks, the
// launch.
#include "kernels/cuda/norm/norm.h"

#include <fmt/format.h>

#include <tuple>

#include "kernels/cuda/device.h"
#include "kernels/cuda/elementwise/broadcast.h"
#include "kernels/cuda/reduce/row_args.h"

namespace onnxopt::kernels::cuda {

namespace {

Status unimplemented(const std::string& op, const std::string& what) {
  return Status(StatusCode::kUnimplemented, fmt::format("{}: {}", op, what));
}

/// kUnimplemented when the node asks for an output past the first (an omitted output, dtype
/// kUndefined, is not asked for).
Status onlyFirstOutput(const CudaKernelCall& call, const char* what) {
  if (call.outputs.empty()) return invalidArgument("{}: no output", call.op);
  for (size_t i = 1; i < call.outputs.size(); ++i) {
    if (call.outputs[i].dtype != DataType::kUndefined) return unimplemented(call.op, what);
  }
  return Status::ok();
}

Status floatStash(const CudaKernelCall& call) {
  int64_t stash = attrsOf(call).getInt("stash_type", 1);
  if (stash != 1) {
    return unimplemented(call.op,
                         fmt::format("stash_type {} (the CUDA kernel computes in float)", stash));
  }
  return Status::ok();
}

/// No unless `p` (when present) has the type of `like` (named `like_name`) and is in device memory.
Support sameType(const std::string& op, const ConstTensorView& like, const char* like_name,
                 const ConstTensorView& p, const char* what) {
  if (p.dtype == DataType::kUndefined || p.dtype == like.dtype) return requireDevice(op, p, what);
  return Support::no(fmt::format("{}: {} is {}, {} {}; the CUDA kernel takes one type", op, what,
                                 dataTypeName(p.dtype), like_name, dataTypeName(like.dtype)));
}

Support shapeIs(const std::string& op, const ConstTensorView& p, const std::vector<int64_t>& dims,
                const char* what) {
  if (p.dims == dims && p.isContiguous()) return Support::yes();
  return Support::no(fmt::format("{}: {} is [{}]; the CUDA kernel takes a contiguous [{}]", op,
                                 what, fmt::join(p.dims, ", "), fmt::join(dims, ", ")));
}

ConstTensorView rowView(const NormArgs& args) {
  return ConstTensorView(args.x.dtype, args.row_dims, contiguousStrides(args.row_dims), nullptr,
                         MemoryKind::kDevice);
}

/// The plan for reading scale and bias (operands 1 and 2) over a row's dims (operand 0).
StatusOr<BroadcastPlan> paramPlan(const NormArgs& args) {
  ConstTensorView row = rowView(args);
  const ConstTensorView& bias = args.bias.dtype == DataType::kUndefined ? args.scale : args.bias;
  return planBroadcast({row, args.scale, bias}, row, args.op);
}

}  // namespace

template <>
StatusOr<NormArgs> argsFromCall<NormArgs>(const CudaKernelCall& call) {
  const KernelAttrs& attrs = attrsOf(call);
  NormArgs args;
  args.op = call.op;
  args.epsilon = attrs.getFloat("epsilon", 1e-5f);
  if (call.op == "LayerNormalization" || call.op == "RMSNormalization") {
    args.rms = call.op == "RMSNormalization";
    RETURN_IF_ERROR(checkArity(call, 2, args.rms ? 2 : 3, call.outputs.size()));
    if (call.outputs.empty() || call.outputs.size() > (args.rms ? 1u : 3u)) {
      return invalidArgument("{}: {} outputs", call.op, call.outputs.size());
    }
    if (call.outputs.size() > 1) args.mean = call.outputs[1];
    if (call.outputs.size() > 2) args.inv_std = call.outputs[2];
    RETURN_IF_ERROR(floatStash(call));
    args.x = call.inputs[0];
    if (args.x.rank() == 0) return invalidArgument("{}: X must not be a scalar", call.op);
    ASSIGN_OR_RETURN(int64_t axis,
                     normalizedAxis(call.op, attrs.getInt("axis", -1), args.x.rank()));
    args.rows = dimsProduct(args.x.dims, 0, axis);
    args.size = dimsProduct(args.x.dims, axis, args.x.rank());
    args.row_dims.assign(args.x.dims.begin() + axis, args.x.dims.end());
    args.index = NormParamIndex::kColumn;
  } else if (call.op == "InstanceNormalization" || call.op == "GroupNormalization") {
    RETURN_IF_ERROR(checkArity(call, 3, 3, 1));
    args.x = call.inputs[0];
    bool group = call.op == "GroupNormalization";
    if (args.x.rank() < (group ? 2 : 3)) {
      return invalidArgument("{}: X must have rank {} or more", call.op, group ? 2 : 3);
    }
    int64_t n = args.x.dims[0], c = args.x.dims[1];
    int64_t s = dimsProduct(args.x.dims, 2, args.x.rank());
    int64_t groups = c;
    if (group) {
      RETURN_IF_ERROR(floatStash(call));
      if (!attrs.ints.count("num_groups")) {
        return invalidArgument("{}: num_groups is required", call.op);
      }
      groups = attrs.getInt("num_groups", 1);
      if (groups < 1 || groups > c || c % groups != 0) {
        return invalidArgument("{}: num_groups {} does not divide {} channels", call.op, groups, c);
      }
    }
    args.rows = n * groups;
    args.size = c / groups * s;
    args.period = groups;
    // GroupNormalization-18 scales per group; 21 (and InstanceNormalization) per channel.
    if (group && call.opset >= 21) {
      args.index = NormParamIndex::kChannelInGroup;
      args.group_stride = c / groups;
      args.spatial = s;
      args.params = c;
    } else {
      args.index = NormParamIndex::kRow;
      args.params = groups;
    }
  } else {
    return invalidArgument("{}: not a normalization CUDA kernel", call.op);
  }
  args.scale = call.inputs[1];
  args.bias = inputOf(call, 2);
  args.y = call.outputs[0];
  return args;
}

template <>
StatusOr<SkipNormArgs> argsFromCall<SkipNormArgs>(const CudaKernelCall& call) {
  // SkipRMSNormalization: the RMS path of the same kernel, no B.
  const bool rms = call.op == "SkipRMSNormalization";
  RETURN_IF_ERROR(checkArity(call, 3, rms ? 3 : 4, call.outputs.size()));
  if (call.outputs.empty() || call.outputs.size() > 2) {
    return invalidArgument("{}: {} outputs", call.op, call.outputs.size());
  }
  const KernelAttrs& attrs = attrsOf(call);
  SkipNormArgs args;
  args.op = call.op;
  args.rms = rms;
  args.epsilon = attrs.getFloat("epsilon", 1e-5f);
  args.x = call.inputs[0];
  args.skip = call.inputs[1];
  args.scale = call.inputs[2];
  args.bias = inputOf(call, 3);
  args.y = call.outputs[0];
  if (call.outputs.size() > 1) args.sum = call.outputs[1];
  if (args.x.rank() == 0) return invalidArgument("{}: X must not be a scalar", call.op);
  ASSIGN_OR_RETURN(int64_t axis, normalizedAxis(call.op, attrs.getInt("axis", -1), args.x.rank()));
  args.rows = dimsProduct(args.x.dims, 0, axis);
  args.size = dimsProduct(args.x.dims, axis, args.x.rank());
  args.row_dims.assign(args.x.dims.begin() + axis, args.x.dims.end());
  args.index = NormParamIndex::kColumn;
  return args;
}

Support canImplement(const NormArgs& args) {
  if (Support s = floatRowSupport(args.op, args.x, args.y); !s) return s;
  // SkipLayerNormalization's Skip and Sum: X's type and shape, contiguous, on the device.
  auto likeX = [&](const ConstTensorView& v, const char* what) {
    if (v.dtype == DataType::kUndefined) return Support::yes();
    if (v.dtype != args.x.dtype || v.dims != args.x.dims || !v.isContiguous()) {
      return Support::no(
          fmt::format("{}: {} must be a contiguous tensor of X's type and shape", args.op, what));
    }
    return requireDevice(args.op, v, what);
  };
  if (Support s = likeX(args.skip, "Skip"); !s) return s;
  if (Support s = likeX(args.sum, "Sum"); !s) return s;
  const char* scale_name = args.index == NormParamIndex::kColumn ? "Scale" : "scale";
  if (Support s = sameType(args.op, args.x, "X", args.scale, scale_name); !s) return s;
  if (Support s = sameType(args.op, args.x, "X", args.bias, "B"); !s) return s;
  for (const auto& [view, what] :
       {std::pair{&args.mean, "Mean"}, std::pair{&args.inv_std, "InvStdDev"}}) {
    if (view->dtype == DataType::kUndefined) continue;
    if (view->dtype != DataType::kFloat || view->numElements() != args.rows ||
        !view->isContiguous()) {
      return Support::no(fmt::format("{}: {} must be a contiguous float tensor of {} elements",
                                     args.op, what, args.rows));
    }
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
  }
  if (args.index == NormParamIndex::kColumn) {
    StatusOr<BroadcastPlan> plan = paramPlan(args);
    if (!plan.isOk()) {
      return Support::no(fmt::format("{}: Scale [{}] or B [{}] does not broadcast to [{}]", args.op,
                                     fmt::join(args.scale.dims, ", "),
                                     fmt::join(args.bias.dims, ", "),
                                     fmt::join(args.row_dims, ", ")));
    }
    return Support::yes();
  }
  if (Support s = shapeIs(args.op, args.scale, {args.params}, "scale"); !s) return s;
  return shapeIs(args.op, args.bias, {args.params}, "B");
}

size_t workspaceBytes(const NormArgs&) {
  return 0;
}

Status launch(const NormArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  NormDeviceArgs d{};
  d.dtype = args.x.dtype;
  d.x = args.x.data;
  d.y = args.y.data;
  d.scale = args.scale.data;
  d.bias = args.bias.dtype == DataType::kUndefined ? nullptr : args.bias.data;
  d.skip = args.skip.dtype == DataType::kUndefined ? nullptr : args.skip.data;
  d.sum = args.sum.dtype == DataType::kUndefined ? nullptr : args.sum.data;
  d.mean = args.mean.dtype == DataType::kUndefined ? nullptr : static_cast<float*>(args.mean.data);
  d.inv_std =
      args.inv_std.dtype == DataType::kUndefined ? nullptr : static_cast<float*>(args.inv_std.data);
  d.rows = args.rows;
  d.size = args.size;
  d.epsilon = args.epsilon;
  d.rms = args.rms;
  d.index = args.index;
  if (args.index == NormParamIndex::kColumn) {
    ASSIGN_OR_RETURN(d.params, paramPlan(args));
  }
  d.period = args.period;
  d.group_stride = args.group_stride;
  d.spatial = args.spatial;
  ONNXOPT_CUDA_CHECK(launchNorm(d, streamOf(stream)), args.op);
  return Status::ok();
}

template <>
StatusOr<BatchNormArgs> argsFromCall<BatchNormArgs>(const CudaKernelCall& call) {
  const KernelAttrs& attrs = attrsOf(call);
  RETURN_IF_ERROR(checkArity(call, 5, 5, call.outputs.size()));
  if (call.opset >= 14 && attrs.getInt("training_mode", 0) != 0) {
    return unimplemented(call.op, "training_mode=1 stays on the CPU");
  }
  RETURN_IF_ERROR(onlyFirstOutput(call, "training mode (the statistics outputs) stays on the CPU"));
  BatchNormArgs args;
  args.x = call.inputs[0];
  args.scale = call.inputs[1];
  args.bias = call.inputs[2];
  args.mean = call.inputs[3];
  args.var = call.inputs[4];
  args.y = call.outputs[0];
  args.epsilon = attrs.getFloat("epsilon", 1e-5f);
  args.own_scale_type = call.opset >= 15;
  args.own_stats_type = call.opset >= 14;
  if (args.x.rank() < 2) return invalidArgument("{}: X must have rank 2 or more", call.op);
  int64_t c = args.x.dims[1];
  int64_t s = dimsProduct(args.x.dims, 2, args.x.rank());
  // Before opset 9, spatial=0 keeps a parameter per (channel, spatial position).
  bool spatial = call.opset >= 9 || attrs.getInt("spatial", 1) != 0;
  args.channels = spatial ? c : c * s;
  args.inner = spatial ? s : 1;
  args.param_dims = spatial ? std::vector<int64_t>{c}
                            : std::vector<int64_t>(args.x.dims.begin() + 1, args.x.dims.end());
  return args;
}

Support canImplement(const BatchNormArgs& args) {
  if (Support s = floatRowSupport(args.op, args.x, args.y); !s) return s;
  // From opset 14 input_mean and input_var share a float type of their own; from 15 scale and B.
  const ConstTensorView& scale_like = args.own_scale_type ? args.scale : args.x;
  const ConstTensorView& stats_like = args.own_stats_type ? args.mean : args.x;
  const char* scale_name = args.own_scale_type ? "scale" : "X";
  const char* stats_name = args.own_stats_type ? "input_mean" : "X";
  if (!rowKernelExists(scale_like.dtype) || !rowKernelExists(stats_like.dtype)) {
    return Support::no(fmt::format("{}: no CUDA kernel for parameters of {} and {}", args.op,
                                   dataTypeName(scale_like.dtype), dataTypeName(stats_like.dtype)));
  }
  for (const auto& [view, like, like_name, what] :
       {std::tuple{&args.scale, &scale_like, scale_name, "scale"},
        std::tuple{&args.bias, &scale_like, scale_name, "B"},
        std::tuple{&args.mean, &stats_like, stats_name, "input_mean"},
        std::tuple{&args.var, &stats_like, stats_name, "input_var"}}) {
    if (Support s = sameType(args.op, *like, like_name, *view, what); !s) return s;
    if (Support s = shapeIs(args.op, *view, args.param_dims, what); !s) return s;
  }
  return Support::yes();
}

size_t workspaceBytes(const BatchNormArgs&) {
  return 0;
}

Status launch(const BatchNormArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  BatchNormDeviceArgs d{args.x.dtype,  args.scale.dtype,     args.mean.dtype, args.x.data,
                        args.y.data,   args.scale.data,      args.bias.data,  args.mean.data,
                        args.var.data, args.x.numElements(), args.channels,   args.inner,
                        args.epsilon};
  ONNXOPT_CUDA_CHECK(launchBatchNorm(d, streamOf(stream)), args.op);
  return Status::ok();
}

template <>
StatusOr<LrnArgs> argsFromCall<LrnArgs>(const CudaKernelCall& call) {
  const KernelAttrs& attrs = attrsOf(call);
  RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
  if (!attrs.ints.count("size")) return invalidArgument("LRN: attribute 'size' is required");
  int64_t size = attrs.getInt("size", 1);
  if (size < 1) return invalidArgument("LRN: size {} must be positive", size);
  LrnArgs args;
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  if (args.x.rank() < 2) return invalidArgument("LRN: input must be [N, C, ...]");
  args.channels = args.x.dims[1];
  args.inner = dimsProduct(args.x.dims, 2, args.x.rank());
  args.before = (size - 1) / 2;
  args.after = size - 1 - args.before;
  args.alpha_over_size = attrs.getFloat("alpha", 1e-4f) / static_cast<float>(size);
  args.beta = attrs.getFloat("beta", 0.75f);
  args.bias = attrs.getFloat("bias", 1.0f);
  return args;
}

Support canImplement(const LrnArgs& args) {
  return floatRowSupport(args.op, args.x, args.y);
}

size_t workspaceBytes(const LrnArgs&) {
  return 0;
}

Status launch(const LrnArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  LrnDeviceArgs d{args.x.dtype,         args.x.data, args.y.data, args.x.numElements(),
                  args.channels,        args.inner,  args.before, args.after,
                  args.alpha_over_size, args.beta,   args.bias};
  ONNXOPT_CUDA_CHECK(launchLrn(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
