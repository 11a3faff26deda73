// fuse-rotary: rotary position embedding as the exporters write it becomes RotaryEmbedding (23).
//
//   rotate_half(x)      = Concat<axis=-1>(Neg(Slice(x, h:2h)), Slice(x, 0:h))          h = rot / 2
//   rotate_every_two(x) = Reshape(Concat<axis=-1>(Unsqueeze<-1>(Neg(Slice(x, 1::2))),
//                                                 Unsqueeze<-1>(Slice(x, 0::2))), shape(x))
//   y = Add(Mul(x, C), Mul(rotate(x), S))
//   ==>  y = RotaryEmbedding<interleaved = (rotate is rotate_every_two)>(x, c, s)
//
// Partial rotary (rot < D: Phi's, GPT-J's), the rotated part x = Slice(x0, 0:rot) of the last axis:
//   Concat<axis=-1>(y, Slice(x0, rot:D))  ==>  RotaryEmbedding<rotary_embedding_dim=rot>(x0, c, s)
//
// x0 is [B, H, S, D] (HF applies rotate_half after the head transpose; C and S broadcast to it
// as [Bc, 1, S, rot]), or [B, S, H, D] (GPT-J, before it; [Bc, S, 1, rot]), which RotaryEmbedding
// takes as [B, S, H*D] with num_heads: the head split's own input where x0 is
// Reshape(x: [B, S, H*D]), else a Reshape to it, and a Reshape back. A [B, H, S, D] x0 that is the
// head split Transpose<0,2,1,3>(Reshape(x: [B, S, H*D])), read only by the rotation, is rotated as
// x and split after: the split's two nodes move behind the rotation, where fuse-attention's 3-D
// form takes them (Q and K projections straight into Attention).
//
// C and S have each pair of the last axis equal (the two halves, or each even/odd pair when
// interleaved), proven by structure or by data:
//   C = Unsqueeze<head axis>(u1(...uk(Concat<axis=-1>(a, a))))  ==>  c = u1(...uk(a))
//       (HF's emb = cat(freqs, freqs); cos = emb.cos() * attention_scaling; each ui one of Cos,
//       Sin, Cast, and Mul or Div by a scalar constant, all elementwise: the halves stay equal)
//   C = Reshape(Expand(Unsqueeze<head axis, -1>(a), [.., 2]))    ==>  c = a  (repeat_interleave)
//   C constant                                                  ==>  c = its first of each pair
// c and s are RotaryEmbedding's caches without position ids, [B, S, rot / 2]: a cache of batch 1
// (HF's default position ids, arange(S)[None]) is expanded to x0's batch. A constant cache of a
// static batch is stored expanded. Where c and s are halves of one constant table read at the
// position ids (GPT-J's Split(GatherND(T [max_pos, rot], I [Bc, S, 1]))), the caches are T's
// halves, [max_pos, rot / 2], and the ids I squeezed to [B, S] are RotaryEmbedding's position_ids.
// Float, float16 and bfloat16; every intermediate single-use.
#include "dims.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/pass/pattern_match.h"

namespace onnxopt::passes {
namespace {

using namespace pass::match;  // NOLINT: the matcher vocabulary reads as the rule
using dims::Dims;
using dims::sameDim;
using dims::shapeOf;
using pass::intAttr;
using rewrite::PatternContext;

bool isOne(const ir::Dim& d) {
  return d.isKnown() && d.value == 1;
}

/// A Slice of the last axis: [start, end) by step, end clamped to the dim.
struct Range {
  int64_t start, end, step;
  bool operator==(const Range&) const = default;
};

/// Slice(x, [start], [end], [axis] [, [step]]) over the last axis of x (rank `rank`); nullopt
/// when not that, or with indices from the end or a negative step (not the exporters' form).
std::optional<Range> lastAxisRange(const ir::Node& slice, int64_t rank, int64_t dim) {
  if (slice.numInputs() < 4) return std::nullopt;
  auto starts = pass::constantInts(slice.input(1));
  auto ends = pass::constantInts(slice.input(2));
  auto axes = pass::constantInts(slice.input(3));
  if (!starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 || axes->size() != 1)
    return std::nullopt;
  int64_t step = 1;
  if (slice.numInputs() > 4 && slice.input(4) != nullptr) {
    auto steps = pass::constantInts(slice.input(4));
    if (!steps || steps->size() != 1) return std::nullopt;
    step = (*steps)[0];
  }
  if (pass::normalizeAxis((*axes)[0], rank) != rank - 1) return std::nullopt;
  int64_t b = (*starts)[0], e = (*ends)[0];
  if (b < 0 || e < 0 || step < 1) return std::nullopt;
  return Range{std::min(b, dim), std::min(e, dim), step};
}

/// Whether Concat `node` joins its two inputs along the last axis of a rank-`rank` result.
bool concatsLastAxis(const ir::Node& node, int64_t rank) {
  return node.numInputs() == 2 &&
         pass::normalizeAxis(pass::attrInt(node, "axis", 0), rank) == rank - 1;
}

/// Where x0's axes are: heads at 1 ([B, H, S, D]) or at 2 ([B, S, H, D]).
struct Layout {
  int64_t head_axis = 1;
  int64_t seqAxis() const { return 3 - head_axis; }
};

/// One of the caches: how to make it, [Bc, S, rot / 2].
struct Cache {
  ir::Value* base = nullptr;       ///< a, of Concat(a, a) or repeat_interleave(a); or nullptr
  std::vector<ir::Node*> unary;    ///< the elementwise ops from C back to the Concat
  std::optional<ir::Tensor> half;  ///< a constant C's first of each pair, [Bc, S, rot / 2]
  Dims dims;                       ///< [Bc, S, rot / 2]
  /// a's rows of a constant table read at position ids: [max_pos, rot / 2], and the ids as
  /// GatherND's indices [Bc, S, 1].
  std::optional<ir::Tensor> table;
  ir::Value* positions = nullptr;
};

/// Where a = Split<last axis, halves>(GatherND(T, I))[k] with T a constant [max_pos, rot] and I
/// int64 [Bc, S, 1] (GPT-J's sin/cos table read at the position ids): T's k-th half of columns as
/// the table, and I.
void readTable(Cache& cache, int64_t h) {
  ir::Node* split = cache.base->producer();
  if (split == nullptr || split->opType() != "Split" || !split->domain().empty() ||
      split->numOutputs() != 2 || pass::normalizeAxis(pass::attrInt(*split, "axis", 0), 3) != 2)
    return;
  if (split->numInputs() > 1 && split->input(1) != nullptr &&
      pass::constantInts(split->input(1)) != std::vector<int64_t>{h, h})
    return;
  ir::Node* gather = split->input(0)->producer();
  if (gather == nullptr || gather->opType() != "GatherND" || !gather->domain().empty() ||
      pass::attrInt(*gather, "batch_dims", 0) != 0)
    return;
  auto t = ir::constantTensor(gather->input(0));
  ir::Value* pos = gather->input(1);
  const Dims* ps = shapeOf(pos);
  if (!t || t->dims().size() != 2 || t->dims()[1] != 2 * h || ps == nullptr || ps->size() != 3 ||
      pass::elemTypeOf(pos) != DataType::kInt64 || !sameDim((*ps)[0], cache.dims[0]) ||
      !sameDim((*ps)[1], cache.dims[1]) || !isOne((*ps)[2]))
    return;
  auto values = pass::floatValues(*t);
  if (!values) return;
  const int64_t rows = t->dims()[0];
  const auto k = static_cast<int64_t>(cache.base->outputIndex());
  std::vector<double> half;
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t i = 0; i < h; ++i)
      half.push_back((*values)[static_cast<size_t>(row * 2 * h + k * h + i)]);
  }
  cache.table = pass::makeFloatTensor(t->dtype(), {rows, h}, half);
  cache.positions = pos;
}

/// Elementwise ops that keep the pairs of the last axis equal.
bool keepsPairs(const ir::Node& node) {
  const std::string& op = node.opType();
  if (!node.domain().empty()) return false;
  if (op == "Cos" || op == "Sin" || op == "Cast") return node.numInputs() == 1;
  if (op == "Mul" || op == "Div") {
    return node.numInputs() == 2 && pass::scalarConstant(node.input(1)).has_value() &&
           pass::rankOf(node.input(1)).value_or(99) <= 1;
  }
  return false;
}

/// The constant C ([.., S, rot] broadcasting to x0, 1 at the head axis) as its first of each pair.
std::optional<Cache> constantCache(const ir::Value* c, const Dims& x, int64_t rot, Layout lay,
                                   bool interleaved) {
  auto t = ir::constantTensor(c);
  const ir::Dim& seq = x[static_cast<size_t>(lay.seqAxis())];
  if (!t || t->dtype() != pass::elemTypeOf(c) || t->dims().size() > 4 || t->dims().size() < 2 ||
      !seq.isKnown())
    return std::nullopt;
  std::vector<int64_t> d(4 - t->dims().size(), 1);
  d.insert(d.end(), t->dims().begin(), t->dims().end());
  if (d[static_cast<size_t>(lay.head_axis)] != 1 ||
      d[static_cast<size_t>(lay.seqAxis())] != seq.value || d[3] != rot)
    return std::nullopt;
  auto values = pass::floatValues(*t);
  if (!values) return std::nullopt;
  int64_t h = rot / 2;
  std::vector<double> half;
  for (int64_t row = 0; row < d[0] * seq.value; ++row) {
    for (int64_t i = 0; i < h; ++i) {
      double lo = (*values)[static_cast<size_t>(row * rot + (interleaved ? 2 * i : i))];
      double hi = (*values)[static_cast<size_t>(row * rot + (interleaved ? 2 * i + 1 : h + i))];
      if (lo != hi && !(std::isnan(lo) && std::isnan(hi))) return std::nullopt;
      half.push_back(lo);
    }
  }
  Cache cache;
  cache.half = pass::makeFloatTensor(t->dtype(), {d[0], seq.value, h}, half);
  cache.dims = {ir::Dim::known(d[0]), seq, ir::Dim::known(h)};
  return cache;
}

/// a when `v` = Unsqueeze<axes>(a) with a of rank 3 [Bc, S, n] (S x0's sequence dim).
ir::Value* unsqueezedCache(ir::Value* v, const std::vector<int64_t>& axes, const ir::Dim& seq,
                           int64_t n) {
  ir::Node* unsq = v->producer();
  if (unsq == nullptr || unsq->opType() != "Unsqueeze" || !unsq->domain().empty() ||
      unsq->numInputs() != 2)
    return nullptr;
  auto got = pass::constantInts(unsq->input(1));
  int64_t rank = static_cast<int64_t>(3 + axes.size());
  if (!got || got->size() != axes.size()) return nullptr;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (pass::normalizeAxis((*got)[i], rank) != axes[i]) return nullptr;
  }
  ir::Value* a = unsq->input(0);
  const Dims* as = shapeOf(a);
  if (as == nullptr || as->size() != 3 || !sameDim((*as)[1], seq) || !(*as)[2].isKnown() ||
      (*as)[2].value != n)
    return nullptr;
  return a;
}

/// C = Unsqueeze<head axis>(u1(...uk(Concat(a, a)))), as the ui applied to a.
std::optional<Cache> halvesCache(ir::Value* c, const ir::Dim& seq, int64_t rot, Layout lay) {
  ir::Value* e = unsqueezedCache(c, {lay.head_axis}, seq, rot);
  if (e == nullptr) return std::nullopt;
  Cache cache;
  const Dims& es = *shapeOf(e);
  cache.dims = {es[0], es[1], ir::Dim::known(rot / 2)};
  for (ir::Node* p = e->producer(); p != nullptr && p->input(0) != nullptr;
       p = p->input(0)->producer()) {
    if (p->opType() == "Concat" && p->domain().empty() && concatsLastAxis(*p, 3) &&
        p->input(0) == p->input(1)) {
      cache.base = p->input(0);
      return cache;
    }
    if (!keepsPairs(*p)) return std::nullopt;
    cache.unary.push_back(p);
  }
  return std::nullopt;
}

/// C = Reshape(Expand(Unsqueeze<head axis, 4>(a), [.., 2])) (torch's repeat_interleave(a, 2, -1)
/// with the head axis added), as a: [Bc, S, rot / 2].
std::optional<Cache> interleavedCache(ir::Value* c, const ir::Dim& seq, int64_t rot, Layout lay) {
  ir::Node* reshape = c->producer();
  if (reshape == nullptr || reshape->opType() != "Reshape" || !reshape->domain().empty())
    return std::nullopt;
  ir::Node* expand = reshape->input(0)->producer();
  if (expand == nullptr || expand->opType() != "Expand" || !expand->domain().empty())
    return std::nullopt;
  const Dims* es = shapeOf(expand->output(0));
  if (es == nullptr || es->size() != 5 || !(*es)[4].isKnown() || (*es)[4].value != 2 ||
      !isOne((*es)[static_cast<size_t>(lay.head_axis)]))
    return std::nullopt;
  ir::Value* a = unsqueezedCache(expand->input(0), {lay.head_axis, 4}, seq, rot / 2);
  if (a == nullptr) return std::nullopt;
  const Dims& as = *shapeOf(a);
  // The Expand only doubles the last axis: every other dim stays a's.
  const size_t seq_axis = static_cast<size_t>(lay.seqAxis());
  if (!sameDim((*es)[0], as[0]) || !sameDim((*es)[seq_axis], as[1]) || !sameDim((*es)[3], as[2]))
    return std::nullopt;
  Cache cache;
  cache.base = a;
  cache.dims = as;
  readTable(cache, rot / 2);
  return cache;
}

/// C as one of the rule's caches; nullopt when its pairs are not provably equal.
std::optional<Cache> matchCache(ir::Value* c, const Dims& x, int64_t rot, Layout lay,
                                bool interleaved) {
  if (auto k = constantCache(c, x, rot, lay, interleaved)) return k;
  const ir::Dim& seq = x[static_cast<size_t>(lay.seqAxis())];
  return interleaved ? interleavedCache(c, seq, rot, lay) : halvesCache(c, seq, rot, lay);
}

/// What the pattern found.
struct Rotary {
  ir::Value* x0 = nullptr;  ///< the rotated input, [B, H, S, D] or [B, S, H, D]
  ir::Node* out = nullptr;  ///< the node whose result RotaryEmbedding computes
  int64_t rot = 0;          ///< rotated features; the head size for full rotation
  bool partial = false;
  Layout layout;
  Cache cos, sin;
  std::vector<ir::Node*> chain;  ///< users first
};

class RotaryPattern final : public rewrite::Pattern {
 public:
  explicit RotaryPattern(bool interleaved)
      : Pattern(interleaved ? "fuse-rotary-interleaved" : "fuse-rotary-half", "Add", "", 3, 23),
        interleaved_(interleaved),
        rule_(rule(interleaved)) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    auto r = matchAt(node, ctx);
    if (!r) return false;
    rewriteAt(*r, ctx);
    return true;
  }

 private:
  /// y = Add(Mul(x, C), Mul(rotate(x), S)), rotate one of the rule's two.
  static Matcher rule(bool interleaved) {
    auto slice = [](const char* name) {
      return bind(name, singleUse(op("Slice", bind("x"), any(), any(), any(), anyOrAbsent())));
    };
    Matcher rotated =
        interleaved
            ? singleUse(
                  op("Reshape",
                     bind("pairs",
                          singleUse(op("Concat",
                                       singleUse(op("Unsqueeze", singleUse(op("Neg", slice("hi"))),
                                                    bind("ax1"))),
                                       singleUse(op("Unsqueeze", slice("lo"), bind("ax2")))))),
                     any()))
                  .orFail("no rotate_every_two: Concat(Neg(Slice(x, 1::2)), Slice(x, 0::2))")
            : singleUse(op("Concat", singleUse(op("Neg", slice("hi"))), slice("lo")))
                  .orFail("no rotate_half: Concat(Neg(Slice(x)), Slice(x))");
    // x * cos is read after the match (x is bound inside rotate, which decides the order).
    return commutative("Add", bind("xc", singleUse(op("Mul", any(), any()))),
                       singleUse(commutative("Mul", bind("rot", rotated), bind("sin"))))
        .orFail("no x * cos + rotate(x) * sin");
  }

  /// The slices are rotate's: the two halves, or the odd and even features (stacked on a new
  /// last axis and merged back).
  bool rotates(const Match& m, int64_t d) const {
    auto hi = lastAxisRange(*m.node("hi"), 4, d);
    auto lo = lastAxisRange(*m.node("lo"), 4, d);
    if (!interleaved_) {
      return concatsLastAxis(*m.node("rot"), 4) && hi == Range{d / 2, d, 1} &&
             lo == Range{0, d / 2, 1};
    }
    for (const char* ax : {"ax1", "ax2"}) {
      auto axes = pass::constantInts(m[ax]);
      if (!axes || axes->size() != 1 || pass::normalizeAxis((*axes)[0], 5) != 4) return false;
    }
    return concatsLastAxis(*m.node("pairs"), 5) && hi == Range{1, d, 2} && lo == Range{0, d, 2} &&
           pass::sameKnownShape(m["rot"], m["x"]);
  }

  std::optional<Rotary> matchAt(ir::Node* node, PatternContext& ctx) const {
    Match m = rule_.match(node);
    if (!m) return ctx.fail("{}", m.why()), std::nullopt;
    ir::Value* x = m["x"];
    ir::Node* xc = m.node("xc");
    ir::Value* cos_v = xc->input(0) == x   ? xc->input(1)
                       : xc->input(1) == x ? xc->input(0)
                                           : nullptr;
    if (cos_v == nullptr) return ctx.fail("the first product is not of x"), std::nullopt;
    auto elem = pass::elemTypeOf(x);
    if (!elem ||
        (*elem != DataType::kFloat && *elem != DataType::kFloat16 && *elem != DataType::kBfloat16))
      return ctx.fail("element type not float, float16 or bfloat16"), std::nullopt;
    const Dims* xs = shapeOf(x);
    if (xs == nullptr || xs->size() != 4 || !(*xs)[3].isKnown() || (*xs)[3].value % 2 != 0 ||
        (*xs)[3].value == 0)
      return ctx.fail("x not 4-D with a static, even last dim"), std::nullopt;
    Rotary r;
    r.rot = (*xs)[3].value;
    if (!rotates(m, r.rot)) return ctx.fail("the slices do not rotate x's features"), std::nullopt;
    if (!pass::sameKnownShape(node->output(0), x))
      return ctx.fail("the result is broadcast past x's shape"), std::nullopt;
    r.x0 = x;
    r.out = node;
    r.chain = m.nodes();
    matchPartial(node, r);
    const Dims& x0 = *shapeOf(r.x0);
    for (int64_t head_axis : {1, 2}) {
      Layout lay{head_axis};
      auto cos = matchCache(cos_v, x0, r.rot, lay, interleaved_);
      auto sin = matchCache(m["sin"], x0, r.rot, lay, interleaved_);
      if (!cos || !sin) continue;
      if (!batchFits(cos->dims[0], x0[0]) || !batchFits(sin->dims[0], x0[0]))
        return ctx.fail("the caches' batch is neither x's nor 1"), std::nullopt;
      if (head_axis == 2 && (!x0[2].isKnown() || !x0[3].isKnown()))
        return ctx.fail("[B, S, H, D] with H or D unknown"), std::nullopt;
      r.layout = lay;
      r.cos = std::move(*cos);
      r.sin = std::move(*sin);
      return r;
    }
    return ctx.fail(
               "cos or sin do not broadcast with equal pairs as [B|1, 1, S, rot] or "
               "[B|1, S, 1, rot]"),
           std::nullopt;
  }

  static bool batchFits(const ir::Dim& cache, const ir::Dim& x) {
    return sameDim(cache, x) || isOne(cache);
  }

  /// With x = Slice(x0, 0:rot) and y's one user Concat(y, Slice(x0, rot:D)), the rotation is
  /// partial: RotaryEmbedding reads x0 and computes the Concat.
  static bool matchPartial(ir::Node* node, Rotary& r) {
    ir::Node* head = r.x0->producer();
    if (head == nullptr || head->opType() != "Slice" || !head->domain().empty() ||
        !pass::hasSingleUse(node->output(0)))
      return false;
    ir::Value* x0 = head->input(0);
    const Dims* s0 = shapeOf(x0);
    if (s0 == nullptr || s0->size() != 4 || !(*s0)[3].isKnown()) return false;
    int64_t d = (*s0)[3].value;
    if (lastAxisRange(*head, 4, d) != Range{0, r.rot, 1} || r.rot >= d) return false;
    // x's uses are the chain's three (Mul and the two Slices of rotate).
    if (r.x0->uses().size() != 3 || r.x0->isGraphOutput()) return false;
    ir::Node* cat = node->output(0)->uses()[0].user;
    if (cat->opType() != "Concat" || !cat->domain().empty() || !concatsLastAxis(*cat, 4) ||
        cat->input(0) != node->output(0))
      return false;
    ir::Node* tail = cat->input(1)->producer();
    if (tail == nullptr || tail->opType() != "Slice" || !tail->domain().empty() ||
        tail->input(0) != x0 || !pass::hasSingleUse(cat->input(1)) ||
        lastAxisRange(*tail, 4, d) != Range{r.rot, d, 1})
      return false;
    r.x0 = x0;
    r.out = cat;
    r.partial = true;
    r.chain.insert(r.chain.begin(), cat);
    r.chain.insert(r.chain.end(), {tail, head});
    return true;
  }

  /// The cache c, [B, S, rot / 2], made before the rotary node.
  static ir::Value* makeCache(const Cache& k, const Rotary& r, PatternContext& ctx) {
    auto& rw = ctx.rewriter();
    ir::Graph& g = *r.out->owningGraph();
    const Dims& x0 = *shapeOf(r.x0);
    ir::Value* v = nullptr;
    if (k.half) {
      std::optional<ir::Tensor> t = k.half;
      if (!sameDim(k.dims[0], x0[0]) && x0[0].isKnown()) {
        t = pass::broadcastFloatConstant(&*k.half, 0.0, k.half->dtype(),
                                         {x0[0].value, k.half->dims()[1], k.half->dims()[2]});
      }
      bool full_batch =
          sameDim(k.dims[0], x0[0]) || (x0[0].isKnown() && t->dims()[0] == x0[0].value);
      v = rw.createInitializer(g, "rotary_cache", std::move(*t));
      if (full_batch) return v;
    } else {
      v = k.base;
      for (auto it = k.unary.rbegin(); it != k.unary.rend(); ++it) {
        ir::Node* u = *it;
        std::vector<ir::Value*> inputs = {v};
        for (size_t i = 1; i < u->numInputs(); ++i) inputs.push_back(u->input(i));
        ir::Type t = u->output(0)->type();
        t.shape = k.dims;
        ir::Node* n = rw.createNode(u->opType(), "", inputs, {t});
        for (const char* a : {"to", "saturate", "round_mode"}) rw.copyAttribute(*u, n, a);
        v = n->output(0);
      }
      if (sameDim(k.dims[0], x0[0])) return v;
    }
    return expandBatch(v, k.dims, r, ctx);
  }

  /// Expand(v: [1, ...], [B, 1, ...]), B read from a graph input holding x0's batch symbol where
  /// one does (so that every layer's caches read one Shape and merge), else from x0. `dims`: v's.
  static ir::Value* expandBatch(ir::Value* v, const Dims& dims, const Rotary& r,
                                PatternContext& ctx) {
    auto& rw = ctx.rewriter();
    ir::Graph& g = *r.out->owningGraph();
    const ir::Dim& b = (*shapeOf(r.x0))[0];
    ir::Value* shape = nullptr;
    const auto rank = static_cast<int64_t>(dims.size());
    std::vector<int64_t> ones(dims.size() - 1, 1);
    if (b.isKnown()) {
      ones.insert(ones.begin(), b.value);
      shape = rw.createInitializer(g, "rotary_batch", pass::makeInt64Tensor(ones, {rank}));
    } else {
      ir::Value* src = nullptr;
      int64_t axis = 0;
      for (ir::Value* in : g.inputs()) {
        const Dims* s = shapeOf(in);
        for (size_t i = 0; s != nullptr && src == nullptr && i < s->size(); ++i) {
          if (sameDim((*s)[i], b)) src = in, axis = static_cast<int64_t>(i);
        }
      }
      if (src == nullptr) src = r.x0;
      ir::Type it;
      it = ir::Type::tensor(DataType::kInt64, Dims{ir::Dim::known(1)});
      ir::Node* sh = rw.createNode("Shape", "", {src}, {it});
      rw.setAttribute(sh, intAttr("start", axis));
      rw.setAttribute(sh, intAttr("end", axis + 1));
      ir::Value* rest =
          rw.createInitializer(g, "rotary_ones", pass::makeInt64Tensor(ones, {rank - 1}));
      it.shape = Dims{ir::Dim::known(rank)};
      ir::Node* cat = rw.createNode("Concat", "", {sh->output(0), rest}, {it});
      rw.setAttribute(cat, intAttr("axis", 0));
      shape = cat->output(0);
    }
    ir::Type t = v->type();
    t.shape = dims;
    (*t.shape)[0] = b;
    return rw.createNode("Expand", "", {v, shape}, {t})->output(0);
  }

  /// x0 [B, S, H, D] as [B, S, H*D]: the head split's input where x0 is Reshape(x: [B, S, H*D]),
  /// else Reshape(x0, [0, 0, -1]).
  static ir::Value* mergedHeads(const Rotary& r, PatternContext& ctx) {
    const Dims& x0 = *shapeOf(r.x0);
    const ir::Dim merged = ir::Dim::known(x0[2].value * x0[3].value);
    if (ir::Node* split = r.x0->producer();
        split != nullptr && split->opType() == "Reshape" && split->domain().empty()) {
      const Dims* xs = shapeOf(split->input(0));
      if (xs != nullptr && xs->size() == 3 && sameDim((*xs)[0], x0[0]) &&
          sameDim((*xs)[1], x0[1]) && sameDim((*xs)[2], merged))
        return split->input(0);
    }
    return reshaped(r.x0, {0, 0, -1}, Dims{x0[0], x0[1], merged}, r, ctx);
  }

  /// Reshape<allowzero=0>(v, target), typed `dims`.
  static ir::Value* reshaped(ir::Value* v, std::vector<int64_t> target, Dims dims, const Rotary& r,
                             PatternContext& ctx) {
    auto& rw = ctx.rewriter();
    auto n = static_cast<int64_t>(target.size());
    ir::Value* shape = rw.createInitializer(*r.out->owningGraph(), "rotary_shape",
                                            pass::makeInt64Tensor(std::move(target), {n}));
    ir::Type t = v->type();
    t.shape = std::move(dims);
    return rw.createNode("Reshape", "", {v, shape}, {t})->output(0);
  }

  /// x3 when x0 [B, H, S, D] is Transpose<0,2,1,3>(Reshape(x3: [B, S, H*D])) that only the chain
  /// reads: the rotation is done on x3 and the head split after it, where fuse-attention's 3-D
  /// form reads it (the split's two nodes move, none is added).
  static ir::Value* splitAfter(const Rotary& r) {
    ir::Node* tr = r.x0->producer();
    if (tr == nullptr || tr->opType() != "Transpose" || !tr->domain().empty() ||
        pass::attrInts(*tr, "perm") != std::vector<int64_t>{0, 2, 1, 3} || r.x0->isGraphOutput())
      return nullptr;
    for (const ir::Use& u : r.x0->uses()) {
      if (std::find(r.chain.begin(), r.chain.end(), u.user) == r.chain.end()) return nullptr;
    }
    ir::Node* split = tr->input(0)->producer();
    if (split == nullptr || split->opType() != "Reshape" || !split->domain().empty())
      return nullptr;
    const Dims& x0 = *shapeOf(r.x0);
    const Dims* xs = shapeOf(split->input(0));
    if (!x0[1].isKnown() || xs == nullptr || xs->size() != 3 || !sameDim((*xs)[0], x0[0]) ||
        !sameDim((*xs)[1], x0[2]) || !(*xs)[2].isKnown() ||
        (*xs)[2].value != x0[1].value * x0[3].value)
      return nullptr;
    return split->input(0);
  }

  void rewriteAt(const Rotary& r, PatternContext& ctx) const {
    auto& rw = ctx.rewriter();
    rw.setInsertionPoint(r.out);
    std::vector<ir::Value*> caches;
    if (r.cos.table && r.sin.table && r.cos.positions == r.sin.positions) {
      // Constant tables read at the position ids: RotaryEmbedding's own gather.
      ir::Graph& g = *r.out->owningGraph();
      const Dims& idx = *shapeOf(r.cos.positions);
      ir::Type t = r.cos.positions->type();
      t.shape = Dims{idx[0], idx[1]};
      ir::Node* pos =
          rw.createNode("Squeeze", "",
                        {r.cos.positions,
                         rw.createInitializer(g, "rotary_axis", pass::makeInt64Tensor({2}, {1}))},
                        {t});
      caches = {rw.createInitializer(g, "rotary_cos", *r.cos.table),
                rw.createInitializer(g, "rotary_sin", *r.sin.table), pos->output(0)};
      if (!sameDim(idx[0], (*shapeOf(r.x0))[0]))
        caches[2] = expandBatch(caches[2], *t.shape, r, ctx);
    } else {
      caches = {makeCache(r.cos, r, ctx), makeCache(r.sin, r, ctx)};
    }
    const bool seq_first = r.layout.head_axis == 2;
    ir::Value* x3 = seq_first ? mergedHeads(r, ctx) : splitAfter(r);
    caches.insert(caches.begin(), x3 ? x3 : r.x0);
    ir::Node* rope = rw.createNodeLike("RotaryEmbedding", "", caches, r.out);
    if (r.partial) rw.setAttribute(rope, intAttr("rotary_embedding_dim", r.rot));
    if (interleaved_) rw.setAttribute(rope, intAttr("interleaved", 1));
    ir::Value* y = rope->output(0);
    if (x3 != nullptr) {
      // [B, S, H*D] in and out, with num_heads; the result split into heads again.
      const Dims& x0 = *shapeOf(r.x0);
      const int64_t heads = x0[seq_first ? 2 : 1].value;
      rw.setAttribute(rope, intAttr("num_heads", heads));
      rw.setType(y, x3->type());
      const ir::Dim seq = x0[seq_first ? 1 : 2];
      y = reshaped(y, {0, 0, heads, x0[3].value}, {x0[0], seq, ir::Dim::known(heads), x0[3]}, r,
                   ctx);
      if (!seq_first) y = pass::createTranspose(rw, y, {0, 2, 1, 3});
    }
    rw.replaceAllUsesWith(r.out->output(0), y);
    std::vector<ir::Node*> dead = r.chain;
    if (x3 != nullptr && !seq_first) {
      ir::Node* tr = r.x0->producer();
      dead.insert(dead.end(), {tr, tr->input(0)->producer()});
    }
    rw.eraseDeadNodes(dead);
  }

  const bool interleaved_;
  const Matcher rule_;
};

class FuseRotaryPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-rotary"; }
  std::string summary() const override {
    return "Fuse rotary position embedding (x * cos + rotate(x) * sin, rotate_half or "
           "rotate_every_two) into RotaryEmbedding (opset 23+)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<RotaryPattern>(false));
    list.push_back(std::make_unique<RotaryPattern>(true));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseRotaryPass() {
  return std::make_unique<FuseRotaryPass>();
}

}  // namespace onnxopt::passes
