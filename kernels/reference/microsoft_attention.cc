// Reference kernel of com.microsoft GroupQueryAttention (onnxruntime's docs/ContribOperators.md and
// its CPU kernel), the attention of onnxruntime-genai's decoders:
//
//   query [B, S, N * H] (or packed QKV [B, S, (N + 2 KVN) * H] when key and value are omitted),
//   key, value [B, S, KVN * H], past_key/past_value [B, KVN, P, H] (BNSH), seqlens_k[b] = T_b - 1
//   (T_b: batch entry b's tokens after this step), total_sequence_length T (the batch's largest).
//   A first prompt (S == T) has no past; otherwise entry b's P_b = T_b - S tokens come from past.
//   present[b, h] = [past[b, h, :P_b]; K[b, h]; zeros] of C = max(T, P) rows (BNSH).
//   With do_rotary, Q and K are rotated (RotaryEmbedding) at positions P_b + s, or position_ids
//   (of which a first prompt reads the first element only, p + s).
//   Y[b, s, n] = sum_j p_j present_v[b, n / (N / KVN), j], over the keys j < P_b + s + 1 (causal)
//   and, with local_window_size W >= 0, the last W of them (j > P_b + s - W; W = 0 attends to
//   none and gives 0, as onnxruntime does),
//   p = softmax(bias[b, n, s, j] + cap(scale * q . present_k[j])), cap(x) = softcap tanh(x / softcap)
//   when softcap > 0; smooth_softmax (or head_sink[n]) adds a logit 0 (or head_sink[n]) to the
//   softmax's denominator.
//
// Quantized caches (k_scale, v_scale), Q/K norms, query_seqlens, windowed caches, output_qk and
// causal=0 are not implemented: the kernel says so.
#include <algorithm>

#include "float_out.h"
#include "ops.h"

namespace onnxopt::kernels::ref {
namespace {

/// The sizes of one GroupQueryAttention call.
struct Gqa {
  int64_t batch, seq, heads, kv_heads, head, past, present, total;
  bool packed, first_prompt;
  double scale, softcap;
  int64_t window;
};

/// The optional inputs this kernel does not implement, by position.
constexpr const char* kUnimplementedInputs[] = {"k_scale", "v_scale", "q_norm_weight",
                                                "k_norm_weight", "query_seqlens"};
constexpr size_t kFirstUnimplementedInput = 12;

Status checkAttributes(const KernelContext& ctx) {
  for (size_t i = kFirstUnimplementedInput; i < ctx.numInputs(); ++i) {
    if (ctx.input(i) != nullptr) {
      const size_t k = i - kFirstUnimplementedInput;
      return unimplemented(ctx, k < std::size(kUnimplementedInputs) ? kUnimplementedInputs[k]
                                                                    : "inputs past query_seqlens");
    }
  }
  if (ctx.attrs.getInt("causal", 1) != 1) return unimplemented(ctx, "causal=0");
  if (ctx.attrs.getInt("qk_output", 0) != 0) return unimplemented(ctx, "qk_output");
  if (ctx.attrs.getInt("sliding_window_cache", 0) != 0) {
    return unimplemented(ctx, "sliding_window_cache");
  }
  if (ctx.num_outputs > 3) return unimplemented(ctx, "output_qk");
  return Status::ok();
}

/// The element type of every float input; seqlens_k and total_sequence_length int32.
Status checkTypes(const KernelContext& ctx) {
  const DataType t = ctx.input(0)->dtype;
  RETURN_IF_ERROR(requireContribFloat(ctx, t));
  for (size_t i : {1, 2, 3, 4, 7, 8, 10, 11}) {
    const HostTensor* in = ctx.input(i);
    if (in == nullptr) continue;
    RETURN_IF_ERROR(requireContribFloat(ctx, in->dtype));
    if (in->dtype != t) {
      return invalidArgument("{}: input {} is {}, query is {}", ctx.op, i, dataTypeName(in->dtype),
                             dataTypeName(t));
    }
  }
  for (size_t i : {5, 6}) {
    if (ctx.input(i)->dtype != DataType::kInt32) {
      return invalidArgument("{}: {} must be int32", ctx.op,
                             i == 5 ? "seqlens_k" : "total_sequence_length");
    }
  }
  if (ctx.input(9) != nullptr && ctx.input(9)->dtype != DataType::kInt64) {
    return invalidArgument("{}: position_ids must be int64", ctx.op);
  }
  return Status::ok();
}

StatusOr<Gqa> gqaSizes(const KernelContext& ctx) {
  const HostTensor& q = *ctx.input(0);
  const HostTensor *k = ctx.input(1), *v = ctx.input(2), *pk = ctx.input(3), *pv = ctx.input(4);
  Gqa g{};
  g.heads = ctx.attrs.getInt("num_heads", 0);
  g.kv_heads = ctx.attrs.getInt("kv_num_heads", 0);
  if (g.heads <= 0 || g.kv_heads <= 0 || g.heads % g.kv_heads != 0) {
    return invalidArgument("{}: num_heads {} must be a positive multiple of kv_num_heads {}",
                           ctx.op, g.heads, g.kv_heads);
  }
  if ((k == nullptr) != (v == nullptr)) {
    return invalidArgument("{}: key and value must both be given or both omitted", ctx.op);
  }
  if (q.rank() != 3) return invalidArgument("{}: query must be 3-D [B, S, hidden]", ctx.op);
  g.batch = q.dims[0];
  g.seq = q.dims[1];
  g.packed = k == nullptr;
  const int64_t parts = g.packed ? g.heads + 2 * g.kv_heads : g.heads;
  if (q.dims[2] % parts != 0) {
    return invalidArgument("{}: query's last dim {} is not a multiple of {} heads", ctx.op,
                           q.dims[2], parts);
  }
  g.head = q.dims[2] / parts;
  const Dims kv_dims = {g.batch, g.seq, g.kv_heads * g.head};
  if (!g.packed && (k->dims != kv_dims || v->dims != kv_dims)) {
    return invalidArgument("{}: key and value must be [{}]", ctx.op, fmt::join(kv_dims, ", "));
  }
  if ((pk == nullptr) != (pv == nullptr)) {
    return invalidArgument("{}: past_key and past_value must both be given or both omitted",
                           ctx.op);
  }
  if (pk != nullptr) {
    if (pk->rank() != 4 || pk->dims != pv->dims || pk->dims[0] != g.batch ||
        pk->dims[1] != g.kv_heads || pk->dims[3] != g.head) {
      return invalidArgument("{}: past_key and past_value must be [{}, {}, past, {}] (BNSH)",
                             ctx.op, g.batch, g.kv_heads, g.head);
    }
    g.past = pk->dims[2];
  }
  const HostTensor& seqlens = *ctx.input(5);
  const HostTensor& total = *ctx.input(6);
  if (seqlens.rank() != 1 || seqlens.dims[0] != g.batch) {
    return invalidArgument("{}: seqlens_k must be [{}]", ctx.op, g.batch);
  }
  if (total.numElements() != 1 || total.rank() > 1) {
    return invalidArgument("{}: total_sequence_length must be a scalar", ctx.op);
  }
  g.total = total.get<int32_t>(0);
  if (g.total < g.seq) {
    return invalidArgument("{}: total_sequence_length {} is below the sequence length {}", ctx.op,
                           g.total, g.seq);
  }
  g.present = std::max(g.total, g.past);
  // As onnxruntime decides: a prompt of S tokens with past context needs a batch of one.
  g.first_prompt = g.seq == g.total;
  if (g.seq > 1 && !g.first_prompt && g.batch != 1) {
    return invalidArgument("{}: a prompt with past context needs batch size 1", ctx.op);
  }
  g.scale = ctx.attrs.getFloat("scale", 0.0f);
  if (g.scale == 0.0) g.scale = 1.0 / std::sqrt(static_cast<double>(g.head));
  g.softcap = ctx.attrs.getFloat("softcap", 0.0f);
  g.window = ctx.attrs.getInt("local_window_size", -1);
  return g;
}

/// P_b: the tokens of entry b that come from the past (0 for a first prompt).
StatusOr<std::vector<int64_t>> pastLengths(const KernelContext& ctx, const Gqa& g) {
  std::vector<int64_t> past(static_cast<size_t>(g.batch), 0);
  for (int64_t b = 0; b < g.batch; ++b) {
    const int64_t t = int64_t{ctx.input(5)->get<int32_t>(b)} + 1;
    if (t < 1 || t > g.total) {
      return invalidArgument("{}: seqlens_k[{}] + 1 = {} is outside [1, {}]", ctx.op, b, t,
                             g.total);
    }
    if (g.first_prompt) continue;
    past[static_cast<size_t>(b)] = t - g.seq;
    if (t < g.seq || t - g.seq > g.past || t > g.present) {
      return invalidArgument(
          "{}: batch entry {} has {} tokens: {} new and {} past do not fit past_key's {} rows",
          ctx.op, b, t, g.seq, t - g.seq, g.past);
    }
  }
  return past;
}

/// Q as [B, N, S, H], K and V as [B, KVN, S, H], from the separate or packed inputs.
struct Heads {
  std::vector<double> q, k, v;
};

StatusOr<Heads> splitHeads(const KernelContext& ctx, const Gqa& g) {
  ASSIGN_OR_RETURN(std::vector<double> q, readFloats<double>(ctx, *ctx.input(0)));
  std::vector<double> k, v;
  if (!g.packed) {
    ASSIGN_OR_RETURN(k, readFloats<double>(ctx, *ctx.input(1)));
    ASSIGN_OR_RETURN(v, readFloats<double>(ctx, *ctx.input(2)));
  }
  const int64_t row = g.packed ? (g.heads + 2 * g.kv_heads) * g.head : g.heads * g.head;
  const int64_t kv_row = g.packed ? row : g.kv_heads * g.head;
  const int64_t k_at = g.packed ? g.heads * g.head : 0;
  const int64_t v_at = g.packed ? (g.heads + g.kv_heads) * g.head : 0;
  Heads out;
  out.q.resize(static_cast<size_t>(g.batch * g.heads * g.seq * g.head));
  out.k.resize(static_cast<size_t>(g.batch * g.kv_heads * g.seq * g.head));
  out.v.resize(out.k.size());
  const std::vector<double>& ks = g.packed ? q : k;
  const std::vector<double>& vs = g.packed ? q : v;
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t s = 0; s < g.seq; ++s) {
      for (int64_t h = 0; h < g.head; ++h) {
        for (int64_t n = 0; n < g.heads; ++n) {
          out.q[static_cast<size_t>(((b * g.heads + n) * g.seq + s) * g.head + h)] =
              q[static_cast<size_t>((b * g.seq + s) * row + n * g.head + h)];
        }
        for (int64_t n = 0; n < g.kv_heads; ++n) {
          const size_t to = static_cast<size_t>(((b * g.kv_heads + n) * g.seq + s) * g.head + h);
          const size_t from = static_cast<size_t>((b * g.seq + s) * kv_row + n * g.head + h);
          out.k[to] = ks[from + static_cast<size_t>(k_at)];
          out.v[to] = vs[from + static_cast<size_t>(v_at)];
        }
      }
    }
  }
  return out;
}

/// Rotates Q and K in place at the tokens' positions (do_rotary).
Status applyRotary(const KernelContext& ctx, const Gqa& g, const std::vector<int64_t>& past,
                   Heads& x) {
  const HostTensor *cos_t = ctx.input(7), *sin_t = ctx.input(8), *pos_t = ctx.input(9);
  if (cos_t == nullptr || sin_t == nullptr || cos_t->rank() != 2 || cos_t->dims != sin_t->dims) {
    return invalidArgument("{}: do_rotary needs cos_cache and sin_cache of one 2-D shape", ctx.op);
  }
  const int64_t half = cos_t->dims[1], rot = 2 * half;
  if (half < 1 || rot > g.head) {
    return invalidArgument("{}: the caches' width {} exceeds half the head size {}", ctx.op, half,
                           g.head);
  }
  Dims pos;
  if (pos_t != nullptr) {
    if (pos_t->dims != Dims{g.batch, g.seq}) {
      return invalidArgument("{}: position_ids must be [{}, {}]", ctx.op, g.batch, g.seq);
    }
    ASSIGN_OR_RETURN(pos, readInts(*pos_t, "position_ids"));
  }
  ASSIGN_OR_RETURN(std::vector<double> cosv, readFloats<double>(ctx, *cos_t));
  ASSIGN_OR_RETURN(std::vector<double> sinv, readFloats<double>(ctx, *sin_t));
  const bool interleaved = ctx.attrs.getInt("rotary_interleaved", 0) != 0;
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t s = 0; s < g.seq; ++s) {
      // A first prompt reads position_ids' first element only (ContribOperators.md): the
      // prompt's tokens follow it.
      const int64_t p = pos_t == nullptr ? past[static_cast<size_t>(b)] + s
                        : g.first_prompt ? pos[0] + s
                                         : pos[static_cast<size_t>(b * g.seq + s)];
      if (p < 0 || p >= cos_t->dims[0]) {
        return invalidArgument("{}: position {} is outside the caches' {} rows", ctx.op, p,
                               cos_t->dims[0]);
      }
      const double *c = cosv.data() + p * half, *sn = sinv.data() + p * half;
      for (int64_t n = 0; n < g.heads; ++n) {
        rotateHead(x.q.data() + ((b * g.heads + n) * g.seq + s) * g.head, c, sn, rot, interleaved);
      }
      for (int64_t n = 0; n < g.kv_heads; ++n) {
        rotateHead(x.k.data() + ((b * g.kv_heads + n) * g.seq + s) * g.head, c, sn, rot,
                   interleaved);
      }
    }
  }
  return Status::ok();
}

/// present = [past[:P_b]; new; zeros], [B, KVN, C, H].
StatusOr<std::vector<double>> present(const KernelContext& ctx, const Gqa& g,
                                      const std::vector<int64_t>& past, const HostTensor* past_t,
                                      const std::vector<double>& fresh) {
  std::vector<double> old;
  if (past_t != nullptr) {
    ASSIGN_OR_RETURN(old, readFloats<double>(ctx, *past_t));
  }
  std::vector<double> out(static_cast<size_t>(g.batch * g.kv_heads * g.present * g.head), 0.0);
  for (int64_t bn = 0; bn < g.batch * g.kv_heads; ++bn) {
    const int64_t p = past[static_cast<size_t>(bn / g.kv_heads)];
    double* dst = out.data() + bn * g.present * g.head;
    std::copy_n(old.data() + bn * g.past * g.head, p * g.head, dst);
    std::copy_n(fresh.data() + bn * g.seq * g.head, g.seq * g.head, dst + p * g.head);
  }
  return out;
}

/// The softmax of logits [from, to) of `row` in place (0 elsewhere), with an extra logit `sink`
/// in the denominator when `with_sink`.
void softmaxRange(std::vector<double>& row, int64_t from, int64_t to, bool with_sink, double sink) {
  double mx = with_sink ? sink : -std::numeric_limits<double>::infinity();
  for (int64_t j = from; j < to; ++j) mx = std::max(mx, row[static_cast<size_t>(j)]);
  double sum = with_sink ? std::exp(sink - mx) : 0.0;
  for (int64_t j = from; j < to; ++j) {
    row[static_cast<size_t>(j)] = std::exp(row[static_cast<size_t>(j)] - mx);
    sum += row[static_cast<size_t>(j)];
  }
  for (size_t j = 0; j < row.size(); ++j) {
    const auto js = static_cast<int64_t>(j);
    row[j] = js >= from && js < to ? row[j] / sum : 0.0;
  }
}

/// A view of attention_bias [B or 1, N or 1, S, T]: bias(b, n, s, j).
struct Bias {
  std::vector<double> v;
  Dims dims;
  double at(int64_t b, int64_t n, int64_t s, int64_t j) const {
    const int64_t bb = dims[0] == 1 ? 0 : b, nn = dims[1] == 1 ? 0 : n;
    return v[static_cast<size_t>(((bb * dims[1] + nn) * dims[2] + s) * dims[3] + j)];
  }
};

StatusOr<std::optional<Bias>> attentionBias(const KernelContext& ctx, const Gqa& g) {
  const HostTensor* t = ctx.input(10);
  if (t == nullptr) return std::optional<Bias>();
  if (t->rank() != 4 || (t->dims[0] != 1 && t->dims[0] != g.batch) ||
      (t->dims[1] != 1 && t->dims[1] != g.heads) || t->dims[2] != g.seq || t->dims[3] != g.total) {
    return invalidArgument("{}: attention_bias must be [{} or 1, {} or 1, {}, {}]", ctx.op, g.batch,
                           g.heads, g.seq, g.total);
  }
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *t));
  return std::optional<Bias>(Bias{std::move(v), t->dims});
}

}  // namespace

StatusOr<Outputs> groupQueryAttentionKernel(const KernelContext& ctx) {
  if (ctx.numInputs() < 7 || ctx.input(0) == nullptr || ctx.input(5) == nullptr ||
      ctx.input(6) == nullptr) {
    return invalidArgument("{}: needs query, seqlens_k and total_sequence_length (inputs 0, 5, 6)",
                           ctx.op);
  }
  RETURN_IF_ERROR(checkAttributes(ctx));
  RETURN_IF_ERROR(checkTypes(ctx));
  ASSIGN_OR_RETURN(Gqa g, gqaSizes(ctx));
  ASSIGN_OR_RETURN(std::vector<int64_t> past, pastLengths(ctx, g));
  ASSIGN_OR_RETURN(Heads x, splitHeads(ctx, g));
  if (ctx.attrs.getInt("do_rotary", 0) != 0) RETURN_IF_ERROR(applyRotary(ctx, g, past, x));
  ASSIGN_OR_RETURN(std::vector<double> pk, present(ctx, g, past, ctx.input(3), x.k));
  ASSIGN_OR_RETURN(std::vector<double> pv, present(ctx, g, past, ctx.input(4), x.v));
  ASSIGN_OR_RETURN(std::optional<Bias> bias, attentionBias(ctx, g));
  std::vector<double> sink(static_cast<size_t>(g.heads), 0.0);
  const bool with_sink = ctx.input(11) != nullptr || ctx.attrs.getInt("smooth_softmax", 0) != 0;
  if (const HostTensor* hs = ctx.input(11)) {
    if (hs->numElements() != g.heads) {
      return invalidArgument("{}: head_sink must have num_heads = {} elements", ctx.op, g.heads);
    }
    ASSIGN_OR_RETURN(sink, readFloats<double>(ctx, *hs));
  }
  const int64_t group = g.heads / g.kv_heads;
  std::vector<double> y(static_cast<size_t>(g.batch * g.seq * g.heads * g.head), 0.0);
  std::vector<double> row(static_cast<size_t>(g.present));
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t n = 0; n < g.heads; ++n) {
      const int64_t kv = b * g.kv_heads + n / group;
      const double* keys = pk.data() + kv * g.present * g.head;
      const double* vals = pv.data() + kv * g.present * g.head;
      for (int64_t s = 0; s < g.seq; ++s) {
        const double* qv = x.q.data() + ((b * g.heads + n) * g.seq + s) * g.head;
        const int64_t end = past[static_cast<size_t>(b)] + s + 1;
        const int64_t from = g.window >= 0 ? std::max<int64_t>(end - g.window, 0) : 0;
        for (int64_t j = from; j < end; ++j) {
          double dot = 0;
          for (int64_t h = 0; h < g.head; ++h) dot += qv[h] * keys[j * g.head + h];
          double logit = dot * g.scale;
          if (g.softcap > 0) logit = g.softcap * std::tanh(logit / g.softcap);
          if (bias) logit += bias->at(b, n, s, j);
          row[static_cast<size_t>(j)] = logit;
        }
        softmaxRange(row, from, end, with_sink, sink[static_cast<size_t>(n)]);
        double* out = y.data() + ((b * g.seq + s) * g.heads + n) * g.head;
        for (int64_t j = from; j < end; ++j) {
          for (int64_t h = 0; h < g.head; ++h) {
            out[h] += row[static_cast<size_t>(j)] * vals[j * g.head + h];
          }
        }
      }
    }
  }
  const DataType t = ctx.input(0)->dtype;
  Outputs outs;
  ASSIGN_OR_RETURN(HostTensor yt, floatsToTensor(ctx, t, {g.batch, g.seq, g.heads * g.head}, y));
  outs.push_back(std::move(yt));
  const Dims cache = {g.batch, g.kv_heads, g.present, g.head};
  for (const std::vector<double>* c : {&pk, &pv}) {
    if (outs.size() == ctx.num_outputs) break;
    ASSIGN_OR_RETURN(HostTensor ct, floatsToTensor(ctx, t, cache, *c));
    outs.push_back(std::move(ct));
  }
  return outs;
}

}  // namespace onnxopt::kernels::ref
