// Neural-network ops: convolution and pooling, normalization, Gemm/MatMul/Einsum, recurrent ops,
// Attention, quantization.
#include <map>

#include "helpers.h"

namespace onnxopt::ir::detail {
namespace {

using infer::dimAdd;
using infer::dimFloorDiv;
using infer::dimMul;
using infer::dimProduct;
using infer::dimSub;
using infer::elemOr;
using infer::passThrough;

/// The attributes of one spatial axis of a convolution or pooling window.
struct Window {
  int64_t k, stride, dil, pad_head, pad_tail;
  std::string auto_pad;
  bool ceil_mode = false;
  bool pool = false;
  /// The opset of an onnx pooling op, whose value_info onnx.checker infers again; 0 for
  /// onnxopt's own channels-last ops, which only onnxruntime's semantics bind.
  int64_t onnx_opset = 0;
};

/// Pooling output size over a known input size as onnx's shape inference computes it: C++
/// division (toward zero) and, from opset 22 on, with ceil_mode, the last window dropped when it
/// would start in the tail padding.
int64_t onnxPoolSize(int64_t x, const Window& w) {
  int64_t extent = w.dil * (w.k - 1) + 1;
  int64_t head = w.pad_head, tail = w.pad_tail;
  if (w.auto_pad == "VALID") head = tail = 0;
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    int64_t residual = w.stride > 1 ? x % w.stride : 0;
    int64_t total = std::max<int64_t>(extent - (residual == 0 ? w.stride : residual), 0);
    head = w.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    tail = total - head;
  }
  int64_t gap = x + head + tail - extent;
  int64_t out = gap / w.stride + 1;
  if (w.ceil_mode && w.onnx_opset >= 22) {
    out = (gap + w.stride - 1) / w.stride + 1;
    if ((out - 1) * w.stride >= x + head) --out;
  } else if (w.ceil_mode) {
    out += gap % w.stride > 0 ? 1 : 0;
  }
  return out;
}

/// The same as onnxruntime's CPU pooling kernels compute it: SAME padding sized from the
/// undilated kernel, and with ceil_mode the last window dropped when it would start in the tail
/// padding (at every opset).
int64_t ortPoolSize(int64_t x, const Window& w) {
  int64_t head = w.pad_head, pads = w.pad_head + w.pad_tail;
  if (w.auto_pad == "VALID") head = pads = 0;
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    pads = ((x + w.stride - 1) / w.stride - 1) * w.stride + w.k - x;
    head = w.auto_pad == "SAME_UPPER" ? pads / 2 : (pads + 1) / 2;
  }
  int64_t gap = x + pads - w.dil * (w.k - 1) - 1;
  if (!w.ceil_mode) return gap / w.stride + 1;
  int64_t out = (gap >= 0 ? (gap + w.stride - 1) / w.stride : -(-gap / w.stride)) + 1;
  if ((out - 1) * w.stride >= x + head) --out;
  return out;
}

/// Spatial output size of a convolution or pooling window. Arithmetic on the attributes goes
/// through SymExpr, so an overflow gives an unknown dim instead of a wrapped one. A pool over a
/// known size gets the size only where onnx's inference and onnxruntime agree on it: they differ
/// for kernels that overhang a small input, SAME padding with dilation, and the dropped last
/// window before opset 22. A value_info either contradicts is worse than none: onnx.checker
/// rejects the model, or a consumer plans for a size the run does not produce.
Dim windowOut(const Dim& in, const Window& w, bool* disputed = nullptr) {
  auto x = in.toExpr();
  if (!x || w.k <= 0 || w.stride <= 0 || w.dil <= 0) return Dim::unknown();
  auto c = [](int64_t v) { return SymExpr::constant(v); };
  constexpr int64_t kSmall = int64_t{1} << 30;
  auto xv = x->constantValue();
  if (w.pool && xv && std::max({*xv, w.k, w.stride, w.dil, w.pad_head, w.pad_tail}) < kSmall) {
    int64_t ort = ortPoolSize(*xv, w);
    bool agreed = w.onnx_opset == 0 || onnxPoolSize(*xv, w) == ort;
    if (!agreed && disputed != nullptr) *disputed = true;
    return agreed && ort >= 0 ? Dim::known(ort) : Dim::unknown();
  }
  const bool same = w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER";
  if (!w.pool && xv && std::max({*xv, w.k, w.stride, w.dil, w.pad_head, w.pad_tail}) < kSmall &&
      std::min(w.pad_head, w.pad_tail) > -kSmall) {
    // A known size through a convolution: the arithmetic below on int64, where nothing overflows.
    if (same) return Dim::known((*xv + w.stride - 1) / w.stride);
    int64_t extent = w.dil * (w.k - 1) + 1;
    int64_t span = *xv + (w.auto_pad == "VALID" ? 0 : w.pad_head + w.pad_tail) - extent;
    return Dim::known(floorDivInt(span, w.stride) + 1);
  }
  SymExpr s = c(w.stride);
  if (same) {
    if (w.pool && w.dil > 1 && w.k > 1) {  // onnxruntime pads as if undilated
      if (disputed != nullptr && w.onnx_opset != 0) *disputed = true;
      return Dim::unknown();
    }
    return Dim::fromExpr(SymExpr::ceilDiv(*x, s));
  }
  bool valid = w.auto_pad == "VALID";
  SymExpr extent = c(w.dil) * (c(w.k) - c(1)) + c(1);  // the dilated kernel
  SymExpr pads = valid ? c(0) : c(w.pad_head) + c(w.pad_tail);
  SymExpr span = *x + pads - extent;
  bool ceil_mode = w.ceil_mode && w.pool;
  SymExpr out = (ceil_mode ? SymExpr::ceilDiv(span, s) : SymExpr::floorDiv(span, s)) + c(1);
  if (ceil_mode) {
    // Symbolic input: the last window starts inside for every input size (where onnxruntime
    // drops it and onnx before opset 22 does not) only if pad_tail + stride <= extent.
    auto bound = (c(valid ? 0 : w.pad_tail) + s - extent).constantValue();
    if (!bound || *bound > 0) {
      if (disputed != nullptr && w.onnx_opset != 0 && w.onnx_opset < 22) *disputed = true;
      return Dim::unknown();
    }
  }
  return Dim::fromExpr(out);
}

/// [N, S..., C] as [N, C, S...] (rank >= 2), and back.
std::vector<Dim> channelsFirst(std::vector<Dim> d) {
  if (d.size() >= 2) {
    Dim c = d.back();
    d.pop_back();
    d.insert(d.begin() + 1, c);
  }
  return d;
}
std::vector<Dim> channelsLast(std::vector<Dim> d) {
  if (d.size() >= 2) {
    Dim c = d[1];
    d.erase(d.begin() + 1);
    d.push_back(c);
  }
  return d;
}

/// Conv, pooling: N, C, then spatial dims from kernel, strides, pads, dilations. Channels-last
/// (ai.onnxopt.NhwcConv*, NhwcMaxPool, NhwcAveragePool): X, W and Y as [N, S..., C].
void windowed(InferenceContext& ctx, bool is_conv, bool is_pool, bool channels_last = false) {
  auto shapeOf = [&](size_t i) {
    auto s = ctx.inputShape(i);
    if (s && channels_last) s = channelsFirst(*s);
    return s;
  };
  auto x = shapeOf(0);
  DataType elem = elemOr(ctx, 0);
  if (!x || x->size() < 2) return ctx.setOutputType(0, Type::tensor(elem));
  size_t spatial = x->size() - 2;
  std::vector<int64_t> kernel;
  if (auto k = ctx.attrInts("kernel_shape")) {
    kernel = *k;
  } else if (is_conv) {
    auto w = shapeOf(1);
    if (!w || w->size() != x->size())
      return ctx.setOutput(0, elem, std::vector<Dim>(x->size(), Dim::unknown()));
    for (size_t i = 2; i < w->size(); ++i) {
      if (!(*w)[i].isKnown())
        return ctx.setOutput(0, elem, std::vector<Dim>(x->size(), Dim::unknown()));
      kernel.push_back((*w)[i].value);
    }
  }
  if (kernel.size() != spatial) return ctx.warn("kernel rank does not match the input");
  auto strides = ctx.attrInts("strides").value_or(std::vector<int64_t>(spatial, 1));
  auto dilations = ctx.attrInts("dilations").value_or(std::vector<int64_t>(spatial, 1));
  auto pads = ctx.attrInts("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  std::string auto_pad = ctx.attrString("auto_pad", "NOTSET");
  bool ceil_mode = ctx.attrInt("ceil_mode", 0) != 0;
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial) {
    return ctx.warn("strides, dilations or pads do not match the kernel");
  }
  auto positive = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t e) { return e > 0; });
  };
  if (!positive(kernel) || !positive(strides) || !positive(dilations)) {
    ctx.warn("kernel, strides and dilations must be positive");
    return ctx.setOutput(0, elem, std::vector<Dim>(x->size(), Dim::unknown()));
  }
  std::vector<Dim> out{(*x)[0], (*x)[1]};
  if (is_conv) {
    auto w = shapeOf(1);
    out[1] = w && !w->empty() ? (*w)[0] : Dim::unknown();
  }
  bool disputed = false;
  for (size_t i = 0; i < spatial; ++i) {
    Window w{kernel[i], strides[i], dilations[i], pads[i], pads[i + spatial], auto_pad};
    w.ceil_mode = ceil_mode;
    w.pool = is_pool;
    w.onnx_opset = channels_last ? 0 : ctx.opset();
    out.push_back(windowOut((*x)[i + 2], w, &disputed));
  }
  auto set = [&](size_t i, DataType t, std::vector<Dim> dims) {
    if (disputed) return ctx.setOutputDisputed(i, t, std::move(dims));
    ctx.setOutput(i, t, std::move(dims));
  };
  set(0, elem, channels_last ? channelsLast(out) : out);
  if (ctx.node().opType() == "MaxPool" && ctx.numOutputs() > 1) set(1, DataType::kInt64, out);
}

void conv(InferenceContext& ctx) {
  windowed(ctx, true, false);
}
void passThroughFirst(InferenceContext& ctx) {
  passThrough(ctx);
}
void pool(InferenceContext& ctx) {
  windowed(ctx, false, true);
}
void nhwcConv(InferenceContext& ctx) {
  windowed(ctx, true, false, true);
}
void nhwcPool(InferenceContext& ctx) {
  windowed(ctx, false, true, true);
}

void convTranspose(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  auto w = ctx.inputShape(1);
  DataType elem = elemOr(ctx, 0);
  if (!x || x->size() < 2) return ctx.setOutputType(0, Type::tensor(elem));
  size_t spatial = x->size() - 2;
  int64_t group = ctx.attrInt("group", 1);
  std::vector<Dim> out{(*x)[0],
                       w && w->size() > 1 ? dimMul((*w)[1], Dim::known(group)) : Dim::unknown()};
  if (auto os = ctx.attrInts("output_shape"); os && os->size() == spatial) {
    for (int64_t d : *os) out.push_back(Dim::known(d));
    return ctx.setOutput(0, elem, out);
  }
  std::vector<int64_t> kernel;
  if (auto k = ctx.attrInts("kernel_shape")) {
    kernel = *k;
  } else if (w && w->size() == x->size()) {
    for (size_t i = 2; i < w->size(); ++i) kernel.push_back((*w)[i].isKnown() ? (*w)[i].value : -1);
  }
  auto strides = ctx.attrInts("strides").value_or(std::vector<int64_t>(spatial, 1));
  auto dilations = ctx.attrInts("dilations").value_or(std::vector<int64_t>(spatial, 1));
  auto pads = ctx.attrInts("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  auto outpad = ctx.attrInts("output_padding").value_or(std::vector<int64_t>(spatial, 0));
  std::string auto_pad = ctx.attrString("auto_pad", "NOTSET");
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial ||
      dilations.size() != spatial || outpad.size() != spatial) {
    return ctx.setOutput(0, elem, std::vector<Dim>(x->size(), Dim::unknown()));
  }
  auto c = [](int64_t v) { return SymExpr::constant(v); };
  for (size_t i = 0; i < spatial; ++i) {
    auto in = (*x)[i + 2].toExpr();
    if (!in || kernel[i] <= 0 || strides[i] <= 0 || dilations[i] <= 0) {
      out.push_back(Dim::unknown());
      continue;
    }
    SymExpr s = c(strides[i]);
    SymExpr unpadded =
        s * (*in - c(1)) + c(outpad[i]) + (c(kernel[i]) - c(1)) * c(dilations[i]) + c(1);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // in * stride, padded down to it; where the kernel is too short to reach it the padding
      // would be negative, and onnx and onnxruntime both take none.
      auto need = (unpadded - *in * s).constantValue();
      bool short_kernel = need && *need < 0;
      out.push_back(Dim::fromExpr(short_kernel ? unpadded : *in * s));
      continue;
    }
    out.push_back(Dim::fromExpr(unpadded - c(pads[i]) - c(pads[i + spatial])));
  }
  ctx.setOutput(0, elem, out);
}

void globalPool(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  if (!x || x->size() < 2) return ctx.setOutputType(0, Type::tensor(elem));
  std::vector<Dim> out{(*x)[0], (*x)[1]};
  out.resize(x->size(), Dim::known(1));
  ctx.setOutput(0, elem, out);
}

void batchNorm(InferenceContext& ctx) {
  passThrough(ctx);
  auto x = ctx.inputShape(0);
  Dim c = x && x->size() > 1 ? (*x)[1] : Dim::unknown();
  for (size_t i = 1; i < ctx.numOutputs(); ++i) {
    ctx.setOutput(i, elemOr(ctx, i < 3 ? 1 : 0), std::vector<Dim>{c});
  }
}

void layerNorm(InferenceContext& ctx) {
  passThrough(ctx);
  auto x = ctx.inputShape(0);
  if (ctx.numOutputs() < 2) return;
  DataType stash = static_cast<DataType>(ctx.attrInt("stash_type", 1));
  if (!x) {
    for (size_t i = 1; i < ctx.numOutputs(); ++i) ctx.setOutputType(i, Type::tensor(stash));
    return;
  }
  auto axis = normalizeAxis(ctx.attrInt("axis", -1), static_cast<int64_t>(x->size()));
  if (!axis) return ctx.warn("axis out of range");
  std::vector<Dim> reduced = *x;
  for (size_t i = static_cast<size_t>(*axis); i < reduced.size(); ++i) reduced[i] = Dim::known(1);
  for (size_t i = 1; i < ctx.numOutputs(); ++i) ctx.setOutput(i, stash, reduced);
}

void gemm(InferenceContext& ctx) {
  auto a = ctx.inputShape(0);
  auto b = ctx.inputShape(1);
  DataType elem = elemOr(ctx, 0);
  Dim m = Dim::unknown(), n = Dim::unknown();
  if (a && a->size() == 2) m = (*a)[ctx.attrInt("transA", 0) ? 1 : 0];
  if (b && b->size() == 2) n = (*b)[ctx.attrInt("transB", 0) ? 0 : 1];
  ctx.setOutput(0, elem, std::vector<Dim>{m, n});
}

std::optional<std::vector<Dim>> matmulShape(InferenceContext& ctx,
                                            std::optional<std::vector<Dim>> a,
                                            std::optional<std::vector<Dim>> b) {
  if (!a || !b || a->empty() || b->empty()) return std::nullopt;
  bool a_vec = a->size() == 1, b_vec = b->size() == 1;
  if (a_vec) a->insert(a->begin(), Dim::known(1));
  if (b_vec) b->push_back(Dim::known(1));
  std::vector<Dim> ba(a->begin(), a->end() - 2), bb(b->begin(), b->end() - 2);
  auto batch = broadcastShapes(ba, bb);
  if (!batch) {
    ctx.warn("batch dims do not broadcast");
    return std::nullopt;
  }
  std::vector<Dim> out = *batch;
  if (!a_vec) out.push_back((*a)[a->size() - 2]);
  if (!b_vec) out.push_back(b->back());
  return out;
}

void matmul(InferenceContext& ctx) {
  ctx.setOutput(0, elemOr(ctx, 0), matmulShape(ctx, ctx.inputShape(0), ctx.inputShape(1)));
}

void matmulInteger(InferenceContext& ctx) {
  ctx.setOutput(0, DataType::kInt32, matmulShape(ctx, ctx.inputShape(0), ctx.inputShape(1)));
}

void qlinearMatmul(InferenceContext& ctx) {
  ctx.setOutput(0, elemOr(ctx, 7), matmulShape(ctx, ctx.inputShape(0), ctx.inputShape(3)));
}

void einsum(InferenceContext& ctx) {
  DataType elem = elemOr(ctx, 0);
  std::string eq = ctx.attrString("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    auto comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.numInputs()) return ctx.setOutputType(0, Type::tensor(elem));
  std::map<char, Dim> sizes;
  std::map<char, int> counts;
  std::vector<Dim> ellipsis;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto s = ctx.inputShape(i);
    if (!s) return ctx.setOutputType(0, Type::tensor(elem));
    std::string t = terms[i];
    size_t dots = t.find("...");
    size_t letters = t.size() - (dots == std::string::npos ? 0 : 3);
    auto periods = static_cast<size_t>(std::count(t.begin(), t.end(), '.'));
    if (periods != (dots == std::string::npos ? 0 : 3) || letters > s->size() ||
        (dots == std::string::npos && letters != s->size())) {
      ctx.warn("equation does not match the input rank");
      return ctx.setOutputType(0, Type::tensor(elem));
    }
    size_t ell = s->size() - letters;
    size_t d = 0;
    for (size_t j = 0; j < t.size(); ++j) {
      if (t.compare(j, 3, "...") == 0) {
        std::vector<Dim> e(s->begin() + d, s->begin() + d + ell);
        auto b = broadcastShapes(ellipsis, e);
        if (b) ellipsis = *b;
        d += ell;
        j += 2;
        continue;
      }
      char c = t[j];
      ++counts[c];
      const Dim& dim = (*s)[d++];
      auto it = sizes.find(c);
      if (it == sizes.end() || (!it->second.isKnown() && dim.isKnown()) ||
          (it->second.isKnown() && it->second.value == 1)) {
        sizes[c] = dim;
      }
    }
  }
  std::string rhs;
  bool has_ellipsis = eq.find("...") != std::string::npos;
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
  } else {
    if (has_ellipsis) rhs = "...";
    for (const auto& [c, n] : counts) {
      if (n == 1) rhs += c;
    }
  }
  std::vector<Dim> out;
  for (size_t j = 0; j < rhs.size(); ++j) {
    if (rhs.compare(j, 3, "...") == 0) {
      out.insert(out.end(), ellipsis.begin(), ellipsis.end());
      j += 2;
      continue;
    }
    auto it = sizes.find(rhs[j]);
    out.push_back(it == sizes.end() ? Dim::unknown() : it->second);
  }
  ctx.setOutput(0, elem, out);
}

void recurrent(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  DataType elem = elemOr(ctx, 0);
  int64_t dirs = ctx.attrString("direction", "forward") == "bidirectional" ? 2 : 1;
  Dim hidden = ctx.attr("hidden_size") != nullptr ? Dim::known(ctx.attrInt("hidden_size", 0))
                                                  : Dim::unknown();
  bool batch_first = ctx.attrInt("layout", 0) != 0;
  Dim seq = Dim::unknown(), batch = Dim::unknown();
  if (x && x->size() == 3) {
    seq = (*x)[batch_first ? 1 : 0];
    batch = (*x)[batch_first ? 0 : 1];
  }
  Dim d = Dim::known(dirs);
  std::vector<Dim> y = batch_first ? std::vector<Dim>{batch, seq, d, hidden}
                                   : std::vector<Dim>{seq, d, batch, hidden};
  std::vector<Dim> h =
      batch_first ? std::vector<Dim>{batch, d, hidden} : std::vector<Dim>{d, batch, hidden};
  ctx.setOutput(0, elem, y);
  for (size_t i = 1; i < ctx.numOutputs(); ++i) ctx.setOutput(i, elem, h);
}

void attention(InferenceContext& ctx) {
  auto q = ctx.inputShape(0);
  auto k = ctx.inputShape(1);
  auto v = ctx.inputShape(2);
  DataType elem = elemOr(ctx, 0);
  if (!q || !v) return ctx.setOutputType(0, Type::tensor(elem));
  Dim q_heads = Dim::known(ctx.attrInt("q_num_heads", 0));
  Dim kv_heads = Dim::known(ctx.attrInt("kv_num_heads", 0));
  if (q->size() == 4 && v->size() == 4) {
    ctx.setOutput(0, elem, std::vector<Dim>{(*q)[0], (*q)[1], (*q)[2], (*v)[3]});
  } else if (q->size() == 3 && v->size() == 3) {
    Dim v_head = dimFloorDiv((*v)[2], kv_heads);
    ctx.setOutput(0, elem, std::vector<Dim>{(*q)[0], (*q)[1], dimMul(q_heads, v_head)});
  } else if (q->size() == 4 && v->size() == 3) {
    ctx.setOutput(0, elem,
                  std::vector<Dim>{(*q)[0], (*q)[1], (*q)[2], dimFloorDiv((*v)[2], kv_heads)});
  } else {
    return ctx.setOutputType(0, Type::tensor(elem));
  }
  // present_key / present_value: past (if any) concatenated with the new keys along the sequence.
  auto past_k = ctx.hasInput(4) ? ctx.inputShape(4) : std::nullopt;
  auto present = [&](const std::optional<std::vector<Dim>>& kv, size_t out) {
    if (!kv || out >= ctx.numOutputs() || !ctx.hasOutput(out)) return;
    std::vector<Dim> dims;
    if (kv->size() == 4) {
      dims = *kv;
    } else if (kv->size() == 3) {
      dims = {(*kv)[0], kv_heads, (*kv)[1], dimFloorDiv((*kv)[2], kv_heads)};
    } else {
      return;
    }
    if (past_k && past_k->size() == 4)
      dims[2] = dimAdd((*past_k)[2], dims[2]);
    else if (ctx.hasInput(4))
      dims[2] = Dim::unknown();
    ctx.setOutput(out, elem, dims);
  };
  present(k, 1);
  present(v, 2);
}

void quantize(InferenceContext& ctx) {
  DataType out = DataType::kUint8;
  if (ctx.hasInput(2)) {
    out = elemOr(ctx, 2);
  } else if (const Attribute* a = ctx.attr("output_dtype"); a != nullptr && a->i != 0) {
    out = static_cast<DataType>(a->i);
  }
  ctx.setOutput(0, out, ctx.inputShape(0));
}

void dequantize(InferenceContext& ctx) {
  DataType out = DataType::kFloat;
  if (ctx.opset() >= 19) out = elemOr(ctx, 1);
  if (const Attribute* a = ctx.attr("output_dtype"); a != nullptr && a->i != 0) {
    out = static_cast<DataType>(a->i);
  }
  ctx.setOutput(0, out, ctx.inputShape(0));
}

void dynamicQuantize(InferenceContext& ctx) {
  ctx.setOutput(0, DataType::kUint8, ctx.inputShape(0));
  ctx.setOutput(1, DataType::kFloat, std::vector<Dim>{});
  ctx.setOutput(2, DataType::kUint8, std::vector<Dim>{});
}

void qlinearConv(InferenceContext& ctx) {
  // Inputs: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B: reuse the Conv rule on x and w.
  auto x = ctx.inputShape(0);
  auto w = ctx.inputShape(3);
  DataType elem = elemOr(ctx, 7);
  if (!x || !w || x->size() != w->size() || x->size() < 3)
    return ctx.setOutputType(0, Type::tensor(elem));
  size_t spatial = x->size() - 2;
  std::vector<int64_t> kernel;
  for (size_t i = 2; i < w->size(); ++i) {
    if (!(*w)[i].isKnown()) return ctx.setOutputType(0, Type::tensor(elem));
    kernel.push_back((*w)[i].value);
  }
  if (auto k = ctx.attrInts("kernel_shape")) kernel = *k;
  auto strides = ctx.attrInts("strides").value_or(std::vector<int64_t>(spatial, 1));
  auto dilations = ctx.attrInts("dilations").value_or(std::vector<int64_t>(spatial, 1));
  auto pads = ctx.attrInts("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  std::string auto_pad = ctx.attrString("auto_pad", "NOTSET");
  if (kernel.size() != spatial || strides.size() != spatial || dilations.size() != spatial ||
      pads.size() != 2 * spatial) {
    ctx.warn("kernel, strides, dilations or pads do not match the input");
    return ctx.setOutput(0, elem, std::vector<Dim>(x->size(), Dim::unknown()));
  }
  std::vector<Dim> out{(*x)[0], (*w)[0]};
  for (size_t i = 0; i < spatial; ++i) {
    Window win{kernel[i], strides[i], dilations[i], pads[i], pads[i + spatial], auto_pad};
    out.push_back(windowOut((*x)[i + 2], win));
  }
  ctx.setOutput(0, elem, out);
}

void convInteger(InferenceContext& ctx) {
  windowed(ctx, true, false);
  auto x = ctx.node().output(0);
  if (x != nullptr && x->type().isTensor()) {
    Type t = x->type();
    t.elem_type = DataType::kInt32;
    ctx.setOutputType(0, t);
  }
}

// CausalConvWithState and LinearAttention (opset 27; kernels in kernels/reference/stateful.cc).
/// output: input's shape; present_state: [B, C, k - 1] with k from weight [C, 1, k].
void causalConvWithState(InferenceContext& ctx) {
  auto x = ctx.inputShape(0);
  auto w = ctx.inputShape(1);
  DataType elem = elemOr(ctx, 0);
  ctx.setOutput(0, elem, x);
  if (ctx.numOutputs() < 2 || !ctx.hasOutput(1)) return;
  if (!x || x->size() != 3 || !w || w->size() != 3) return ctx.setOutputType(1, Type::tensor(elem));
  ctx.setOutput(1, elem, std::vector<Dim>{(*x)[0], (*x)[1], dimSub((*w)[2], Dim::known(1))});
}

/// output: [B, T, q_num_heads * d_v]; present_state: [B, kv_num_heads, d_k, d_v] of past_state's
/// type (query's without one), d_k = query[2] / q_num_heads, d_v = value[2] / kv_num_heads.
void linearAttention(InferenceContext& ctx) {
  auto q = ctx.inputShape(0);
  auto v = ctx.inputShape(2);
  DataType elem = elemOr(ctx, 0);
  DataType state_elem = ctx.hasInput(3) ? elemOr(ctx, 3) : elem;
  Dim q_heads = Dim::known(ctx.attrInt("q_num_heads", 0));
  Dim kv_heads = Dim::known(ctx.attrInt("kv_num_heads", 0));
  bool has_present = ctx.numOutputs() >= 2 && ctx.hasOutput(1);
  if (!q || q->size() != 3 || !v || v->size() != 3 || q_heads.value <= 0 || kv_heads.value <= 0) {
    ctx.setOutputType(0, Type::tensor(elem));
    if (has_present) ctx.setOutputType(1, Type::tensor(state_elem));
    return;
  }
  Dim d_k = dimFloorDiv((*q)[2], q_heads);
  Dim d_v = dimFloorDiv((*v)[2], kv_heads);
  ctx.setOutput(0, elem, std::vector<Dim>{(*q)[0], (*q)[1], dimMul(q_heads, d_v)});
  if (has_present) ctx.setOutput(1, state_elem, std::vector<Dim>{(*q)[0], kv_heads, d_k, d_v});
}

}  // namespace

/// ai.onnxopt.SkipLayerNormalization and SkipRMSNormalization: Y and Sum are X's type (Skip has
/// X's shape).
void skipLayerNorm(InferenceContext& ctx) {
  for (size_t i = 0; i < ctx.numOutputs(); ++i) {
    ctx.setOutput(i, elemOr(ctx, 0), ctx.inputShape(0));
  }
}

/// ai.onnxopt.SwiGlu and GeGlu: Y is A's type and shape with its last dim halved.
void glu(InferenceContext& ctx) {
  auto a = ctx.inputShape(0);
  if (!a || a->empty()) {
    ctx.setOutput(0, elemOr(ctx, 0), std::nullopt);
    return;
  }
  std::vector<Dim> y = *a;
  const Dim last = y.back();
  y.back() = last.isKnown() && last.value % 2 == 0 ? Dim::known(last.value / 2) : Dim::unknown();
  ctx.setOutput(0, elemOr(ctx, 0), y);
}

/// ai.onnxopt.SafeAttention: Y is [B, Sq, num_heads * Dv] of Q's type, Dv = V's last dim / heads.
void safeAttention(InferenceContext& ctx) {
  auto q = ctx.inputShape(0);
  auto v = ctx.inputShape(2);
  int64_t heads = ctx.attrInt("num_heads", 0);
  if (!q || !v || q->size() != 3 || v->size() != 3 || heads < 1) {
    ctx.setOutput(0, elemOr(ctx, 0), std::nullopt);
    return;
  }
  ctx.setOutput(0, elemOr(ctx, 0), std::vector<Dim>{(*q)[0], (*q)[1], (*v)[2]});
}

/// ai.onnxopt.SafePackedAttention: Y is [B, S, N] of QKV's type, QKV [B, S, 3N] (and
/// PackedAttention; SeqFirstPackedAttention: [S, B, N] from [S, B, 3N]).
void safePackedAttention(InferenceContext& ctx) {
  auto qkv = ctx.inputShape(0);
  if (!qkv || qkv->size() != 3) {
    ctx.setOutput(0, elemOr(ctx, 0), std::nullopt);
    return;
  }
  Dim last = Dim::unknown();
  if ((*qkv)[2].isKnown() && (*qkv)[2].value % 3 == 0) last = Dim::known((*qkv)[2].value / 3);
  ctx.setOutput(0, elemOr(ctx, 0), std::vector<Dim>{(*qkv)[0], (*qkv)[1], last});
}

void registerNnOps(std::vector<OpInference>& t) {
  t.push_back({"", "Conv", 1, &conv});
  t.push_back({"", "ConvInteger", 1, &convInteger});
  t.push_back({"", "QLinearConv", 1, &qlinearConv});
  t.push_back({"", "DeformConv", 1, &conv});
  t.push_back({"", "ConvTranspose", 1, &convTranspose});
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) t.push_back({"", op, 1, &pool});
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    t.push_back({"", op, 1, &globalPool});
  }
  t.push_back({"", "BatchNormalization", 1, &batchNorm});
  t.push_back({"", "LayerNormalization", 1, &layerNorm});
  t.push_back({"", "GroupNormalization", 1, &passThroughFirst});
  t.push_back({"", "RMSNormalization", 1, &passThroughFirst});
  t.push_back({"", "Gemm", 1, &gemm});
  t.push_back({"", "MatMul", 1, &matmul});
  // Our own ops (include/onnxopt/passes/target_ops.h): the bias is [N], the product's shape stays.
  for (const char* op : {"MatMulBias", "MatMulBiasRelu", "MatMulBiasGelu"}) {
    t.push_back({"ai.onnxopt", op, 1, &matmul});
  }
  t.push_back({"ai.onnxopt", "SkipLayerNormalization", 1, &skipLayerNorm});
  t.push_back({"ai.onnxopt", "SkipRMSNormalization", 1, &skipLayerNorm});
  t.push_back({"ai.onnxopt", "SwiGlu", 1, &glu});
  t.push_back({"ai.onnxopt", "GeGlu", 1, &glu});
  t.push_back({"ai.onnxopt", "SafeAttention", 1, &safeAttention});
  t.push_back({"ai.onnxopt", "SafePackedAttention", 1, &safePackedAttention});
  t.push_back({"ai.onnxopt", "SeqFirstPackedAttention", 1, &safePackedAttention});
  t.push_back({"ai.onnxopt", "PackedAttention", 1, &safePackedAttention});
  for (const char* op : {"NhwcConv", "NhwcConvRelu", "NhwcConvAddRelu"}) {
    t.push_back({"ai.onnxopt", op, 1, &nhwcConv});
  }
  for (const char* op : {"NhwcMaxPool", "NhwcAveragePool"})
    t.push_back({"ai.onnxopt", op, 1, &nhwcPool});
  t.push_back({"", "MatMulInteger", 1, &matmulInteger});
  t.push_back({"", "QLinearMatMul", 1, &qlinearMatmul});
  t.push_back({"", "Einsum", 1, &einsum});
  for (const char* op : {"LSTM", "GRU", "RNN"}) t.push_back({"", op, 1, &recurrent});
  t.push_back({"", "Attention", 23, &attention});
  t.push_back({"", "CausalConvWithState", 27, &causalConvWithState});
  t.push_back({"", "LinearAttention", 27, &linearAttention});
  t.push_back({"", "RotaryEmbedding", 23, &passThroughFirst});
  t.push_back({"ai.onnx.preview", "FlexAttention", 1, &attention});  // Y of a 4-D Attention
  t.push_back({"", "QuantizeLinear", 1, &quantize});
  t.push_back({"", "DequantizeLinear", 1, &dequantize});
  t.push_back({"", "DynamicQuantizeLinear", 1, &dynamicQuantize});
}

}  // namespace onnxopt::ir::detail
