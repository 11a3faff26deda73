// Host half of the pool family (pool.h): parsing the node with the reference kernels' rules, the
// checks, and the launch of pool.cu's kernels.
#include "kernels/cuda/conv/pool.h"

#include <fmt/format.h>

#include <map>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

namespace {

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

bool isGlobal(PoolKind kind) {
  return kind == PoolKind::kGlobalMax || kind == PoolKind::kGlobalAverage;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

/// Y's dims: [N, C] and the window's output, or ones for the global pools.
std::vector<int64_t> outputDims(const PoolArgs& args) {
  std::vector<int64_t> d = {args.x.dims[0], args.x.dims[1]};
  if (isGlobal(args.kind)) {
    d.resize(args.x.dims.size(), 1);
  } else {
    d.insert(d.end(), args.window.out.begin(), args.window.out.end());
  }
  return d;
}

}  // namespace

template <>
StatusOr<PoolArgs> argsFromCall<PoolArgs>(const CudaKernelCall& call) {
  static const std::map<std::string, PoolKind> kKinds = {
      {"MaxPool", PoolKind::kMax},
      {"AveragePool", PoolKind::kAverage},
      {"LpPool", PoolKind::kLp},
      {"GlobalMaxPool", PoolKind::kGlobalMax},
      {"GlobalAveragePool", PoolKind::kGlobalAverage},
      {"NhwcMaxPool", PoolKind::kMax},
      {"NhwcAveragePool", PoolKind::kAverage},
  };
  auto it = kKinds.find(call.op);
  if (it == kKinds.end()) return invalidArgument("{}: not a CUDA pool kernel", call.op);
  PoolArgs args;
  args.op = call.op;
  args.kind = it->second;
  args.channels_last = call.op.rfind("Nhwc", 0) == 0;
  size_t outputs =
      args.kind == PoolKind::kMax && !args.channels_last && call.outputs.size() == 2 ? 2 : 1;
  RETURN_IF_ERROR(checkArity(call, 1, 1, outputs));
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  if (args.channels_last) {
    args.x = channelsFirstView(args.x);
    args.y = channelsFirstView(args.y);
  }
  if (outputs == 2) args.indices = call.outputs[1];
  if (args.x.dims.size() < 3) {
    return invalidArgument("{}: X must have rank 3 or more, not {}", call.op, args.x.dims.size());
  }
  if (isGlobal(args.kind)) return args;
  const KernelAttrs& attrs = attrsOf(call);
  std::vector<int64_t> spatial(args.x.dims.begin() + 2, args.x.dims.end());
  auto kernel = attrs.getInts("kernel_shape");
  if (!kernel) return invalidArgument("{}: kernel_shape is required", call.op);
  if (kernel->size() != spatial.size()) {
    return invalidArgument("{}: kernel_shape has {} values for {} spatial dims", call.op,
                           kernel->size(), spatial.size());
  }
  // ai.onnxopt's channels-last pools take the attributes of the pool they replaced, which its
  // opset allowed (their own opset is ai.onnxopt's).
  if (args.kind == PoolKind::kAverage && !args.channels_last && call.opset < 19 &&
      attrs.getInts("dilations")) {
    return invalidArgument("AveragePool: dilations before opset 19");
  }
  args.storage_order = attrs.getInt("storage_order", 0);
  if (args.storage_order != 0 && args.storage_order != 1) {
    return invalidArgument("{}: storage_order must be 0 or 1", call.op);
  }
  args.count_include_pad = attrs.getInt("count_include_pad", 0) != 0;
  // LpPool's p: a float attribute at opset 1, an int after.
  args.p = attrs.floats.count("p") ? attrs.getFloat("p", 2) : attrs.getInt("p", 2);
  if (args.kind == PoolKind::kLp && !(args.p > 0)) {
    return invalidArgument("LpPool: p must be positive");
  }
  bool ceil_mode = attrs.getInt("ceil_mode", 0) != 0;
  ASSIGN_OR_RETURN(args.window, windowOf(call.op, attrs, spatial, *kernel, ceil_mode));
  return args;
}

Support canImplement(const PoolArgs& args) {
  DataType t = args.x.dtype;
  bool byte = t == DataType::kInt8 || t == DataType::kUint8;
  if (!isFloatType(t) && !(byte && args.kind == PoolKind::kMax)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(t)));
  }
  if (args.y.dtype != t) {
    return Support::no(fmt::format("{}: the output is {}, the input {}", args.op,
                                   dataTypeName(args.y.dtype), dataTypeName(t)));
  }
  size_t rank = args.x.dims.size() - 2;
  if (!isGlobal(args.kind) && rank > static_cast<size_t>(kMaxPoolSpatialDims)) {
    return Support::no(fmt::format("{}: the CUDA kernel pools 1 to {} spatial dims, not {}",
                                   args.op, kMaxPoolSpatialDims, rank));
  }
  if (Support s = requireDevice(args.op, args.x, "X"); !s) return s;
  if (Support s = requireDevice(args.op, args.y, "Y"); !s) return s;
  bool laid_out = args.channels_last ? storedChannelsLast(args.x) && storedChannelsLast(args.y)
                                     : args.x.isContiguous() && args.y.isContiguous();
  if (!laid_out) {
    return Support::no(
        fmt::format("{}: the CUDA kernel reads and writes contiguous tensors", args.op));
  }
  std::vector<int64_t> want = outputDims(args);
  if (args.y.dims != want) {
    return Support::no(fmt::format("{}: the output is {}; the pooling gives {}", args.op,
                                   dimsText(args.y.dims), dimsText(want)));
  }
  if (args.indices.dtype != DataType::kUndefined) {
    if (args.indices.dtype != DataType::kInt64 || args.indices.dims != want) {
      return Support::no(
          fmt::format("{}: Indices must be int64 of shape {}", args.op, dimsText(want)));
    }
    if (Support s = requireDevice(args.op, args.indices, "Indices"); !s) return s;
    if (!args.indices.isContiguous()) {
      return Support::no(fmt::format("{}: the CUDA kernel writes contiguous Indices", args.op));
    }
  }
  if (args.y.numElements() > 0 && args.x.numElements() == 0) {
    return Support::no(fmt::format("{}: X is empty but Y is not", args.op));
  }
  return Support::yes();
}

size_t workspaceBytes(const PoolArgs&) {
  return 0;
}

Status launch(const PoolArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  if (args.y.numElements() == 0) return Status::ok();
  if (args.x.data == nullptr || args.y.data == nullptr ||
      (args.indices.dtype != DataType::kUndefined && args.indices.data == nullptr)) {
    return invalidArgument("{}: a tensor of {} elements has no device data", args.op,
                           args.x.data == nullptr ? args.x.numElements() : args.y.numElements());
  }
  PoolDeviceArgs d;
  d.kind = args.kind;
  d.dtype = args.x.dtype;
  d.nc = args.x.dims[0] * args.x.dims[1];
  d.in_volume = d.nc == 0 ? 0 : args.x.numElements() / d.nc;
  if (!isGlobal(args.kind)) {
    // The real spatial dims fill the last slots; the leading ones stay unit dims.
    const Window& w = args.window;
    size_t shift = static_cast<size_t>(kMaxPoolSpatialDims) - w.in.size();
    for (size_t i = 0; i < w.in.size(); ++i) {
      d.in[shift + i] = w.in[i];
      d.out[shift + i] = w.out[i];
      d.kernel[shift + i] = w.kernel[i];
      d.strides[shift + i] = w.strides[i];
      d.dilations[shift + i] = w.dilations[i];
      d.pad_begin[shift + i] = w.pad_begin[i];
      d.pad_end[shift + i] = w.pad_end[i];
    }
  }
  d.count_include_pad = args.count_include_pad;
  d.column_major = args.storage_order == 1;
  d.p = args.p;
  d.channels_last = args.channels_last ? args.x.dims[1] : 0;
  d.x = args.x.data;
  d.y = args.y.data;
  d.indices = args.indices.dtype == DataType::kUndefined ? nullptr
                                                         : static_cast<int64_t*>(args.indices.data);
  ONNXOPT_CUDA_CHECK(launchPool(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
