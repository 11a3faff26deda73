// Host half of Concat (concat.h): shape checks, then one strided copy per non-empty input.
#include "kernels/cuda/movement/concat.h"

#include <fmt/format.h>

#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<ConcatArgs> argsFromCall<ConcatArgs>(const CudaKernelCall& call) {
  if (call.inputs.empty()) return invalidArgument("{}: needs at least one input", call.op);
  RETURN_IF_ERROR(checkArity(call, call.inputs.size(), call.inputs.size(), 1));
  const KernelAttrs& attrs = attrsOf(call);
  if (!attrs.has("axis")) return invalidArgument("{}: axis is required", call.op);
  ConcatArgs args{call.op, call.inputs, call.outputs[0], 0};
  int64_t rank = args.inputs[0].rank();
  if (rank == 0) return invalidArgument("{}: inputs must have rank >= 1", call.op);
  ASSIGN_OR_RETURN(args.axis, normalizedAxis(call.op, attrs.getInt("axis", 0), rank));
  return args;
}

StatusOr<std::vector<CopyJob>> copyJobs(const ConcatArgs& args) {
  auto axis = static_cast<size_t>(args.axis);
  std::vector<CopyJob> jobs;
  int64_t total = 0;
  for (size_t k = 0; k < args.inputs.size(); ++k) {
    const ConstTensorView& in = args.inputs[k];
    bool fits = in.rank() == args.out.rank();
    for (size_t d = 0; fits && d < in.dims.size(); ++d) {
      fits = d == axis || in.dims[d] == args.out.dims[d];
    }
    if (!fits) {
      return invalidArgument("{}: input {} is {}; it does not fit the output {} along axis {}",
                             args.op, k, dimsText(in.dims), dimsText(args.out.dims), args.axis);
    }
    jobs.push_back({in, narrowed(args.out, args.axis, total, in.dims[axis])});
    total += in.dims[axis];
  }
  if (total != args.out.dims[axis]) {
    return invalidArgument("{}: the inputs have {} entries along axis {}, the output {}", args.op,
                           total, args.axis, args.out.dims[axis]);
  }
  return jobs;
}

Support canImplement(const ConcatArgs& args) {
  for (const ConstTensorView& in : args.inputs) {
    if (Support s = movableSupport(args.op, in, args.out); !s) return s;
  }
  return copyJobsSupport(args.op, copyJobs(args));
}

size_t workspaceBytes(const ConcatArgs&) {
  return 0;
}

Status launch(const ConcatArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(std::vector<CopyJob> jobs, copyJobs(args));
  return runCopyJobs(args.op, jobs, stream);
}

}  // namespace onnxopt::kernels::cuda
