// MatMul and Gemm through cuBLASLt (matmul.h). cuBLASLt is column-major: a row-major [M, N] output
// is its column-major N x M transpose, so D^T = B^T A^T is computed with B in cuBLASLt's "A" slot
// and A in its "B" slot, and the transposes of Gemm swap slots the same way.
#include "kernels/cuda/gemm/matmul.h"

#include <fmt/format.h>

#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/elementwise/binary.h"
#include "kernels/cuda/elementwise/elementwise_device.h"
#include "kernels/cuda/gemm/cublas_lt.h"

namespace onnxopt::kernels::cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

/// The matrix products one node asks for: m x k times k x n, `batch` times, at these element
/// offsets of A, B and the output.
struct Product {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> out_dims;
  std::vector<int64_t> a_offsets, b_offsets;  ///< per batch, in elements
};

/// Whether offsets[i] == i * step for every i (step returned).
bool isProgression(const std::vector<int64_t>& offsets, int64_t* step) {
  *step = offsets.size() > 1 ? offsets[1] - offsets[0] : 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] != static_cast<int64_t>(i) * *step) return false;
  }
  return true;
}

StatusOr<Product> productOf(const MatMulArgs& args) {
  const auto& ad = args.a.dims;
  const auto& bd = args.b.dims;
  if (ad.empty() || bd.empty())
    return invalidArgument("{}: scalar inputs do not multiply", args.op);
  Product p;
  if (args.op == "Gemm") {
    if (ad.size() != 2 || bd.size() != 2) {
      return invalidArgument("{}: A and B must be matrices, not {} and {}", args.op, dimsText(ad),
                             dimsText(bd));
    }
    p.m = args.trans_a ? ad[1] : ad[0];
    p.k = args.trans_a ? ad[0] : ad[1];
    int64_t kb = args.trans_b ? bd[1] : bd[0];
    p.n = args.trans_b ? bd[0] : bd[1];
    if (kb != p.k) {
      return invalidArgument("{}: op(A) is {} x {}, op(B) {} x {}", args.op, p.m, p.k, kb, p.n);
    }
    p.out_dims = {p.m, p.n};
    p.a_offsets = {0};
    p.b_offsets = {0};
    return p;
  }
  // MatMul: 1-D operands are promoted (a row for A, a column for B) and the added dim dropped.
  std::vector<int64_t> a2 = ad.size() == 1 ? std::vector<int64_t>{1, ad[0]} : ad;
  std::vector<int64_t> b2 = bd.size() == 1 ? std::vector<int64_t>{bd[0], 1} : bd;
  p.m = a2[a2.size() - 2];
  p.k = a2.back();
  p.n = b2.back();
  if (b2[b2.size() - 2] != p.k) {
    return invalidArgument("{}: shapes {} and {} do not multiply", args.op, dimsText(ad),
                           dimsText(bd));
  }
  std::vector<int64_t> a_batch(a2.begin(), a2.end() - 2), b_batch(b2.begin(), b2.end() - 2);
  ASSIGN_OR_RETURN(std::vector<int64_t> batch, broadcastDims({a_batch, b_batch}, args.op));
  p.out_dims = batch;
  if (ad.size() > 1) p.out_dims.push_back(p.m);
  if (bd.size() > 1) p.out_dims.push_back(p.n);
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  // Element offsets of each batch's matrix: a broadcast dim (size 1) does not move.
  auto offsets = [&](const std::vector<int64_t>& own, int64_t matrix) {
    std::vector<int64_t> out(static_cast<size_t>(count), 0);
    size_t shift = batch.size() - own.size();
    for (int64_t i = 0; i < count; ++i) {
      int64_t rest = i, offset = 0, stride = matrix;
      for (size_t d = batch.size(); d-- > 0;) {
        int64_t coord = rest % batch[d];
        rest /= batch[d];
        if (d >= shift) {
          int64_t own_dim = own[d - shift];
          if (own_dim != 1) offset += coord * stride;
          stride *= own_dim;
        }
      }
      out[static_cast<size_t>(i)] = offset;
    }
    return out;
  };
  p.a_offsets = offsets(a_batch, p.m * p.k);
  p.b_offsets = offsets(b_batch, p.k * p.n);
  return p;
}

/// Copies C, broadcast to the output's [M, N], into the output (Gemm accumulates into it).
Status copyBroadcastC(const MatMulArgs& args, CudaStream stream) {
  ConstTensorView shape(args.y.dtype, args.y.dims, args.y.strides, nullptr, MemoryKind::kDevice);
  ASSIGN_OR_RETURN(BroadcastPlan plan, planBroadcast({args.c, shape}, args.y, args.op));
  CastDeviceArgs copy{args.c.dtype, args.y.dtype, plan, args.c.data, args.y.data};
  ONNXOPT_CUDA_CHECK(launchCast(copy, streamOf(stream)), args.op);
  return Status::ok();
}

/// Copies the bias [N], broadcast over the output's rows, into the output (the product then
/// accumulates into it): the epilogue cuBLASLt had no algorithm for.
Status copyBroadcastBias(const MatMulArgs& args, CudaStream stream) {
  MatMulArgs as_c = args;
  as_c.c = args.bias;
  return copyBroadcastC(as_c, stream);
}

/// The activation of the epilogue, in place on the output, where our kernel does it.
Status activateInPlace(const MatMulArgs& args, UnaryOp op, CudaDeviceContext& ctx) {
  ConstTensorView y(args.y.dtype, args.y.dims, args.y.strides, args.y.data, MemoryKind::kDevice);
  ASSIGN_OR_RETURN(BroadcastPlan plan, planBroadcast({y}, args.y, args.op));
  UnaryDeviceArgs d{};
  d.op = op;
  d.dtype = args.y.dtype;
  d.plan = plan;
  d.x = args.y.data;
  d.y = args.y.data;
  ONNXOPT_CUDA_CHECK(launchUnary(d, ctx.smCount(), streamOf(ctx.stream())), args.op);
  return Status::ok();
}

bool hasActivation(Epilogue e) {
  return e == Epilogue::kBiasRelu || e == Epilogue::kBiasGelu || e == Epilogue::kBiasGeluTanh;
}

UnaryOp activationOf(Epilogue e) {
  switch (e) {
    case Epilogue::kBiasRelu:
      return UnaryOp::kRelu;
    case Epilogue::kBiasGeluTanh:
      return UnaryOp::kGeluTanh;
    default:
      return UnaryOp::kGelu;
  }
}

/// cuBLASLt's epilogue for ours: the erf form of GELU has none (its GELU is the tanh form), so
/// the bias is cuBLASLt's and GELU ours.
cublasLtEpilogue_t ltEpilogueOf(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::kBiasRelu:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::kBiasGeluTanh:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
    case Epilogue::kBias:
    case Epilogue::kBiasGelu:
      return CUBLASLT_EPILOGUE_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

/// The fields every product's parser sets: op, A, B, the output and the workspace.
void setProductOperands(const CudaKernelCall& call, MatMulArgs& args) {
  args.op = call.op;
  args.a = call.inputs[0];
  args.b = call.inputs[1];
  args.y = call.outputs[0];
  args.workspace = call.workspace;
  args.workspace_bytes = call.workspace_bytes;
}

}  // namespace

template <>
StatusOr<MatMulArgs> argsFromCall<MatMulArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 2, 2, 1));
  MatMulArgs args;
  setProductOperands(call, args);
  return args;
}

template <>
StatusOr<GemmArgs> argsFromCall<GemmArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 2, 3, 1));
  const KernelAttrs& attrs = attrsOf(call);
  GemmArgs args;
  setProductOperands(call, args);
  args.c = inputOf(call, 2);
  args.trans_a = attrs.getInt("transA", 0) != 0;
  args.trans_b = attrs.getInt("transB", 0) != 0;
  args.alpha = attrs.getFloat("alpha", 1.0f);
  args.beta = attrs.getFloat("beta", 1.0f);
  return args;
}

template <>
StatusOr<MatMulBiasArgs> argsFromCall<MatMulBiasArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 3, 3, 1));
  MatMulBiasArgs args;
  setProductOperands(call, args);
  args.bias = call.inputs[2];
  if (call.op == "MatMulBias") {
    args.epilogue = Epilogue::kBias;
  } else if (call.op == "MatMulBiasRelu") {
    args.epilogue = Epilogue::kBiasRelu;
  } else if (call.op == "MatMulBiasGelu") {
    std::string approximate = attrsOf(call).getString("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      return invalidArgument("{}: approximate must be none or tanh, not '{}'", call.op,
                             approximate);
    }
    args.epilogue = approximate == "tanh" ? Epilogue::kBiasGeluTanh : Epilogue::kBiasGelu;
  } else {
    return invalidArgument("{}: not a MatMulBias op", call.op);
  }
  return args;
}

Support canImplement(const MatMulArgs& args) {
  DataType t = args.a.dtype;
  if (!isFloatType(t)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(t)));
  }
  bool has_c = args.c.dtype != DataType::kUndefined;
  if (args.b.dtype != t || args.y.dtype != t || (has_c && args.c.dtype != t)) {
    return Support::no(fmt::format("{}: the inputs and the output must share one type", args.op));
  }
  for (const auto& [view, what] : {std::pair{&args.a, "input 0"}, std::pair{&args.b, "input 1"},
                                   std::pair{&args.c, "input 2"}}) {
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
  }
  if (Support s = requireDevice(args.op, args.y, "output 0"); !s) return s;
  if (!args.a.isContiguous() || !args.b.isContiguous() || !args.y.isContiguous()) {
    return Support::no(fmt::format("{}: the CUDA kernel reads contiguous A and B", args.op));
  }
  StatusOr<Product> p = productOf(args);
  if (!p.isOk()) return Support::no(p.status().message());
  if (p->out_dims != args.y.dims) {
    return Support::no(fmt::format("{}: the output is {}; the product is {}", args.op,
                                   dimsText(args.y.dims), dimsText(p->out_dims)));
  }
  if (has_c) {
    ConstTensorView shape(t, args.y.dims, args.y.strides, nullptr, MemoryKind::kDevice);
    if (Support s = broadcastSupport({args.c, shape}, args.y, args.op); !s) return s;
  }
  if (args.epilogue != Epilogue::kNone) {
    if (args.bias.dtype != t) {
      return Support::no(fmt::format("{}: the bias must be {}", args.op, dataTypeName(t)));
    }
    if (Support s = requireDevice(args.op, args.bias, "input 2"); !s) return s;
    if (args.bias.dims != std::vector<int64_t>{p->n} || !args.bias.isContiguous()) {
      return Support::no(fmt::format("{}: the bias is {}; the kernel takes [{}]", args.op,
                                     dimsText(args.bias.dims), p->n));
    }
  }
  return Support::yes();
}

size_t workspaceBytes(const MatMulArgs&) {
  return kWorkspaceBytes;
}

namespace {

/// An empty sum (K = 0): the output is the bias then the activation, or beta * C (or zeros).
Status launchEmptySum(const MatMulArgs& args, float beta, bool with_bias, CudaDeviceContext& ctx) {
  const CudaStream stream = ctx.stream();
  if (with_bias) {
    RETURN_IF_ERROR(copyBroadcastBias(args, stream));
    if (hasActivation(args.epilogue)) {
      RETURN_IF_ERROR(activateInPlace(args, activationOf(args.epilogue), ctx));
    }
    return Status::ok();
  }
  // Without a bias: beta * C (or zeros).
  if (beta == 0.0f) {
    ONNXOPT_CUDA_CHECK(cudaMemsetAsync(args.y.data, 0,
                                       static_cast<size_t>(args.y.numElements()) *
                                           static_cast<size_t>(dataTypeBits(args.y.dtype) / 8),
                                       streamOf(stream)),
                       args.op);
    return Status::ok();
  }
  if (beta == 1.0f) return Status::ok();
  return Status(StatusCode::kUnimplemented, args.op + ": K = 0 with beta other than 0 or 1");
}

/// How the batches run: one strided call when the offsets are progressions, a shared B folded
/// into M (A's matrices are consecutive rows), otherwise one call per batch.
struct Batching {
  int64_t m = 0, a_stride = 0, b_stride = 0;
  int32_t batch = 1;
  int64_t calls = 0;
};

Batching batchingOf(const MatMulArgs& args, const Product& p) {
  auto count = static_cast<int64_t>(p.a_offsets.size());
  int64_t m = p.m, a_stride = 0, b_stride = 0;
  bool strided = isProgression(p.a_offsets, &a_stride) && isProgression(p.b_offsets, &b_stride);
  int32_t batch = 1;
  int64_t calls = count;
  if (strided && count > 1 && b_stride == 0 && a_stride == p.m * p.k && !args.trans_a) {
    m = p.m * count;
    calls = 1;
  } else if (strided && count > 1 && count <= INT32_MAX) {
    batch = static_cast<int32_t>(count);
    calls = 1;
  }
  return {m, a_stride, b_stride, batch, calls};
}

/// Picks cuBLASLt's algorithm into `heuristic` (`found`: 0 where it has none): one with the bias
/// epilogue where there is one (true), else one without it (false).
StatusOr<bool> pickAlgorithm(const MatMulArgs& args, cublasLtHandle_t handle,
                             cublasLtMatmulDesc_t raw_desc, cublasLtMatrixLayout_t lb,
                             cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t ld,
                             cublasLtMatmulPreference_t raw_pref, bool with_bias,
                             cublasLtMatmulHeuristicResult_t* heuristic, int* found) {
  // The epilogue, where cuBLASLt has an algorithm with it: else the bias is copied into the
  // output first (accumulated into with beta 1) and the activation runs after, as our kernels.
  cublasLtEpilogue_t epilogue = ltEpilogueOf(args.epilogue);
  bool lt_epilogue = false;
  if (with_bias) {
    const void* bias_ptr = args.bias.data;
    ONNXOPT_CUDA_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                      &epilogue, sizeof epilogue),
                       args.op);
    ONNXOPT_CUDA_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                      &bias_ptr, sizeof bias_ptr),
                       args.op);
    ONNXOPT_CUDA_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, raw_desc, lb, la, ld, ld, raw_pref, 1,
                                                      heuristic, found),
                       args.op);
    lt_epilogue = *found > 0;
    if (!lt_epilogue) {
      epilogue = CUBLASLT_EPILOGUE_DEFAULT;
      ONNXOPT_CUDA_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                        &epilogue, sizeof epilogue),
                         args.op);
    }
  }
  if (!lt_epilogue) {
    ONNXOPT_CUDA_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, raw_desc, lb, la, ld, ld, raw_pref, 1,
                                                      heuristic, found),
                       args.op);
  }
  return lt_epilogue;
}

/// What cuBLASLt's epilogue did not do, after the product: the bias added in place (where C was
/// read directly), and the activation.
Status finishEpilogue(const MatMulArgs& args, bool lt_epilogue, bool direct_c,
                      CudaDeviceContext& ctx) {
  const bool with_bias = args.epilogue != Epilogue::kNone;
  if (with_bias && !lt_epilogue && direct_c) {
    // No cuBLASLt algorithm with the bias epilogue: the bias added in place after the product.
    BinaryArgs add;
    add.op = args.op;
    add.kind = BinaryOp::kAdd;
    add.a = ConstTensorView(args.y.dtype, args.y.dims, args.y.strides, args.y.data,
                            MemoryKind::kDevice);
    add.b = args.bias;
    add.y = args.y;
    RETURN_IF_ERROR(launch(add, ctx));
  }
  // GELU's erf form always, ReLU and GELU's tanh form when cuBLASLt did not apply them.
  if (hasActivation(args.epilogue) && (!lt_epilogue || args.epilogue == Epilogue::kBiasGelu)) {
    RETURN_IF_ERROR(activateInPlace(args, activationOf(args.epilogue), ctx));
  }
  return Status::ok();
}

}  // namespace

Status launch(const MatMulArgs& args, CudaDeviceContext& ctx) {
  if (Support s = canImplement(args); !s) return refused(s);
  const CudaStream stream = ctx.stream();
  ASSIGN_OR_RETURN(Product p, productOf(args));
  if (args.y.numElements() == 0) return Status::ok();
  float beta = 0.0f;
  // C of the output's own shape, both contiguous: cuBLASLt reads it as its C (D = act(alpha AB +
  // beta C + bias)), not copied into the output first (the conv family's residual: one pass over
  // Y fewer). Otherwise C is broadcast into the output, which the product accumulates into.
  const bool direct_c = args.c.dtype != DataType::kUndefined && args.beta != 0.0f && p.k > 0 &&
                        args.c.dims == args.y.dims && args.c.isContiguous() &&
                        args.y.isContiguous();
  if (args.c.dtype != DataType::kUndefined && args.beta != 0.0f) {
    if (!direct_c) RETURN_IF_ERROR(copyBroadcastC(args, stream));
    beta = args.beta;
  }
  const bool with_bias = args.epilogue != Epilogue::kNone;
  if (p.k == 0) return launchEmptySum(args, beta, with_bias, ctx);
  ASSIGN_OR_RETURN(cublasLtHandle_t handle, ltHandle(ctx, args.op));

  Batching bt = batchingOf(args, p);
  int64_t m = bt.m, a_stride = bt.a_stride, b_stride = bt.b_stride;
  int32_t batch = bt.batch;
  int64_t calls = bt.calls;

  cudaDataType_t type = cudaTypeOf(args.a.dtype);
  cublasLtMatmulDesc_t raw_desc = nullptr;
  ONNXOPT_CUDA_CHECK(
      cublasLtMatmulDescCreate(&raw_desc, ltComputeType(ctx, args.a.dtype), CUDA_R_32F), args.op);
  LtDesc desc(raw_desc);
  // cuBLASLt's A is our B, its B our A (see the file comment).
  cublasOperation_t op_a = args.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_b = args.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  ONNXOPT_CUDA_CHECK(
      cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
      args.op);
  ONNXOPT_CUDA_CHECK(
      cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
      args.op);
  // Stored (before op) column-major shapes: B is n x k (ld n), or k x n (ld k) when transposed;
  // A is k x m (ld k), or m x k (ld m); the output n x m (ld n).
  ASSIGN_OR_RETURN(LtLayout lb_slot,
                   makeLayout(type, args.trans_b ? p.k : p.n, args.trans_b ? p.n : p.k,
                              args.trans_b ? p.k : p.n, batch, b_stride, args.op));
  ASSIGN_OR_RETURN(LtLayout la_slot,
                   makeLayout(type, args.trans_a ? m : p.k, args.trans_a ? p.k : m,
                              args.trans_a ? m : p.k, batch, a_stride, args.op));
  ASSIGN_OR_RETURN(LtLayout ld_slot, makeLayout(type, p.n, m, p.n, batch, m * p.n, args.op));

  size_t workspace_bytes = args.workspace != nullptr ? args.workspace_bytes : 0;
  cublasLtMatmulPreference_t raw_pref = nullptr;
  ONNXOPT_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref), args.op);
  LtPreference pref(raw_pref);
  ONNXOPT_CUDA_CHECK(
      cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace_bytes, sizeof workspace_bytes),
      args.op);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  ASSIGN_OR_RETURN(bool lt_epilogue,
                   pickAlgorithm(args, handle, raw_desc, lb_slot.get(), la_slot.get(),
                                 ld_slot.get(), raw_pref, with_bias, &heuristic, &found));
  if (found == 0) {
    return Status(StatusCode::kUnimplemented,
                  fmt::format("{}: cuBLASLt has no algorithm for {} x {} x {} in {}", args.op, m,
                              p.k, p.n, dataTypeName(args.a.dtype)));
  }
  if (with_bias && !lt_epilogue && !direct_c) {
    RETURN_IF_ERROR(copyBroadcastBias(args, stream));
    beta = 1.0f;
  }
  auto bytes = static_cast<int64_t>(dataTypeBits(args.a.dtype) / 8);
  const auto* a = static_cast<const char*>(args.a.data);
  const auto* b = static_cast<const char*>(args.b.data);
  auto* y = static_cast<char*>(args.y.data);
  const auto* c = static_cast<const char*>(direct_c ? args.c.data : args.y.data);
  for (int64_t i = 0; i < calls; ++i) {
    const void* ai = a + p.a_offsets[static_cast<size_t>(i)] * bytes;
    const void* bi = b + p.b_offsets[static_cast<size_t>(i)] * bytes;
    void* yi = y + i * p.m * p.n * bytes;
    const void* ci = c + i * p.m * p.n * bytes;  // C has the output's layout
    ONNXOPT_CUDA_CHECK(
        cublasLtMatmul(handle, raw_desc, &args.alpha, bi, lb_slot.get(), ai, la_slot.get(), &beta,
                       ci, ld_slot.get(), yi, ld_slot.get(), &heuristic.algo, args.workspace,
                       workspace_bytes, streamOf(stream)),
        args.op);
  }
  return finishEpilogue(args, lt_epilogue, direct_c, ctx);
}

}  // namespace onnxopt::kernels::cuda
