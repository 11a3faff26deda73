// fuse-packed-attention (CUDA target): attention whose Q, K and V are three parts of one product
// reads them in place, so the packed projection is not split by three copies, and the three
// projections of one input become one GEMM (one launch, and a wider one, where three were):
//
//   Q, K, V = Split<axis=-1, 3 equal parts>(QKV)
//   SafeAttention(Q, K, V, M)                      ==>  SafePackedAttention(QKV, M)
//
//   SafeAttention(P(X, Wq[, bq]), P(X, Wk[, bk]), P(X, Wv[, bv]), M)
//                                                  ==>  SafePackedAttention(P(X, W[, b]), M)
//        P = MatMul, ai.onnxopt.MatMulBias or Add(MatMul, b);
//        W = [Wq | Wk | Wv] (columns), b = [bq | bk | bv]   (packed_projection.h)
//
// (attributes num_heads and scale kept). Split's parts must be equal (no split input, or one
// constant of three equal sizes) along the last of three dims, each read only here; the
// projections' weights are constants of one [K, N] shape and one type (the biases constants of
// [N], zeros where a plain MatMul has none), each product read only here. Where the CUDA kernel
// table claims the ops for the types. GPT-2 exports the first form (c_attn's Split), BERT the
// second (query, key and value Linear layers).
//
// Decoders (Attention-23, -O2's fusion of Llama, Qwen2, Mistral...): Q, K and V are projections
// of one input, each maybe behind RotaryEmbedding and the head split's Reshape and Transpose,
// and grouped-query attention makes K and V narrower than Q. The three become one product and
// a Split with explicit sizes; the ops between stay, as does Attention:
//
//   Attention-23(f(P(X, Wq[, bq])), g(P(X, Wk[, bk])), h(P(X, Wv[, bv])), ...)
//     ==>  Q, K, V = Split<axis=-1>(P(X, [Wq | Wk | Wv][, [bq | bk | bv]]), [Nq, Nk, Nv]);
//          Attention-23(f(Q), g(K), h(V), ...)
//     f, g, h: chains of RotaryEmbedding (its input), Reshape (its data), Transpose
//
// the weights constants of one K and type, their widths free; any other reader of a
// projection reads its part of the Split. One GEMM where there were three (a decode step's
// three launches over one activation become one, and a prefill's GEMM is wider); the biased
// form needs the CUDA kernel table's MatMulBias.
//
// Sequence-first, torch's nn.MultiheadAttention (torchvision's ViT): the packed projection is
// [S, B, 3E], and the head split is a chain of views (Reshape, Unsqueeze, Transpose, Squeeze, a
// Gather of part 0, 1 or 2, Reshape, Transpose, Reshape) to 4-D Attention's [B, H, S, D]; the
// result goes back through Transpose<2,0,1,3> and a Reshape to [S, B, E] rows:
//
//   Attention(view_0(QKV), view_1(QKV), view_2(QKV)) -> Y,  Y' = view(Y)
//                                                  ==>  Y' = reshape(SeqFirstPackedAttention(QKV))
//     view_p(QKV)[b, h, s, d] = QKV[s, b, p * E + h * D + d]        E = H * D
//     Y'[...] = Y[b, h, s, d] at element (s * B + b) * E + h * D + d of [S, B, E]
//
// The views are followed op by op as index maps over QKV's elements (mixed-radix strides: a
// Reshape that merges dims whose strides do not line up keeps each one's digit), so any chain of
// those ops that lands on these strides matches, and none that does not. Attention without
// mask, caches, causal mask or softcap, Q, K and V of one static shape; each view op on the
// output side read only by the next.
//
// Batch-first (nn.MultiheadAttention(batch_first=True) transposes its input to sequence-first
// and its result back), through ops that compute each row on its own (row-wise: products with a
// constant weight, bias Adds, activations, Reshapes of the leading dims), each read only by the
// next:
//
//   T<1,0,2>(X) -> rows -> SeqFirstPackedAttention -> rows -> T<1,0,2>
//                                       ==>  X -> rows -> PackedAttention -> rows
//
// the same rows in batch-first order ([S, B, N] values become [B, S, N]).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "packed_projection.h"
#include "target_pattern_pass.h"
#include "view_index_map.h"

#include "onnxopt/ir/constants.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

using view_maps::applyViewOp;
using view_maps::IndexMap;
using view_maps::isRowMajor;
using view_maps::isViewOp;
using view_maps::mapIs;
using view_maps::traceView;

/// Whether `node` splits its 3-D input's last dim into three equal parts, all of them present.
bool equalThirds(const ir::Node& node, int64_t opset) {
  if (node.numOutputs() != 3) return false;
  for (size_t i = 0; i < 3; ++i) {
    if (node.output(i) == nullptr) return false;
  }
  auto rank = pass::rankOf(node.input(0));
  int64_t axis = pass::attrInt(node, "axis", 0);
  if (!rank || *rank != 3 || (axis != 2 && axis != -1)) return false;
  auto dims = pass::staticShape(node.input(0));
  if (!dims || (*dims)[2] % 3 != 0) return false;
  const int64_t third = (*dims)[2] / 3;
  std::optional<std::vector<int64_t>> split;
  if (opset >= 13) {
    if (node.numInputs() > 1 && node.input(1) != nullptr) split = pass::constantInts(node.input(1));
  } else {
    split = pass::attrInts(node, "split");
  }
  if (split) return *split == std::vector<int64_t>{third, third, third};
  // No split given: equal parts (num_outputs 3 at opset 18, the outputs' count before).
  return node.numInputs() < 2 || node.input(1) == nullptr;
}

void replaceAttention(ir::Node* attention, ir::Value* qkv, PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  ir::Node* fused = rw.createNodeLike("SafePackedAttention", kTargetDomain,
                                      {qkv, attention->input(3)}, attention);
  rw.copyAttribute(*attention, fused, "num_heads");
  rw.copyAttribute(*attention, fused, "scale");
  rw.replaceNode(attention, {fused->output(0)});  // which gives it attention's output name
}

/// Split(QKV) -> SafeAttention  ==>  SafePackedAttention(QKV).
class SplitPattern final : public TargetPattern {
 public:
  explicit SplitPattern(TargetClaims claims)
      : TargetPattern(claims, "fuse-packed-attention-split", "SafeAttention", kTargetDomain) {}
  bool matchAndRewrite(ir::Node* attention, PatternContext& ctx) const override {
    ir::Node* split = attention->input(0) == nullptr ? nullptr : attention->input(0)->producer();
    if (split == nullptr || split->opType() != "Split" || !split->domain().empty()) {
      return ctx.fail("Q is not a Split's output");
    }
    for (size_t i = 0; i < 3; ++i) {
      ir::Value* part = attention->input(i);
      if (part == nullptr || part->producer() != split || part->outputIndex() != i ||
          !pass::onlyUsedBy(part, attention)) {
        return ctx.fail("Q, K and V are not the Split's outputs 0, 1, 2, each read only here");
      }
    }
    if (!equalThirds(*split, ctx.opset())) return ctx.fail("the Split is not into equal thirds");
    ir::Value* qkv = split->input(0);
    if (!claims_("SafePackedAttention", {qkv, attention->input(3)})) {
      return ctx.fail("no CUDA kernel for SafePackedAttention of these types");
    }
    replaceAttention(attention, qkv, ctx);
    ctx.rewriter().eraseNode(split);
    return true;
  }
};

/// SafeAttention(P(X, Wq), P(X, Wk), P(X, Wv), M)  ==>  SafePackedAttention(P(X, W), M).
class ProjectionsPattern final : public TargetPattern {
 public:
  explicit ProjectionsPattern(TargetClaims claims)
      : TargetPattern(claims, "fuse-packed-attention-projections", "SafeAttention", kTargetDomain) {
  }
  bool matchAndRewrite(ir::Node* attention, PatternContext& ctx) const override {
    std::vector<Projection> projections;
    for (size_t i = 0; i < 3; ++i) {
      ir::Value* v = attention->input(i);
      std::optional<Projection> p = projectionOf(v);
      if (!p || !pass::onlyUsedBy(v, attention)) {
        return ctx.fail("input {} is not a projection by a constant weight read only here", i);
      }
      if (!projections.empty() && p->weight.dims() != projections[0].weight.dims()) {
        return ctx.fail("the weights are not of one [K, N] shape (three equal parts)");
      }
      projections.push_back(std::move(*p));
    }
    // Claims first, before the graph changes.
    if (std::string why = whyNotPackable(projections, claims_); !why.empty()) {
      return ctx.fail("{}", why);
    }
    if (!claims_("SafePackedAttention", {projections[0].result(), attention->input(3)})) {
      return ctx.fail("no CUDA kernel for SafePackedAttention of these types");
    }
    ir::Value* packed = packProjections(projections, "_qkv", ctx);
    ctx.rewriter().setInsertionPoint(attention);
    replaceAttention(attention, packed, ctx);
    for (const Projection& p : projections) ctx.rewriter().eraseDeadNodes(p.nodes());
    return true;
  }
};

/// Attention-23's Q, K or V as X's projection, through the ops between them (RotaryEmbedding's
/// input, the head split's Reshape and Transpose), or nullopt.
std::optional<Projection> projectionBehind(ir::Value* v) {
  for (ir::Node* n = v == nullptr ? nullptr : v->producer();
       n != nullptr && n->domain().empty() &&
       (n->opType() == "RotaryEmbedding" || n->opType() == "Reshape" || n->opType() == "Transpose");
       n = v->producer()) {
    v = n->input(0);
    if (v == nullptr) return std::nullopt;
  }
  return projectionOf(v);
}

/// Attention-23(..P(X, Wq).., ..P(X, Wk).., ..P(X, Wv)..)
///   ==>  Attention-23(..Q.., ..K.., ..V..),  Q, K, V = Split<axis=-1>(P(X, [Wq | Wk | Wv]), sizes)
class DecoderProjectionsPattern final : public TargetPattern {
 public:
  explicit DecoderProjectionsPattern(TargetClaims claims)
      : TargetPattern(claims, "fuse-packed-attention-decoder-qkv", "Attention", "", 1, 23) {}
  bool matchAndRewrite(ir::Node* attention, PatternContext& ctx) const override {
    if (attention->numInputs() < 3) return ctx.fail("not Q, K, V");
    std::vector<Projection> projections;
    for (size_t i = 0; i < 3; ++i) {
      std::optional<Projection> p = projectionBehind(attention->input(i));
      if (!p) return ctx.fail("input {} is no projection by a constant [K, N] weight", i);
      projections.push_back(std::move(*p));
    }
    if (std::string why = whyNotPackable(projections, claims_); !why.empty()) {
      return ctx.fail("{}", why);
    }
    auto& rw = ctx.rewriter();
    ir::Graph& graph = *attention->owningGraph();
    ir::Value* packed = packProjections(projections, "_qkv", ctx);
    std::vector<int64_t> sizes;
    for (const Projection& p : projections) sizes.push_back(p.width());
    ir::Value* split_sizes =
        rw.createInitializer(graph, packed->name() + "_sizes", pass::makeInt64Tensor(sizes, {3}));
    ir::Node* split = rw.createNode("Split", "", {packed, split_sizes}, 3);
    rw.setAttribute(split, pass::intAttr("axis", -1));
    rw.setName(split, rewrite::uniqueValueName(graph, packed->name() + "_split"));
    for (size_t i = 0; i < 3; ++i) {
      rw.setType(split->output(i), projections[i].result()->type());
      rw.replaceAllUsesWith(projections[i].result(), split->output(i));
      rw.eraseDeadNodes(projections[i].nodes());
    }
    return true;
  }
};

/// Attention(view_0(QKV), view_1(QKV), view_2(QKV)) -> Y, Y' = view(Y)
///   ==>  Y' = reshape(SeqFirstPackedAttention(QKV)), QKV [S, B, 3E].
class SeqFirstViewsPattern final : public TargetPattern {
 public:
  explicit SeqFirstViewsPattern(TargetClaims claims)
      : TargetPattern(claims, "fuse-packed-attention-seq-first", "Attention", /*domain=*/"") {}
  bool matchAndRewrite(ir::Node* attention, PatternContext& ctx) const override {
    if (attention->numInputs() < 3 || attention->numOutputs() < 1) {
      return ctx.fail("not Q, K, V -> Y");
    }
    for (size_t i = 3; i < attention->numInputs(); ++i) {
      if (attention->input(i) != nullptr) return ctx.fail("a mask, cache or padding input");
    }
    for (size_t i = 1; i < attention->numOutputs(); ++i) {
      if (attention->output(i) != nullptr && !attention->output(i)->uses().empty()) {
        return ctx.fail("a present or qk_matmul output is read");
      }
    }
    if (pass::attrInt(*attention, "is_causal", 0) != 0 ||
        pass::attrFloat(*attention, "softcap", 0.0f) != 0.0f) {
      return ctx.fail("causal or softcapped");
    }
    if (attention->output(0) == nullptr ||
        (attention->output(0)->uses().empty() && !attention->output(0)->isGraphOutput())) {
      return ctx.fail("Y is not read");
    }
    auto q_dims = pass::staticShape(attention->input(0));
    if (!q_dims || q_dims->size() != 4) return ctx.fail("Q is not 4-D of a static shape");
    for (size_t i = 1; i < 3; ++i) {
      auto d = pass::staticShape(attention->input(i));
      if (!d || *d != *q_dims) return ctx.fail("K or V is not Q's shape");
    }
    const int64_t batch = (*q_dims)[0], heads = (*q_dims)[1], seq = (*q_dims)[2],
                  size = (*q_dims)[3], hidden = heads * size;
    ir::Value* qkv = nullptr;
    for (size_t p = 0; p < 3; ++p) {
      auto traced = traceView(attention->input(p), ctx.opset());
      if (!traced) return ctx.fail("input {} is no view of a static-shaped value", p);
      if (qkv != nullptr && traced->first != qkv) return ctx.fail("Q, K, V views of two values");
      qkv = traced->first;
      auto base = pass::staticShape(qkv);
      if (base != std::vector<int64_t>{seq, batch, 3 * hidden}) {
        return ctx.fail("the viewed value is not [S, B, 3E]");
      }
      // [b, h, s, d] at s * (B * 3E) + b * 3E + p * E + h * D + d.
      if (!mapIs(traced->second, *q_dims, {3 * hidden, size, batch * 3 * hidden, 1},
                 static_cast<int64_t>(p) * hidden)) {
        return ctx.fail("input {} is not part {} of the heads of a sequence-first QKV", p, p);
      }
    }
    // The output side: Y [B, H, S, D] as a view of Y' [S, B, E], followed through single-use
    // view ops to the first value that is Y' in row-major order.
    IndexMap y;
    y.dims = {{{batch, hidden}}, {{heads, size}}, {{seq, batch * hidden}}, {{size, 1}}};
    ir::Value* cur = attention->output(0);
    std::vector<ir::Node*> chain = {attention};
    // Only ops that keep every element (no Gather, Slice, Split: a part of Y' is no Reshape of
    // it); past the first row-major value only the Reshapes (row-major too), which join the one
    // Reshape of the result that replaces them.
    for (bool row_major = isRowMajor(y);;) {
      if (!pass::hasSingleUse(cur)) {
        if (row_major) break;
        return ctx.fail("the result is read by more than one view");
      }
      ir::Node* user = cur->uses().front().user;
      const std::string& op = user->opType();
      const bool view = cur->uses().front().index == 0 && isViewOp(*user) && op != "Gather" &&
                        op != "Slice" && op != "Split" && (!row_major || op != "Transpose");
      IndexMap next = y;
      if (!view || !applyViewOp(*user, 0, next, ctx.opset())) {
        if (row_major) break;
        return ctx.fail("the result's views do not reach [S, B, E] rows");
      }
      y = std::move(next);
      cur = user->output(0);
      chain.insert(chain.begin(), user);
      row_major = isRowMajor(y);
    }
    if (!claims_("SeqFirstPackedAttention", {qkv})) {
      return ctx.fail("no CUDA kernel for SeqFirstPackedAttention of this type");
    }
    auto& rw = ctx.rewriter();
    rw.setInsertionPoint(attention);
    ir::Node* fused = rw.createNode("SeqFirstPackedAttention", kTargetDomain, {qkv}, 1);
    rw.setAttribute(fused, pass::intAttr("num_heads", heads));
    const float scale =
        pass::attrFloat(*attention, "scale", 1.0f / std::sqrt(static_cast<float>(size)));
    rw.setAttribute(fused, pass::floatAttr("scale", scale));
    ir::Type type = attention->output(0)->type();
    type.shape =
        std::vector<ir::Dim>{ir::Dim::known(seq), ir::Dim::known(batch), ir::Dim::known(hidden)};
    rw.setType(fused->output(0), type);
    rw.setName(fused, rewrite::uniqueValueName(*attention->owningGraph(),
                                               attention->output(0)->name() + "_packed"));
    rw.setName(fused->output(0), fused->name());
    ir::Value* result = fused->output(0);
    const std::vector<int64_t> y_dims = y.shape();
    if (y_dims != std::vector<int64_t>{seq, batch, hidden}) {
      rw.setInsertionPoint(cur->producer());
      ir::Value* shape = rw.createInitializer(
          *attention->owningGraph(), fused->name() + "_shape",
          pass::makeInt64Tensor(y_dims, {static_cast<int64_t>(y_dims.size())}));
      ir::Node* reshape = rw.createNode("Reshape", "", {result, shape}, 1);
      rw.setType(reshape->output(0), cur->type());
      rw.setName(reshape->output(0),
                 rewrite::uniqueValueName(*attention->owningGraph(), fused->name() + "_view"));
      rw.setName(reshape, reshape->output(0)->name());
      result = reshape->output(0);
    }
    rw.replaceAllUsesWith(cur, result);
    // The views of QKV that only Attention read are dce's.
    rw.eraseDeadNodes(chain);
    return true;
  }
};

/// Whether `v` is constant data: an initializer that is no graph input, or a Constant's output.
bool isConstant(const ir::Value* v) {
  if (v == nullptr || v->isGraphInput()) return false;
  if (v->initializer() != nullptr) return true;
  const ir::Node* p = v->producer();
  return p != nullptr && p->opType() == "Constant" && p->domain().empty();
}

/// Whether `node` computes each row (the last dim) of its input `value` on its own, the same way
/// for every row, so that it commutes with reordering the rows: a product with a constant [K, N]
/// (MatMul, the MatMulBias family, Gemm without transA), a constant bias of at most one dim
/// added or multiplied, an activation, or a Reshape that only merges or splits the leading dims.
bool isRowWise(const ir::Node& node, const ir::Value* value) {
  const std::string& op = node.opType();
  auto constantOfRank = [](const ir::Value* v, int64_t max_rank) {
    auto r = pass::rankOf(v);
    return v != nullptr && isConstant(v) && r && *r <= max_rank;
  };
  if (node.domain() == kTargetDomain) {
    return (op == "MatMulBias" || op == "MatMulBiasGelu" || op == "MatMulBiasRelu") &&
           node.input(0) == value && node.input(1) != value &&
           pass::rankOf(node.input(1)) == int64_t{2} && isConstant(node.input(1));
  }
  if (!node.domain().empty() || node.numOutputs() != 1) return false;
  if (op == "MatMul") {
    return node.input(0) == value && node.input(1) != value &&
           pass::rankOf(node.input(1)) == int64_t{2} && isConstant(node.input(1));
  }
  if (op == "Gemm") {
    return node.input(0) == value && pass::attrInt(node, "transA", 0) == 0 &&
           isConstant(node.input(1)) &&
           (node.numInputs() < 3 || node.input(2) == nullptr || constantOfRank(node.input(2), 1));
  }
  if (op == "Add" || op == "Mul" || op == "Sub" || op == "Div") {
    return node.numInputs() == 2 && ((node.input(0) == value && constantOfRank(node.input(1), 1)) ||
                                     (node.input(1) == value && constantOfRank(node.input(0), 1)));
  }
  if (op == "Relu" || op == "Gelu" || op == "Identity") return node.input(0) == value;
  if (op == "Reshape") {
    auto in = pass::staticShape(value);
    auto out = pass::staticShape(node.output(0));
    if (node.input(0) != value || !in || !out || in->empty() || out->empty() ||
        in->back() != out->back()) {
      return false;
    }
    return (in->size() == 3 && out->size() == 2) || (in->size() == 2 && out->size() == 3) ||
           (in->size() == out->size() && *in == *out);
  }
  return false;
}

/// SeqFirstPackedAttention between Transpose<1,0,2> chains:
///   T<1,0,2>(X) -> rows... -> QKV -> SeqFirstPackedAttention -> rows... -> T<1,0,2> -> Y
///   ==>  X -> rows... -> QKV' -> PackedAttention -> rows... -> Y
/// (rows: isRowWise ops, each result read only by the next; their [S, B, N] results become
/// [B, S, N], the Reshapes to rank 3 reshape to that). The row-wise ops see the same rows in
/// another order, so the two Transposes go: torch's nn.MultiheadAttention with batch_first
/// (torchvision's ViT) transposes its input to sequence-first and its output back.
class BatchFirstPattern final : public TargetPattern {
 public:
  explicit BatchFirstPattern(TargetClaims claims)
      : TargetPattern(claims, "fuse-packed-attention-batch-first", "SeqFirstPackedAttention",
                      kTargetDomain) {}
  bool matchAndRewrite(ir::Node* attention, PatternContext& ctx) const override {
    ir::Value* qkv = attention->input(0);
    auto qkv_dims = pass::staticShape(qkv);
    if (!qkv_dims || qkv_dims->size() != 3 || !pass::hasSingleUse(qkv)) {
      return ctx.fail("QKV is not a static [S, B, 3E] read only here");
    }
    const int64_t seq = (*qkv_dims)[0], batch = (*qkv_dims)[1];
    // Every value between the Transposes: [S, B, N] or [S * B, N].
    auto rowsOk = [&](const ir::Value* v) {
      auto d = pass::staticShape(v);
      return d && ((d->size() == 3 && (*d)[0] == seq && (*d)[1] == batch) ||
                   (d->size() == 2 && (*d)[0] == seq * batch));
    };
    auto isSwap = [](const ir::Node* n) {
      return n != nullptr && n->opType() == "Transpose" && n->domain().empty() &&
             pass::attrInts(*n, "perm") == std::vector<int64_t>{1, 0, 2};
    };
    std::vector<ir::Node*> before;  // QKV's producer first
    ir::Value* v = qkv;
    while (!isSwap(v->producer())) {
      ir::Node* p = v->producer();
      if (p == nullptr || p->numOutputs() != 1 || !rowsOk(v) || !pass::hasSingleUse(v)) {
        return ctx.fail("QKV is not rows of a Transpose<1,0,2>");
      }
      ir::Value* in = nullptr;
      for (size_t i = 0; i < p->numInputs() && in == nullptr; ++i) {
        if (p->input(i) != nullptr && !isConstant(p->input(i))) in = p->input(i);
      }
      if (in == nullptr || !isRowWise(*p, in)) return ctx.fail("QKV is not rows of its input");
      before.push_back(p);
      v = in;
    }
    ir::Node* in_swap = v->producer();
    if (!pass::hasSingleUse(v) || !rowsOk(v)) {
      return ctx.fail("the input Transpose is read elsewhere, or its rows are not [S, B]");
    }
    std::vector<ir::Node*> after;
    v = attention->output(0);
    ir::Node* out_swap = nullptr;
    while (out_swap == nullptr) {
      if (!pass::hasSingleUse(v) || !rowsOk(v)) {
        return ctx.fail("the result is not read as rows by one op at a time");
      }
      ir::Node* u = v->uses().front().user;
      if (isSwap(u)) {
        out_swap = u;
      } else if (isRowWise(*u, v)) {
        after.push_back(u);
        v = u->output(0);
      } else {
        return ctx.fail("the result reaches no Transpose<1,0,2> through row-wise ops");
      }
    }
    if (!claims_("PackedAttention", {qkv})) {
      return ctx.fail("no CUDA kernel for PackedAttention of this type");
    }
    auto& rw = ctx.rewriter();
    ir::Graph& graph = *attention->owningGraph();
    // [S, B, N] becomes [B, S, N]; a Reshape to it gets that shape.
    auto swapRows = [&](ir::Node* n) {
      ir::Value* out = n->output(0);
      auto d = pass::staticShape(out);
      if (!d || d->size() != 3) return;
      ir::Type type = out->type();
      std::swap((*type.shape)[0], (*type.shape)[1]);
      rw.setType(out, type);
      if (n->opType() == "Reshape" && n->domain().empty()) {
        const std::vector<int64_t> dims = {(*d)[1], (*d)[0], (*d)[2]};
        rw.setInput(
            n, 1,
            rw.createInitializer(graph, out->name() + "_shape", pass::makeInt64Tensor(dims, {3})));
      }
    };
    ir::Value* x = in_swap->input(0);
    ir::Node* first = before.empty() ? attention : before.back();
    for (size_t i = 0; i < first->numInputs(); ++i) {
      if (first->input(i) == in_swap->output(0)) rw.setInput(first, i, x);
    }
    rw.eraseNode(in_swap);
    for (ir::Node* n : before) swapRows(n);
    rw.setOpType(attention, "PackedAttention", kTargetDomain);
    swapRows(attention);
    for (ir::Node* n : after) swapRows(n);
    // Every value between the Transposes holds its rows in the other order now: none keeps the
    // name of what it held, and the last takes the output Transpose's, whose value it is.
    for (ir::Node* n : before) rw.markChanged(n->output(0));
    rw.markChanged(attention->output(0));
    for (ir::Node* n : after) rw.markChanged(n->output(0));
    rw.replaceAllUsesWith(out_swap->output(0), v);
    rw.eraseNode(out_swap);
    return true;
  }
};

class FusePackedAttentionPass final : public TargetPatternPass {
 public:
  std::string id() const override { return "fuse-packed-attention"; }
  std::string summary() const override {
    return "SafeAttention on three parts of one product (a Split, or three projections of one "
           "input merged into one) into ai.onnxopt.SafePackedAttention, Attention-23's three "
           "projections of one input into one product and a Split, and Attention on head "
           "views of one sequence-first [S, B, 3E] value into ai.onnxopt.SeqFirstPackedAttention "
           "(CUDA target)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<SplitPattern>(targetKernels()));
    list.push_back(std::make_unique<ProjectionsPattern>(targetKernels()));
    list.push_back(std::make_unique<DecoderProjectionsPattern>(targetKernels()));
    list.push_back(std::make_unique<SeqFirstViewsPattern>(targetKernels()));
    list.push_back(std::make_unique<BatchFirstPattern>(targetKernels()));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFusePackedAttentionPass() {
  return std::make_unique<FusePackedAttentionPass>();
}

}  // namespace onnxopt::passes
