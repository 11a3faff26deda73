// Host half of Tile (tile.h): the repeats from the output's dims, the doubled-rank views, the copy.
#include "kernels/cuda/movement/tile.h"

#include <fmt/format.h>

#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The source and destination views of the tiling copy, or why there is none.
StatusOr<CopyJob> tileJob(const TileArgs& args) {
  const ConstTensorView& x = args.x;
  if (x.rank() != args.y.rank()) {
    return invalidArgument("{}: the input has rank {}, the output {}", args.op, x.rank(),
                           args.y.rank());
  }
  std::vector<int64_t> dims, src, dst;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    int64_t n = x.dims[d], out = args.y.dims[d];
    int64_t repeat = n == 0 ? 0 : out / n;
    if (n == 0 ? out != 0 : out % n != 0) {
      return invalidArgument("{}: output dim {} is {}, not a multiple of the input's {}", args.op,
                             d, out, n);
    }
    if (args.repeats.has_value() && n != 0 && (*args.repeats)[d] != repeat) {
      return invalidArgument("{}: the output {} is not the input {} tiled {}", args.op,
                             dimsText(args.y.dims), dimsText(x.dims), dimsText(*args.repeats));
    }
    dims.insert(dims.end(), {repeat, n});
    src.insert(src.end(), {0, x.strides[d]});
    dst.insert(dst.end(), {n * args.y.strides[d], args.y.strides[d]});
  }
  return CopyJob{ConstTensorView(x.dtype, dims, std::move(src), x.data, x.memory),
                 TensorView(args.y.dtype, dims, std::move(dst), args.y.data, args.y.memory)};
}

}  // namespace

template <>
StatusOr<TileArgs> argsFromCall<TileArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 2, 2, 1));
  TileArgs args{call.op, call.inputs[0], call.outputs[0], std::nullopt};
  if (constantInput(call, 1) != nullptr) {
    ASSIGN_OR_RETURN(args.repeats, constantInts(call, 1, "repeats"));
    if (static_cast<int64_t>(args.repeats->size()) != args.x.rank()) {
      return invalidArgument("{}: {} repeats for rank {}", call.op, args.repeats->size(),
                             args.x.rank());
    }
    for (int64_t r : *args.repeats) {
      if (r < 0) return invalidArgument("{}: negative repeat {}", call.op, r);
    }
  }
  return args;
}

StatusOr<std::vector<CopyJob>> copyJobs(const TileArgs& args) {
  ASSIGN_OR_RETURN(CopyJob job, tileJob(args));
  return std::vector<CopyJob>{std::move(job)};
}

Support canImplement(const TileArgs& args) {
  if (Support s = movableSupport(args.op, args.x, args.y); !s) return s;
  return copyJobsSupport(args.op, copyJobs(args));
}

size_t workspaceBytes(const TileArgs&) {
  return 0;
}

Status launch(const TileArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(std::vector<CopyJob> jobs, copyJobs(args));
  return runCopyJobs(args.op, jobs, stream);
}

}  // namespace onnxopt::kernels::cuda
