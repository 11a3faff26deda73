// Host half of the recurrent family (rnn.h): the node's attributes and shapes, the checks, the
// workspace layout and the time loop. cuBLASLt is column-major: a row-major product D = A B^T
// ([m, k] by [n, k]) is its column-major D^T = B A^T, with B (stored [k, n] column-major)
// transposed in its "A" slot and A in its "B" slot.
#include "kernels/cuda/rnn/rnn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <memory>

#include "kernels/cuda/device.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/gemm/cublas_lt.h"

namespace onnxopt::kernels::cuda {

namespace {

constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;
constexpr size_t kAlign = 256;

struct CellInfo {
  int64_t gates;
  size_t activations;  ///< per direction
  size_t max_inputs, max_outputs;
  const char* defaults[3];
};

CellInfo infoOf(RnnCell cell) {
  switch (cell) {
    case RnnCell::kRnn:
      return {1, 1, 6, 2, {"Tanh", nullptr, nullptr}};
    case RnnCell::kGru:
      return {3, 2, 6, 2, {"Sigmoid", "Tanh", nullptr}};
    case RnnCell::kLstm:
      break;
  }
  return {4, 3, 8, 3, {"Sigmoid", "Tanh", "Tanh"}};
}

struct ActivationName {
  const char* name;  ///< lower case
  RnnActivationKind kind;
  bool takes_alpha, takes_beta;
  float alpha, beta;  ///< defaults: the ONNX operator's of the same name
};

constexpr ActivationName kActivationNames[] = {
    {"relu", RnnActivationKind::kRelu, false, false, 0, 0},
    {"tanh", RnnActivationKind::kTanh, false, false, 0, 0},
    {"sigmoid", RnnActivationKind::kSigmoid, false, false, 0, 0},
    {"affine", RnnActivationKind::kAffine, true, true, 1.0f, 0.0f},
    {"leakyrelu", RnnActivationKind::kLeakyRelu, true, false, 0.01f, 0},
    {"thresholdedrelu", RnnActivationKind::kThresholdedRelu, true, false, 1.0f, 0},
    {"scaledtanh", RnnActivationKind::kScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", RnnActivationKind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", RnnActivationKind::kElu, true, false, 1.0f, 0},
    {"softsign", RnnActivationKind::kSoftsign, false, false, 0, 0},
    {"softplus", RnnActivationKind::kSoftplus, false, false, 0, 0},
};

/// The activations of every direction. activation_alpha and activation_beta are consumed in list
/// order by the functions that take them (as onnxruntime and the reference kernel do); one
/// direction's list serves both directions.
StatusOr<std::vector<RnnActivation>> parseActivations(const std::string& op,
                                                      const KernelAttrs& attrs,
                                                      const CellInfo& info, int64_t dirs) {
  std::vector<std::string> names;
  if (auto it = attrs.string_lists.find("activations"); it != attrs.string_lists.end()) {
    names = it->second;
  }
  size_t per = info.activations, want = per * static_cast<size_t>(dirs);
  if (names.empty()) {
    for (size_t k = 0; k < want; ++k) names.emplace_back(info.defaults[k % per]);
  } else if (names.size() == per && want == 2 * per) {
    std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (names.size() != want) {
    return invalidArgument("{}: {} activations given, {} expected", op, names.size(), want);
  }
  auto list = [&](const char* name) {
    auto it = attrs.float_lists.find(name);
    return it == attrs.float_lists.end() ? std::vector<float>{} : it->second;
  };
  std::vector<float> alphas = list("activation_alpha"), betas = list("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<RnnActivation> out;
  for (const std::string& name : names) {
    std::string lower = name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const ActivationName* found = nullptr;
    for (const ActivationName& a : kActivationNames) {
      if (lower == a.name) found = &a;
    }
    if (found == nullptr) {
      return invalidArgument("{}: activation '{}' has no CUDA kernel", op, name);
    }
    RnnActivation act{found->kind, found->alpha, found->beta};
    if (found->takes_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (found->takes_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    out.push_back(act);
  }
  return out;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

/// Byte offsets of the workspace's buffers (rnn_device.h names them), each 256-byte aligned.
struct WorkspaceLayout {
  size_t gemm = 0, xw = 0, hr = 0, hn = 0, h = 0, rh = 0, hf = 0, c = 0;
  size_t total = 0;
  bool fits = true;  ///< false when a size overflows
};

WorkspaceLayout layoutOf(const RnnArgs& args) {
  WorkspaceLayout l;
  const int64_t gh = infoOf(args.cell).gates * args.hidden;
  const bool reset_first = args.cell == RnnCell::kGru && !args.linear_before_reset;
  const auto elem = static_cast<size_t>(dataTypeBits(args.x.dtype) / 8);
  size_t at = 0;
  auto take = [&](size_t* offset, std::initializer_list<int64_t> factors, size_t bytes) {
    size_t n = bytes;
    for (int64_t f : factors) {
      if (f < 0 || __builtin_mul_overflow(n, static_cast<size_t>(f), &n)) l.fits = false;
    }
    if (!l.fits) return;
    *offset = at;
    if (__builtin_add_overflow(at, (n + kAlign - 1) / kAlign * kAlign, &at)) l.fits = false;
  };
  take(&l.gemm, {}, kGemmWorkspaceBytes);
  take(&l.xw, {args.seq, args.batch, args.dirs, gh}, sizeof(float));
  take(&l.hr, {args.dirs, args.batch, reset_first ? 2 * args.hidden : gh}, sizeof(float));
  if (reset_first) take(&l.hn, {args.dirs, args.batch, args.hidden}, sizeof(float));
  take(&l.h, {args.dirs, args.batch, args.hidden}, elem);
  if (reset_first) take(&l.rh, {args.dirs, args.batch, args.hidden}, elem);
  take(&l.hf, {args.dirs, args.batch, args.hidden}, sizeof(float));
  if (args.cell == RnnCell::kLstm) take(&l.c, {args.dirs, args.batch, args.hidden}, sizeof(float));
  l.total = at;
  return l;
}

/// Products of at most this many multiply-adds per matrix run in rnn.cu's plain kernel: at such
/// sizes it costs less than cuBLASLt's launch.
constexpr int64_t kPlainProductWork = 4096;

/// D = A B^T in float: A is T, row-major [m, k] (`batch` matrices stride_a elements apart), B is
/// T, row-major [n, k] (stride_b apart), D float, row-major [m, n] (stride_d apart). Set up once
/// (descriptors, layouts, the algorithm for these pointers' alignment) and run every step; small
/// products, and those cuBLASLt has no algorithm for, run in the plain kernel.
class StepGemm {
 public:
  struct Shape {
    int64_t m = 0, n = 0, k = 0;
    int32_t batch = 1;
    int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  };

  static StatusOr<std::unique_ptr<StepGemm>> create(DataType dtype, const Shape& s, const void* a,
                                                    const void* b, const float* d,
                                                    size_t workspace_bytes, const std::string& op,
                                                    CudaDeviceContext& ctx) {
    auto g = std::make_unique<StepGemm>();
    g->op_ = op;
    g->workspace_bytes_ = workspace_bytes;
    g->plain_ = RnnProductArgs{dtype,   s.m,     s.n,        s.k,        s.batch,   nullptr,
                               nullptr, nullptr, s.stride_a, s.stride_b, s.stride_d};
    if (s.m * s.n * s.k <= kPlainProductWork) return g;
    ASSIGN_OR_RETURN(g->handle_, ltHandle(ctx, op));
    cudaDataType_t type = cudaTypeOf(dtype);
    auto elem = static_cast<int64_t>(dataTypeBits(dtype) / 8);
    cublasLtMatmulDesc_t desc = nullptr;
    ONNXOPT_CUDA_CHECK(cublasLtMatmulDescCreate(&desc, ltComputeType(ctx, dtype), CUDA_R_32F), op);
    g->desc_.reset(desc);
    cublasOperation_t trans = CUBLAS_OP_T, none = CUBLAS_OP_N;
    ONNXOPT_CUDA_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans),
        op);
    ONNXOPT_CUDA_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none), op);
    // cuBLASLt's A: our B, stored column-major k x n; its B: our A, k x m; D: n x m.
    ASSIGN_OR_RETURN(g->slot_a_, makeLayout(type, s.k, s.n, s.k, s.batch, s.stride_b, op));
    ASSIGN_OR_RETURN(g->slot_b_, makeLayout(type, s.k, s.m, s.k, s.batch, s.stride_a, op));
    ASSIGN_OR_RETURN(g->slot_d_, makeLayout(CUDA_R_32F, s.n, s.m, s.n, s.batch, s.stride_d, op));

    cublasLtMatmulPreference_t pref_raw = nullptr;
    ONNXOPT_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref_raw), op);
    LtPreference pref(pref_raw);
    ONNXOPT_CUDA_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref_raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_bytes, sizeof workspace_bytes),
        op);
    // The buffers' real alignment (a slice of R, an arena offset), not the 256 bytes cuBLASLt
    // assumes by default.
    uint32_t align_a = alignmentOf(b, {s.stride_b * elem, s.k * elem});
    uint32_t align_b = alignmentOf(a, {s.stride_a * elem, s.k * elem});
    uint32_t align_d = alignmentOf(d, {s.stride_d * 4, s.n * 4});
    for (auto [attr, value] : {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
                               std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
                               std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d},
                               std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d}}) {
      ONNXOPT_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_raw, attr, &value, sizeof value),
                         op);
    }
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    ONNXOPT_CUDA_CHECK(cublasLtMatmulAlgoGetHeuristic(
                           g->handle_, desc, g->slot_a_.get(), g->slot_b_.get(), g->slot_d_.get(),
                           g->slot_d_.get(), pref_raw, 1, &heuristic, &found),
                       op);
    if (found == 0) return g;  // the plain kernel
    g->algo_ = heuristic.algo;
    g->lt_ = true;
    return g;
  }

  Status run(const void* a, const void* b, float* d, void* workspace, cudaStream_t stream) const {
    if (!lt_) {
      RnnProductArgs p = plain_;
      p.a = a;
      p.b = b;
      p.d = d;
      ONNXOPT_CUDA_CHECK(launchRnnProduct(p, stream), op_);
      return Status::ok();
    }
    const float alpha = 1.0f, beta = 0.0f;
    ONNXOPT_CUDA_CHECK(cublasLtMatmul(handle_, desc_.get(), &alpha, b, slot_a_.get(), a,
                                      slot_b_.get(), &beta, d, slot_d_.get(), d, slot_d_.get(),
                                      &algo_, workspace, workspace_bytes_, stream),
                       op_);
    return Status::ok();
  }

 private:
  /// The largest power of two (at most 256) dividing the pointer and every byte step from it.
  static uint32_t alignmentOf(const void* p, std::initializer_list<int64_t> steps) {
    uint64_t bits = reinterpret_cast<uintptr_t>(p) | kAlign;
    for (int64_t s : steps) bits |= static_cast<uint64_t>(s);
    return static_cast<uint32_t>(bits & (~bits + 1));
  }

  std::string op_;
  cublasLtHandle_t handle_ = nullptr;
  LtDesc desc_;
  LtLayout slot_a_, slot_b_, slot_d_;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_bytes_ = 0;
  bool lt_ = false;       ///< cuBLASLt runs it; else the plain kernel with plain_
  RnnProductArgs plain_;  ///< pointers set per run
};

Support checkShape(const RnnArgs& args, const ConstTensorView& v, const std::vector<int64_t>& dims,
                   const char* what) {
  if (v.dtype == DataType::kUndefined || v.dims == dims) return Support::yes();
  return Support::no(fmt::format("{}: {} is {}; the node's sizes make it {}", args.op, what,
                                 dimsText(v.dims), dimsText(dims)));
}

}  // namespace

template <>
StatusOr<RnnArgs> argsFromCall<RnnArgs>(const CudaKernelCall& call) {
  RnnArgs args;
  args.op = call.op;
  if (call.op == "LSTM") {
    args.cell = RnnCell::kLstm;
  } else if (call.op == "GRU") {
    args.cell = RnnCell::kGru;
  } else if (call.op == "RNN") {
    args.cell = RnnCell::kRnn;
  } else {
    return invalidArgument("{}: not a recurrent CUDA kernel", call.op);
  }
  CellInfo info = infoOf(args.cell);
  if (call.inputs.size() < 3 || call.inputs.size() > info.max_inputs) {
    return invalidArgument("{}: {} inputs; the op takes 3 to {}", call.op, call.inputs.size(),
                           info.max_inputs);
  }
  if (call.outputs.empty() || call.outputs.size() > info.max_outputs) {
    return invalidArgument("{}: {} outputs; the op has 1 to {}", call.op, call.outputs.size(),
                           info.max_outputs);
  }
  for (size_t i = 0; i < 3; ++i) {
    if (call.inputs[i].dtype == DataType::kUndefined) {
      return invalidArgument("{}: input {} is required", call.op, i);
    }
  }
  const KernelAttrs& attrs = attrsOf(call);
  args.x = call.inputs[0];
  args.w = call.inputs[1];
  args.r = call.inputs[2];
  args.b = inputOf(call, 3);
  args.seq_lens = inputOf(call, 4);
  args.initial_h = inputOf(call, 5);
  if (args.cell == RnnCell::kLstm) {
    args.initial_c = inputOf(call, 6);
    args.p = inputOf(call, 7);
  }
  auto output = [&](size_t i) { return i < call.outputs.size() ? call.outputs[i] : TensorView{}; };
  args.y = output(0);
  args.y_h = output(1);
  args.y_c = output(2);

  std::string direction = attrs.getString("direction", "forward");
  if (direction == "bidirectional") {
    args.dirs = 2;
  } else if (direction == "reverse") {
    args.reverse_only = true;
  } else if (direction != "forward") {
    return invalidArgument("{}: unknown direction '{}'", call.op, direction);
  }
  int64_t layout = call.opset >= 14 ? attrs.getInt("layout", 0) : 0;
  if (layout != 0 && layout != 1) return invalidArgument("{}: layout {}", call.op, layout);
  args.batch_first = layout == 1;
  if (args.x.rank() != 3) return invalidArgument("{}: X must have rank 3", call.op);
  if (args.r.rank() != 3) return invalidArgument("{}: R must have rank 3", call.op);
  args.seq = args.x.dims[args.batch_first ? 1 : 0];
  args.batch = args.x.dims[args.batch_first ? 0 : 1];
  args.input = args.x.dims[2];
  args.hidden = args.r.dims[2];
  if (attrs.has("hidden_size") && attrs.getInt("hidden_size", 0) != args.hidden) {
    return invalidArgument("{}: hidden_size {} does not match R's last dimension {}", call.op,
                           attrs.getInt("hidden_size", 0), args.hidden);
  }
  if (attrs.has("clip")) {
    args.clipped = true;
    args.clip = attrs.getFloat("clip", 0);
    if (!(args.clip > 0)) return invalidArgument("{}: clip must be positive", call.op);
  }
  args.linear_before_reset = attrs.getInt("linear_before_reset", 0) != 0;
  args.input_forget = attrs.getInt("input_forget", 0) != 0;
  ASSIGN_OR_RETURN(args.acts, parseActivations(call.op, attrs, info, args.dirs));
  if (args.seq_lens.dtype != DataType::kUndefined && constantInput(call, 4) != nullptr) {
    ASSIGN_OR_RETURN(args.constant_lens, constantInts(call, 4, "sequence_lens"));
  }
  args.workspace = call.workspace;
  args.workspace_bytes = call.workspace_bytes;
  return args;
}

Support canImplement(const RnnArgs& args) {
  DataType t = args.x.dtype;
  if (!rnnKernelExists(t)) {
    return Support::no(fmt::format("{}: no CUDA kernel for {}", args.op, dataTypeName(t)));
  }
  const std::pair<const ConstTensorView*, const char*> floats[] = {{&args.x, "X"},
                                                                   {&args.w, "W"},
                                                                   {&args.r, "R"},
                                                                   {&args.b, "B"},
                                                                   {&args.initial_h, "initial_h"},
                                                                   {&args.initial_c, "initial_c"},
                                                                   {&args.p, "P"}};
  for (const auto& [view, what] : floats) {
    if (view->dtype != DataType::kUndefined && view->dtype != t) {
      return Support::no(fmt::format("{}: {} is {}, X {}; the CUDA kernel takes one type", args.op,
                                     what, dataTypeName(view->dtype), dataTypeName(t)));
    }
  }
  if (args.seq_lens.dtype != DataType::kUndefined && args.seq_lens.dtype != DataType::kInt32) {
    return Support::no(fmt::format("{}: sequence_lens is {}, not int32", args.op,
                                   dataTypeName(args.seq_lens.dtype)));
  }
  const int64_t gh = infoOf(args.cell).gates * args.hidden;
  const int64_t d = args.dirs, b = args.batch, h = args.hidden;
  std::vector<int64_t> state =
      args.batch_first ? std::vector<int64_t>{b, d, h} : std::vector<int64_t>{d, b, h};
  for (Support s :
       {checkShape(args, args.w, {d, gh, args.input}, "W"),
        checkShape(args, args.r, {d, gh, h}, "R"), checkShape(args, args.b, {d, 2 * gh}, "B"),
        checkShape(args, args.seq_lens, {b}, "sequence_lens"),
        checkShape(args, args.initial_h, state, "initial_h"),
        checkShape(args, args.initial_c, state, "initial_c"),
        checkShape(args, args.p, {d, 3 * h}, "P")}) {
    if (!s) return s;
  }
  std::vector<int64_t> y_dims = args.batch_first ? std::vector<int64_t>{b, args.seq, d, h}
                                                 : std::vector<int64_t>{args.seq, d, b, h};
  const std::pair<const TensorView*, const char*> outs[] = {
      {&args.y, "Y"}, {&args.y_h, "Y_h"}, {&args.y_c, "Y_c"}};
  for (size_t i = 0; i < 3; ++i) {
    const TensorView& v = *outs[i].first;
    if (v.dtype == DataType::kUndefined) continue;
    if (v.dtype != t) {
      return Support::no(fmt::format("{}: {} is {}, X {}", args.op, outs[i].second,
                                     dataTypeName(v.dtype), dataTypeName(t)));
    }
    if (Support s = checkShape(args, v, i == 0 ? y_dims : state, outs[i].second); !s) return s;
    if (Support s = requireDevice(args.op, v, outs[i].second); !s) return s;
    if (!v.isContiguous()) {
      return Support::no(
          fmt::format("{}: the CUDA kernel writes a contiguous {}", args.op, outs[i].second));
    }
  }
  const std::pair<const ConstTensorView*, const char*> all[] = {
      floats[0], floats[1], floats[2], floats[3], {&args.seq_lens, "sequence_lens"},
      floats[4], floats[5], floats[6]};
  for (const auto& [view, what] : all) {
    if (view->dtype == DataType::kUndefined) continue;
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
    if (!view->isContiguous()) {
      return Support::no(fmt::format("{}: the CUDA kernel reads a contiguous {}", args.op, what));
    }
  }
  for (int64_t len : args.constant_lens) {
    if (len < 0 || len > args.seq) {
      return Support::no(
          fmt::format("{}: sequence length {} outside [0, {}]", args.op, len, args.seq));
    }
  }
  if (args.batch > INT32_MAX || args.seq * args.batch > INT32_MAX || gh * d > INT32_MAX ||
      !layoutOf(args).fits) {
    return Support::no(fmt::format("{}: sizes beyond the CUDA kernel's 32-bit products", args.op));
  }
  return Support::yes();
}

size_t workspaceBytes(const RnnArgs& args) {
  WorkspaceLayout l = layoutOf(args);
  return l.fits ? l.total : 0;
}

Status launch(const RnnArgs& args, CudaDeviceContext& ctx) {
  if (Support s = canImplement(args); !s) return refused(s);
  const CudaStream stream = ctx.stream();
  WorkspaceLayout l = layoutOf(args);
  if (args.workspace == nullptr || args.workspace_bytes < l.total) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: the workspace has {} bytes; the kernel needs {}", args.op,
                              args.workspace_bytes, l.total));
  }
  const int64_t units = args.dirs * args.batch * args.hidden;
  if (units == 0) return Status::ok();  // every output is empty
  cudaStream_t s = streamOf(stream);
  auto* ws = static_cast<char*>(args.workspace);
  const CellInfo info = infoOf(args.cell);
  const int64_t gh = info.gates * args.hidden;
  const bool reset_first = args.cell == RnnCell::kGru && !args.linear_before_reset;

  RnnDeviceArgs d;
  d.cell = args.cell;
  d.dtype = args.x.dtype;
  d.seq = args.seq;
  d.batch = args.batch;
  d.hidden = args.hidden;
  d.dirs = args.dirs;
  d.reverse_only = args.reverse_only;
  d.batch_first = args.batch_first;
  d.linear_before_reset = args.linear_before_reset;
  d.input_forget = args.input_forget;
  d.clipped = args.clipped;
  d.clip = args.clip;
  std::copy(args.acts.begin(), args.acts.end(), d.acts);
  d.bias = args.b.data;
  d.peephole = args.p.data;
  d.seq_lens = static_cast<const int32_t*>(args.seq_lens.data);
  d.initial_h = args.initial_h.data;
  d.initial_c = args.initial_c.data;
  auto* xw = reinterpret_cast<float*>(ws + l.xw);
  auto* hr = reinterpret_cast<float*>(ws + l.hr);
  auto* hn = reinterpret_cast<float*>(ws + l.hn);
  d.xw = xw;
  d.hr = hr;
  d.hn = reset_first ? hn : nullptr;
  d.h = ws + l.h;
  d.rh = reset_first ? ws + l.rh : nullptr;
  d.hf = reinterpret_cast<float*>(ws + l.hf);
  d.c = args.cell == RnnCell::kLstm ? reinterpret_cast<float*>(ws + l.c) : nullptr;
  d.y = args.y.dtype != DataType::kUndefined ? args.y.data : nullptr;
  d.y_h = args.y_h.dtype != DataType::kUndefined ? args.y_h.data : nullptr;
  d.y_c = args.y_c.dtype != DataType::kUndefined ? args.y_c.data : nullptr;

  ONNXOPT_CUDA_CHECK(launchRnnInit(d, s), args.op);
  if (args.seq > 0) {
    void* gemm_ws = ws + l.gemm;
    // X W^T for every step and both directions: W is [D * G * H, I] row-major.
    int64_t rows = args.seq * args.batch;
    if (args.input == 0) {
      ONNXOPT_CUDA_CHECK(
          cudaMemsetAsync(xw, 0, static_cast<size_t>(rows * args.dirs * gh) * sizeof(float), s),
          args.op);
    } else {
      StepGemm::Shape xs{rows, args.dirs * gh, args.input};
      ASSIGN_OR_RETURN(auto gemm, StepGemm::create(args.x.dtype, xs, args.x.data, args.w.data, xw,
                                                   kGemmWorkspaceBytes, args.op, ctx));
      RETURN_IF_ERROR(gemm->run(args.x.data, args.w.data, xw, gemm_ws, s));
    }
    // Per step: H R^T batched over the directions (R_d is [G * H, H]); with
    // linear_before_reset 0, the z and r rows first, then (r . H) by the candidate rows.
    const auto elem = static_cast<int64_t>(dataTypeBits(args.x.dtype) / 8);
    int64_t n = reset_first ? 2 * args.hidden : gh;
    auto batch = static_cast<int32_t>(args.dirs);
    StepGemm::Shape hs{
        args.batch,    n, args.hidden, batch, args.batch * args.hidden, gh * args.hidden,
        args.batch * n};
    ASSIGN_OR_RETURN(auto step_gemm, StepGemm::create(args.x.dtype, hs, d.h, args.r.data, hr,
                                                      kGemmWorkspaceBytes, args.op, ctx));
    std::unique_ptr<StepGemm> reset_gemm;
    const void* r_h = static_cast<const char*>(args.r.data) + 2 * args.hidden * args.hidden * elem;
    if (reset_first) {
      StepGemm::Shape rs{args.batch,
                         args.hidden,
                         args.hidden,
                         batch,
                         args.batch * args.hidden,
                         gh * args.hidden,
                         args.batch * args.hidden};
      ASSIGN_OR_RETURN(reset_gemm, StepGemm::create(args.x.dtype, rs, d.rh, r_h, hn,
                                                    kGemmWorkspaceBytes, args.op, ctx));
    }
    for (int64_t step = 0; step < args.seq; ++step) {
      RETURN_IF_ERROR(step_gemm->run(d.h, args.r.data, hr, gemm_ws, s));
      if (reset_first) {
        ONNXOPT_CUDA_CHECK(launchRnnReset(d, step, s), args.op);
        RETURN_IF_ERROR(reset_gemm->run(d.rh, r_h, hn, gemm_ws, s));
      }
      ONNXOPT_CUDA_CHECK(launchRnnStep(d, step, s), args.op);
    }
  }
  ONNXOPT_CUDA_CHECK(launchRnnFinal(d, s), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
