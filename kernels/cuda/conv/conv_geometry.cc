// Conv's cuDNN-level geometry (conv_geometry.h).
#include "kernels/cuda/conv/conv_geometry.h"

#include <algorithm>

namespace onnxopt::kernels::cuda::conv_detail {

size_t alignUp(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

size_t elementBytes(DataType t) {
  return static_cast<size_t>(dataTypeBits(t) / 8);
}

std::vector<int64_t> spatialOf(const std::vector<int64_t>& dims) {
  return std::vector<int64_t>(dims.begin() + 2, dims.end());
}

std::vector<int64_t> withSpatial(int64_t n, int64_t c, const std::vector<int64_t>& spatial,
                                 bool unit) {
  std::vector<int64_t> d = {n, c};
  d.insert(d.end(), spatial.begin(), spatial.end());
  if (unit) d.push_back(1);
  return d;
}

std::vector<int64_t> withUnit(std::vector<int64_t> v, bool unit, int64_t value) {
  if (unit) v.push_back(value);
  return v;
}

StatusOr<Geometry> convGeometry(const ConvArgs& args) {
  const Window& win = args.window;
  bool unit = win.in.size() == 1;
  Geometry g;
  g.channels_last = args.channels_last;
  g.x_view = withUnit(args.x.dims, unit, 1);
  g.w = withUnit(args.w.dims, unit, 1);
  g.y_view = withUnit(args.y.dims, unit, 1);
  g.y = g.y_view;
  g.strides = withUnit(win.strides, unit, 1);
  g.dilations = withUnit(win.dilations, unit, 1);
  if (win.symmetric()) {
    g.x = g.x_view;
    g.pads = withUnit(win.pad_begin, unit, 0);
    return g;
  }
  // cuDNN pads both ends alike: pad X explicitly and convolve without padding.
  std::vector<int64_t> padded = win.in;
  for (size_t d = 0; d < padded.size(); ++d) padded[d] += win.pad_begin[d] + win.pad_end[d];
  g.x = withSpatial(args.x.dims[0], args.x.dims[1], padded, unit);
  g.pads.assign(g.strides.size(), 0);
  g.staged_x = true;
  std::vector<int64_t> strides = contiguousStrides(g.x);
  for (size_t d = 0; d < win.in.size(); ++d) g.stage_offset += win.pad_begin[d] * strides[d + 2];
  g.stage_bytes = static_cast<size_t>(product(g.x)) * elementBytes(args.x.dtype);
  return g;
}

StatusOr<Geometry> transposeGeometry(const ConvTransposeArgs& args) {
  const Window& win = args.window;
  bool unit = win.in.size() == 1;
  Geometry g;
  g.transpose = true;
  g.x_view = withUnit(args.x.dims, unit, 1);
  g.x = g.x_view;
  g.w = withUnit(args.w.dims, unit, 1);
  g.y_view = withUnit(args.y.dims, unit, 1);
  g.strides = withUnit(win.strides, unit, 1);
  g.dilations = withUnit(win.dilations, unit, 1);
  size_t rank = win.in.size();
  std::vector<int64_t> result(rank), pads(rank), src(rank), dst(rank), block(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t s = win.strides[d], pb = win.pad_begin[d], pe = win.pad_end[d];
    int64_t op = args.output_padding[d], out = win.out[d];
    int64_t full = s * (win.in[d] - 1) + (win.kernel[d] - 1) * win.dilations[d] + 1;
    int64_t q = std::max<int64_t>(0, std::min(pb, pe));
    int64_t t = std::max<int64_t>(0, op + q - pe);
    if (pb < 0 || t >= s || full + t - 2 * q != out) {
      q = 0;
      t = std::min(std::max<int64_t>(0, op - pe), s - 1);
    }
    result[d] = full + t - 2 * q;
    pads[d] = q;
    src[d] = std::max<int64_t>(0, pb - q);
    dst[d] = std::max<int64_t>(0, -pb);
    block[d] = std::min(out - dst[d], result[d] - src[d]);
    if (block[d] < 1) g.bias_only = true;  // Y lies outside the full output (in this dim)
    if (result[d] != out || src[d] != 0) g.staged_y = true;
    if (block[d] != out) g.partial = true;
  }
  g.pads = withUnit(pads, unit, 0);
  g.y = withSpatial(args.y.dims[0], args.y.dims[1], result, unit);
  if (g.staged_y) {
    g.block = withSpatial(args.y.dims[0], args.y.dims[1], block, unit);
    std::vector<int64_t> stage_strides = contiguousStrides(g.y);
    std::vector<int64_t> y_strides = contiguousStrides(g.y_view);
    for (size_t d = 0; d < rank; ++d) {
      g.stage_offset += src[d] * stage_strides[d + 2];
      g.y_offset += dst[d] * y_strides[d + 2];
    }
    g.stage_bytes = static_cast<size_t>(product(g.y)) * elementBytes(args.y.dtype);
  }
  return g;
}

StatusOr<Geometry> geometryOf(const ConvArgs& args, bool transpose) {
  if (transpose) return transposeGeometry(static_cast<const ConvTransposeArgs&>(args));
  return convGeometry(args);
}

cudnnMathType_t initialMath(DataType t) {
  // No tensor cores for float (they would round to TF32); fp16/bf16 use them (CUDNN_DEFAULT_MATH
  // does not permit them: it left resnet50 in fp16 on CUDA cores).
  return t == DataType::kFloat ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

StatusOr<Descriptors> descriptorsOf(const ConvArgs& args, const Geometry& g) {
  Descriptors d;
  DataType t = args.x.dtype;
  // Channels-last: the views' strides (NHWC memory under NCHW dims; never staged).
  bool nhwc = args.channels_last;
  ASSIGN_OR_RETURN(d.x,
                   makeTensorDesc(t, g.x, nhwc ? args.x.strides : std::vector<int64_t>{}, args.op));
  ASSIGN_OR_RETURN(d.y,
                   makeTensorDesc(t, g.y, nhwc ? args.y.strides : std::vector<int64_t>{}, args.op));
  ASSIGN_OR_RETURN(d.w,
                   makeFilterDesc(t, g.w, args.op, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW));
  std::vector<int64_t> pads(g.pads.begin(), g.pads.end());
  ASSIGN_OR_RETURN(d.conv,
                   makeConvDesc(pads, g.strides, g.dilations, args.group, initialMath(t), args.op));
  return d;
}

std::optional<ConvGraphSpec> graphSpecOf(const ConvArgs& args, const Geometry& g, bool transpose) {
  if (!args.channels_last || transpose || g.staged_x || args.group != 1) return std::nullopt;
  ConvGraphSpec s;
  s.op = args.op;
  s.dtype = args.x.dtype;
  s.x_dims = g.x;
  s.x_strides = args.x.strides;
  s.w_dims = g.w;
  s.w_strides = args.w.strides;
  s.y_dims = g.y;
  s.y_strides = args.y.strides;
  s.pad_begin = g.pads;
  s.pad_end = g.pads;
  s.strides = g.strides;
  s.dilations = g.dilations;
  s.bias = args.b.dtype != DataType::kUndefined;
  s.z = args.z.dtype != DataType::kUndefined;
  s.relu = args.relu;
  if (!convGraphApplies(s)) return std::nullopt;
  return s;
}

ConvGraphSpec reducedSpec(ConvGraphSpec spec) {
  spec.z = false;
  spec.relu = false;
  return spec;
}

ConvEpilogueArgs epilogueOf(const ConvArgs& args, const void* bias, const void* z, void* y) {
  ConvEpilogueArgs e;
  e.dtype = args.y.dtype;
  e.count = args.y.numElements();
  e.channels = args.out_channels;
  e.inner = 1;  // channels-last: the channel is the fastest dim
  e.bias = bias;
  e.z = z;
  e.y = y;
  e.relu = args.relu;
  return e;
}

Status launchEpilogue(const ConvArgs& args, const void* bias, CudaDeviceContext& ctx) {
  const void* z = args.z.dtype != DataType::kUndefined ? args.z.data : nullptr;
  ONNXOPT_CUDA_CHECK(launchConvEpilogue(epilogueOf(args, bias, z, args.y.data), ctx.smCount(),
                                        streamOf(ctx.stream())),
                     args.op);
  return Status::ok();
}

bool needsEpilogue(const ConvArgs& args, const ConvGraphPlan& plan) {
  return (args.z.dtype != DataType::kUndefined && !plan.fusesZ()) ||
         (args.relu && !plan.fusesRelu());
}

StatusOr<TensorDesc> biasDesc(const ConvArgs& args, const Geometry& g) {
  std::vector<int64_t> dims(g.y_view.size(), 1);
  dims[1] = args.out_channels;
  return makeTensorDesc(args.b.dtype, dims, {}, args.op);
}

}  // namespace onnxopt::kernels::cuda::conv_detail
