// Host half of Transpose (transpose.h): the permuted view of the input, copied into the output.
#include "transpose.h"

#include <fmt/format.h>

#include "copy.h"

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

Support canImplement(const TransposeArgs& args) {
  if (Support s = movableSupport(args.op, args.x, args.y); !s) return s;
  ConstTensorView src = permutedView(args.x, args.perm);
  if (src.dims != args.y.dims) {
    return Support::no(fmt::format("{}: the output is {}; the transpose is {}", args.op,
                                   dimsText(args.y.dims), dimsText(src.dims)));
  }
  return copyViewSupport(args.op, src, args.y);
}

size_t workspaceBytes(const TransposeArgs&) {
  return 0;
}

Status launch(const TransposeArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  return copyView(args.op, permutedView(args.x, args.perm), args.y, stream);
}

}  // namespace onnxopt::kernels::cuda
