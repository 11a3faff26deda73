// Host half of RoiAlign (roi_align.h): the node's inputs and attributes, the reference kernel's
// checks (kernels/reference/sampling.cc) that can be made when planning, the launch.
#include "kernels/cuda/conv/roi_align.h"

#include <fmt/format.h>

#include <limits>
#include <vector>

#include "kernels/cuda/conv/roi_align_device.h"
#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The reference kernel's cap on the work of one region (kMaxResampleWork, resample.h).
constexpr int64_t kMaxWork = int64_t{1} << 40;
/// The reference kernel's cap on a bin's grid along one axis ("too many samples per bin").
constexpr int64_t kMaxGrid = 1000000;

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

Status checkTypes(const RoiAlignArgs& a) {
  DataType t = a.x.dtype;
  if (!isFloatType(t)) {
    return makeError(StatusCode::kUnimplemented, "RoiAlign: no CUDA kernel for {}",
                     dataTypeName(t));
  }
  if (a.rois.dtype != t || a.y.dtype != t) {
    return makeError(StatusCode::kUnimplemented,
                     "RoiAlign: the CUDA kernel takes X, rois and Y of one type");
  }
  if (a.batch.dtype != DataType::kInt64) {
    return makeError(StatusCode::kUnimplemented, "RoiAlign: batch_indices must be int64");
  }
  return Status::ok();
}

/// The most samples per bin within the reference's work cap: c * oh * ow * samples * 4 <= 2^40.
StatusOr<int64_t> maxSamples(int64_t c, int64_t oh, int64_t ow) {
  if (c == 0) return std::numeric_limits<int64_t>::max();
  int64_t work = 4;
  for (int64_t f : {c, oh, ow}) {
    if (f > kMaxWork / work) {
      return makeError(StatusCode::kUnimplemented,
                       "RoiAlign: too much work for the reference kernel's cap");
    }
    work *= f;
  }
  return kMaxWork / work;
}

Status checkAttributes(const RoiAlignArgs& a) {
  if (a.mode != "avg" && a.mode != "max") {
    return invalidArgument("RoiAlign: unknown mode '{}'", a.mode);
  }
  const int64_t kMaxOut = int64_t{1} << 31;
  if (a.out_h <= 0 || a.out_w <= 0 || a.out_h > kMaxOut || a.out_w > kMaxOut) {
    return invalidArgument("RoiAlign: output_height and output_width must be positive");
  }
  if (a.sampling < 0 || a.sampling > (int64_t{1} << 20)) {
    return invalidArgument("RoiAlign: bad sampling_ratio {}", a.sampling);
  }
  if (a.sampling > kMaxGrid) {
    return makeError(StatusCode::kUnimplemented, "RoiAlign: too many samples per bin");
  }
  if (a.coord != "half_pixel" && a.coord != "output_half_pixel") {
    return invalidArgument("RoiAlign: unknown coordinate_transformation_mode '{}'", a.coord);
  }
  return Status::ok();
}

Status checkBatchIndices(const RoiAlignArgs& a, int64_t n) {
  if (a.batch_values == nullptr) return Status::ok();
  for (int64_t i = 0; i < a.batch_values->numElements(); ++i) {
    int64_t b = a.batch_values->get<int64_t>(i);
    if (b < 0 || b >= n) return invalidArgument("RoiAlign: batch index {} out of range", b);
  }
  return Status::ok();
}

StatusOr<RoiAlignDeviceArgs> geometryOf(const RoiAlignArgs& a) {
  RETURN_IF_ERROR(checkTypes(a));
  if (a.x.dims.size() != 4) {
    return invalidArgument("RoiAlign: X must be 4-D, got rank {}", a.x.dims.size());
  }
  if (a.rois.dims.size() != 2 || a.rois.dims[1] != 4) {
    return invalidArgument("RoiAlign: rois must be [num_rois, 4]");
  }
  const int64_t num_rois = a.rois.dims[0];
  if (a.batch.dims != std::vector<int64_t>{num_rois}) {
    return invalidArgument("RoiAlign: batch_indices must be [{}]", num_rois);
  }
  RETURN_IF_ERROR(checkAttributes(a));
  RoiAlignDeviceArgs d;
  d.dtype = a.x.dtype;
  d.num_rois = num_rois;
  d.n = a.x.dims[0];
  d.c = a.x.dims[1];
  d.h = a.x.dims[2];
  d.w = a.x.dims[3];
  RETURN_IF_ERROR(checkBatchIndices(a, d.n));
  if (a.y.dims != std::vector<int64_t>{num_rois, d.c, a.out_h, a.out_w}) {
    return invalidArgument("RoiAlign: the output must be [{}, {}, {}, {}]", num_rois, d.c, a.out_h,
                           a.out_w);
  }
  d.out_h = a.out_h;
  d.out_w = a.out_w;
  d.sampling = a.sampling;
  d.scale = a.scale;
  d.half_pixel = a.coord == "half_pixel";
  d.max_mode = a.mode == "max";
  ASSIGN_OR_RETURN(d.max_samples, maxSamples(d.c, d.out_h, d.out_w));
  if (d.sampling > 0 && d.sampling * d.sampling > d.max_samples) {
    return makeError(StatusCode::kUnimplemented,
                     "RoiAlign: too much work for the reference kernel's cap");
  }
  d.x = a.x.data;
  d.rois = a.rois.data;
  d.batch = static_cast<const int64_t*>(a.batch.data);
  d.y = a.y.data;
  return d;
}

}  // namespace

template <>
StatusOr<RoiAlignArgs> argsFromCall<RoiAlignArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 3, 3, 1));
  const KernelAttrs& attrs = attrsOf(call);
  RoiAlignArgs a;
  a.op = call.op;
  a.opset = call.opset;
  a.x = call.inputs[0];
  a.rois = call.inputs[1];
  a.batch = call.inputs[2];
  a.batch_values = constantInput(call, 2);
  a.y = call.outputs[0];
  a.mode = attrs.getString("mode", "avg");
  a.coord = call.opset >= 16 ? attrs.getString("coordinate_transformation_mode", "half_pixel")
                             : std::string("output_half_pixel");
  a.out_h = attrs.getInt("output_height", 1);
  a.out_w = attrs.getInt("output_width", 1);
  a.sampling = attrs.getInt("sampling_ratio", 0);
  a.scale = attrs.getFloat("spatial_scale", 1.0f);
  return a;
}

Support canImplement(const RoiAlignArgs& args) {
  StatusOr<RoiAlignDeviceArgs> d = geometryOf(args);
  if (!d.isOk()) return Support::no(d.status().message());
  const std::pair<const ConstTensorView*, const char*> views[] = {
      {&args.x, "X"}, {&args.rois, "rois"}, {&args.batch, "batch_indices"}};
  for (const auto& [view, what] : views) {
    if (Support s = requireDenseDevice(args.op, *view, what); !s) return s;
  }
  return requireDenseDevice(args.op, args.y, "Y", /*output=*/true);
}

size_t workspaceBytes(const RoiAlignArgs&) {
  return 0;
}

Status launch(const RoiAlignArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(RoiAlignDeviceArgs d, geometryOf(args));
  ONNXOPT_CUDA_CHECK(launchRoiAlign(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
