// Attention-related reference kernels beside Attention itself (nn_norm.cc):
//   RotaryEmbedding (23)  rotates the first rotary_embedding_dim features of each head by the
//                         angles whose cos/sin the caches hold:
//                           y1 = cos * x1 - sin * x2,  y2 = sin * x1 + cos * x2
//                         (x1, x2: the two halves of the rotated part, or its even and odd
//                         features when interleaved); the remaining features pass through.
//                         Input [B, heads, S, head] or [B, S, heads * head] (num_heads); caches
//                         [max_pos, rot / 2] read at position_ids [B, S], or [B, S, rot / 2].
//   FlexAttention (ai.onnx.preview 1)  Y = softmax(Q K^T * scale) V over rank-4 inputs, with GQA:
//                         Attention's kernel (nn_norm.cc) computes it. Its score_mod/prob_mod
//                         graph attributes run in the reference executor (which composes the op
//                         from MatMul, Softmax and the subgraphs); a node with subgraphs never
//                         reaches a kernel.
// Arithmetic is in double; results round once to the element type.
#include "ops.h"

namespace onnxopt::kernels::ref {

// --- RotaryEmbedding
// ---------------------------------------------------------------------------------

StatusOr<Outputs> rotaryEmbeddingKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* cos_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* sin_t, requireInput(ctx, 2));
  const HostTensor* pos_t = ctx.input(3);
  RETURN_IF_ERROR(checkSameType(ctx, {x, cos_t, sin_t}));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  int64_t rank = x->rank();
  if (rank != 3 && rank != 4) return invalidArgument("RotaryEmbedding: input must be 3-D or 4-D");
  bool interleaved = ctx.attrs.getInt("interleaved", 0) != 0;
  int64_t num_heads = ctx.attrs.getInt("num_heads", 0);
  if (num_heads < 0) return invalidArgument("RotaryEmbedding: num_heads {} is negative", num_heads);

  // Layout: element (b, h, s, d) lives at b * sb + h * hb + s * ssb + d.
  int64_t batch = x->dims[0], heads = 0, seq = 0, head = 0;
  if (rank == 4) {
    heads = x->dims[1];
    seq = x->dims[2];
    head = x->dims[3];
    if (num_heads != 0 && num_heads != heads) {
      return invalidArgument("RotaryEmbedding: num_heads {} contradicts the input's {} heads",
                             num_heads, heads);
    }
  } else {
    if (num_heads == 0) return invalidArgument("RotaryEmbedding: 3-D input needs num_heads");
    seq = x->dims[1];
    if (x->dims[2] % num_heads != 0) {
      return invalidArgument("RotaryEmbedding: hidden size {} is not a multiple of {} heads",
                             x->dims[2], num_heads);
    }
    heads = num_heads;
    head = x->dims[2] / num_heads;
  }
  int64_t hb = rank == 4 ? seq * head : head;
  int64_t ssb = rank == 4 ? head : heads * head;
  int64_t sb = heads * seq * head;

  int64_t rot = ctx.attrs.getInt("rotary_embedding_dim", 0);
  if (rot == 0) rot = head;
  if (rot < 0 || rot > head || rot % 2 != 0) {
    return invalidArgument(
        "RotaryEmbedding: rotary_embedding_dim {} must be even and at most the head size {}", rot,
        head);
  }
  int64_t half = rot / 2;
  if (cos_t->dims != sin_t->dims) {
    return invalidArgument("RotaryEmbedding: cos_cache and sin_cache shapes differ");
  }
  // cache_row[b * seq + s]: the cache row for token (b, s).
  std::vector<int64_t> cache_row(static_cast<size_t>(batch * seq));
  if (pos_t != nullptr) {
    if (cos_t->rank() != 2 || cos_t->dims[1] != half) {
      return invalidArgument("RotaryEmbedding: with position_ids the caches must be [max_pos, {}]",
                             half);
    }
    if (pos_t->dims != Dims{batch, seq}) {
      return invalidArgument("RotaryEmbedding: position_ids must have shape [{}, {}]", batch, seq);
    }
    ASSIGN_OR_RETURN(Dims pos, readInts(*pos_t, "position_ids"));
    for (size_t i = 0; i < pos.size(); ++i) {
      if (pos[i] < 0 || pos[i] >= cos_t->dims[0]) {
        return invalidArgument("RotaryEmbedding: position id {} is outside the cache of {} rows",
                               pos[i], cos_t->dims[0]);
      }
      cache_row[i] = pos[i];
    }
  } else {
    if (cos_t->dims != Dims{batch, seq, half}) {
      return invalidArgument(
          "RotaryEmbedding: without position_ids the caches must be [{}, {}, {}]", batch, seq,
          half);
    }
    for (size_t i = 0; i < cache_row.size(); ++i) cache_row[i] = static_cast<int64_t>(i);
  }

  ASSIGN_OR_RETURN(std::vector<double> y, readFloats<double>(ctx, *x));
  ASSIGN_OR_RETURN(std::vector<double> cosv, readFloats<double>(ctx, *cos_t));
  ASSIGN_OR_RETURN(std::vector<double> sinv, readFloats<double>(ctx, *sin_t));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      int64_t c0 = cache_row[static_cast<size_t>(b * seq + s)] * half;
      for (int64_t h = 0; h < heads; ++h) {
        rotateHead(y.data() + b * sb + h * hb + s * ssb, cosv.data() + c0, sinv.data() + c0,
                   2 * half, interleaved);
      }
    }
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < y.size(); ++i) {
      store<T>(out, static_cast<int64_t>(i), static_cast<Compute<T>>(y[i]));
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

// --- FlexAttention
// ----------------------------------------------------------------------------------

StatusOr<Outputs> flexAttentionKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* q, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* k, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* v, requireInput(ctx, 2));
  if (ctx.numInputs() > 3 || ctx.num_outputs != 1) {
    return invalidArgument("FlexAttention: three inputs and one output");
  }
  for (const HostTensor* t : {q, k, v}) {
    if (t->rank() != 4) return invalidArgument("FlexAttention: Q, K and V must be 4-D");
  }
  if (ctx.attrs.ints.count("softmax_precision") > 0) {
    auto p = static_cast<DataType>(ctx.attrs.getInt("softmax_precision", 0));
    if (p != DataType::kFloat && p != DataType::kFloat16 && p != DataType::kBfloat16 &&
        p != DataType::kDouble) {
      return invalidArgument("FlexAttention: softmax_precision must be a float type");
    }
  }
  // The same computation as a 4-D Attention (23) with only `scale` set: K/V head h / group
  // serves query head h there too. Softmax runs in double, at least softmax_precision.
  KernelAttrs attrs;
  if (ctx.attrs.floats.count("scale") > 0) attrs.floats["scale"] = ctx.attrs.getFloat("scale", 1);
  const std::string op = "Attention";
  KernelContext attention{op, 23, ctx.inputs, attrs, 1};
  return attentionKernel(attention);
}

}  // namespace onnxopt::kernels::ref
