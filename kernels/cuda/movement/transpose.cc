// Host half of Transpose, DepthToSpace and SpaceToDepth (transpose.h): the permuted (and for the
// depth ops split) view of the input, copied into the output.
#include "kernels/cuda/movement/transpose.h"

#include <fmt/format.h>

#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The input seen in the output's order: dims and strides permuted.
ConstTensorView permutedView(const ConstTensorView& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> dims, strides;
  for (int64_t p : perm) {
    dims.push_back(x.dims[static_cast<size_t>(p)]);
    strides.push_back(x.strides[static_cast<size_t>(p)]);
  }
  return ConstTensorView(x.dtype, std::move(dims), std::move(strides), x.data, x.memory);
}

}  // namespace

template <>
StatusOr<TransposeArgs> argsFromCall<TransposeArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
  TransposeArgs args{call.op, call.inputs[0], call.outputs[0], {}};
  int64_t rank = args.x.rank();
  if (auto p = attrsOf(call).getInts("perm")) {
    args.perm = *p;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) args.perm.push_back(i);
  }
  if (static_cast<int64_t>(args.perm.size()) != rank) {
    return invalidArgument("{}: perm has {} entries for rank {}", call.op, args.perm.size(), rank);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : args.perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) {
      return invalidArgument("{}: perm {} is not a permutation", call.op, dimsText(args.perm));
    }
    seen[static_cast<size_t>(p)] = true;
  }
  return args;
}

StatusOr<std::vector<CopyJob>> copyJobs(const TransposeArgs& args) {
  ConstTensorView src = permutedView(args.x, args.perm);
  if (src.dims != args.y.dims) {
    return invalidArgument("{}: the output is {}; the transpose is {}", args.op,
                           dimsText(args.y.dims), dimsText(src.dims));
  }
  return std::vector<CopyJob>{{src, args.y}};
}

Support canImplement(const TransposeArgs& args) {
  if (Support s = movableSupport(args.op, args.x, args.y); !s) return s;
  return copyJobsSupport(args.op, copyJobs(args));
}

size_t workspaceBytes(const TransposeArgs&) {
  return 0;
}

Status launch(const TransposeArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(std::vector<CopyJob> jobs, copyJobs(args));
  return runCopyJobs(args.op, jobs, stream);
}

// --- DepthToSpace / SpaceToDepth ------------------------------------------------------------------

namespace {

/// The rank-6 source and destination views, walked in one order: DepthToSpace over
/// [n, c', h, bi, w, bj] of the output [n, c', h * b, w * b]; SpaceToDepth over
/// [n, bi, bj, c, h', w'] of the output [n, b * b * c, h', w'].
StatusOr<CopyJob> depthSpaceJob(const DepthSpaceArgs& args) {
  const ConstTensorView& x = args.x;
  const TensorView& y = args.y;
  if (x.rank() != 4)
    return invalidArgument("{}: the input must be 4-D, not rank {}", args.op, x.rank());
  const int64_t b = args.blocksize, n = x.dims[0], c = x.dims[1], h = x.dims[2], w = x.dims[3];
  const std::vector<int64_t>& s = x.strides;
  std::vector<int64_t> dims, src, dst, want;
  if (args.to_space) {
    if (c % (b * b) != 0) {
      return invalidArgument("{}: {} channels do not divide by blocksize^2 = {}", args.op, c,
                             b * b);
    }
    int64_t oc = c / (b * b);
    want = {n, oc, h * b, w * b};
    if (y.dims != want) {
      return invalidArgument("{}: the output is {}; the result is {}", args.op, dimsText(y.dims),
                             dimsText(want));
    }
    dims = {n, oc, h, b, w, b};
    src = args.crd ? std::vector<int64_t>{s[0], b * b * s[1], s[2], b * s[1], s[3], s[1]}
                   : std::vector<int64_t>{s[0], s[1], s[2], b * oc * s[1], s[3], oc * s[1]};
    const std::vector<int64_t>& o = y.strides;
    dst = {o[0], o[1], b * o[2], o[2], b * o[3], o[3]};
  } else {
    if (h % b != 0 || w % b != 0) {
      return invalidArgument("{}: spatial dims {}x{} do not divide by blocksize {}", args.op, h, w,
                             b);
    }
    want = {n, c * b * b, h / b, w / b};
    if (y.dims != want) {
      return invalidArgument("{}: the output is {}; the result is {}", args.op, dimsText(y.dims),
                             dimsText(want));
    }
    dims = {n, b, b, c, h / b, w / b};
    src = {s[0], s[2], s[3], s[1], b * s[2], b * s[3]};
    const std::vector<int64_t>& o = y.strides;
    dst = {o[0], b * c * o[1], c * o[1], o[1], o[2], o[3]};
  }
  return CopyJob{ConstTensorView(x.dtype, dims, std::move(src), x.data, x.memory),
                 TensorView(y.dtype, dims, std::move(dst), y.data, y.memory)};
}

}  // namespace

StatusOr<std::vector<CopyJob>> copyJobs(const DepthSpaceArgs& args) {
  ASSIGN_OR_RETURN(CopyJob job, depthSpaceJob(args));
  return std::vector<CopyJob>{std::move(job)};
}

template <>
StatusOr<DepthSpaceArgs> argsFromCall<DepthSpaceArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
  const KernelAttrs& attrs = attrsOf(call);
  DepthSpaceArgs args{call.op, call.inputs[0], call.outputs[0],
                      0,       false,          call.op == "DepthToSpace"};
  if (!attrs.has("blocksize")) return invalidArgument("{}: blocksize is required", call.op);
  args.blocksize = attrs.getInt("blocksize", 0);
  if (args.blocksize <= 0 || args.blocksize > (int64_t{1} << 31)) {
    return invalidArgument("{}: blocksize must be positive, not {}", call.op, args.blocksize);
  }
  std::string mode = call.opset >= 11 ? attrs.getString("mode", "DCR") : std::string("DCR");
  if (args.to_space && mode != "DCR" && mode != "CRD") {
    return invalidArgument("{}: mode must be DCR or CRD, not '{}'", call.op, mode);
  }
  args.crd = mode == "CRD";
  return args;
}

Support canImplement(const DepthSpaceArgs& args) {
  if (Support s = movableSupport(args.op, args.x, args.y); !s) return s;
  return copyJobsSupport(args.op, copyJobs(args));
}

size_t workspaceBytes(const DepthSpaceArgs&) {
  return 0;
}

Status launch(const DepthSpaceArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(std::vector<CopyJob> jobs, copyJobs(args));
  return runCopyJobs(args.op, jobs, stream);
}

}  // namespace onnxopt::kernels::cuda
