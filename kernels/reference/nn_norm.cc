// Normalization and attention reference kernels:
//   LayerNormalization  Y = (X - mean) / sqrt(var + eps) * Scale + B over X.shape[axis:]
//                       (optional Mean and InvStdDev outputs, of stash_type, shape [..axis, 1...])
//   RMSNormalization    Y = X / sqrt(mean(X^2) + eps) * Scale over X.shape[axis:]
//   InstanceNormalization, GroupNormalization: the same per (n, c) and per (n, group), with
//                       per-channel scale and bias (per-group before opset 21)
//   Attention (23)      Y = softmax(softcap(Q K^T * scale) + mask) V, 3-D or 4-D, GQA, causal,
//                       past_key/past_value caches and the present and qk_matmul outputs;
//                       from 24 nonpad_kv_seqlen (keys past each batch's count are masked and
//                       the causal diagonal ends at the last valid key). A query row that every
//                       key is masked for gives probabilities 0 (so Y = 0), as the spec's
//                       reference does.
// Means and variances accumulate in double; results round once to the element type.
#include <algorithm>
#include <cmath>

#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

/// Reads `t` (float type) broadcast unidirectionally to `dims` as doubles.
StatusOr<std::vector<double>> broadcastParam(const KernelContext& ctx, const HostTensor& t,
                                             const Dims& dims, const char* what) {
  ASSIGN_OR_RETURN(Dims b, broadcastShapes({&t.dims, &dims}));
  if (b != dims)
    return invalidArgument("{}: {} cannot be broadcast to the normalized shape", ctx.op, what);
  ASSIGN_OR_RETURN(std::vector<double> src, readFloats<double>(ctx, t));
  std::vector<double> out(
      static_cast<size_t>(dimProduct(dims, 0, static_cast<int64_t>(dims.size()))));
  HostTensor shape_only;
  shape_only.dims = t.dims;
  mapBroadcast({&shape_only}, dims, [&](int64_t i, const int64_t* off) {
    out[static_cast<size_t>(i)] = src[static_cast<size_t>(off[0])];
  });
  return out;
}

/// A per-channel parameter of shape [count].
StatusOr<std::vector<double>> channelParam(const KernelContext& ctx, const HostTensor& t,
                                           int64_t count, const char* what) {
  if (t.rank() != 1 || t.dims[0] != count) {
    return invalidArgument("{}: {} must have shape [{}]", ctx.op, what, count);
  }
  return readFloats<double>(ctx, t);
}

/// Normalizes `count` groups of `size` consecutive elements of x (group g at g * size):
/// y = (x - mean) * inv_std * scale(g, j) + bias(g, j).
template <typename T, typename S, typename B>
void normalizeGroups(const HostTensor& x, HostTensor& out, int64_t count, int64_t size, double eps,
                     bool rms, S scale, B bias, std::vector<double>* means,
                     std::vector<double>* inv_stds) {
  for (int64_t g = 0; g < count; ++g) {
    int64_t base = g * size;
    double mean = 0;
    if (!rms) {
      for (int64_t j = 0; j < size; ++j) mean += static_cast<double>(load<T>(x, base + j));
      mean /= static_cast<double>(size);
    }
    double var = 0;
    for (int64_t j = 0; j < size; ++j) {
      double d = static_cast<double>(load<T>(x, base + j)) - mean;
      var += d * d;
    }
    var /= static_cast<double>(size);
    double inv_std = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < size; ++j) {
      double v = (static_cast<double>(load<T>(x, base + j)) - mean) * inv_std;
      store<T>(out, base + j, static_cast<Compute<T>>(v * scale(g, j) + bias(g, j)));
    }
    if (means != nullptr) (*means)[static_cast<size_t>(g)] = mean;
    if (inv_stds != nullptr) (*inv_stds)[static_cast<size_t>(g)] = inv_std;
  }
}

Status checkStashType(const KernelContext& ctx) {
  int64_t stash = ctx.attrs.getInt("stash_type", 1);
  if (stash != 1) return unimplemented(ctx, "stash_type other than float");
  return Status::ok();
}

}  // namespace

StatusOr<Outputs> layerNormKernel(const KernelContext& ctx) {
  bool rms = ctx.op == "RMSNormalization";
  RETURN_IF_ERROR(checkStashType(ctx));
  if (ctx.num_outputs > (rms ? 1u : 3u)) {
    return invalidArgument("{}: too many outputs ({})", ctx.op, ctx.num_outputs);
  }
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* scale_t, requireInput(ctx, 1));
  const HostTensor* bias_t = rms ? nullptr : ctx.input(2);
  if (x->rank() == 0) return invalidArgument("{}: X must not be a scalar", ctx.op);
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", -1), x->rank()));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  Dims stat_dims = x->dims;
  for (size_t d = static_cast<size_t>(axis); d < stat_dims.size(); ++d) stat_dims[d] = 1;
  if (x->numElements() == 0) {
    // Sub-products of an empty tensor's dims may not fit int64: only shapes here.
    Outputs outs;
    ASSIGN_OR_RETURN(HostTensor y, makeOutput(x->dtype, x->dims));
    outs.push_back(std::move(y));
    while (outs.size() < ctx.num_outputs) {
      ASSIGN_OR_RETURN(HostTensor t, makeOutput(DataType::kFloat, stat_dims));
      outs.push_back(std::move(t));
    }
    return outs;
  }
  Dims norm(x->dims.begin() + axis, x->dims.end());
  int64_t outer = dimProduct(x->dims, 0, axis);
  int64_t inner = dimProduct(x->dims, axis, x->rank());
  ASSIGN_OR_RETURN(std::vector<double> scale, broadcastParam(ctx, *scale_t, norm, "Scale"));
  std::vector<double> bias(scale.size(), 0.0);
  if (bias_t != nullptr) {
    ASSIGN_OR_RETURN(bias, broadcastParam(ctx, *bias_t, norm, "B"));
  }
  double eps = ctx.attrs.getFloat("epsilon", 1e-5f);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  std::vector<double> means(static_cast<size_t>(outer)), inv_stds(static_cast<size_t>(outer));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    normalizeGroups<T>(
        *x, out, outer, inner, eps, rms,
        [&](int64_t, int64_t j) { return scale[static_cast<size_t>(j)]; },
        [&](int64_t, int64_t j) { return bias[static_cast<size_t>(j)]; }, &means, &inv_stds);
    return Status::ok();
  }));
  Outputs outs;
  outs.push_back(std::move(out));
  for (const std::vector<double>* stat : {&means, &inv_stds}) {
    if (outs.size() == ctx.num_outputs) break;
    ASSIGN_OR_RETURN(HostTensor t, makeOutput(DataType::kFloat, stat_dims));
    for (size_t i = 0; i < stat->size(); ++i) {
      t.set<float>(static_cast<int64_t>(i), static_cast<float>((*stat)[i]));
    }
    outs.push_back(std::move(t));
  }
  return outs;
}

StatusOr<Outputs> instanceNormKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* scale_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* bias_t, requireInput(ctx, 2));
  if (x->rank() < 3) return invalidArgument("InstanceNormalization: X must have rank 3 or more");
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  int64_t c = x->dims[1];
  ASSIGN_OR_RETURN(std::vector<double> scale, channelParam(ctx, *scale_t, c, "scale"));
  ASSIGN_OR_RETURN(std::vector<double> bias, channelParam(ctx, *bias_t, c, "B"));
  if (x->numElements() == 0) {  // its other dims may multiply past int64
    ASSIGN_OR_RETURN(HostTensor empty, makeOutput(x->dtype, x->dims));
    return single(std::move(empty));
  }
  int64_t n = x->dims[0], s = dimProduct(x->dims, 2, x->rank());
  double eps = ctx.attrs.getFloat("epsilon", 1e-5f);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (s == 0) return Status::ok();
    normalizeGroups<T>(
        *x, out, n * c, s, eps, false,
        [&](int64_t g, int64_t) { return scale[static_cast<size_t>(g % c)]; },
        [&](int64_t g, int64_t) { return bias[static_cast<size_t>(g % c)]; }, nullptr, nullptr);
    return Status::ok();
  }));
  return single(std::move(out));
}

StatusOr<Outputs> groupNormKernel(const KernelContext& ctx) {
  RETURN_IF_ERROR(checkStashType(ctx));
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* scale_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* bias_t, requireInput(ctx, 2));
  if (x->rank() < 2) return invalidArgument("GroupNormalization: X must have rank 2 or more");
  if (!ctx.attrs.has("num_groups")) {
    return invalidArgument("GroupNormalization: num_groups is required");
  }
  int64_t groups = ctx.attrs.getInt("num_groups", 1);
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  int64_t c = x->dims[1];
  if (groups < 1 || groups > c || c % groups != 0) {
    return invalidArgument("GroupNormalization: num_groups {} does not divide {} channels", groups,
                           c);
  }
  // Opset 18 scaled per group, 21 per channel.
  bool per_channel = ctx.opset >= 21;
  int64_t params = per_channel ? c : groups;
  ASSIGN_OR_RETURN(std::vector<double> scale, channelParam(ctx, *scale_t, params, "scale"));
  ASSIGN_OR_RETURN(std::vector<double> bias, channelParam(ctx, *bias_t, params, "bias"));
  if (x->numElements() == 0) {  // its other dims may multiply past int64
    ASSIGN_OR_RETURN(HostTensor empty, makeOutput(x->dtype, x->dims));
    return single(std::move(empty));
  }
  int64_t n = x->dims[0], s = dimProduct(x->dims, 2, x->rank());
  double eps = ctx.attrs.getFloat("epsilon", 1e-5f);
  int64_t cg = c / groups, size = cg * s;
  auto param_index = [&](int64_t g, int64_t j) {
    int64_t group = g % groups;
    return static_cast<size_t>(per_channel ? group * cg + j / (s == 0 ? 1 : s) : group);
  };
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if (size == 0) return Status::ok();
    normalizeGroups<T>(
        *x, out, n * groups, size, eps, false,
        [&](int64_t g, int64_t j) { return scale[param_index(g, j)]; },
        [&](int64_t g, int64_t j) { return bias[param_index(g, j)]; }, nullptr, nullptr);
    return Status::ok();
  }));
  return single(std::move(out));
}

// --- Attention
// ---------------------------------------------------------------------------------------

namespace {

/// A [B, heads, seq, size] view of a 3-D [B, seq, heads * size] or 4-D input, as doubles.
struct Heads {
  int64_t batch = 0, heads = 0, seq = 0, size = 0;
  std::vector<double> v;  // [B, heads, seq, size]
  double at(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return v[static_cast<size_t>(((b * heads + h) * seq + s) * size + d)];
  }
};

StatusOr<Heads> readHeads(const KernelContext& ctx, const HostTensor& t, int64_t heads,
                          const char* what) {
  Heads r;
  ASSIGN_OR_RETURN(std::vector<double> raw, readFloats<double>(ctx, t));
  if (t.rank() == 4) {
    r.batch = t.dims[0];
    r.heads = t.dims[1];
    r.seq = t.dims[2];
    r.size = t.dims[3];
    r.v = std::move(raw);
    return r;
  }
  int64_t hidden = t.dims[2];
  if (heads < 1 || hidden % heads != 0) {
    return invalidArgument("Attention: {} hidden size {} is not a multiple of {} heads", what,
                           hidden, heads);
  }
  r.batch = t.dims[0];
  r.heads = heads;
  r.seq = t.dims[1];
  r.size = hidden / heads;
  r.v.resize(raw.size());
  for (int64_t b = 0; b < r.batch; ++b) {
    for (int64_t s = 0; s < r.seq; ++s) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t d = 0; d < r.size; ++d) {
          r.v[static_cast<size_t>(((b * heads + h) * r.seq + s) * r.size + d)] =
              raw[static_cast<size_t>((b * r.seq + s) * hidden + h * r.size + d)];
        }
      }
    }
  }
  return r;
}

/// Appends `cur` after `past` along the sequence axis.
StatusOr<Heads> concatSeq(const Heads& past, const Heads& cur, const char* what) {
  if (past.batch != cur.batch || past.heads != cur.heads || past.size != cur.size) {
    return invalidArgument("Attention: {} does not match the current keys/values", what);
  }
  Heads r = cur;
  r.seq = past.seq + cur.seq;
  r.v.assign(static_cast<size_t>(r.batch * r.heads * r.seq * r.size), 0.0);
  for (int64_t b = 0; b < r.batch; ++b) {
    for (int64_t h = 0; h < r.heads; ++h) {
      for (int64_t s = 0; s < r.seq; ++s) {
        for (int64_t d = 0; d < r.size; ++d) {
          r.v[static_cast<size_t>(((b * r.heads + h) * r.seq + s) * r.size + d)] =
              s < past.seq ? past.at(b, h, s, d) : cur.at(b, h, s - past.seq, d);
        }
      }
    }
  }
  return r;
}

template <typename T>
void storeDoubles(HostTensor& out, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    store<T>(out, static_cast<int64_t>(i), static_cast<Compute<T>>(v[i]));
  }
}

}  // namespace

StatusOr<Outputs> attentionKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* q_t, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* k_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* v_t, requireInput(ctx, 2));
  const HostTensor* mask_t = ctx.input(3);
  const HostTensor* past_k_t = ctx.input(4);
  const HostTensor* past_v_t = ctx.input(5);
  const HostTensor* seqlen_t = ctx.input(6);
  if (ctx.num_outputs > 4) return invalidArgument("Attention: at most four outputs");
  RETURN_IF_ERROR(checkSameType(ctx, {q_t, k_t, v_t}));
  if ((past_k_t == nullptr) != (past_v_t == nullptr)) {
    return invalidArgument("Attention: past_key and past_value go together");
  }
  for (const HostTensor* p : {past_k_t, past_v_t}) {
    if (p != nullptr && (p->dtype != q_t->dtype || p->rank() != 4)) {
      return invalidArgument("Attention: past_key/past_value must be 4-D of Q's type");
    }
  }
  int64_t rank = q_t->rank();
  if ((rank != 3 && rank != 4) || k_t->rank() != rank || v_t->rank() != rank) {
    return invalidArgument("Attention: Q, K and V must all be 3-D or all 4-D");
  }
  // Non-empty inputs bound every product of their dims below.
  if (q_t->numElements() == 0 || k_t->numElements() == 0 || v_t->numElements() == 0) {
    return unimplemented(ctx, "empty Q, K or V");
  }
  int64_t q_heads_attr = ctx.attrs.getInt("q_num_heads", 0);
  int64_t kv_heads_attr = ctx.attrs.getInt("kv_num_heads", 0);
  if (rank == 3 && (!ctx.attrs.has("q_num_heads") || !ctx.attrs.has("kv_num_heads"))) {
    return invalidArgument("Attention: 3-D inputs need q_num_heads and kv_num_heads");
  }
  int64_t mode = ctx.attrs.getInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) return invalidArgument("Attention: qk_matmul_output_mode {}", mode);
  bool causal = ctx.attrs.getInt("is_causal", 0) != 0;
  double softcap = ctx.attrs.getFloat("softcap", 0.0f);
  if (softcap < 0) return invalidArgument("Attention: softcap must not be negative");
  // Only its element type is checked here: the input Q's dtype determines the result's.
  RETURN_IF_ERROR(visitFloat(ctx, q_t->dtype, [](auto) { return Status::ok(); }));

  ASSIGN_OR_RETURN(Heads q, readHeads(ctx, *q_t, q_heads_attr, "Q"));
  ASSIGN_OR_RETURN(Heads k, readHeads(ctx, *k_t, kv_heads_attr, "K"));
  ASSIGN_OR_RETURN(Heads v, readHeads(ctx, *v_t, kv_heads_attr, "V"));
  if (rank == 4 && ((ctx.attrs.has("q_num_heads") && q_heads_attr != q.heads) ||
                    (ctx.attrs.has("kv_num_heads") && kv_heads_attr != k.heads))) {
    return invalidArgument("Attention: q_num_heads/kv_num_heads contradict the input shapes");
  }
  if (k.batch != q.batch || v.batch != q.batch || k.heads != v.heads || k.seq != v.seq) {
    return invalidArgument("Attention: Q, K and V shapes do not match");
  }
  if (k.size != q.size) {
    return invalidArgument("Attention: Q head size {} differs from K head size {}", q.size, k.size);
  }
  if (k.heads < 1 || q.heads % k.heads != 0) {
    return invalidArgument("Attention: {} query heads are not a multiple of {} key/value heads",
                           q.heads, k.heads);
  }
  if (seqlen_t != nullptr) {
    if (ctx.opset < 24) return invalidArgument("Attention: nonpad_kv_seqlen needs opset 24");
    if (past_k_t != nullptr) {
      return invalidArgument("Attention: nonpad_kv_seqlen cannot be combined with past_key");
    }
    if (seqlen_t->dtype != DataType::kInt64 || seqlen_t->dims != Dims{q.batch}) {
      return invalidArgument("Attention: nonpad_kv_seqlen must be int64 of shape [{}]", q.batch);
    }
  }
  int64_t past_seq = 0;
  if (past_k_t != nullptr) {
    ASSIGN_OR_RETURN(Heads pk, readHeads(ctx, *past_k_t, 0, "past_key"));
    ASSIGN_OR_RETURN(Heads pv, readHeads(ctx, *past_v_t, 0, "past_value"));
    if (pk.seq != pv.seq)
      return invalidArgument("Attention: past_key and past_value lengths differ");
    past_seq = pk.seq;
    ASSIGN_OR_RETURN(k, concatSeq(pk, k, "past_key"));
    ASSIGN_OR_RETURN(v, concatSeq(pv, v, "past_value"));
  }
  int64_t batch = q.batch, hq = q.heads, hkv = k.heads, sq = q.seq, total = k.seq;
  // Per batch: the valid keys, and where the causal diagonal of query 0 lies.
  std::vector<int64_t> valid(static_cast<size_t>(batch), total);
  std::vector<int64_t> causal_offset(static_cast<size_t>(batch), past_seq);
  if (seqlen_t != nullptr) {
    ASSIGN_OR_RETURN(Dims lens, readInts(*seqlen_t, "nonpad_kv_seqlen"));
    for (int64_t b = 0; b < batch; ++b) {
      int64_t n = lens[static_cast<size_t>(b)];
      if (n < 0 || n > total) {
        return invalidArgument("Attention: nonpad_kv_seqlen {} is outside [0, {}]", n, total);
      }
      valid[static_cast<size_t>(b)] = n;
      causal_offset[static_cast<size_t>(b)] = n - sq;
    }
  }
  int64_t dh = q.size, dv = v.size, reps = hq / hkv;
  double scale = ctx.attrs.has("scale") ? ctx.attrs.getFloat("scale", 1.0f)
                                        : 1.0 / std::sqrt(static_cast<double>(dh));

  // The additive bias [B, Hq, Sq, total]: the mask (bool: false -> -inf; shorter last dim padded
  // with -inf) plus, with is_causal, -inf above the diagonal shifted by the past length.
  Dims score_dims = {batch, hq, sq, total};
  ASSIGN_OR_RETURN(int64_t n_scores, checkedNumElements(score_dims));
  if (static_cast<uint64_t>(n_scores) > kMaxOutputBytes / sizeof(double)) {
    return makeError(StatusCode::kResourceExhausted, "Attention: the score matrix is too large");
  }
  std::vector<double> bias(static_cast<size_t>(n_scores), 0.0);
  const double inf = std::numeric_limits<double>::infinity();
  if (mask_t != nullptr) {
    if (mask_t->rank() < 2 || mask_t->rank() > 4) {
      return invalidArgument("Attention: attn_mask must have rank 2 to 4");
    }
    int64_t mask_len = mask_t->dims.back();
    if (mask_len > total) {
      return invalidArgument("Attention: attn_mask has {} columns for {} keys", mask_len, total);
    }
    Dims padded = mask_t->dims;
    padded.back() = total;
    ASSIGN_OR_RETURN(Dims bd, broadcastShapes({&padded, &score_dims}));
    if (bd != score_dims) return invalidArgument("Attention: attn_mask cannot be broadcast");
    bool is_bool = mask_t->dtype == DataType::kBool;
    std::vector<double> mv;
    if (is_bool) {
      for (int64_t i = 0; i < mask_t->numElements(); ++i) {
        mv.push_back(mask_t->get<uint8_t>(i) != 0 ? 0.0 : -inf);
      }
    } else {
      ASSIGN_OR_RETURN(mv, readFloats<double>(ctx, *mask_t));
    }
    HostTensor shape_only;
    shape_only.dims = padded;
    mapBroadcast({&shape_only}, score_dims, [&](int64_t i, const int64_t* off) {
      int64_t col = i % total;
      if (col >= mask_len) {
        bias[static_cast<size_t>(i)] = -inf;
        return;
      }
      // off[0] indexes the padded mask; map back to the unpadded one.
      int64_t row = off[0] / total;
      bias[static_cast<size_t>(i)] = mv[static_cast<size_t>(row * mask_len + col)];
    });
  }
  for (int64_t i = 0; i < n_scores; ++i) {
    int64_t col = i % total, row = (i / total) % sq;
    auto b = static_cast<size_t>(i / (hq * sq * total));
    if (col >= valid[b] || (causal && col > row + causal_offset[b])) {
      bias[static_cast<size_t>(i)] = -inf;
    }
  }

  std::vector<double> qk(static_cast<size_t>(total)), probs(static_cast<size_t>(total));
  std::vector<double> y(static_cast<size_t>(batch * hq * sq * dv), 0.0);
  std::vector<double> qk_out;
  if (ctx.num_outputs == 4) qk_out.resize(static_cast<size_t>(n_scores));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < hq; ++h) {
      int64_t hk = h / reps;
      for (int64_t i = 0; i < sq; ++i) {
        size_t row = static_cast<size_t>(((b * hq + h) * sq + i) * total);
        double mx = -inf;
        for (int64_t j = 0; j < total; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < dh; ++d) dot += q.at(b, h, i, d) * k.at(b, hk, j, d);
          double s = dot * scale;
          if (softcap > 0) s = softcap * std::tanh(s / softcap);
          if (!qk_out.empty() && mode <= 1) qk_out[row + static_cast<size_t>(j)] = s;
          s += bias[row + static_cast<size_t>(j)];
          if (!qk_out.empty() && mode == 2) qk_out[row + static_cast<size_t>(j)] = s;
          qk[static_cast<size_t>(j)] = s;
          mx = std::max(mx, s);
        }
        // A row with every key masked attends to nothing (the bias decides, not the scores).
        bool all_masked = true;
        for (int64_t j = 0; j < total; ++j) {
          all_masked = all_masked && bias[row + static_cast<size_t>(j)] == -inf;
        }
        double sum = 0;
        for (int64_t j = 0; j < total; ++j) {
          double e = all_masked ? 0.0 : std::exp(qk[static_cast<size_t>(j)] - mx);
          probs[static_cast<size_t>(j)] = e;
          sum += e;
        }
        for (int64_t j = 0; j < total; ++j) {
          double p = all_masked ? 0.0 : probs[static_cast<size_t>(j)] / sum;
          probs[static_cast<size_t>(j)] = p;
          if (!qk_out.empty() && mode == 3) qk_out[row + static_cast<size_t>(j)] = p;
        }
        for (int64_t d = 0; d < dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < total; ++j) {
            acc += probs[static_cast<size_t>(j)] * v.at(b, hk, j, d);
          }
          // 3-D output: [B, Sq, Hq * Dv]; 4-D: [B, Hq, Sq, Dv].
          size_t yi = rank == 3 ? static_cast<size_t>(((b * sq + i) * hq + h) * dv + d)
                                : static_cast<size_t>(((b * hq + h) * sq + i) * dv + d);
          y[yi] = acc;
        }
      }
    }
  }

  Dims y_dims = rank == 3 ? Dims{batch, sq, hq * dv} : Dims{batch, hq, sq, dv};
  std::vector<std::pair<Dims, const std::vector<double>*>> results = {
      {y_dims, &y},
      {{batch, hkv, total, dh}, &k.v},
      {{batch, hkv, total, dv}, &v.v},
      {score_dims, &qk_out},
  };
  Outputs outs;
  for (size_t o = 0; o < ctx.num_outputs; ++o) {
    ASSIGN_OR_RETURN(HostTensor t, makeOutput(q_t->dtype, results[o].first));
    RETURN_IF_ERROR(visitFloat(ctx, q_t->dtype, [&](auto tag) -> Status {
      storeDoubles<typename decltype(tag)::type>(t, *results[o].second);
      return Status::ok();
    }));
    outs.push_back(std::move(t));
  }
  return outs;
}

}  // namespace onnxopt::kernels::ref
