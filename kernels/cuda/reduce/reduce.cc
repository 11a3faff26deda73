// Host half of the Reduce* family (reduce.h): the op, its axes by opset, the checks, the launch.
#include "kernels/cuda/reduce/reduce.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "kernels/cuda/device.h"
#include "kernels/cuda/reduce/reduce_plan.h"

namespace onnxopt::kernels::cuda {

namespace {

/// Axes known only at run time: the plan shaped the output with them, so the output shape tells
/// which dims are reduced, unless it is ambiguous (`why`, the axes' refusal, is returned then).
StatusOr<ReduceArgs> axesFromOutput(ReduceArgs args, const KernelAttrs& attrs, const Status& why) {
  std::optional<std::vector<bool>> mask = axesFromShapes(args.x.dims, args.y.dims, args.keepdims);
  if (!mask) {
    return Status(why.code(),
                  fmt::format("{}; the output shape {} of input {} does not tell them",
                              why.message(), shapeText(args.y.dims), shapeText(args.x.dims)));
  }
  bool none = true;
  for (size_t d = 0; d < mask->size(); ++d) {
    if ((*mask)[d] && args.x.dims[d] != 1) none = false;
  }
  // No dim other than 1 reduced: with noop_with_empty_axes that is a copy (empty axes) or a
  // reduction over groups of one; they agree except where one element is not its own result.
  if (none && attrs.getInt("noop_with_empty_axes", 0) != 0) {
    if (args.kind == ReduceOp::kL1 || args.kind == ReduceOp::kL2 ||
        args.kind == ReduceOp::kSumSquare || args.kind == ReduceOp::kLogSum) {
      return Status(why.code(),
                    fmt::format("{}; with noop_with_empty_axes the output shape does not tell a "
                                "copy from a reduction over dims of 1",
                                why.message()));
    }
    args.identity = true;
  }
  args.reduced = std::move(*mask);
  return args;
}

}  // namespace

template <>
StatusOr<ReduceArgs> argsFromCall<ReduceArgs>(const CudaKernelCall& call) {
  static const std::map<std::string, ReduceOp> kOps = {
      {"ReduceSum", ReduceOp::kSum},       {"ReduceMean", ReduceOp::kMean},
      {"ReduceMax", ReduceOp::kMax},       {"ReduceMin", ReduceOp::kMin},
      {"ReduceProd", ReduceOp::kProd},     {"ReduceL1", ReduceOp::kL1},
      {"ReduceL2", ReduceOp::kL2},         {"ReduceSumSquare", ReduceOp::kSumSquare},
      {"ReduceLogSum", ReduceOp::kLogSum}, {"ReduceLogSumExp", ReduceOp::kLogSumExp},
  };
  auto it = kOps.find(call.op);
  if (it == kOps.end()) return invalidArgument("{}: not a CUDA reduction", call.op);
  // Axes became an input at opset 13 for ReduceSum, at 18 for the others.
  const int64_t input_opset = it->second == ReduceOp::kSum ? 13 : 18;
  const bool axes_input = call.opset >= input_opset;
  RETURN_IF_ERROR(checkArity(call, 1, axes_input ? 2 : 1, 1));
  const KernelAttrs& attrs = attrsOf(call);
  ReduceArgs args;
  args.op = call.op;
  args.kind = it->second;
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  args.keepdims = attrs.getInt("keepdims", 1) != 0;
  args.workspace = call.workspace;
  args.workspace_bytes = call.workspace_bytes;
  std::optional<std::vector<int64_t>> axes;
  if (!axes_input) {
    axes = attrs.getInts("axes");
  } else if (inputOf(call, 1).dtype != DataType::kUndefined) {
    StatusOr<std::vector<int64_t>> constant = constantInts(call, 1, "axes");
    if (constant.status().code() == StatusCode::kUnimplemented) {
      return axesFromOutput(std::move(args), attrs, constant.status());
    }
    ASSIGN_OR_RETURN(axes, std::move(constant));
  }
  const int64_t rank = args.x.rank();
  if (!axes.has_value() || axes->empty()) {
    args.identity = axes_input && attrs.getInt("noop_with_empty_axes", 0) != 0;
    args.reduced.assign(static_cast<size_t>(rank), !args.identity);
  } else {
    ASSIGN_OR_RETURN(args.reduced, axesMask(call.op, *axes, rank));
  }
  return args;
}

Support canImplement(const ReduceArgs& args) {
  if (!reduceKernelExists(args.kind, args.x.dtype)) {
    return Support::no(
        fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(args.x.dtype)));
  }
  if (Support s = reduceInputSupport(args.op, args.x, "input 0"); !s) return s;
  std::vector<int64_t> dims = reducedShape(args.x.dims, args.reduced, args.keepdims);
  if (Support s = reduceOutputSupport(args.op, args.y, args.x.dtype, dims, "output 0"); !s) {
    return s;
  }
  bool integer = args.x.dtype != DataType::kFloat && args.x.dtype != DataType::kFloat16 &&
                 args.x.dtype != DataType::kBfloat16;
  if (args.kind == ReduceOp::kMean && integer && args.y.numElements() > 0 &&
      planReduction(args.x, args.reduced).group == 0) {
    return Support::no(fmt::format("{}: the mean of an empty integer group is undefined", args.op));
  }
  return Support::yes();
}

namespace {

/// The reduction the kernel runs: the identity (noop_with_empty_axes) is a Max over groups of one
/// element, an exact copy for every type, NaN and -0 included.
ReduceOp kernelOp(const ReduceArgs& args) {
  return args.identity ? ReduceOp::kMax : args.kind;
}

}  // namespace

size_t workspaceBytes(const ReduceArgs& args) {
  return reduceWorkspaceBytes(kernelOp(args), planReduction(args.x, args.reduced));
}

Status launch(const ReduceArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ReduceDeviceArgs d{kernelOp(args),      args.x.dtype, planReduction(args.x, args.reduced),
                     args.x.data,         args.y.data,  args.workspace,
                     args.workspace_bytes};
  ONNXOPT_CUDA_CHECK(launchReduce(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
