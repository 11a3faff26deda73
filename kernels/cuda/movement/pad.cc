// Host half of Pad (pad.h): the pads per dim, the kept input range and shift, the pad value's
// bits, the checks.
#include "kernels/cuda/movement/pad.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "kernels/cuda/device.h"
#include "kernels/cuda/movement/copy.h"
#include "onnxopt/support/half.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The bits of `v` as an element of `type` with the reference's conversion (integers truncate
/// toward zero, NaN is 0, out of range saturates to int64 and wraps); nullopt for a type without
/// a conversion here.
std::optional<uint64_t> valueBits(DataType type, float v) {
  auto integer = [&]() -> int64_t {
    if (std::isnan(v)) return 0;
    double d = std::trunc(static_cast<double>(v));
    if (d >= 9223372036854775808.0) return INT64_MAX;
    if (d < -9223372036854775808.0) return INT64_MIN;
    return static_cast<int64_t>(d);
  };
  switch (type) {
    case DataType::kFloat: {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      return bits;
    }
    case DataType::kFloat16:
      return floatToHalf(v);
    case DataType::kBfloat16:
      return floatToBfloat16(v);
    case DataType::kBool:
      return v != 0.0f ? 1 : 0;
    case DataType::kInt8:
    case DataType::kUint8:
      return static_cast<uint8_t>(integer());
    case DataType::kInt32:
      return static_cast<uint32_t>(integer());
    case DataType::kInt64:
      return static_cast<uint64_t>(integer());
    default:
      return std::nullopt;
  }
}

}  // namespace

template <>
StatusOr<PadArgs> argsFromCall<PadArgs>(const CudaKernelCall& call) {
  const KernelAttrs& attrs = attrsOf(call);
  RETURN_IF_ERROR(checkArity(call, call.opset < 11 ? 1 : 2, call.opset < 11 ? 1 : 4, 1));
  PadArgs args;
  args.op = call.op;
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  args.mode = attrs.getString("mode", "constant");
  PadDeviceArgs& d = args.device;
  if (args.mode == "constant") {
    d.mode = PadMode::kConstant;
  } else if (args.mode == "edge") {
    d.mode = PadMode::kEdge;
  } else if (args.mode == "reflect") {
    d.mode = PadMode::kReflect;
  } else if (args.mode == "wrap" && call.opset >= 19) {
    d.mode = PadMode::kWrap;
  } else {
    return invalidArgument("{}: unknown mode '{}' at opset {}", call.op, args.mode, call.opset);
  }
  int64_t rank = args.x.rank();
  if (rank > kMaxRank) return makeError(StatusCode::kUnimplemented, "{}: rank {}", call.op, rank);
  std::vector<int64_t> pads;
  if (call.opset < 11) {
    auto p = attrs.getInts("pads");
    if (!p) return invalidArgument("{}: pads is required", call.op);
    pads = *p;
    std::optional<uint64_t> bits = valueBits(args.x.dtype, attrs.getFloat("value", 0.0f));
    if (!bits) {
      return makeError(StatusCode::kUnimplemented, "{}: no pad value conversion for {}", call.op,
                       dataTypeName(args.x.dtype));
    }
    d.value_bits = *bits;
  } else {
    ASSIGN_OR_RETURN(pads, constantInts(call, 1, "pads"));
    ConstTensorView value = inputOf(call, 2);
    if (value.dtype != DataType::kUndefined) {
      if (value.dtype != args.x.dtype) {
        return invalidArgument("{}: constant_value is {}, the data {}", call.op,
                               dataTypeName(value.dtype), dataTypeName(args.x.dtype));
      }
      if (value.numElements() > 1) {
        return invalidArgument("{}: constant_value must be a scalar", call.op);
      }
      if (const HostTensor* c = constantInput(call, 2); c != nullptr && value.numElements() == 1) {
        std::memcpy(&d.value_bits, c->bytes.data(),
                    static_cast<size_t>(movableElementBytes(c->dtype)));
      } else if (value.numElements() == 1) {
        args.value = value;
        d.value = value.data;  // read by the kernel
      }
    }
  }
  std::vector<int64_t> axes;
  if (call.opset >= 18 && inputOf(call, 3).dtype != DataType::kUndefined) {
    ASSIGN_OR_RETURN(std::vector<int64_t> raw, constantInts(call, 3, "axes"));
    for (int64_t a : raw) {
      ASSIGN_OR_RETURN(int64_t n, normalizedAxis(call.op, a, rank));
      axes.push_back(n);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  size_t k = axes.size();
  if (pads.size() != 2 * k) {
    return invalidArgument("{}: {} pads for {} axes", call.op, pads.size(), k);
  }
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < k; ++i) {
    begin[static_cast<size_t>(axes[i])] = pads[i];
    end[static_cast<size_t>(axes[i])] = pads[i + k];
  }
  d.element_bytes = movableElementBytes(args.x.dtype);
  d.rank = static_cast<int>(rank);
  d.count = 1;
  for (size_t i = 0; i < static_cast<size_t>(rank); ++i) {
    int64_t n = args.x.dims[i], pb = begin[i], pe = end[i];
    if (pb < -n || pe < -n || n + pb + pe < 0) {
      return invalidArgument("{}: pads {}, {} do not fit dim {} of size {}", call.op, pb, pe, i, n);
    }
    int64_t out = n + pb + pe;
    args.dims.push_back(out);
    d.dims[i] = out;
    d.count *= out;
    d.lo[i] = std::max<int64_t>(0, -pb);
    d.kept[i] = n - d.lo[i] - std::max<int64_t>(0, -pe);
    d.shift[i] = std::max<int64_t>(0, pb);
    if (d.mode != PadMode::kConstant && d.kept[i] <= 0 && out > 0) {
      return invalidArgument("{}: {} mode needs a non-empty input along axis {}", call.op,
                             args.mode, i);
    }
  }
  if (args.x.strides.size() == args.x.dims.size()) {
    for (size_t i = 0; i < args.x.strides.size(); ++i) d.in_strides[i] = args.x.strides[i];
  }
  d.in = args.x.data;
  d.out = args.y.data;
  return args;
}

Support canImplement(const PadArgs& args) {
  if (Support s = movableSupport(args.op, args.x, args.y); !s) return s;
  if (Support s = requireDevice(args.op, args.value, "constant_value"); !s) return s;
  if (args.dims != args.y.dims) {
    return Support::no(fmt::format("{}: the output is {}; the padding gives {}", args.op,
                                   dimsText(args.y.dims), dimsText(args.dims)));
  }
  if (!args.y.isContiguous()) {
    return Support::no(fmt::format("{}: the output view is not contiguous", args.op));
  }
  return Support::yes();
}

size_t workspaceBytes(const PadArgs&) {
  return 0;
}

Status launch(const PadArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ONNXOPT_CUDA_CHECK(launchPad(args.device, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
