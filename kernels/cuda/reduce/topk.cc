// Host half of TopK (topk.h).
#include "kernels/cuda/reduce/topk.h"

#include <fmt/format.h>

#include "kernels/cuda/device.h"
#include "kernels/cuda/reduce/reduce_plan.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<TopKArgs> argsFromCall<TopKArgs>(const CudaKernelCall& call) {
  const bool k_input = call.opset >= 10;
  RETURN_IF_ERROR(checkArity(call, k_input ? 2 : 1, k_input ? 2 : 1, 2));
  const KernelAttrs& attrs = attrsOf(call);
  TopKArgs args;
  args.op = call.op;
  args.opset = call.opset;
  args.x = call.inputs[0];
  args.values = call.outputs[0];
  args.indices = call.outputs[1];
  args.largest = call.opset < 11 || attrs.getInt("largest", 1) != 0;
  if (args.x.rank() == 0) return invalidArgument("{}: the input must have rank >= 1", call.op);
  ASSIGN_OR_RETURN(args.axis, normalizeAxis(call.op, attrs.getInt("axis", -1), args.x.rank()));
  if (k_input) {
    StatusOr<std::vector<int64_t>> k = constantInts(call, 1, "k");
    if (k.status().code() == StatusCode::kUnimplemented && args.values.rank() == args.x.rank()) {
      // Known only at run time: the plan shaped the outputs with it.
      k = std::vector<int64_t>{args.values.dims[static_cast<size_t>(args.axis)]};
    }
    if (!k.isOk()) return k.status();
    if (k->size() != 1) {
      return invalidArgument("{}: k must have one element, not {}", call.op, k->size());
    }
    args.k = k->at(0);
  } else {
    if (!attrs.has("k")) return invalidArgument("{}: attribute 'k' is required", call.op);
    args.k = attrs.getInt("k", 0);
  }
  int64_t dim = args.x.dims[static_cast<size_t>(args.axis)];
  if (args.k < 0 || args.k > dim) {
    return invalidArgument("{}: k {} is outside [0, {}]", call.op, args.k, dim);
  }
  return args;
}

Support canImplement(const TopKArgs& args) {
  bool floating = args.x.dtype == DataType::kFloat || args.x.dtype == DataType::kFloat16 ||
                  args.x.dtype == DataType::kBfloat16;
  if (!topKKernelExists(args.x.dtype) || (args.opset < 11 && !floating)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {} at opset {}", args.op,
                                   dataTypeName(args.x.dtype), args.opset));
  }
  if (Support s = reduceInputSupport(args.op, args.x, "input 0"); !s) return s;
  int64_t dim = args.x.dims[static_cast<size_t>(args.axis)];
  if (dim > kTopKMaxRow && args.k > kTopKMaxSelect && args.x.numElements() > 0) {
    return Support::no(
        fmt::format("{}: k is {} of {}; the CUDA kernel sorts rows of at most {} "
                    "elements and selects at most {} from longer ones",
                    args.op, args.k, dim, kTopKMaxRow, kTopKMaxSelect));
  }
  std::vector<int64_t> dims = args.x.dims;
  dims[static_cast<size_t>(args.axis)] = args.k;
  if (Support s = reduceOutputSupport(args.op, args.values, args.x.dtype, dims, "output 0"); !s) {
    return s;
  }
  return reduceOutputSupport(args.op, args.indices, DataType::kInt64, dims, "output 1");
}

size_t workspaceBytes(const TopKArgs&) {
  return 0;
}

Status launch(const TopKArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  if (args.k == 0 || args.x.numElements() == 0) return Status::ok();
  TopKDeviceArgs d{args.x.dtype,
                   args.largest,
                   args.k,
                   planAxis(args.x, args.axis),
                   innerSize(args.x.dims, args.axis),
                   args.x.data,
                   args.values.data,
                   static_cast<int64_t*>(args.indices.data)};
  ONNXOPT_CUDA_CHECK(launchTopK(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
