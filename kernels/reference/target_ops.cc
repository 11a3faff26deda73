// Reference kernels of our own domain's ops (ai.onnxopt 1, include/onnxopt/passes/target_ops.h):
// each is its function body run through the standard ops' reference kernels, in that order and
// element type, so a call and its inlined body give the same bits. They are the oracle of the
// CUDA kernels (tests/kernels/cuda) and what a CPU fallback runs.
//
//   MatMulBias(A, B, bias)      = Add(MatMul(A, B), bias)
//   MatMulBiasRelu(A, B, bias)  = Relu(MatMulBias(A, B, bias))
//   MatMulBiasGelu(A, B, bias)  = Gelu<approximate>(MatMulBias(A, B, bias))
//   SkipLayerNormalization(X, Skip, Scale, B) = (LayerNormalization<axis, epsilon>(S, Scale, B), S),
//                                                S = Add(X, Skip)
//   SkipRMSNormalization(X, Skip, Scale) = (RMSNormalization<axis, epsilon>(S, Scale), S)
//   SwiGlu(A) = Mul(Mul(G, Sigmoid(G)), U),  GeGlu<approximate>(A) = Mul(Gelu<approximate>(G), U),
//     G, U = Split<axis=-1, num_outputs=2>(A)
//   NhwcConv(X, W, B)          = T<q>(Conv(T<p>(X), T<p>(W), B))   p = [0, 3, 1, 2], q = [0, 2, 3, 1]
//   NhwcConvRelu(X, W, B)      = Relu(NhwcConv(X, W, B))
//   NhwcConvAddRelu(X, W, B, Z) = Relu(Add(NhwcConv(X, W, B), Z))
//   NhwcMaxPool(X), NhwcAveragePool(X) = T<q>(MaxPool / AveragePool(T<p>(X)))
//   SafeAttention<num_heads, scale>(Q, K, V, M) = merge(MatMul(Where(IsNaN(P), 0, P), split(V))),
//     P = Softmax<-1>(Add(Mul(MatMul(split(Q), T<0,2,3,1>(R(K))), CastLike(scale)), M)),
//     split(x) = T<0,2,1,3>(R(x)), R(x) = Reshape(x, [0, 0, num_heads, -1]),
//     merge(y) = Reshape(T<0,2,1,3>(y), [0, 0, -1])
//   SafePackedAttention(QKV, M) = SafeAttention(Split<axis=2, num_outputs=3>(QKV), M)
//   PackedAttention(QKV) = merge(MatMul(Softmax<-1>(Mul(MatMul(split(Q), T<0,2,3,1>(R(K))),
//     CastLike(scale))), split(V))),  Q, K, V = Split<axis=2>(QKV) of [B, S, 3E]
//   SeqFirstPackedAttention(QKV) = seq_merge(MatMul(Softmax<-1>(Mul(MatMul(seq_split(Q),
//     T<1,2,3,0>(R(K))), CastLike(scale))), seq_split(V))),  Q, K, V = Split<axis=2>(QKV) of
//     [S, B, 3E], seq_split(x) = T<1,2,0,3>(R(x)), seq_merge(y) = Reshape(T<2,0,1,3>(y), [0, 0, -1])
#include "common.h"
#include "onnxopt/kernels/reference.h"
#include "ops.h"

namespace onnxopt::kernels::ref {
namespace {

// The default-domain opsets the bodies are run at: each op's semantics since then.
constexpr int64_t kOpset = 20;

bool isFloat(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16 ||
         t == DataType::kDouble;
}

StatusOr<HostTensor> call(const KernelContext& ctx, const char* op,
                          const std::vector<const HostTensor*>& inputs,
                          const KernelAttrs& attrs = {}) {
  auto out = runReferenceKernel(op, kOpset, inputs, attrs, 1);
  if (!out.isOk()) return out.status().withContext(ctx.op);
  return std::move((*out)[0]);
}

/// Transpose<perm>(t).
StatusOr<HostTensor> transposed(const KernelContext& ctx, const HostTensor& t,
                                const std::vector<int64_t>& perm) {
  KernelAttrs attrs;
  attrs.int_lists["perm"] = perm;
  return call(ctx, "Transpose", {&t}, attrs);
}

/// The op's name without a domain prefix.
std::string opName(const KernelContext& ctx) {
  return ctx.op.substr(ctx.op.rfind('.') + 1);
}

const std::vector<int64_t> kToNchw = {0, 3, 1, 2};
const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};

/// A 4-D input of a channels-last op, or an error naming it.
Status require4d(const KernelContext& ctx, size_t i, const char* what) {
  if (ctx.input(i) == nullptr || ctx.input(i)->dims.size() != 4) {
    return invalidArgument("{}: {} must be a 4-D tensor", ctx.op, what);
  }
  return Status::ok();
}

}  // namespace

StatusOr<Outputs> nhwcConvKernel(const KernelContext& ctx) {
  std::string op = opName(ctx);
  bool with_z = op == "NhwcConvAddRelu";
  if (ctx.numInputs() < (with_z ? 4u : 2u)) {
    return invalidArgument("{}: takes X, W, B{}", ctx.op, with_z ? " and Z" : "");
  }
  RETURN_IF_ERROR(require4d(ctx, 0, "X"));
  RETURN_IF_ERROR(require4d(ctx, 1, "W"));
  if (!isFloat(ctx.input(0)->dtype)) return unsupportedType(ctx, ctx.input(0)->dtype);
  ASSIGN_OR_RETURN(HostTensor x, transposed(ctx, *ctx.input(0), kToNchw));
  ASSIGN_OR_RETURN(HostTensor w, transposed(ctx, *ctx.input(1), kToNchw));
  std::vector<const HostTensor*> operands = {&x, &w};
  if (ctx.input(2) != nullptr) operands.push_back(ctx.input(2));
  ASSIGN_OR_RETURN(HostTensor conv, call(ctx, "Conv", operands, ctx.attrs));
  ASSIGN_OR_RETURN(HostTensor y, transposed(ctx, conv, kToNhwc));
  if (with_z) {
    ASSIGN_OR_RETURN(y, call(ctx, "Add", {&y, ctx.input(3)}));
  }
  if (op != "NhwcConv") {
    ASSIGN_OR_RETURN(y, call(ctx, "Relu", {&y}));
  }
  Outputs out;
  out.push_back(std::move(y));
  return out;
}

StatusOr<Outputs> nhwcPoolKernel(const KernelContext& ctx) {
  RETURN_IF_ERROR(require4d(ctx, 0, "X"));
  if (!isFloat(ctx.input(0)->dtype)) return unsupportedType(ctx, ctx.input(0)->dtype);
  ASSIGN_OR_RETURN(HostTensor x, transposed(ctx, *ctx.input(0), kToNchw));
  const char* pool = opName(ctx) == "NhwcMaxPool" ? "MaxPool" : "AveragePool";
  ASSIGN_OR_RETURN(HostTensor y, call(ctx, pool, {&x}, ctx.attrs));
  ASSIGN_OR_RETURN(y, transposed(ctx, y, kToNhwc));
  Outputs out;
  out.push_back(std::move(y));
  return out;
}

StatusOr<Outputs> matMulBiasKernel(const KernelContext& ctx) {
  if (ctx.numInputs() != 3 || ctx.input(2) == nullptr) {
    return invalidArgument("{}: takes A, B and bias", ctx.op);
  }
  if (!isFloat(ctx.input(0)->dtype)) return unsupportedType(ctx, ctx.input(0)->dtype);
  ASSIGN_OR_RETURN(HostTensor product, call(ctx, "MatMul", {ctx.input(0), ctx.input(1)}));
  ASSIGN_OR_RETURN(HostTensor y, call(ctx, "Add", {&product, ctx.input(2)}));
  const std::string& op = ctx.op;
  if (op.size() > 4 && op.compare(op.size() - 4, 4, "Relu") == 0) {
    ASSIGN_OR_RETURN(y, call(ctx, "Relu", {&y}));
  } else if (op.size() > 4 && op.compare(op.size() - 4, 4, "Gelu") == 0) {
    KernelAttrs attrs;
    if (auto it = ctx.attrs.strings.find("approximate"); it != ctx.attrs.strings.end()) {
      attrs.strings["approximate"] = it->second;
    }
    ASSIGN_OR_RETURN(y, call(ctx, "Gelu", {&y}, attrs));
  }
  Outputs out;
  out.push_back(std::move(y));
  return out;
}

StatusOr<Outputs> skipLayerNormKernel(const KernelContext& ctx) {
  // SkipRMSNormalization: RMSNormalization (opset 23) of the sum, no B.
  const bool rms = opName(ctx) == "SkipRMSNormalization";
  if (ctx.numInputs() < 3 || ctx.input(1) == nullptr || ctx.input(2) == nullptr ||
      (rms && ctx.numInputs() > 3)) {
    return invalidArgument("{}: takes X, Skip, Scale{}", ctx.op, rms ? "" : " and an optional B");
  }
  if (!isFloat(ctx.input(0)->dtype)) return unsupportedType(ctx, ctx.input(0)->dtype);
  if (ctx.input(1)->dims != ctx.input(0)->dims) {
    return invalidArgument("{}: Skip must have X's shape", ctx.op);
  }
  ASSIGN_OR_RETURN(HostTensor sum, call(ctx, "Add", {ctx.input(0), ctx.input(1)}));
  KernelAttrs attrs;
  if (auto it = ctx.attrs.ints.find("axis"); it != ctx.attrs.ints.end()) {
    attrs.ints["axis"] = it->second;
  }
  if (auto it = ctx.attrs.floats.find("epsilon"); it != ctx.attrs.floats.end()) {
    attrs.floats["epsilon"] = it->second;
  }
  std::vector<const HostTensor*> operands = {&sum, ctx.input(2)};
  if (!rms) operands.push_back(ctx.input(3));
  auto normalized = runReferenceKernel(rms ? "RMSNormalization" : "LayerNormalization",
                                       rms ? 23 : kOpset, operands, attrs, 1);
  if (!normalized.isOk()) return normalized.status().withContext(ctx.op);
  Outputs out;
  out.push_back(std::move((*normalized)[0]));
  if (ctx.num_outputs > 1) out.push_back(std::move(sum));
  return out;
}

StatusOr<Outputs> gluKernel(const KernelContext& ctx) {
  if (ctx.numInputs() != 1 || ctx.input(0) == nullptr)
    return invalidArgument("{}: takes A", ctx.op);
  const HostTensor& a = *ctx.input(0);
  if (!isFloat(a.dtype)) return unsupportedType(ctx, a.dtype);
  if (a.dims.empty() || a.dims.back() % 2 != 0) {
    return invalidArgument("{}: A must have an even last dim ([..., 2N])", ctx.op);
  }
  KernelAttrs split;
  split.ints["axis"] = -1;
  split.ints["num_outputs"] = 2;
  auto halves = runReferenceKernel("Split", kOpset, {&a}, split, 2);
  if (!halves.isOk()) return halves.status().withContext(ctx.op);
  const HostTensor& g = (*halves)[0];
  HostTensor gate;
  if (opName(ctx) == "GeGlu") {
    KernelAttrs attrs;
    if (auto it = ctx.attrs.strings.find("approximate"); it != ctx.attrs.strings.end()) {
      attrs.strings["approximate"] = it->second;
    }
    ASSIGN_OR_RETURN(gate, call(ctx, "Gelu", {&g}, attrs));
  } else {
    ASSIGN_OR_RETURN(HostTensor s, call(ctx, "Sigmoid", {&g}));
    ASSIGN_OR_RETURN(gate, call(ctx, "Mul", {&g, &s}));
  }
  ASSIGN_OR_RETURN(HostTensor y, call(ctx, "Mul", {&gate, &(*halves)[1]}));
  Outputs out;
  out.push_back(std::move(y));
  return out;
}

namespace {

/// The attention of Q, K, V ([B, S, E], or [S, B, E] when `seq_first`) and, where there is a
/// fourth input, SafeAttention's: the mask M added, the softmax's NaNs made 0.
StatusOr<Outputs> attentionBody(const KernelContext& ctx, const std::vector<const HostTensor*>& in,
                                bool seq_first) {
  const HostTensor& q = *in[0];
  if (!isFloat(q.dtype)) return unsupportedType(ctx, q.dtype);
  auto heads = ctx.attrs.ints.find("num_heads");
  auto scale = ctx.attrs.floats.find("scale");
  if (heads == ctx.attrs.ints.end() || heads->second < 1 || scale == ctx.attrs.floats.end()) {
    return invalidArgument("{}: needs num_heads (positive) and scale", ctx.op);
  }
  for (size_t i = 0; i < 3; ++i) {
    if (in[i]->dims.size() != 3) {
      return invalidArgument("{}: input {} must be 3-D [batch, seq, heads * size]", ctx.op, i);
    }
  }
  auto ints = [](const std::vector<int64_t>& v) {
    HostTensor t = HostTensor::zeros(DataType::kInt64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.set<int64_t>(static_cast<int64_t>(i), v[i]);
    return t;
  };
  const HostTensor split_shape = ints({0, 0, heads->second, -1}), merge_shape = ints({0, 0, -1});
  auto split = [&](const HostTensor& x, const std::vector<int64_t>& perm) -> StatusOr<HostTensor> {
    ASSIGN_OR_RETURN(HostTensor r, call(ctx, "Reshape", {&x, &split_shape}));
    return transposed(ctx, r, perm);
  };
  const std::vector<int64_t> heads_first =
      seq_first ? std::vector<int64_t>{1, 2, 0, 3} : std::vector<int64_t>{0, 2, 1, 3};
  ASSIGN_OR_RETURN(HostTensor q4, split(q, heads_first));
  ASSIGN_OR_RETURN(HostTensor kt, split(*in[1], seq_first ? std::vector<int64_t>{1, 2, 3, 0}
                                                          : std::vector<int64_t>{0, 2, 3, 1}));
  ASSIGN_OR_RETURN(HostTensor v4, split(*in[2], heads_first));
  ASSIGN_OR_RETURN(HostTensor s, call(ctx, "MatMul", {&q4, &kt}));
  HostTensor c = HostTensor::zeros(DataType::kFloat, {});
  c.set<float>(0, scale->second);
  ASSIGN_OR_RETURN(HostTensor cs, call(ctx, "CastLike", {&c, &s}));
  ASSIGN_OR_RETURN(s, call(ctx, "Mul", {&s, &cs}));
  const bool masked = in.size() == 4;
  if (masked) {
    ASSIGN_OR_RETURN(s, call(ctx, "Add", {&s, in[3]}));
  }
  KernelAttrs axis;
  axis.ints["axis"] = -1;
  ASSIGN_OR_RETURN(HostTensor p, call(ctx, "Softmax", {&s}, axis));
  if (masked) {
    ASSIGN_OR_RETURN(HostTensor nan, call(ctx, "IsNaN", {&p}));
    HostTensor zero = HostTensor::zeros(p.dtype, {});
    ASSIGN_OR_RETURN(p, call(ctx, "Where", {&nan, &zero, &p}));
  }
  ASSIGN_OR_RETURN(HostTensor y4, call(ctx, "MatMul", {&p, &v4}));
  ASSIGN_OR_RETURN(HostTensor y3, transposed(ctx, y4,
                                             seq_first ? std::vector<int64_t>{2, 0, 1, 3}
                                                       : std::vector<int64_t>{0, 2, 1, 3}));
  ASSIGN_OR_RETURN(HostTensor y, call(ctx, "Reshape", {&y3, &merge_shape}));
  Outputs out;
  out.push_back(std::move(y));
  return out;
}

}  // namespace

StatusOr<Outputs> safeAttentionKernel(const KernelContext& ctx) {
  if (ctx.numInputs() != 4 || ctx.input(3) == nullptr) {
    return invalidArgument("{}: takes Q, K, V and M", ctx.op);
  }
  return attentionBody(ctx, {ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3)}, false);
}

namespace {

/// The attention of QKV's three equal parts (Split<axis=2>), with input 1 as the mask when
/// `masked` (SafePackedAttention).
StatusOr<Outputs> packedAttention(const KernelContext& ctx, bool masked, bool seq_first) {
  const size_t inputs = masked ? 2 : 1;
  if (ctx.numInputs() != inputs || ctx.input(0) == nullptr || (masked && ctx.input(1) == nullptr)) {
    return invalidArgument("{}: takes QKV{}", ctx.op, masked ? " and M" : "");
  }
  const HostTensor& qkv = *ctx.input(0);
  if (qkv.dims.size() != 3 || qkv.dims[2] % 3 != 0) {
    return invalidArgument("{}: QKV must be 3-D [{}, 3 * heads * size]", ctx.op,
                           seq_first ? "seq, batch" : "batch, seq");
  }
  KernelAttrs split;
  split.ints["axis"] = 2;
  split.ints["num_outputs"] = 3;
  auto parts = runReferenceKernel("Split", kOpset, {&qkv}, split, 3);
  if (!parts.isOk()) return parts.status().withContext(ctx.op);
  std::vector<const HostTensor*> in = {&(*parts)[0], &(*parts)[1], &(*parts)[2]};
  if (masked) in.push_back(ctx.input(1));
  return attentionBody(ctx, in, seq_first);
}

}  // namespace

StatusOr<Outputs> packedAttentionKernel(const KernelContext& ctx) {
  return packedAttention(ctx, false, false);
}

StatusOr<Outputs> seqFirstPackedAttentionKernel(const KernelContext& ctx) {
  return packedAttention(ctx, false, true);
}

StatusOr<Outputs> safePackedAttentionKernel(const KernelContext& ctx) {
  return packedAttention(ctx, true, false);
}

}  // namespace onnxopt::kernels::ref
