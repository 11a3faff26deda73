// Conv and ConvTranspose through cuDNN (conv.h): parsing the node, what each launch form supports,
// the workspace and the launch. The cuDNN-level geometry is conv_geometry.h's, the cached algorithm
// choice conv_algo.h's.
#include "kernels/cuda/conv/conv.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "kernels/cuda/conv/conv_algo.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/gemm/matmul.h"

namespace onnxopt::kernels::cuda {

namespace {

using namespace conv_detail;  // NOLINT: this family's own internals

/// Checks both families share: types, ranks, device memory, Y's shape, cuDNN's int limits.
Support commonSupport(const ConvArgs& args) {
  DataType t = args.x.dtype;
  if (!isFloatType(t)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(t)));
  }
  bool has_b = args.b.dtype != DataType::kUndefined;
  if (args.w.dtype != t || args.y.dtype != t || (has_b && args.b.dtype != t)) {
    return Support::no(fmt::format("{}: X, W, B and Y must share one type", args.op));
  }
  size_t rank = args.window.in.size();
  if (rank < 1 || rank > 3) {
    return Support::no(
        fmt::format("{}: cuDNN convolves 1 to 3 spatial dims, not {}", args.op, rank));
  }
  bool nhwc = args.channels_last;
  if (nhwc && rank != 2) {
    return Support::no(fmt::format("{}: channels-last convolutions have 2 spatial dims", args.op));
  }
  // X, W, Y and Z contiguous in their layout; B a plain vector.
  auto laidOut = [&](const ConstTensorView& v, bool is_bias) {
    return is_bias || !nhwc ? v.isContiguous() : storedChannelsLast(v);
  };
  for (const auto& [view, what] : {std::pair{&args.x, "X"}, std::pair{&args.w, "W"},
                                   std::pair{&args.b, "B"}, std::pair{&args.z, "Z"}}) {
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
    if (view->dtype != DataType::kUndefined && !laidOut(*view, view == &args.b)) {
      return Support::no(fmt::format("{}: the CUDA kernel reads a contiguous {}", args.op, what));
    }
  }
  if (Support s = requireDevice(args.op, args.y, "Y"); !s) return s;
  if (!laidOut(args.y, false)) {
    return Support::no(fmt::format("{}: the CUDA kernel writes a contiguous Y", args.op));
  }
  if (args.z.dtype != DataType::kUndefined && (args.z.dtype != t || args.z.dims != args.y.dims)) {
    return Support::no(fmt::format("{}: Z must have Y's type and shape", args.op));
  }
  std::vector<int64_t> want = {args.x.dims[0], args.out_channels};
  want.insert(want.end(), args.window.out.begin(), args.window.out.end());
  if (args.y.dims != want) {
    return Support::no(fmt::format("{}: the output is {}; the convolution gives {}", args.op,
                                   dimsText(args.y.dims), dimsText(want)));
  }
  if (args.y.numElements() > 0 && args.x.numElements() == 0) {
    return Support::no(fmt::format("{}: X is empty but Y is not", args.op));
  }
  for (int64_t n : {args.x.numElements(), args.w.numElements(), args.y.numElements()}) {
    if (n > INT_MAX) {
      return Support::no(fmt::format("{}: {} elements exceed cuDNN's int sizes", args.op, n));
    }
  }
  return Support::yes();
}

Support supportOf(const ConvArgs& args, bool transpose) {
  if (Support s = commonSupport(args); !s) return s;
  if (args.y.numElements() == 0) return Support::yes();
  StatusOr<Geometry> g = geometryOf(args, transpose);
  if (!g.isOk()) return Support::no(g.status().message());
  if (args.channels_last && g->staged_x) {
    return Support::no(fmt::format(
        "{}: pads of unequal ends, which the channels-last kernel does not stage", args.op));
  }
  if (g->stage_bytes / elementBytes(args.x.dtype) > static_cast<size_t>(INT_MAX)) {
    return Support::no(fmt::format("{}: the staged tensor {} exceeds cuDNN's int sizes", args.op,
                                   dimsText(transpose ? g->y : g->x)));
  }
  return Support::yes();
}

/// Whether a channels-last convolution is a plain product: a 1x1 window, unit strides and
/// dilations, no pads, one group. Then X is a [N*H*W, C] row-major matrix, W (stored [M, 1, 1, C])
/// a [M, C] one, and Y = X W^T + B runs through cuBLASLt with the bias (and, without Z, the ReLU)
/// in its epilogue. cuDNN's legacy API runs these as implicit_convolve_sgemm kernels many times
/// slower than cuBLASLt's GEMMs (docs/gpu_benchmarks.md, "Measurements behind design choices").
bool isChannelsLastProduct(const ConvArgs& args, const Geometry& g, bool transpose) {
  if (!args.channels_last || transpose || g.staged_x || args.group != 1) return false;
  for (size_t d = 2; d < g.w.size(); ++d) {
    if (g.w[d] != 1) return false;
  }
  for (int64_t v : g.strides) {
    if (v != 1) return false;
  }
  for (int64_t v : g.dilations) {
    if (v != 1) return false;
  }
  for (int64_t v : g.pads) {
    if (v != 0) return false;
  }
  return true;
}

/// The product form of isChannelsLastProduct: A = X [P, C], B = W [M, C] transposed, Y [P, M].
MatMulArgs productArgs(const ConvArgs& args) {
  int64_t c = args.x.dims[1], m = args.out_channels;
  int64_t p = args.x.numElements() / c;
  MatMulArgs mm;
  mm.op = "Gemm";  // matmul.cc reads trans_b for Gemm only
  mm.a = ConstTensorView(args.x.dtype, {p, c}, {c, 1}, args.x.data, args.x.memory);
  mm.b = ConstTensorView(args.w.dtype, {m, c}, {c, 1}, args.w.data, args.w.memory);
  mm.y = TensorView(args.y.dtype, {p, m}, {m, 1}, args.y.data, args.y.memory);
  mm.trans_b = true;
  bool has_b = args.b.dtype != DataType::kUndefined;
  bool has_z = args.z.dtype != DataType::kUndefined;
  if (has_b) {
    // With B, Z is cuBLASLt's C: Y = ReLU(X W^T + Z + B) in the one call.
    mm.bias = args.b;
    mm.epilogue = args.relu ? Epilogue::kBiasRelu : Epilogue::kBias;
    if (has_z) {
      mm.c = ConstTensorView(args.z.dtype, {p, m}, {m, 1}, args.z.data, args.z.memory);
      mm.beta = 1.0f;
    }
  }
  mm.workspace = args.workspace;
  mm.workspace_bytes = args.workspace_bytes;
  return mm;
}

StatusOr<size_t> workspaceOf(const ConvArgs& args, bool transpose, CudaDeviceContext& ctx) {
  if (Support s = supportOf(args, transpose); !s) return refused(s);
  if (args.y.numElements() == 0) return size_t{0};
  ASSIGN_OR_RETURN(Geometry g, geometryOf(args, transpose));
  if (g.bias_only) return size_t{0};
  if (isChannelsLastProduct(args, g, transpose)) {
    MatMulArgs mm = productArgs(args);
    if (Support s = canImplement(mm); !s) return refused(s);
    return workspaceBytes(mm);
  }
  ASSIGN_OR_RETURN(cudnnHandle_t handle, cudnnHandle(ctx, args.op));
  ASSIGN_OR_RETURN(const Prepared* p, preparedFor(args, g, ctx, handle, transpose));
  return alignUp(std::max(p->choice.bytes, p->choice.graph_bytes)) + g.stage_bytes;
}

/// Y = B broadcast over it (zeros without B): the part of a ConvTranspose's Y that no tap reaches.
Status fillBias(const ConvArgs& args, const Geometry& g, cudnnHandle_t handle, CudaStream stream) {
  if (args.b.dtype == DataType::kUndefined) {
    ONNXOPT_CUDA_CHECK(
        cudaMemsetAsync(args.y.data, 0,
                        static_cast<size_t>(args.y.numElements()) * elementBytes(args.y.dtype),
                        streamOf(stream)),
        args.op);
    return Status::ok();
  }
  const float one = 1.0f, zero = 0.0f;
  ASSIGN_OR_RETURN(TensorDesc bias, biasDesc(args, g));
  ASSIGN_OR_RETURN(TensorDesc whole, makeTensorDesc(args.y.dtype, g.y_view, {}, args.op));
  ONNXOPT_CUDA_CHECK(
      cudnnAddTensor(handle, &one, bias.get(), args.b.data, &zero, whole.get(), args.y.data),
      args.op);
  return Status::ok();
}

Status launchOf(const ConvArgs& args, bool transpose, CudaDeviceContext& ctx) {
  if (Support s = supportOf(args, transpose); !s) return refused(s);
  const CudaStream stream = ctx.stream();
  if (args.y.numElements() == 0) return Status::ok();
  // A constant without bytes (weights stripped from the model) must not reach cuDNN.
  auto missing = [](const void* data, int64_t n) { return data == nullptr && n > 0; };
  if (missing(args.x.data, args.x.numElements()) || missing(args.w.data, args.w.numElements()) ||
      missing(args.y.data, args.y.numElements()) ||
      (args.b.dtype != DataType::kUndefined && missing(args.b.data, args.b.numElements())) ||
      (args.z.dtype != DataType::kUndefined && missing(args.z.data, args.z.numElements()))) {
    return invalidArgument("{}: X, W, B, Z or Y has elements but no device data", args.op);
  }
  ASSIGN_OR_RETURN(Geometry g, geometryOf(args, transpose));
  if (isChannelsLastProduct(args, g, transpose)) {
    RETURN_IF_ERROR(launch(productArgs(args), ctx));
    bool has_b = args.b.dtype != DataType::kUndefined;
    bool has_z = args.z.dtype != DataType::kUndefined;
    if (has_b || (!has_z && !args.relu)) return Status::ok();  // cuBLASLt did it all
    return launchEpilogue(args, nullptr, ctx);                 // no B: Z and the ReLU after
  }
  ASSIGN_OR_RETURN(cudnnHandle_t handle, cudnnHandle(ctx, args.op));
  if (g.bias_only) return fillBias(args, g, handle, stream);
  ASSIGN_OR_RETURN(const Prepared* p, preparedFor(args, g, ctx, handle, transpose));
  const Descriptors& d = p->d;
  const AlgoChoice& choice = p->choice;
  size_t algo_bytes = alignUp(std::max(choice.bytes, choice.graph_bytes));
  if (args.workspace_bytes < algo_bytes + g.stage_bytes ||
      (args.workspace == nullptr && algo_bytes + g.stage_bytes > 0)) {
    return makeError(StatusCode::kInvalidArgument, "{}: the workspace has {} bytes, {} needed",
                     args.op, args.workspace_bytes, algo_bytes + g.stage_bytes);
  }
  auto* stage = static_cast<char*>(args.workspace) + algo_bytes;
  size_t bytes = elementBytes(args.x.dtype);
  const float one = 1.0f, zero = 0.0f;
  const void* x = args.x.data;
  if (g.staged_x) {
    ONNXOPT_CUDA_CHECK(cudaMemsetAsync(stage, 0, g.stage_bytes, streamOf(stream)), args.op);
    ASSIGN_OR_RETURN(TensorDesc src, makeTensorDesc(args.x.dtype, g.x_view, {}, args.op));
    ASSIGN_OR_RETURN(TensorDesc interior,
                     makeTensorDesc(args.x.dtype, g.x_view, contiguousStrides(g.x), args.op));
    ONNXOPT_CUDA_CHECK(
        cudnnTransformTensor(handle, &one, src.get(), args.x.data, &zero, interior.get(),
                             stage + static_cast<size_t>(g.stage_offset) * bytes),
        args.op);
    x = stage;
  }
  void* target = g.staged_y ? static_cast<void*>(stage) : args.y.data;
  bool has_b = args.b.dtype != DataType::kUndefined;
  if (g.partial) RETURN_IF_ERROR(fillBias(args, g, handle, stream));
  if (p->graph != nullptr &&
      convGraphAligned({x, args.w.data, args.b.data, args.z.data, args.y.data, args.workspace})) {
    // The cuDNN graph plan that won the timing: the convolution with B inside, and Z and the
    // ReLU unless it is a reduced plan (then our epilogue after it).
    RETURN_IF_ERROR(p->graph->execute(handle, x, args.w.data, args.b.data, args.z.data, args.y.data,
                                      args.workspace));
    if (!needsEpilogue(args, *p->graph)) return Status::ok();
    return launchEpilogue(args, nullptr, ctx);  // Z and the ReLU after a reduced plan
  }
  if (args.channels_last) {
    // The convolution alone (beta 0: the algorithm cudnnFind timed), then B, Z and the ReLU in
    // one pass of our own over Y (conv_epilogue.cu). The bias-first form below (then the ReLU
    // and the residual through cudnnConvolutionBiasActivationForward) made resnet50 fp16 about
    // twice as slow; for NCHW the bias-first form is the faster (the epilogue then an extra pass
    // before the separate Relu). Figures: docs/gpu_benchmarks.md.
    ONNXOPT_CUDA_CHECK(
        cudnnConvolutionForward(handle, &one, d.x.get(), x, d.w.get(), args.w.data, d.conv.get(),
                                static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), args.workspace,
                                choice.bytes, &zero, d.y.get(), target),
        args.op);
    bool has_z = args.z.dtype != DataType::kUndefined;
    if (!has_b && !has_z && !args.relu) return Status::ok();
    return launchEpilogue(args, has_b ? args.b.data : nullptr, ctx);
  }
  float beta = 0.0f;
  if (has_b) {
    // The bias first; the convolution accumulates into it (one rounding of the sum).
    ONNXOPT_CUDA_CHECK(
        cudnnAddTensor(handle, &one, p->bias.get(), args.b.data, &zero, d.y.get(), target),
        args.op);
    beta = 1.0f;
  }
  if (transpose) {
    ONNXOPT_CUDA_CHECK(cudnnConvolutionBackwardData(
                           handle, &one, d.w.get(), args.w.data, d.x.get(), x, d.conv.get(),
                           static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo), args.workspace,
                           choice.bytes, &beta, d.y.get(), target),
                       args.op);
  } else {
    ONNXOPT_CUDA_CHECK(
        cudnnConvolutionForward(handle, &one, d.x.get(), x, d.w.get(), args.w.data, d.conv.get(),
                                static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), args.workspace,
                                choice.bytes, &beta, d.y.get(), target),
        args.op);
  }
  if (g.staged_y) {
    // Y's block from the adjoint's output (strides of the staged buffer into those of Y).
    ASSIGN_OR_RETURN(TensorDesc from,
                     makeTensorDesc(args.y.dtype, g.block, contiguousStrides(g.y), args.op));
    ASSIGN_OR_RETURN(TensorDesc to,
                     makeTensorDesc(args.y.dtype, g.block, contiguousStrides(g.y_view), args.op));
    ONNXOPT_CUDA_CHECK(
        cudnnTransformTensor(
            handle, &one, from.get(), stage + static_cast<size_t>(g.stage_offset) * bytes, &zero,
            to.get(), static_cast<char*>(args.y.data) + static_cast<size_t>(g.y_offset) * bytes),
        args.op);
  }
  return Status::ok();
}

/// X, W, the optional B and Y, with the ranks checked.
Status parseTensors(const CudaKernelCall& call, ConvArgs* args) {
  // ai.onnxopt's channels-last forms: NhwcConv(X, W, B), NhwcConvRelu(X, W, B),
  // NhwcConvAddRelu(X, W, B, Z).
  bool nhwc = call.op.rfind("NhwcConv", 0) == 0;
  bool with_z = call.op == "NhwcConvAddRelu";
  if (nhwc && call.op != "NhwcConv" && call.op != "NhwcConvRelu" && !with_z) {
    return invalidArgument("{}: not a channels-last convolution", call.op);
  }
  RETURN_IF_ERROR(checkArity(call, with_z ? 4 : 2, with_z ? 4 : 3, 1));
  args->op = call.op;
  args->x = call.inputs[0];
  args->w = call.inputs[1];
  args->b = inputOf(call, 2);
  args->y = call.outputs[0];
  if (with_z) args->z = inputOf(call, 3);
  args->channels_last = nhwc;
  args->relu = nhwc && call.op != "NhwcConv";
  if (nhwc) {
    for (ConstTensorView* v : {&args->x, &args->w, &args->z}) *v = channelsFirstView(*v);
    args->y = channelsFirstView(args->y);
  }
  args->workspace = call.workspace;
  args->workspace_bytes = call.workspace_bytes;
  if (args->x.dims.size() < 3) {
    return invalidArgument("{}: X must have rank 3 or more, not {}", call.op, args->x.dims.size());
  }
  if (args->w.dims.size() != args->x.dims.size()) {
    return invalidArgument("{}: W has rank {}, X has rank {}", call.op, args->w.dims.size(),
                           args->x.dims.size());
  }
  std::vector<int64_t> kernel = spatialOf(args->w.dims);
  if (auto ks = attrsOf(call).getInts("kernel_shape"); ks && *ks != kernel) {
    return invalidArgument("{}: kernel_shape {} does not match W {}", call.op, dimsText(*ks),
                           dimsText(args->w.dims));
  }
  args->group = attrsOf(call).getInt("group", 1);
  return Status::ok();
}

Status checkBias(const ConvArgs& args) {
  if (args.b.dtype != DataType::kUndefined &&
      (args.b.dims.size() != 1 || args.b.dims[0] != args.out_channels)) {
    return invalidArgument("{}: B must have shape [{}], not {}", args.op, args.out_channels,
                           dimsText(args.b.dims));
  }
  return Status::ok();
}

}  // namespace

template <>
StatusOr<ConvArgs> argsFromCall<ConvArgs>(const CudaKernelCall& call) {
  ConvArgs args;
  RETURN_IF_ERROR(parseTensors(call, &args));
  int64_t c = args.x.dims[1], m = args.w.dims[0], cg = args.w.dims[1], group = args.group;
  if (group < 1 || group > c || c % group != 0 || cg != c / group) {
    return invalidArgument("{}: group {} does not fit {} input channels and W's {} per group",
                           call.op, group, c, cg);
  }
  if (m % group != 0) {
    return invalidArgument("{}: group {} does not divide the {} output channels", call.op, group,
                           m);
  }
  args.out_channels = m;
  RETURN_IF_ERROR(checkBias(args));
  ASSIGN_OR_RETURN(args.window, windowOf(call.op, attrsOf(call), spatialOf(args.x.dims),
                                         spatialOf(args.w.dims), false));
  return args;
}

template <>
StatusOr<ConvTransposeArgs> argsFromCall<ConvTransposeArgs>(const CudaKernelCall& call) {
  ConvTransposeArgs args;
  RETURN_IF_ERROR(parseTensors(call, &args));
  const KernelAttrs& attrs = attrsOf(call);
  int64_t c = args.x.dims[1], group = args.group;
  if (args.w.dims[0] != c) {
    return invalidArgument("{}: W has {} input channels, X has {}", call.op, args.w.dims[0], c);
  }
  if (group < 1 || group > c || c % group != 0) {
    return invalidArgument("{}: group {} does not divide {} channels", call.op, group, c);
  }
  int64_t mg = args.w.dims[1];
  if (mg > INT_MAX / group) return invalidArgument("{}: too many output channels", call.op);
  args.out_channels = mg * group;
  RETURN_IF_ERROR(checkBias(args));
  Window& w = args.window;
  w.in = spatialOf(args.x.dims);
  w.kernel = spatialOf(args.w.dims);
  size_t rank = w.in.size();
  for (int64_t k : w.kernel) {
    if (k < 1 || k > INT_MAX) return invalidArgument("{}: kernel size {}", call.op, k);
  }
  for (int64_t d : w.in) {
    if (d > INT_MAX) return invalidArgument("{}: spatial dimension {}", call.op, d);
  }
  ASSIGN_OR_RETURN(w.strides, windowAttr(call.op, attrs, "strides", rank, 1, 1));
  ASSIGN_OR_RETURN(w.dilations, windowAttr(call.op, attrs, "dilations", rank, 1, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, windowAttr(call.op, attrs, "pads", 2 * rank, 0, 0));
  ASSIGN_OR_RETURN(args.output_padding, windowAttr(call.op, attrs, "output_padding", rank, 0, 0));
  ASSIGN_OR_RETURN(std::string auto_pad, autoPadOf(call.op, attrs));
  auto out_shape = attrs.getInts("output_shape");
  if (out_shape) {
    // Either the spatial dims or the full shape.
    if (out_shape->size() == rank + 2) out_shape->erase(out_shape->begin(), out_shape->begin() + 2);
    if (out_shape->size() != rank) {
      return invalidArgument("{}: output_shape has the wrong rank", call.op);
    }
    for (int64_t d : *out_shape) {
      if (d < 0 || d > INT_MAX) return invalidArgument("{}: output_shape {}", call.op, d);
    }
  }
  w.pad_begin.assign(rank, 0);
  w.pad_end.assign(rank, 0);
  w.out.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t full = w.strides[d] * (std::max<int64_t>(w.in[d], 1) - 1) + args.output_padding[d] +
                   (w.kernel[d] - 1) * w.dilations[d] + 1;
    if (out_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out[d] = out_shape ? (*out_shape)[d] : w.in[d] * w.strides[d];
      int64_t total = full - w.out[d];
      // A larger output_shape makes total negative: halve with floor division, as the spec does.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
    } else {
      if (auto_pad == "NOTSET") w.pad_begin[d] = pads[d];
      int64_t pad_end = auto_pad == "NOTSET" ? pads[d + rank] : 0;
      w.out[d] = full - w.pad_begin[d] - pad_end;
      if (w.out[d] < 0) return invalidArgument("{}: pads exceed the output size", call.op);
    }
    w.pad_end[d] = full - w.pad_begin[d] - w.out[d];
  }
  return args;
}

Support canImplement(const ConvArgs& args) {
  return supportOf(args, false);
}

Support canImplement(const ConvTransposeArgs& args) {
  return supportOf(args, true);
}

StatusOr<size_t> workspaceBytes(const ConvArgs& args, CudaDeviceContext& ctx) {
  return workspaceOf(args, false, ctx);
}

StatusOr<size_t> workspaceBytes(const ConvTransposeArgs& args, CudaDeviceContext& ctx) {
  return workspaceOf(args, true, ctx);
}

Status launch(const ConvArgs& args, CudaDeviceContext& ctx) {
  return launchOf(args, false, ctx);
}

Status launch(const ConvTransposeArgs& args, CudaDeviceContext& ctx) {
  return launchOf(args, true, ctx);
}

}  // namespace onnxopt::kernels::cuda
