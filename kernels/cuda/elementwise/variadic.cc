// Host half of the variadic Sum, Mean, Max and Min (variadic.h): each input's strides in the output's order
// come from the broadcast planner (broadcast.h), one input at a time against the output.
#include "kernels/cuda/elementwise/variadic.h"

#include <fmt/format.h>

#include <map>

#include "kernels/cuda/device.h"
#include "kernels/cuda/elementwise/broadcast.h"
#include "kernels/cuda/reduce/reduce_plan.h"

namespace onnxopt::kernels::cuda {

namespace {

/// Input `k`'s plan against the output (the output's own view stands in as the second operand,
/// so that the broadcast shape is the output's).
StatusOr<BroadcastPlan> inputPlan(const VariadicArgs& args, size_t k) {
  // The output's dims (not coalesced): launch pairs the inputs' plans dim by dim.
  return planBroadcast({args.x[k], args.y}, args.y, args.op, /*coalesce=*/false);
}

}  // namespace

template <>
StatusOr<VariadicArgs> argsFromCall<VariadicArgs>(const CudaKernelCall& call) {
  static const std::map<std::string, VariadicOp> kOps = {
#define CUDA_VARIADIC(op, ...) {#op, VariadicOp::k##op},
#include "kernels/cuda/ops.def"
  };
  auto it = kOps.find(call.op);
  if (it == kOps.end()) return invalidArgument("{}: not a CUDA variadic op", call.op);
  if (call.inputs.empty()) return invalidArgument("{}: needs at least one input", call.op);
  if (call.outputs.size() != 1) {
    return invalidArgument("{}: {} outputs; the op has 1", call.op, call.outputs.size());
  }
  VariadicArgs args;
  args.op = call.op;
  args.kind = it->second;
  args.x = call.inputs;
  args.y = call.outputs[0];
  for (size_t k = 0; k < args.x.size(); ++k) {
    if (args.x[k].dtype == DataType::kUndefined) {
      return invalidArgument("{}: input {} is required", call.op, k);
    }
  }
  return args;
}

Support canImplement(const VariadicArgs& args) {
  DataType t = args.x[0].dtype;
  if (!variadicKernelExists(args.kind, t)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(t)));
  }
  if (args.x.size() > static_cast<size_t>(kMaxVariadicInputs)) {
    return Support::no(fmt::format("{}: {} inputs; the CUDA kernel reads at most {}", args.op,
                                   args.x.size(), kMaxVariadicInputs));
  }
  std::vector<std::vector<int64_t>> shapes;
  for (size_t k = 0; k < args.x.size(); ++k) {
    if (args.x[k].dtype != t) {
      return Support::no(fmt::format("{}: input {} is {}, input 0 {}; one type needed", args.op, k,
                                     dataTypeName(args.x[k].dtype), dataTypeName(t)));
    }
    if (Support s = reduceInputSupport(args.op, args.x[k], "an input"); !s) return s;
    shapes.push_back(args.x[k].dims);
  }
  StatusOr<std::vector<int64_t>> dims = broadcastDims(shapes, args.op);
  if (!dims.isOk()) return Support::no(dims.status().message());
  if (Support s = reduceOutputSupport(args.op, args.y, t, *dims, "output 0"); !s) return s;
  if (args.y.rank() > kMaxReduceRank) {
    return Support::no(fmt::format("{}: the output has rank {}; the CUDA kernel takes at most {}",
                                   args.op, args.y.rank(), kMaxReduceRank));
  }
  return Support::yes();
}

size_t workspaceBytes(const VariadicArgs&) {
  return 0;
}

Status launch(const VariadicArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  VariadicDeviceArgs d{};
  d.op = args.kind;
  d.dtype = args.x[0].dtype;
  d.inputs = static_cast<int>(args.x.size());
  d.rank = static_cast<int>(args.y.rank());
  d.count = args.y.numElements();
  d.y = args.y.data;
  for (size_t k = 0; k < args.x.size(); ++k) {
    ASSIGN_OR_RETURN(BroadcastPlan plan, inputPlan(args, k));
    for (int i = 0; i < d.rank; ++i) {
      d.dims[i] = plan.dims[i];
      d.strides[k][i] = plan.strides[0][i];
    }
    d.x[k] = args.x[k].data;
  }
  ONNXOPT_CUDA_CHECK(launchVariadic(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
