// Host half of the fills (fill.h): Range's length from constant inputs as the reference computes
// it, ConstantOfShape's value.
#include "kernels/cuda/elementwise/fill.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cuda/device.h"
#include "kernels/cuda/reduce/reduce_plan.h"
#include "onnxopt/support/half.h"

namespace onnxopt::kernels::cuda {

namespace {

/// Range's length for constant scalars, as the reference kernel computes it.
StatusOr<int64_t> rangeCount(const RangeArgs& args) {
  DataType t = args.start_value->dtype;
  if (t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16) {
    auto read = [&](const HostTensor* v) {
      if (t == DataType::kFloat) return v->get<float>(0);
      uint16_t bits = v->get<uint16_t>(0);
      return t == DataType::kFloat16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
    };
    float start = read(args.start_value), limit = read(args.limit_value),
          delta = read(args.delta_value);
    if (delta == 0) return invalidArgument("{}: delta is 0", args.op);
    float diff = limit - start;
    double c = std::ceil(static_cast<double>(diff) / static_cast<double>(delta));
    if (std::isnan(c) || c > 4e18) return invalidArgument("{}: non-finite bounds", args.op);
    return c > 0 ? static_cast<int64_t>(c) : 0;
  }
  auto read = [&](const HostTensor* v) {
    return t == DataType::kInt32 ? int64_t{v->get<int32_t>(0)} : v->get<int64_t>(0);
  };
  int64_t start = read(args.start_value), limit = read(args.limit_value),
          delta = read(args.delta_value);
  if (delta == 0) return invalidArgument("{}: delta is 0", args.op);
  int64_t diff;
  if (__builtin_sub_overflow(limit, start, &diff)) {
    return invalidArgument("{}: limit - start overflows", args.op);
  }
  if ((diff > 0 && delta > 0) || (diff < 0 && delta < 0)) {
    return diff / delta + (diff % delta != 0 ? 1 : 0);
  }
  return 0;
}

/// Whether the kernel takes start and delta by value (both constants).
bool byValue(const RangeArgs& args) {
  return args.start_value != nullptr && args.delta_value != nullptr;
}

uint64_t bitsOf(const HostTensor& t) {
  uint64_t bits = 0;
  std::memcpy(&bits, t.bytes.data(), std::min(t.bytes.size(), sizeof(bits)));
  return bits;
}

}  // namespace

template <>
StatusOr<RangeArgs> argsFromCall<RangeArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 3, 3, 1));
  RangeArgs args;
  args.op = call.op;
  args.start = call.inputs[0];
  args.limit = call.inputs[1];
  args.delta = call.inputs[2];
  args.start_value = constantInput(call, 0);
  args.limit_value = constantInput(call, 1);
  args.delta_value = constantInput(call, 2);
  args.y = call.outputs[0];
  return args;
}

Support canImplement(const RangeArgs& args) {
  DataType t = args.start.dtype;
  if (!rangeKernelExists(t)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(t)));
  }
  for (const auto& [view, what] : {std::pair{&args.start, "start"}, std::pair{&args.limit, "limit"},
                                   std::pair{&args.delta, "delta"}}) {
    if (view->dtype != t || view->numElements() != 1) {
      return Support::no(fmt::format("{}: {} must be a scalar of start's type ({})", args.op, what,
                                     dataTypeName(t)));
    }
  }
  if (args.start_value != nullptr && args.limit_value != nullptr && args.delta_value != nullptr) {
    StatusOr<int64_t> count = rangeCount(args);
    if (!count.isOk()) return Support::no(count.status().message());
    return reduceOutputSupport(args.op, args.y, t, {*count}, "output 0");
  }
  // Not all known when planning: the output's length is the plan's, and the kernel reads start
  // and delta on the device unless both are constants.
  if (!byValue(args)) {
    if (Support s = requireDevice(args.op, args.start, "start"); !s) return s;
    if (Support s = requireDevice(args.op, args.delta, "delta"); !s) return s;
  }
  if (args.y.rank() != 1) {
    return Support::no(fmt::format("{}: the output has rank {}, not 1", args.op, args.y.rank()));
  }
  return reduceOutputSupport(args.op, args.y, t, args.y.dims, "output 0");
}

size_t workspaceBytes(const RangeArgs&) {
  return 0;
}

Status launch(const RangeArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  bool by_value = byValue(args);
  RangeDeviceArgs d{args.start.dtype,
                    args.y.numElements(),
                    by_value,
                    by_value ? bitsOf(*args.start_value) : 0,
                    by_value ? bitsOf(*args.delta_value) : 0,
                    args.start.data,
                    args.delta.data,
                    args.y.data};
  ONNXOPT_CUDA_CHECK(launchRange(d, streamOf(stream)), args.op);
  return Status::ok();
}

template <>
StatusOr<ConstantOfShapeArgs> argsFromCall<ConstantOfShapeArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 1, 1, 1));
  ConstantOfShapeArgs args;
  args.op = call.op;
  args.y = call.outputs[0];
  args.value = HostTensor::zeros(DataType::kFloat, {});
  if (const HostTensor* v = attrsOf(call).getTensor("value")) {
    if (v->numElements() != 1) {
      return invalidArgument("{}: value must have one element, not {}", call.op, v->numElements());
    }
    args.value = *v;
  }
  if (constantInput(call, 0) != nullptr) {
    ASSIGN_OR_RETURN(args.shape, constantInts(call, 0, "shape"));
  }
  return args;
}

Support canImplement(const ConstantOfShapeArgs& args) {
  DataType t = args.value.dtype;
  int bits = t == DataType::kString ? 0 : dataTypeBits(t);
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(t)));
  }
  if (args.value.bytes.size() != static_cast<size_t>(bits / 8)) {
    return Support::no(fmt::format("{}: the value tensor holds {} bytes for one {}", args.op,
                                   args.value.bytes.size(), dataTypeName(t)));
  }
  return reduceOutputSupport(args.op, args.y, t, args.shape.value_or(args.y.dims), "output 0");
}

size_t workspaceBytes(const ConstantOfShapeArgs&) {
  return 0;
}

Status launch(const ConstantOfShapeArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  FillDeviceArgs d{dataTypeBits(args.value.dtype) / 8, bitsOf(args.value), args.y.numElements(),
                   args.y.data};
  ONNXOPT_CUDA_CHECK(launchFill(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
