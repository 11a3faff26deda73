// Host half of Expand (expand.h): the broadcast view of the input, copied into the output.
#include "kernels/cuda/movement/expand.h"

#include <fmt/format.h>

#include "kernels/cuda/elementwise/broadcast.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The input in the output's dims: right-aligned, stride 0 where it broadcasts; nullopt when it
/// does not broadcast to `dims` (unidirectionally).
std::optional<ConstTensorView> broadcastView(const ConstTensorView& x,
                                             const std::vector<int64_t>& dims) {
  if (x.dims.size() > dims.size()) return std::nullopt;
  size_t lead = dims.size() - x.dims.size();
  std::vector<int64_t> strides(dims.size(), 0);
  for (size_t i = 0; i < x.dims.size(); ++i) {
    int64_t d = x.dims[i];
    if (d == dims[lead + i]) {
      strides[lead + i] = d == 1 ? 0 : x.strides[i];
    } else if (d != 1) {
      return std::nullopt;
    }
  }
  return ConstTensorView(x.dtype, dims, std::move(strides), x.data, x.memory);
}

}  // namespace

template <>
StatusOr<ExpandArgs> argsFromCall<ExpandArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 2, 2, 1));
  ExpandArgs args{call.op, call.inputs[0], call.outputs[0], std::nullopt};
  if (constantInput(call, 1) != nullptr) {
    ASSIGN_OR_RETURN(args.shape, constantInts(call, 1, "shape"));
  }
  return args;
}

StatusOr<std::vector<CopyJob>> copyJobs(const ExpandArgs& args) {
  if (args.shape.has_value()) {
    for (int64_t d : *args.shape) {
      if (d < 0) return invalidArgument("{}: negative dimension {}", args.op, d);
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcastDims({args.x.dims, *args.shape}, args.op));
    if (dims != args.y.dims) {
      return invalidArgument("{}: the output is {}; {} expanded to {} is {}", args.op,
                             dimsText(args.y.dims), dimsText(args.x.dims), dimsText(*args.shape),
                             dimsText(dims));
    }
  }
  std::optional<ConstTensorView> src = broadcastView(args.x, args.y.dims);
  if (!src) {
    return invalidArgument("{}: the input {} does not broadcast to the output {}", args.op,
                           dimsText(args.x.dims), dimsText(args.y.dims));
  }
  return std::vector<CopyJob>{{*src, args.y}};
}

Support canImplement(const ExpandArgs& args) {
  if (Support s = movableSupport(args.op, args.x, args.y); !s) return s;
  return copyJobsSupport(args.op, copyJobs(args));
}

size_t workspaceBytes(const ExpandArgs&) {
  return 0;
}

Status launch(const ExpandArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(std::vector<CopyJob> jobs, copyJobs(args));
  return runCopyJobs(args.op, jobs, stream);
}

}  // namespace onnxopt::kernels::cuda
