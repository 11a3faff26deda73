// Host half of Split (split.h): the outputs' sizes checked against the input and the split, then
// one strided copy per non-empty output.
#include "kernels/cuda/movement/split.h"

#include <fmt/format.h>

#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

template <>
StatusOr<SplitArgs> argsFromCall<SplitArgs>(const CudaKernelCall& call) {
  if (call.outputs.empty()) return invalidArgument("{}: needs at least one output", call.op);
  RETURN_IF_ERROR(checkArity(call, 1, call.opset >= 13 ? 2 : 1, call.outputs.size()));
  const KernelAttrs& attrs = attrsOf(call);
  SplitArgs args{call.op, call.inputs[0], call.outputs, 0, {}, false, 0, call.opset};
  if (args.x.rank() == 0) return invalidArgument("{}: the input must have rank >= 1", call.op);
  ASSIGN_OR_RETURN(args.axis, normalizedAxis(call.op, attrs.getInt("axis", 0), args.x.rank()));
  if (call.opset < 13) {
    if (auto s = attrs.getInts("split")) args.split = *s;
  } else if (inputOf(call, 1).dtype != DataType::kUndefined) {
    if (constantInput(call, 1) != nullptr) {
      ASSIGN_OR_RETURN(args.split, constantInts(call, 1, "split"));
    } else {
      args.runtime_split = true;
    }
  }
  if (call.opset >= 18) args.num_outputs = attrs.getInt("num_outputs", 0);
  return args;
}

StatusOr<std::vector<CopyJob>> copyJobs(const SplitArgs& args) {
  std::vector<CopyJob> jobs;
  auto axis = static_cast<size_t>(args.axis);
  int64_t n = static_cast<int64_t>(args.outputs.size());
  if (!args.split.empty() && static_cast<int64_t>(args.split.size()) != n) {
    return invalidArgument("{}: {} sizes for {} outputs", args.op, args.split.size(), n);
  }
  if (args.num_outputs != 0 && args.num_outputs != n) {
    return invalidArgument("{}: num_outputs is {} but the node has {} outputs", args.op,
                           args.num_outputs, n);
  }
  std::vector<int64_t> sizes = args.split;
  int64_t dim = args.x.rank() > 0 ? args.x.dims[axis] : 0;
  if (sizes.empty() && !args.runtime_split) {
    // No split: equal parts; from opset 18 the last may be smaller.
    int64_t chunk = (dim + n - 1) / n;
    if (dim % n != 0 && (args.opset < 18 || dim - chunk * (n - 1) < 0)) {
      return invalidArgument("{}: {} entries do not split into {} outputs", args.op, dim, n);
    }
    sizes.assign(static_cast<size_t>(n), dim % n == 0 ? dim / n : chunk);
    if (dim % n != 0) sizes.back() = dim - chunk * (n - 1);
  }
  int64_t begin = 0;
  for (size_t k = 0; k < args.outputs.size(); ++k) {
    const TensorView& out = args.outputs[k];
    bool fits = out.rank() == args.x.rank();
    for (size_t d = 0; fits && d < out.dims.size(); ++d) {
      fits = d == axis || out.dims[d] == args.x.dims[d];
    }
    if (!fits) {
      return invalidArgument("{}: output {} is {}; it is no part of the input {} along axis {}",
                             args.op, k, dimsText(out.dims), dimsText(args.x.dims), args.axis);
    }
    if (!sizes.empty() && sizes[k] != out.dims[axis]) {
      return invalidArgument("{}: output {} has {} entries along axis {}; the split is {}", args.op,
                             k, out.dims[axis], args.axis, dimsText(sizes));
    }
    jobs.push_back({narrowed(args.x, args.axis, begin, out.dims[axis]), out});
    begin += out.dims[axis];
  }
  if (begin != args.x.dims[axis]) {
    return invalidArgument("{}: the outputs have {} entries along axis {}, the input {}", args.op,
                           begin, args.axis, args.x.dims[axis]);
  }
  return jobs;
}

Support canImplement(const SplitArgs& args) {
  for (const TensorView& out : args.outputs) {
    if (Support s = movableSupport(args.op, args.x, out); !s) return s;
  }
  return copyJobsSupport(args.op, copyJobs(args));
}

size_t workspaceBytes(const SplitArgs&) {
  return 0;
}

Status launch(const SplitArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(std::vector<CopyJob> jobs, copyJobs(args));
  return runCopyJobs(args.op, jobs, stream);
}

}  // namespace onnxopt::kernels::cuda
