// Stateful sequence kernels of opset 27: CausalConvWithState and LinearAttention. Both take an
// optional carried state and return the updated one, so that a decode step continues a prefill.
//
// CausalConvWithState (depthwise, causal, 1-D):
//   padded = concat(past_state or zeros[B, C, K-1], input)         along the length axis
//   y[b, c, t] = bias[c] + sum_k weight[c, 0, k] * padded[b, c, t + k]
//   output = y, or y * sigmoid(y) for activation silu/swish; present_state = padded[..., L:]
//
// LinearAttention (q, k, v packed as [B, T, H*D]; state S[b, h_kv] is d_k x d_v):
//   linear:      S = S + k v^T
//   gated:       S = exp(g) S + k v^T
//   delta:       S = S + k (beta (v - S^T k))^T
//   gated_delta: S' = exp(g) S, S = S' + k (beta (v - S'^T k))^T
//   o_t = scale * q_t^T S_t, query head h reading KV head h / (q_num_heads / kv_num_heads)
// The recurrence runs token by token in double and rounds once (chunk_size is a tuning hint).
#include <cmath>

#include "double_compute.h"

namespace onnxopt::kernels::ref {

namespace {

/// The element types of both ops: float, float16 and bfloat16 (no double).
Status checkStateType(const KernelContext& ctx, const HostTensor& t) {
  if (t.dtype != DataType::kFloat && t.dtype != DataType::kFloat16 &&
      t.dtype != DataType::kBfloat16) {
    return unsupportedType(ctx, t.dtype);
  }
  return Status::ok();
}

/// Rounds v to the element type T and back (the reference rounds between steps).
template <typename T>
double roundTo(double v) {
  if constexpr (std::is_same_v<T, Float16>) {
    return halfToFloat(floatToHalf(static_cast<float>(v)));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bfloat16ToFloat(floatToBfloat16(static_cast<float>(v)));
  } else {
    return static_cast<float>(v);
  }
}

}  // namespace

StatusOr<Outputs> causalConvWithStateKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* w, requireInput(ctx, 1));
  const HostTensor* bias = ctx.input(2);
  const HostTensor* past = ctx.input(3);
  RETURN_IF_ERROR(checkStateType(ctx, *x));
  std::vector<const HostTensor*> all = {x, w};
  if (bias != nullptr) all.push_back(bias);
  if (past != nullptr) all.push_back(past);
  RETURN_IF_ERROR(checkSameType(ctx, all));
  std::string activation = ctx.attrs.getString("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish") {
    return invalidArgument("{}: unknown activation '{}' (none, silu or swish)", ctx.op, activation);
  }
  if (x->rank() != 3) {
    return invalidArgument("{}: input must have rank 3 (batch, channels, length), not {}", ctx.op,
                           x->rank());
  }
  int64_t n = x->dims[0], c = x->dims[1], len = x->dims[2];
  if (w->rank() != 3 || w->dims[0] != c || w->dims[1] != 1 || w->dims[2] < 1) {
    return invalidArgument("{}: weight must have shape [{}, 1, k] with k >= 1", ctx.op, c);
  }
  int64_t k = w->dims[2];
  if (bias != nullptr && (bias->rank() != 1 || bias->dims[0] != c)) {
    return invalidArgument("{}: bias must have shape [{}]", ctx.op, c);
  }
  if (past != nullptr && past->dims != Dims{n, c, k - 1}) {
    return invalidArgument("{}: past_state must have shape [{}, {}, {}]", ctx.op, n, c, k - 1);
  }
  RETURN_IF_ERROR(checkWorkLimit(ctx, {n, c, len + k, k}));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, {n, c, len}));
  ASSIGN_OR_RETURN(HostTensor present, makeOutput(x->dtype, {n, c, k - 1}));
  bool silu = activation != "none";
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    int64_t padded_len = len + k - 1;
    std::vector<double> padded(static_cast<size_t>(padded_len));
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t row = b * c + ch;
        for (int64_t t = 0; t < k - 1; ++t) {
          padded[static_cast<size_t>(t)] =
              past != nullptr ? static_cast<double>(load<T>(*past, row * (k - 1) + t)) : 0.0;
        }
        for (int64_t t = 0; t < len; ++t) {
          padded[static_cast<size_t>(k - 1 + t)] = load<T>(*x, row * len + t);
        }
        for (int64_t t = 0; t < len; ++t) {
          double acc = 0;
          for (int64_t j = 0; j < k; ++j) {
            acc +=
                static_cast<double>(load<T>(*w, ch * k + j)) * padded[static_cast<size_t>(t + j)];
          }
          // As ONNX's reference: the convolution, the bias and the activation each round to T.
          double y = roundTo<T>(acc);
          if (bias != nullptr) y = roundTo<T>(y + static_cast<double>(load<T>(*bias, ch)));
          if (silu) y = y / (1.0 + std::exp(-y));
          store<T>(out, row * len + t, static_cast<Compute<T>>(y));
        }
        for (int64_t t = 0; t < k - 1; ++t) {
          store<T>(present, row * (k - 1) + t,
                   static_cast<Compute<T>>(padded[static_cast<size_t>(len + t)]));
        }
      }
    }
    return Status::ok();
  }));
  Outputs result;
  result.push_back(std::move(out));
  result.push_back(std::move(present));
  return result;
}

namespace {

struct LinearAttentionShape {
  int64_t batch, steps, q_heads, kv_heads, d_k, d_v;
  int64_t decay_width = 0;  ///< 0 (no decay), 1 (per head) or d_k (per key dim)
  int64_t beta_heads = 0;   ///< 0 (no beta), 1 (shared) or kv_heads
};

StatusOr<LinearAttentionShape> linearAttentionShape(const KernelContext& ctx, bool gating,
                                                    bool delta) {
  const HostTensor* q = ctx.input(0);
  const HostTensor* k = ctx.input(1);
  const HostTensor* v = ctx.input(2);
  const HostTensor* past = ctx.input(3);
  const HostTensor* decay = ctx.input(4);
  const HostTensor* beta = ctx.input(5);
  LinearAttentionShape s{};
  s.q_heads = ctx.attrs.getInt("q_num_heads", 0);
  s.kv_heads = ctx.attrs.getInt("kv_num_heads", 0);
  if (!ctx.attrs.has("q_num_heads") || !ctx.attrs.has("kv_num_heads")) {
    return invalidArgument("{}: q_num_heads and kv_num_heads are required", ctx.op);
  }
  if (s.q_heads <= 0 || s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0) {
    return invalidArgument("{}: q_num_heads ({}) must be a positive multiple of kv_num_heads ({})",
                           ctx.op, s.q_heads, s.kv_heads);
  }
  for (const HostTensor* t : {q, k, v}) {
    if (t->rank() != 3) {
      return invalidArgument("{}: query, key and value must have rank 3 (B, T, H*D)", ctx.op);
    }
  }
  s.batch = q->dims[0];
  s.steps = q->dims[1];
  for (const HostTensor* t : {k, v}) {
    if (t->dims[0] != s.batch || t->dims[1] != s.steps) {
      return invalidArgument("{}: key and value must share query's batch and sequence sizes",
                             ctx.op);
    }
  }
  if (q->dims[2] % s.q_heads != 0 || v->dims[2] % s.kv_heads != 0) {
    return invalidArgument("{}: the hidden sizes are not divisible by the head counts", ctx.op);
  }
  s.d_k = q->dims[2] / s.q_heads;
  s.d_v = v->dims[2] / s.kv_heads;
  if (k->dims[2] != s.kv_heads * s.d_k) {
    return invalidArgument("{}: key's last dimension must be kv_num_heads * d_k = {}", ctx.op,
                           s.kv_heads * s.d_k);
  }
  if (gating != (decay != nullptr)) {
    return invalidArgument("{}: decay is {} by this update_rule", ctx.op,
                           gating ? "required" : "not allowed");
  }
  if (delta != (beta != nullptr)) {
    return invalidArgument("{}: beta is {} by this update_rule", ctx.op,
                           delta ? "required" : "not allowed");
  }
  if (decay != nullptr) {
    int64_t last = decay->rank() == 3 ? decay->dims[2] : -1;
    if (decay->rank() != 3 || decay->dims[0] != s.batch || decay->dims[1] != s.steps ||
        (last != s.kv_heads && last != s.kv_heads * s.d_k)) {
      return invalidArgument("{}: decay must have shape [{}, {}, {} or {}]", ctx.op, s.batch,
                             s.steps, s.kv_heads, s.kv_heads * s.d_k);
    }
    s.decay_width = last == s.kv_heads ? 1 : s.d_k;
  }
  if (beta != nullptr) {
    int64_t last = beta->rank() == 3 ? beta->dims[2] : -1;
    if (beta->rank() != 3 || beta->dims[0] != s.batch || beta->dims[1] != s.steps ||
        (last != s.kv_heads && last != 1)) {
      return invalidArgument("{}: beta must have shape [{}, {}, {} or 1]", ctx.op, s.batch, s.steps,
                             s.kv_heads);
    }
    s.beta_heads = last;
  }
  if (past != nullptr && past->dims != Dims{s.batch, s.kv_heads, s.d_k, s.d_v}) {
    return invalidArgument("{}: past_state must have shape [{}, {}, {}, {}]", ctx.op, s.batch,
                           s.kv_heads, s.d_k, s.d_v);
  }
  return s;
}

}  // namespace

StatusOr<Outputs> linearAttentionKernel(const KernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) RETURN_IF_ERROR(requireInput(ctx, i).status());
  const HostTensor* q = ctx.input(0);
  const HostTensor* past = ctx.input(3);
  RETURN_IF_ERROR(checkStateType(ctx, *q));
  std::vector<const HostTensor*> same = {q, ctx.input(1), ctx.input(2)};
  for (size_t i : {size_t{4}, size_t{5}}) {
    if (ctx.input(i) != nullptr) same.push_back(ctx.input(i));
  }
  RETURN_IF_ERROR(checkSameType(ctx, same));
  if (past != nullptr) RETURN_IF_ERROR(checkStateType(ctx, *past));
  std::string rule = ctx.attrs.getString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    return invalidArgument("{}: unknown update_rule '{}' (linear, gated, delta or gated_delta)",
                           ctx.op, rule);
  }
  bool gating = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  ASSIGN_OR_RETURN(LinearAttentionShape s, linearAttentionShape(ctx, gating, delta));
  DataType state_type = past != nullptr ? past->dtype : q->dtype;
  RETURN_IF_ERROR(
      checkWorkLimit(ctx, {s.batch, s.steps, s.q_heads + 2 * s.kv_heads, s.d_k, s.d_v}));
  // The state is held in double: 8 bytes an element, under the same cap as an output.
  RETURN_IF_ERROR(checkWorkLimit(ctx, {s.batch, s.kv_heads, s.d_k, s.d_v}));
  if (s.batch * s.kv_heads * s.d_k * s.d_v > static_cast<int64_t>(kMaxOutputBytes / 8)) {
    return makeError(StatusCode::kResourceExhausted,
                     "{}: the state of {} x {} per head is too large", ctx.op, s.d_k, s.d_v);
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(q->dtype, {s.batch, s.steps, s.q_heads * s.d_v}));
  ASSIGN_OR_RETURN(HostTensor present, makeOutput(state_type, {s.batch, s.kv_heads, s.d_k, s.d_v}));
  ASSIGN_OR_RETURN(std::vector<double> qv, readFloats<double>(ctx, *q));
  ASSIGN_OR_RETURN(std::vector<double> kv, readFloats<double>(ctx, *ctx.input(1)));
  ASSIGN_OR_RETURN(std::vector<double> vv, readFloats<double>(ctx, *ctx.input(2)));
  std::vector<double> state(static_cast<size_t>(present.numElements()), 0.0);
  if (past != nullptr) {
    ASSIGN_OR_RETURN(state, readFloats<double>(ctx, *past));
  }
  std::vector<double> decay, beta;
  if (gating) {
    ASSIGN_OR_RETURN(decay, readFloats<double>(ctx, *ctx.input(4)));
  }
  if (delta) {
    ASSIGN_OR_RETURN(beta, readFloats<double>(ctx, *ctx.input(5)));
  }
  float scale_attr = ctx.attrs.getFloat("scale", 0.0f);
  double scale =
      scale_attr == 0.0f ? 1.0 / std::sqrt(static_cast<double>(s.d_k)) : double{scale_attr};

  const int64_t dk = s.d_k, dv = s.d_v, group = s.q_heads / s.kv_heads;
  std::vector<double> result(static_cast<size_t>(out.numElements()), 0.0);
  std::vector<double> update(static_cast<size_t>(dv));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t t = 0; t < s.steps; ++t) {
      int64_t bt = b * s.steps + t;
      for (int64_t h = 0; h < s.kv_heads; ++h) {
        double* st = state.data() + (b * s.kv_heads + h) * dk * dv;
        const double* kt = kv.data() + (bt * s.kv_heads + h) * dk;
        const double* vt = vv.data() + (bt * s.kv_heads + h) * dv;
        if (gating) {
          const double* g = decay.data() + (bt * s.kv_heads + h) * s.decay_width;
          for (int64_t i = 0; i < dk; ++i) {
            double f = std::exp(g[s.decay_width == 1 ? 0 : i]);
            for (int64_t j = 0; j < dv; ++j) st[i * dv + j] *= f;
          }
        }
        for (int64_t j = 0; j < dv; ++j) update[static_cast<size_t>(j)] = vt[j];
        if (delta) {
          double bv = beta[static_cast<size_t>(bt * s.beta_heads + (s.beta_heads == 1 ? 0 : h))];
          for (int64_t j = 0; j < dv; ++j) {
            double retrieved = 0;
            for (int64_t i = 0; i < dk; ++i) retrieved += st[i * dv + j] * kt[i];
            update[static_cast<size_t>(j)] = bv * (vt[j] - retrieved);
          }
        }
        for (int64_t i = 0; i < dk; ++i) {
          for (int64_t j = 0; j < dv; ++j) st[i * dv + j] += kt[i] * update[static_cast<size_t>(j)];
        }
        for (int64_t hq = h * group; hq < (h + 1) * group; ++hq) {
          const double* qt = qv.data() + (bt * s.q_heads + hq) * dk;
          double* o = result.data() + (bt * s.q_heads + hq) * dv;
          for (int64_t j = 0; j < dv; ++j) {
            double acc = 0;
            for (int64_t i = 0; i < dk; ++i) acc += qt[i] * st[i * dv + j];
            o[j] = scale * acc;
          }
        }
      }
    }
  }
  RETURN_IF_ERROR(storeDoubles(ctx, out, result));
  RETURN_IF_ERROR(storeDoubles(ctx, present, state));
  Outputs outputs;
  outputs.push_back(std::move(out));
  outputs.push_back(std::move(present));
  return outputs;
}

}  // namespace onnxopt::kernels::ref
