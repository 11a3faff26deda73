// Reference kernels of the onnxruntime contrib ops that onnxruntime-genai's model builder writes
// (com.microsoft 1, and SimplifiedLayerNormalization, which onnxruntime keeps in the default
// domain), following onnxruntime's docs/ContribOperators.md and its CPU kernels:
//
//   SimplifiedLayerNormalization<axis, epsilon>(X, scale) = (Y, inv_std_var),
//     Y = X * inv_std_var * scale,  inv_std_var = 1 / sqrt(mean(X^2 over axes [axis, rank)) + eps)
//   SkipSimplifiedLayerNormalization<epsilon>(X, skip, gamma, bias)
//     = (SimplifiedLayerNormalization<-1>(S, gamma), mean(S), inv_std_var, S),  S = X + skip + bias
//   RotaryEmbedding(X, position_ids, cos_cache, sin_cache): the first rot features of each head
//     of X ([B, S, heads * head] or [B, heads, S, head]) rotated by the cache rows at the token's
//     position: y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin (x1, x2 the halves of the rotated part,
//     or its even and odd features when interleaved); position_ids is [B, S], or one start
//     offset p (token s is at p + s)
//   MatMulNBits<K, N, bits, block_size>(A, B, scales, zero_points, g_idx, bias)
//     = MatMul(A, W) + bias,  W[k, n] = (q[n, k] - zp[n, g]) * scales[n, g],  g = k / block_size
//     (or g_idx[k]); q is B's bits-wide unsigned fields, packed low bits first along K in blocks
//     of block_size; zp is the packed uint8 fields of zero_points, or its values when they are of
//     A's type, or 2^(bits - 1) without it
//
// GroupQueryAttention is in microsoft_attention.cc. Arithmetic is in double; results round once
// to the element type, so accuracy_level (how far onnxruntime may lower A's precision) has no
// effect here.
#include "float_out.h"
#include "ops.h"

namespace onnxopt::kernels::ref {

Status requireContribFloat(const KernelContext& ctx, DataType t) {
  if (t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16) {
    return Status::ok();
  }
  return unsupportedType(ctx, t);
}

void rotateHead(double* x, const double* cos_row, const double* sin_row, int64_t rot,
                bool interleaved) {
  const int64_t half = rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    int64_t i1 = interleaved ? 2 * i : i;
    int64_t i2 = interleaved ? 2 * i + 1 : i + half;
    double x1 = x[i1], x2 = x[i2];
    x[i1] = x1 * cos_row[i] - x2 * sin_row[i];
    x[i2] = x2 * cos_row[i] + x1 * sin_row[i];
  }
}

namespace {

/// The element types of the inputs named, all one float type of onnxruntime's contrib ops.
Status requireSameContribFloat(const KernelContext& ctx, const std::vector<const HostTensor*>& ts) {
  RETURN_IF_ERROR(requireContribFloat(ctx, ts[0]->dtype));
  for (const HostTensor* t : ts) RETURN_IF_ERROR(requireContribFloat(ctx, t->dtype));
  return checkSameType(ctx, ts);
}

/// RMS-normalizes each row of `x` (rows of `inner` values) in place, times `scale`; returns the
/// rows' inv_std_var.
std::vector<double> rmsRows(std::vector<double>& x, int64_t inner, const std::vector<double>& scale,
                            double eps) {
  const size_t n = static_cast<size_t>(inner);
  std::vector<double> inv(n == 0 ? 0 : x.size() / n);
  for (size_t r = 0; r < inv.size(); ++r) {
    double* row = x.data() + r * n;
    double sq = 0;
    for (size_t j = 0; j < n; ++j) sq += row[j] * row[j];
    inv[r] = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
    for (size_t j = 0; j < n; ++j) row[j] = row[j] * inv[r] * scale[j];
  }
  return inv;
}

}  // namespace

StatusOr<Outputs> simplifiedLayerNormKernel(const KernelContext& ctx) {
  if (ctx.numInputs() != 2 || ctx.input(0) == nullptr || ctx.input(1) == nullptr) {
    return invalidArgument("{}: takes X and scale", ctx.op);
  }
  if (ctx.num_outputs > 2) return invalidArgument("{}: has at most 2 outputs", ctx.op);
  const HostTensor& x = *ctx.input(0);
  const HostTensor& scale_t = *ctx.input(1);
  RETURN_IF_ERROR(visitFloat(ctx, x.dtype, [](auto) { return Status::ok(); }));
  RETURN_IF_ERROR(visitFloat(ctx, scale_t.dtype, [](auto) { return Status::ok(); }));
  if (x.rank() == 0) return invalidArgument("{}: X must not be a scalar", ctx.op);
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", -1), x.rank()));
  const int64_t inner = dimProduct(x.dims, axis, x.rank());
  if (scale_t.numElements() != inner) {
    return invalidArgument("{}: scale has {} elements for {} normalized ones", ctx.op,
                           scale_t.numElements(), inner);
  }
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, x));
  ASSIGN_OR_RETURN(std::vector<double> scale, readFloats<double>(ctx, scale_t));
  std::vector<double> inv = rmsRows(v, inner, scale, ctx.attrs.getFloat("epsilon", 1e-5f));
  Outputs out;
  // Y is of scale's type (onnxruntime's V), which may differ from X's.
  ASSIGN_OR_RETURN(HostTensor y, floatsToTensor(ctx, scale_t.dtype, x.dims, v));
  out.push_back(std::move(y));
  if (ctx.num_outputs > 1) {
    Dims stat = x.dims;
    for (size_t d = static_cast<size_t>(axis); d < stat.size(); ++d) stat[d] = 1;
    ASSIGN_OR_RETURN(HostTensor s, floatsToTensor(ctx, DataType::kFloat, stat, inv));
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<Outputs> skipSimplifiedLayerNormKernel(const KernelContext& ctx) {
  if (ctx.numInputs() < 3 || ctx.numInputs() > 4 || ctx.input(0) == nullptr ||
      ctx.input(1) == nullptr || ctx.input(2) == nullptr) {
    return invalidArgument("{}: takes input, skip, gamma and an optional bias", ctx.op);
  }
  if (ctx.num_outputs > 4) return invalidArgument("{}: has at most 4 outputs", ctx.op);
  const HostTensor& x = *ctx.input(0);
  const HostTensor& skip = *ctx.input(1);
  const HostTensor* bias_t = ctx.input(3);
  std::vector<const HostTensor*> typed = {&x, &skip, ctx.input(2)};
  if (bias_t != nullptr) typed.push_back(bias_t);
  RETURN_IF_ERROR(requireSameContribFloat(ctx, typed));
  if (x.rank() != 2 && x.rank() != 3) {
    return invalidArgument("{}: input must be 2-D or 3-D, not {}-D", ctx.op, x.rank());
  }
  const int64_t hidden = x.dims.back();
  // skip is input's shape, or broadcasts over the batch ([S, hidden] or [1, S, hidden]).
  const int64_t n = x.numElements(), skip_n = skip.numElements();
  if (skip.dims.empty() || skip.dims.back() != hidden || skip_n == 0 || n % skip_n != 0 ||
      skip.rank() > x.rank() ||
      !std::equal(skip.dims.begin() + (skip.rank() == 3 ? 1 : 0), skip.dims.end(),
                  x.dims.end() - std::min<int64_t>(skip.rank(), 2))) {
    return invalidArgument("{}: skip [{}] does not fit input [{}]", ctx.op,
                           fmt::join(skip.dims, ","), fmt::join(x.dims, ","));
  }
  if (ctx.input(2)->numElements() != hidden ||
      (bias_t != nullptr && bias_t->numElements() != hidden)) {
    return invalidArgument("{}: gamma and bias must have {} elements (input's last dim)", ctx.op,
                           hidden);
  }
  ASSIGN_OR_RETURN(std::vector<double> sum, readFloats<double>(ctx, x));
  ASSIGN_OR_RETURN(std::vector<double> s, readFloats<double>(ctx, skip));
  ASSIGN_OR_RETURN(std::vector<double> gamma, readFloats<double>(ctx, *ctx.input(2)));
  std::vector<double> bias(static_cast<size_t>(hidden), 0.0);
  if (bias_t != nullptr) {
    ASSIGN_OR_RETURN(bias, readFloats<double>(ctx, *bias_t));
  }
  for (size_t i = 0; i < sum.size(); ++i) {
    sum[i] += s[i % s.size()] + bias[i % bias.size()];
  }
  std::vector<double> y = sum;
  std::vector<double> inv = rmsRows(y, hidden, gamma, ctx.attrs.getFloat("epsilon", 1e-5f));
  std::vector<double> mean(inv.size(), 0.0);
  for (size_t r = 0; r < mean.size(); ++r) {
    for (int64_t j = 0; j < hidden; ++j) mean[r] += sum[r * static_cast<size_t>(hidden) + j];
    mean[r] /= static_cast<double>(hidden);
  }
  Dims stat = x.dims;
  stat.back() = 1;
  Outputs out;
  ASSIGN_OR_RETURN(HostTensor t, floatsToTensor(ctx, x.dtype, x.dims, y));
  out.push_back(std::move(t));
  for (const std::vector<double>* v : {&mean, &inv}) {
    if (out.size() == ctx.num_outputs) break;
    ASSIGN_OR_RETURN(HostTensor st, floatsToTensor(ctx, DataType::kFloat, stat, *v));
    out.push_back(std::move(st));
  }
  if (ctx.num_outputs > 3) {
    ASSIGN_OR_RETURN(HostTensor st, floatsToTensor(ctx, x.dtype, x.dims, sum));
    out.push_back(std::move(st));
  }
  return out;
}

namespace {

/// The layout of RotaryEmbedding's input: element (b, h, s, d) at b * sb + h * hb + s * ssb + d.
struct RotaryLayout {
  int64_t batch, heads, seq, head, sb, hb, ssb;
};

StatusOr<RotaryLayout> rotaryLayout(const KernelContext& ctx, const HostTensor& x, int64_t half) {
  const int64_t num_heads = ctx.attrs.getInt("num_heads", 0);
  const int64_t rot_attr = ctx.attrs.getInt("rotary_embedding_dim", 0);
  if (num_heads < 0 || rot_attr < 0) {
    return invalidArgument("{}: num_heads and rotary_embedding_dim must not be negative", ctx.op);
  }
  if (rot_attr > 0 && num_heads == 0) {
    return invalidArgument("{}: rotary_embedding_dim needs num_heads", ctx.op);
  }
  RotaryLayout l{x.dims[0], 0, 0, 0, 0, 0, 0};
  if (x.rank() == 4) {
    l.heads = x.dims[1];
    l.seq = x.dims[2];
    l.head = x.dims[3];
    if (num_heads != 0 && num_heads != l.heads) {
      return invalidArgument("{}: num_heads {} contradicts the input's {} heads", ctx.op, num_heads,
                             l.heads);
    }
  } else {
    l.seq = x.dims[1];
    // Without num_heads the head size is the caches' (2 * half), as in onnxruntime.
    l.head = num_heads > 0 ? (x.dims[2] % num_heads == 0 ? x.dims[2] / num_heads : 0) : 2 * half;
    if (l.head == 0 || x.dims[2] % l.head != 0) {
      return invalidArgument("{}: hidden size {} does not split into heads (num_heads {})", ctx.op,
                             x.dims[2], num_heads);
    }
    l.heads = x.dims[2] / l.head;
  }
  l.hb = x.rank() == 4 ? l.seq * l.head : l.head;
  l.ssb = x.rank() == 4 ? l.head : l.heads * l.head;
  l.sb = l.heads * l.seq * l.head;
  return l;
}

}  // namespace

StatusOr<Outputs> contribRotaryEmbeddingKernel(const KernelContext& ctx) {
  if (ctx.numInputs() != 4 || ctx.input(0) == nullptr || ctx.input(1) == nullptr ||
      ctx.input(2) == nullptr || ctx.input(3) == nullptr) {
    return invalidArgument("{}: takes input, position_ids, cos_cache and sin_cache", ctx.op);
  }
  const HostTensor &x = *ctx.input(0), &pos_t = *ctx.input(1), &cos_t = *ctx.input(2),
                   &sin_t = *ctx.input(3);
  RETURN_IF_ERROR(requireSameContribFloat(ctx, {&x, &cos_t, &sin_t}));
  if (pos_t.dtype != DataType::kInt64) {
    return invalidArgument("{}: position_ids must be int64, not {}", ctx.op,
                           dataTypeName(pos_t.dtype));
  }
  if (ctx.attrs.getInt("is_packed_batching", 0) != 0) {
    return unimplemented(ctx, "is_packed_batching (ragged batches)");
  }
  if (x.rank() != 3 && x.rank() != 4) {
    return invalidArgument("{}: input must be 3-D or 4-D, not {}-D", ctx.op, x.rank());
  }
  if (cos_t.rank() != 2 || cos_t.dims != sin_t.dims) {
    return invalidArgument("{}: cos_cache and sin_cache must be 2-D and of one shape", ctx.op);
  }
  const int64_t max_pos = cos_t.dims[0], cache_half = cos_t.dims[1];
  ASSIGN_OR_RETURN(RotaryLayout l, rotaryLayout(ctx, x, cache_half));
  const int64_t rot_attr = ctx.attrs.getInt("rotary_embedding_dim", 0);
  const int64_t rot = rot_attr > 0 ? rot_attr : l.head;
  if (rot > l.head || rot % 2 != 0 || cache_half != rot / 2) {
    return invalidArgument(
        "{}: the caches' width {} must be half the rotary dim {} (even, at most the head size {})",
        ctx.op, cache_half, rot, l.head);
  }
  ASSIGN_OR_RETURN(Dims pos, readInts(pos_t, "position_ids"));
  const bool offset = pos.size() == 1 && pos_t.rank() <= 1;
  if (!offset && pos_t.dims != Dims{l.batch, l.seq}) {
    return invalidArgument("{}: position_ids must be [{}, {}] or one start offset", ctx.op, l.batch,
                           l.seq);
  }
  ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, x));
  ASSIGN_OR_RETURN(std::vector<double> cosv, readFloats<double>(ctx, cos_t));
  ASSIGN_OR_RETURN(std::vector<double> sinv, readFloats<double>(ctx, sin_t));
  std::vector<double> head(static_cast<size_t>(l.head));
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int64_t s = 0; s < l.seq; ++s) {
      int64_t p = offset ? pos[0] + s : pos[static_cast<size_t>(b * l.seq + s)];
      if (p < 0 || p >= max_pos) {
        return invalidArgument("{}: position {} is outside the caches' {} rows", ctx.op, p,
                               max_pos);
      }
      for (int64_t h = 0; h < l.heads; ++h) {
        double* x_head = v.data() + b * l.sb + h * l.hb + s * l.ssb;
        rotateHead(x_head, cosv.data() + p * cache_half, sinv.data() + p * cache_half, rot,
                   ctx.attrs.getInt("interleaved", 0) != 0);
      }
    }
  }
  ASSIGN_OR_RETURN(HostTensor y, floatsToTensor(ctx, x.dtype, x.dims, v));
  return single(std::move(y));
}

namespace {

/// MatMulNBits' attributes, checked against its inputs.
struct NBits {
  int64_t k, n, bits, block, k_blocks, blob;
};

StatusOr<NBits> nbitsAttrs(const KernelContext& ctx) {
  NBits p{ctx.attrs.getInt("K", 0),
          ctx.attrs.getInt("N", 0),
          ctx.attrs.getInt("bits", 4),
          ctx.attrs.getInt("block_size", 0),
          0,
          0};
  if (p.k <= 0 || p.n <= 0) return invalidArgument("{}: K and N must be positive", ctx.op);
  if (p.bits != 2 && p.bits != 4 && p.bits != 8) {
    return invalidArgument("{}: bits is {}; it must be 2, 4 or 8", ctx.op, p.bits);
  }
  if (p.block < 16 || (p.block & (p.block - 1)) != 0) {
    return invalidArgument("{}: block_size {} must be a power of 2, at least 16", ctx.op, p.block);
  }
  p.k_blocks = (p.k + p.block - 1) / p.block;
  p.blob = p.block * p.bits / 8;
  return p;
}

/// The bits-wide field i of a little-endian packed byte array.
int64_t field(const uint8_t* bytes, int64_t i, int64_t bits) {
  int64_t bit = i * bits;
  return (bytes[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
}

/// zp[n * k_blocks + g]: the zero point of each block.
StatusOr<std::vector<double>> zeroPoints(const KernelContext& ctx, const NBits& p, DataType a) {
  const HostTensor* zp = ctx.input(3);
  const size_t count = static_cast<size_t>(p.n * p.k_blocks);
  if (zp == nullptr) return std::vector<double>(count, static_cast<double>(1 << (p.bits - 1)));
  if (zp->dtype == a) {
    if (zp->numElements() != p.n * p.k_blocks) {
      return invalidArgument("{}: zero_points of A's type must have N * k_blocks = {} elements",
                             ctx.op, p.n * p.k_blocks);
    }
    return readFloats<double>(ctx, *zp);
  }
  if (zp->dtype != DataType::kUint8) {
    return invalidArgument("{}: zero_points must be uint8 (packed) or of A's type, not {}", ctx.op,
                           dataTypeName(zp->dtype));
  }
  const int64_t row = (p.k_blocks * p.bits + 7) / 8;
  if (zp->numElements() != p.n * row) {
    return invalidArgument("{}: packed zero_points must have N * {} = {} bytes", ctx.op, row,
                           p.n * row);
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(zp->bytes.data());
  std::vector<double> out(count);
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t g = 0; g < p.k_blocks; ++g) {
      out[static_cast<size_t>(n * p.k_blocks + g)] =
          static_cast<double>(field(bytes + n * row, g, p.bits));
    }
  }
  return out;
}

/// W as [N, K] in double, dequantized.
StatusOr<std::vector<double>> dequantizedWeights(const KernelContext& ctx, const NBits& p,
                                                 DataType a) {
  const HostTensor &b = *ctx.input(1), &scales_t = *ctx.input(2);
  if (b.dtype != DataType::kUint8 || b.numElements() != p.n * p.k_blocks * p.blob) {
    return invalidArgument("{}: B must be uint8 [N, k_blocks, blob_size] = [{}, {}, {}]", ctx.op,
                           p.n, p.k_blocks, p.blob);
  }
  if (scales_t.dtype != a || scales_t.numElements() != p.n * p.k_blocks) {
    return invalidArgument("{}: scales must be of A's type with N * k_blocks = {} elements", ctx.op,
                           p.n * p.k_blocks);
  }
  std::vector<int64_t> group(static_cast<size_t>(p.k));
  for (int64_t k = 0; k < p.k; ++k) group[static_cast<size_t>(k)] = k / p.block;
  if (const HostTensor* g_idx = ctx.input(4)) {
    if (g_idx->dtype != DataType::kInt32 || g_idx->numElements() != p.k) {
      return invalidArgument("{}: g_idx must be int32 with K = {} elements", ctx.op, p.k);
    }
    ASSIGN_OR_RETURN(group, readInts(*g_idx, "g_idx"));
    for (int64_t g : group) {
      if (g < 0 || g >= p.k_blocks) {
        return invalidArgument("{}: g_idx holds {}, outside [0, {})", ctx.op, g, p.k_blocks);
      }
    }
  }
  ASSIGN_OR_RETURN(std::vector<double> scales, readFloats<double>(ctx, scales_t));
  ASSIGN_OR_RETURN(std::vector<double> zp, zeroPoints(ctx, p, a));
  const auto* bytes = reinterpret_cast<const uint8_t*>(b.bytes.data());
  std::vector<double> w(static_cast<size_t>(p.n * p.k));
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t k = 0; k < p.k; ++k) {
      const uint8_t* blob = bytes + (n * p.k_blocks + k / p.block) * p.blob;
      size_t g = static_cast<size_t>(n * p.k_blocks + group[static_cast<size_t>(k)]);
      double q = static_cast<double>(field(blob, k % p.block, p.bits));
      w[static_cast<size_t>(n * p.k + k)] = (q - zp[g]) * scales[g];
    }
  }
  return w;
}

}  // namespace

StatusOr<Outputs> matMulNBitsKernel(const KernelContext& ctx) {
  if (ctx.numInputs() < 3 || ctx.numInputs() > 6 || ctx.input(0) == nullptr ||
      ctx.input(1) == nullptr || ctx.input(2) == nullptr) {
    return invalidArgument("{}: takes A, B, scales and optional zero_points, g_idx, bias", ctx.op);
  }
  if (ctx.attrs.getInt("weight_prepacked", 0) != 0) {
    return unimplemented(ctx, "weight_prepacked (a CUDA layout of B)");
  }
  const HostTensor& a = *ctx.input(0);
  RETURN_IF_ERROR(requireContribFloat(ctx, a.dtype));
  ASSIGN_OR_RETURN(NBits p, nbitsAttrs(ctx));
  if (a.rank() < 1 || a.dims.back() != p.k) {
    return invalidArgument("{}: A's last dim must be K = {}", ctx.op, p.k);
  }
  const HostTensor* bias_t = ctx.input(5);
  if (bias_t != nullptr && (bias_t->dtype != a.dtype || bias_t->numElements() != p.n)) {
    return invalidArgument("{}: bias must be of A's type with N = {} elements", ctx.op, p.n);
  }
  std::vector<double> w;
  // An empty B stands for an omitted projection: Y is the bias (or zeros).
  if (ctx.input(1)->numElements() != 0) {
    ASSIGN_OR_RETURN(w, dequantizedWeights(ctx, p, a.dtype));
  }
  ASSIGN_OR_RETURN(std::vector<double> av, readFloats<double>(ctx, a));
  std::vector<double> bias(static_cast<size_t>(p.n), 0.0);
  if (bias_t != nullptr) {
    ASSIGN_OR_RETURN(bias, readFloats<double>(ctx, *bias_t));
  }
  const size_t rows = av.size() / static_cast<size_t>(p.k), kk = static_cast<size_t>(p.k);
  std::vector<double> y(rows * static_cast<size_t>(p.n));
  for (size_t r = 0; r < rows; ++r) {
    for (size_t n = 0; n < static_cast<size_t>(p.n); ++n) {
      double acc = bias[n];
      for (size_t k = 0; !w.empty() && k < kk; ++k) acc += av[r * kk + k] * w[n * kk + k];
      y[r * static_cast<size_t>(p.n) + n] = acc;
    }
  }
  Dims dims = a.dims;
  dims.back() = p.n;
  ASSIGN_OR_RETURN(HostTensor out, floatsToTensor(ctx, a.dtype, dims, y));
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
