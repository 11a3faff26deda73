// Host half of Resize and Upsample (resize.h): the attributes and the constant scales, sizes and
// roi turned into per-axis extents, scales and roi as the reference kernel computes them
// (kernels/reference/resize.cc), so that the device maps coordinates exactly as it does.
#include "kernels/cuda/movement/resize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "kernels/cuda/device.h"
#include "kernels/cuda/reduce/row_args.h"
#include "onnxopt/kernels/resize_axes.h"
#include "onnxopt/support/half.h"

namespace onnxopt::kernels::cuda {

namespace {

Status unimplemented(const std::string& op, const std::string& what) {
  return Status(StatusCode::kUnimplemented, fmt::format("{}: {}", op, what));
}

/// Whether the node gives input `i` with elements (an omitted or empty input gives none).
bool hasValues(const CudaKernelCall& call, size_t i) {
  ConstTensorView v = inputOf(call, i);
  return v.dtype != DataType::kUndefined && v.numElements() > 0;
}

/// A constant float input (scales, roi) as doubles; empty when the node gives none.
StatusOr<std::vector<double>> constantFloats(const CudaKernelCall& call, size_t i,
                                             const char* what) {
  std::vector<double> out;
  if (!hasValues(call, i)) return out;
  const HostTensor* t = constantInput(call, i);
  if (t == nullptr) {
    return unimplemented(
        call.op,
        fmt::format("{} is not a constant (the CUDA kernel reads it when planning)", what));
  }
  for (int64_t k = 0; k < t->numElements(); ++k) {
    switch (t->dtype) {
      case DataType::kFloat:
        out.push_back(t->get<float>(k));
        break;
      case DataType::kDouble:
        out.push_back(t->get<double>(k));
        break;
      case DataType::kFloat16:
        out.push_back(halfToFloat(t->get<uint16_t>(k)));
        break;
      case DataType::kBfloat16:
        out.push_back(bfloat16ToFloat(t->get<uint16_t>(k)));
        break;
      default:
        return invalidArgument("{}: {} is {}, not a float tensor", call.op, what,
                               dataTypeName(t->dtype));
    }
  }
  return out;
}

StatusOr<ResizeCoord> parseCoord(const CudaKernelCall& call, const std::string& m) {
  static const std::map<std::string, ResizeCoord> kModes = {
      {"half_pixel", ResizeCoord::kHalfPixel},
      {"half_pixel_symmetric", ResizeCoord::kHalfPixelSymmetric},
      {"pytorch_half_pixel", ResizeCoord::kPytorchHalfPixel},
      {"align_corners", ResizeCoord::kAlignCorners},
      {"asymmetric", ResizeCoord::kAsymmetric},
      {"tf_crop_and_resize", ResizeCoord::kTfCropAndResize},
      {"tf_half_pixel_for_nn", ResizeCoord::kTfHalfPixelForNn},
  };
  auto it = kModes.find(m);
  bool known = it != kModes.end();
  if (known && it->second == ResizeCoord::kHalfPixelSymmetric && call.opset < 19) known = false;
  if (known && it->second == ResizeCoord::kTfHalfPixelForNn && call.opset >= 13) known = false;
  if (!known) {
    return invalidArgument("{}: unknown coordinate_transformation_mode '{}'", call.op, m);
  }
  return it->second;
}

StatusOr<ResizeNearest> parseNearest(const CudaKernelCall& call, const std::string& m) {
  static const std::map<std::string, ResizeNearest> kModes = {
      {"round_prefer_floor", ResizeNearest::kRoundPreferFloor},
      {"round_prefer_ceil", ResizeNearest::kRoundPreferCeil},
      {"floor", ResizeNearest::kFloor},
      {"ceil", ResizeNearest::kCeil},
  };
  auto it = kModes.find(m);
  if (it == kModes.end()) return invalidArgument("{}: unknown nearest_mode '{}'", call.op, m);
  return it->second;
}

/// Bytes per element of a type nearest mode moves (the kernels' types), or 0.
int movableBytes(DataType t) {
  switch (t) {
    case DataType::kFloat:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return 2;
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kBool:
      return 1;
    case DataType::kInt64:
      return 8;
    default:
      return 0;
  }
}

template <typename I>
uint64_t roundedInt(double v) {
  // The reference's storeRounded: round half to even, NaN to 0, saturate.
  double r = std::nearbyint(v);
  if (std::isnan(r)) r = 0;
  const double lo = static_cast<double>(std::numeric_limits<I>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<I>::max());
  I out = r <= lo   ? std::numeric_limits<I>::lowest()
          : r >= hi ? std::numeric_limits<I>::max()
                    : static_cast<I>(r);
  uint64_t bits = 0;
  std::memcpy(&bits, &out, sizeof out);
  return bits;
}

/// extrapolation_value as an element of `t`, stored the reference kernel's way.
uint64_t extrapolationBits(DataType t, double v) {
  uint64_t bits = 0;
  switch (t) {
    case DataType::kFloat: {
      float f = static_cast<float>(v);
      std::memcpy(&bits, &f, sizeof f);
      return bits;
    }
    case DataType::kFloat16:
      return floatToHalf(static_cast<float>(v));
    case DataType::kBfloat16:
      return floatToBfloat16(static_cast<float>(v));
    case DataType::kInt8:
      return roundedInt<int8_t>(v);
    case DataType::kUint8:
      return roundedInt<uint8_t>(v);
    case DataType::kInt32:
      return roundedInt<int32_t>(v);
    case DataType::kInt64:
      return roundedInt<int64_t>(v);
    case DataType::kBool:
      return v != 0.0 ? 1 : 0;
    default:
      return 0;
  }
}

using AxisPlan = ResizeAxis;

/// The reference's isIdentityAxis: an axis that maps every output index to itself.
bool isIdentity(ResizeCoord coord, const AxisPlan& a) {
  if (a.in != a.out || std::abs(a.scale - 1.0) > 1e-9) return false;
  if (coord == ResizeCoord::kTfCropAndResize) {
    return std::abs(a.roi_start) < 1e-9 && std::abs(a.roi_end - 1.0) < 1e-9;
  }
  return coord != ResizeCoord::kTfHalfPixelForNn;
}

/// The axes Resize-18's `axes` names (each once, normalized), or every axis.
StatusOr<std::vector<int64_t>> resizedAxes(const CudaKernelCall& call, const KernelAttrs& at,
                                           int64_t rank, bool upsample) {
  std::vector<int64_t> axes;
  std::optional<std::vector<int64_t>> axes_attr = at.getInts("axes");
  if (!upsample && call.opset >= 18 && axes_attr) {
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t a : *axes_attr) {
      ASSIGN_OR_RETURN(int64_t n, normalizedAxis(call.op, a, rank));
      if (seen[static_cast<size_t>(n)])
        return invalidArgument("{}: axis {} appears twice", call.op, a);
      seen[static_cast<size_t>(n)] = true;
      axes.push_back(n);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  return axes;
}

}  // namespace

template <>
StatusOr<ResizeArgs> argsFromCall<ResizeArgs>(const CudaKernelCall& call) {
  const bool upsample = call.op == "Upsample";
  if (!upsample && call.op != "Resize") return invalidArgument("{}: not a Resize kernel", call.op);
  // Upsample and Resize-10 take X and scales; Upsample-7 its scales as an attribute.
  const bool legacy = upsample || call.opset < 11;
  const bool scales_attr = upsample && call.opset < 9;
  RETURN_IF_ERROR(checkArity(call,
                             scales_attr ? 1
                             : legacy    ? 2
                                         : 1,
                             scales_attr ? 1
                             : legacy    ? 2
                                         : 4,
                             1));
  const KernelAttrs& at = attrsOf(call);
  ResizeArgs args;
  args.op = call.op;
  args.x = call.inputs[0];
  args.y = call.outputs[0];
  ResizeDeviceArgs& p = args.plan;
  std::string mode = at.getString("mode", "nearest");
  if (mode == "cubic" || mode == "bicubic") {
    if (upsample) return invalidArgument("Upsample: mode must be nearest or linear");
    return unimplemented(call.op, "cubic mode stays on the CPU");
  }
  if (mode != "nearest" && mode != "linear" && mode != "bilinear" && mode != "trilinear") {
    return invalidArgument("{}: unknown mode '{}'", call.op, mode);
  }
  p.linear = mode != "nearest";
  bool antialias = false;
  if (legacy) {
    p.coord = ResizeCoord::kAsymmetric;
    p.nearest = ResizeNearest::kSimple;
  } else {
    ASSIGN_OR_RETURN(
        p.coord, parseCoord(call, at.getString("coordinate_transformation_mode", "half_pixel")));
    ASSIGN_OR_RETURN(p.nearest,
                     parseNearest(call, at.getString("nearest_mode", "round_prefer_floor")));
    p.exclude_outside = at.getInt("exclude_outside", 0) != 0;
    p.extrapolation = at.getFloat("extrapolation_value", 0.0f);
    if (call.opset >= 18) antialias = at.getInt("antialias", 0) != 0;
  }
  const int64_t rank = args.x.rank();
  if (rank > kMaxResizeRank) {
    return unimplemented(
        call.op, fmt::format("rank {} is above the CUDA kernel's {}", rank, kMaxResizeRank));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, resizedAxes(call, at, rank, upsample));
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (scales_attr) {
    auto fl = at.float_lists.find("scales");
    if (fl == at.float_lists.end()) {
      return invalidArgument("Upsample: the scales attribute is missing");
    }
    scales.assign(fl->second.begin(), fl->second.end());
  } else if (legacy) {
    ASSIGN_OR_RETURN(scales, constantFloats(call, 1, "scales"));
  } else {
    // roi matters to tf_crop_and_resize alone: another mode runs with any roi.
    if (p.coord == ResizeCoord::kTfCropAndResize) {
      ASSIGN_OR_RETURN(roi, constantFloats(call, 1, "roi"));
    }
    ASSIGN_OR_RETURN(scales, constantFloats(call, 2, "scales"));
    if (hasValues(call, 3)) {
      ASSIGN_OR_RETURN(sizes, constantInts(call, 3, "sizes"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<AxisPlan> plans,
                   resizeAxes(call.op, call.opset, at, args.x.dims, axes, roi, scales, sizes,
                              p.coord == ResizeCoord::kTfCropAndResize));
  args.out_dims = args.x.dims;
  p.rank = static_cast<int>(rank);
  for (int64_t d = 0; d < rank; ++d) {
    p.in_dims[d] = p.out_dims[d] = args.x.dims[static_cast<size_t>(d)];
    p.resized[d] = false;
    p.scale[d] = 1.0;
    p.roi_start[d] = 0.0;
    p.roi_end[d] = 1.0;
  }
  // The reference interpolates one axis at a time, downsampling axes first (stable).
  std::vector<AxisPlan> passes;
  for (const AxisPlan& a : plans) {
    if (!isIdentity(p.coord, a)) passes.push_back(a);
  }
  std::stable_sort(passes.begin(), passes.end(), [](const AxisPlan& a, const AxisPlan& b) {
    return (a.out < a.in) > (b.out < b.in);
  });
  p.levels = static_cast<int>(passes.size());
  for (size_t i = 0; i < passes.size(); ++i) p.order[i] = static_cast<int>(passes[i].axis);
  for (const AxisPlan& a : plans) {
    if (a.in == 0 && a.out > 0) {
      return invalidArgument("{}: cannot resize an empty axis {} to {}", call.op, a.axis, a.out);
    }
    args.out_dims[static_cast<size_t>(a.axis)] = a.out;
    p.out_dims[a.axis] = a.out;
    p.resized[a.axis] = !isIdentity(p.coord, a);
    p.scale[a.axis] = a.scale;
    p.roi_start[a.axis] = a.roi_start;
    p.roi_end[a.axis] = a.roi_end;
    if (antialias && p.linear && a.scale < 1.0) {
      return unimplemented(call.op, "antialias=1 when downsampling stays on the CPU");
    }
  }
  p.count = 1;
  for (int64_t d : args.out_dims) p.count *= d;
  p.dtype = args.x.dtype;
  p.element_bytes = movableBytes(args.x.dtype);
  p.extrapolation_bits = extrapolationBits(args.x.dtype, p.extrapolation);
  return args;
}

Support canImplement(const ResizeArgs& args) {
  const ResizeDeviceArgs& p = args.plan;
  if (p.element_bytes == 0) {
    return Support::no(fmt::format("{}: no CUDA kernel for {} in {} mode", args.op,
                                   dataTypeName(args.x.dtype), p.linear ? "linear" : "nearest"));
  }
  if (args.y.dtype != args.x.dtype) {
    return Support::no(fmt::format("{}: the output is {}, the input {}", args.op,
                                   dataTypeName(args.y.dtype), dataTypeName(args.x.dtype)));
  }
  if (args.y.dims != args.out_dims) {
    return Support::no(fmt::format("{}: the output is [{}]; the resize gives [{}]", args.op,
                                   fmt::join(args.y.dims, ", "), fmt::join(args.out_dims, ", ")));
  }
  if (!args.x.isContiguous() || !args.y.isContiguous()) {
    return Support::no(
        fmt::format("{}: the CUDA kernel reads and writes contiguous tensors", args.op));
  }
  if (Support s = requireDevice(args.op, args.x, "input 0"); !s) return s;
  return requireDevice(args.op, args.y, "output 0");
}

size_t workspaceBytes(const ResizeArgs&) {
  return 0;
}

Status launch(const ResizeArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ResizeDeviceArgs d = args.plan;
  d.x = args.x.data;
  d.y = args.y.data;
  ONNXOPT_CUDA_CHECK(launchResize(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
