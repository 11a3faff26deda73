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

}  // namespace

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
  if (ctx.numInputs() < 3 || ctx.input(1) == nullptr || ctx.input(2) == nullptr) {
    return invalidArgument("{}: takes X, Skip, Scale and an optional B", ctx.op);
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
  ASSIGN_OR_RETURN(HostTensor y,
                   call(ctx, "LayerNormalization", {&sum, ctx.input(2), ctx.input(3)}, attrs));
  Outputs out;
  out.push_back(std::move(y));
  if (ctx.num_outputs > 1) out.push_back(std::move(sum));
  return out;
}

}  // namespace onnxopt::kernels::ref
