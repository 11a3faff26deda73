// Inference of onnxruntime's contrib ops that onnxruntime-genai's model builder writes
// (com.microsoft 1, and SimplifiedLayerNormalization of the default domain); their reference
// kernels are in kernels/reference/microsoft_ops.cc and microsoft_attention.cc.
#include "helpers.h"

namespace onnxopt::ir::detail {
namespace {

using namespace infer;

/// SimplifiedLayerNormalization: Y is X's shape in scale's type; inv_std_var is float, X's shape
/// with the normalized dims (from axis) 1.
void simplifiedLayerNorm(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  ctx.setOutput(0, elemOr(ctx, 1), x);
  if (ctx.numOutputs() < 2 || !ctx.hasOutput(1)) return;
  std::optional<std::vector<Dim>> stat;
  if (x && !x->empty()) {
    auto axis = normalizeAxis(ctx.attrInt("axis", -1), static_cast<int64_t>(x->size()));
    if (axis.has_value()) {
      stat = *x;
      for (size_t d = static_cast<size_t>(*axis); d < stat->size(); ++d) (*stat)[d] = Dim::known(1);
    }
  }
  ctx.setOutput(1, DataType::kFloat, stat);
}

/// SkipSimplifiedLayerNormalization: output and input_skip_bias_sum (output 3) are input's type;
/// mean and inv_std_var are float, input's shape with the last dim 1.
void skipSimplifiedLayerNorm(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  ctx.setOutput(0, elem, x);
  std::optional<std::vector<Dim>> stat = x;
  if (stat && !stat->empty()) stat->back() = Dim::known(1);
  for (size_t i : {1, 2}) {
    if (ctx.numOutputs() > i && ctx.hasOutput(i)) ctx.setOutput(i, DataType::kFloat, stat);
  }
  if (ctx.numOutputs() > 3 && ctx.hasOutput(3)) ctx.setOutput(3, elem, x);
}

/// RotaryEmbedding: the input's type.
void rotaryEmbedding(InferenceContext& ctx) {
  passThrough(ctx);
}

/// MatMulNBits: A's shape with the last dim N, in A's type.
void matMulNBits(InferenceContext& ctx) {
  auto a = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  const int64_t n = ctx.attrInt("N", 0);
  if (!a || a->empty() || n <= 0) return ctx.setOutputType(0, Type::tensor(elem));
  std::vector<Dim> y = *a;
  y.back() = Dim::known(n);
  ctx.setOutput(0, elem, y);
}

/// The present length of GroupQueryAttention: max(total_sequence_length, past's length), known
/// only where both are (without past: total_sequence_length).
Dim presentLength(InferenceContext& ctx) {
  auto total = ctx.inputInts(6);
  if (!total || total->size() != 1) return Dim::unknown();
  Dim t = Dim::known((*total)[0]);
  if (!ctx.hasInput(3)) return t;
  auto past = ctx.inputShape(3);
  if (!past || past->size() != 4 || !(*past)[2].isKnown()) return Dim::unknown();
  return Dim::known(std::max((*total)[0], (*past)[2].value));
}

/// GroupQueryAttention: output [B, S, N * H] of query's type; present_key and present_value
/// [B, KVN, max(total, past), H], H = query's last dim / N (or / (N + 2 KVN) for packed QKV).
void groupQueryAttention(InferenceContext& ctx) {
  auto q = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  const int64_t heads = ctx.attrInt("num_heads", 0), kv_heads = ctx.attrInt("kv_num_heads", 0);
  const bool packed = !ctx.hasInput(1);
  if (!q || q->size() != 3 || heads <= 0 || kv_heads <= 0) {
    for (size_t i = 0; i < ctx.numOutputs() && i < 3; ++i) {
      if (ctx.hasOutput(i)) ctx.setOutputType(i, Type::tensor(elem));
    }
    return;
  }
  const Dim head = dimFloorDiv((*q)[2], Dim::known(packed ? heads + 2 * kv_heads : heads));
  ctx.setOutput(0, elem, std::vector<Dim>{(*q)[0], (*q)[1], dimMul(Dim::known(heads), head)});
  const std::vector<Dim> cache{(*q)[0], Dim::known(kv_heads), presentLength(ctx), head};
  for (size_t i : {1, 2}) {
    if (ctx.numOutputs() > i && ctx.hasOutput(i)) ctx.setOutput(i, elem, cache);
  }
}

}  // namespace

void registerMicrosoftOps(std::vector<OpInference>& t) {
  t.push_back({"", "SimplifiedLayerNormalization", 1, &simplifiedLayerNorm});
  t.push_back({"com.microsoft", "SkipSimplifiedLayerNormalization", 1, &skipSimplifiedLayerNorm});
  t.push_back({"com.microsoft", "RotaryEmbedding", 1, &rotaryEmbedding});
  t.push_back({"com.microsoft", "MatMulNBits", 1, &matMulNBits});
  t.push_back({"com.microsoft", "GroupQueryAttention", 1, &groupQueryAttention});
}

}  // namespace onnxopt::ir::detail
