// Host half of Slice (slice.h): the ONNX clamping rules of starts and ends, then the input view
// (offset at the first element, strides times steps) copied into the output.
#include "kernels/cuda/movement/slice.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The input view that reads the slice in the output's order.
ConstTensorView sliceView(const SliceArgs& args) {
  ConstTensorView v = args.x;
  v.dims = args.dims;
  int64_t offset = 0;
  for (size_t d = 0; d < v.dims.size(); ++d) {
    offset += args.starts[d] * args.x.strides[d];
    v.strides[d] = args.steps[d] * args.x.strides[d];
  }
  int64_t n = 1;
  for (int64_t d : v.dims) n *= d;
  if (n > 0) v.data = advance(args.x.data, offset, movableElementBytes(args.x.dtype));
  return v;
}

}  // namespace

template <>
StatusOr<SliceArgs> argsFromCall<SliceArgs>(const CudaKernelCall& call) {
  std::vector<int64_t> starts, ends, steps;
  std::optional<std::vector<int64_t>> axes;
  const KernelAttrs& attrs = attrsOf(call);
  if (call.opset < 10) {
    RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
    auto s = attrs.getInts("starts");
    auto e = attrs.getInts("ends");
    if (!s || !e) return invalidArgument("{}: starts and ends are required", call.op);
    starts = *s;
    ends = *e;
    axes = attrs.getInts("axes");
  } else {
    RETURN_IF_ERROR(checkArity(call, 3, 5, 1));
    ASSIGN_OR_RETURN(starts, constantInts(call, 1, "starts"));
    ASSIGN_OR_RETURN(ends, constantInts(call, 2, "ends"));
    if (inputOf(call, 3).dtype != DataType::kUndefined) {
      ASSIGN_OR_RETURN(axes, constantInts(call, 3, "axes"));
    }
    if (inputOf(call, 4).dtype != DataType::kUndefined) {
      ASSIGN_OR_RETURN(steps, constantInts(call, 4, "steps"));
    }
  }
  size_t k = starts.size();
  if (ends.size() != k) return invalidArgument("{}: starts and ends differ in length", call.op);
  if (!axes.has_value()) {
    axes = std::vector<int64_t>();
    for (size_t i = 0; i < k; ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (axes->size() != k) return invalidArgument("{}: axes and starts differ in length", call.op);
  if (steps.empty()) steps.assign(k, 1);
  if (steps.size() != k) return invalidArgument("{}: steps and starts differ in length", call.op);
  SliceArgs args{call.op, call.inputs[0], call.outputs[0], {}, {}, {}};
  size_t rank = args.x.dims.size();
  args.starts.assign(rank, 0);
  args.steps.assign(rank, 1);
  args.dims = args.x.dims;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < k; ++i) {
    ASSIGN_OR_RETURN(int64_t a64, normalizedAxis(call.op, (*axes)[i], static_cast<int64_t>(rank)));
    auto a = static_cast<size_t>(a64);
    if (seen[a]) return invalidArgument("{}: axis {} is repeated", call.op, a64);
    seen[a] = true;
    int64_t dim = args.x.dims[a];
    int64_t step = steps[i];
    if (step == 0) return invalidArgument("{}: step is 0", call.op);
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count;
    if (dim == 0) {
      start = 0;
      count = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      auto mag = static_cast<uint64_t>(step);
      count = end > start
                  ? static_cast<int64_t>((static_cast<uint64_t>(end - start) + mag - 1) / mag)
                  : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      uint64_t mag = 0 - static_cast<uint64_t>(step);
      count = start > end
                  ? static_cast<int64_t>((static_cast<uint64_t>(start - end) + mag - 1) / mag)
                  : 0;
    }
    args.starts[a] = start;
    args.steps[a] = step;
    args.dims[a] = count;
  }
  return args;
}

StatusOr<std::vector<CopyJob>> copyJobs(const SliceArgs& args) {
  if (args.dims != args.y.dims) {
    return invalidArgument("{}: the output is {}; the slice is {}", args.op, dimsText(args.y.dims),
                           dimsText(args.dims));
  }
  return std::vector<CopyJob>{{sliceView(args), args.y}};
}

Support canImplement(const SliceArgs& args) {
  if (Support s = movableSupport(args.op, args.x, args.y); !s) return s;
  return copyJobsSupport(args.op, copyJobs(args));
}

size_t workspaceBytes(const SliceArgs&) {
  return 0;
}

Status launch(const SliceArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(std::vector<CopyJob> jobs, copyJobs(args));
  return runCopyJobs(args.op, jobs, stream);
}

}  // namespace onnxopt::kernels::cuda
