// fuse-rotary: rotary position embedding as the exporters write it becomes RotaryEmbedding (23).
//
//   rotate_half(x) = Concat<axis=-1>(Neg(Slice(x, h:2h)), Slice(x, 0:h))         h = rot / 2
//   y = Add(Mul(x, C), Mul(rotate_half(x), S))  ==>  y = RotaryEmbedding(x, c, s)
//
// Partial rotary (rot < D, Phi's), the rotated part x = Slice(x0, 0:rot) of the last axis:
//   Concat<axis=-1>(y, Slice(x0, rot:D))  ==>  RotaryEmbedding<rotary_embedding_dim=rot>(x0, c, s)
//
// x0: [B, H, S, D], heads before the sequence (HF applies RoPE after the head transpose). C and S
// broadcast to it as [Bc, 1, S, rot] with the two halves of their last axis equal, proven by
// structure or by data:
//   C = Unsqueeze<axes=[1]>(u1(...uk(Concat<axis=-1>(a, a))))  ==>  c = u1(...uk(a))
//       (HF's emb = cat(freqs, freqs); cos = emb.cos() * attention_scaling; each ui one of Cos,
//       Sin, Cast, and Mul or Div by a scalar constant, all elementwise: the halves stay equal)
//   C constant                                                 ==>  c = its first half
// c and s are RotaryEmbedding's caches without position ids, [B, S, rot / 2]: a cache of batch 1
// (HF's default position ids, arange(S)[None]) is expanded to x0's batch. A constant cache of a
// static batch is stored expanded. Float, float16 and bfloat16; every intermediate single-use.
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

/// Slice(x, [start], [end], [axis] [, [1]]) over the last axis of x (rank `rank`), read as the
/// half-open range [start, min(end, dim)); nullopt when not that.
std::optional<std::pair<int64_t, int64_t>> lastAxisRange(const ir::Node& slice, int64_t rank,
                                                         int64_t dim) {
  if (slice.numInputs() < 4) return std::nullopt;
  auto starts = pass::constantInts(slice.input(1));
  auto ends = pass::constantInts(slice.input(2));
  auto axes = pass::constantInts(slice.input(3));
  if (!starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 || axes->size() != 1)
    return std::nullopt;
  if (slice.numInputs() > 4 && slice.input(4) != nullptr &&
      pass::constantInts(slice.input(4)) != std::vector<int64_t>{1})
    return std::nullopt;
  if (pass::normalizeAxis((*axes)[0], rank) != rank - 1) return std::nullopt;
  int64_t b = (*starts)[0], e = (*ends)[0];
  if (b < 0 || e < 0) return std::nullopt;  // from-the-end indices: not HF's form
  return std::make_pair(std::min(b, dim), std::min(e, dim));
}

/// Whether Concat `node` joins its two inputs along the last axis of a rank-`rank` result.
bool concatsLastAxis(const ir::Node& node, int64_t rank) {
  return node.numInputs() == 2 &&
         pass::normalizeAxis(pass::attrInt(node, "axis", 0), rank) == rank - 1;
}

/// One of the caches: how to make its first half, [Bc, S, rot / 2].
struct Cache {
  ir::Value* base = nullptr;       ///< a, of Concat(a, a); nullptr for a constant
  std::vector<ir::Node*> unary;    ///< the elementwise ops from C back to the Concat
  std::optional<ir::Tensor> half;  ///< a constant C's first half, [Bc, S, rot / 2]
  Dims dims;                       ///< [Bc, S, rot / 2]
};

/// Elementwise ops that keep the two halves of the last axis equal.
bool keepsHalves(const ir::Node& node) {
  const std::string& op = node.opType();
  if (!node.domain().empty()) return false;
  if (op == "Cos" || op == "Sin" || op == "Cast") return node.numInputs() == 1;
  if (op == "Mul" || op == "Div") {
    return node.numInputs() == 2 && pass::scalarConstant(node.input(1)).has_value() &&
           pass::rankOf(node.input(1)).value_or(99) <= 1;
  }
  return false;
}

/// The constant C ([.., 1, S, rot] broadcasting to x0 [B, H, S, D]) as its first half.
std::optional<Cache> constantCache(const ir::Value* c, const Dims& x, int64_t rot) {
  auto t = ir::constantTensor(c);
  if (!t || t->dtype() != pass::elemTypeOf(c) || t->dims().size() > 4 || t->dims().size() < 2 ||
      !x[2].isKnown())
    return std::nullopt;
  std::vector<int64_t> d(4 - t->dims().size(), 1);
  d.insert(d.end(), t->dims().begin(), t->dims().end());
  if (d[1] != 1 || d[2] != x[2].value || d[3] != rot) return std::nullopt;
  auto values = pass::floatValues(*t);
  if (!values) return std::nullopt;
  int64_t h = rot / 2;
  std::vector<double> half;
  for (int64_t row = 0; row < d[0] * d[2]; ++row) {
    for (int64_t i = 0; i < h; ++i) {
      double lo = (*values)[static_cast<size_t>(row * rot + i)];
      double hi = (*values)[static_cast<size_t>(row * rot + h + i)];
      if (lo != hi && !(std::isnan(lo) && std::isnan(hi))) return std::nullopt;
      half.push_back(lo);
    }
  }
  Cache cache;
  cache.half = pass::makeFloatTensor(t->dtype(), {d[0], d[2], h}, half);
  cache.dims = {ir::Dim::known(d[0]), x[2], ir::Dim::known(h)};
  return cache;
}

/// C as one of the rule's caches; nullopt when its halves are not provably equal.
std::optional<Cache> matchCache(ir::Value* c, const Dims& x, int64_t rot) {
  if (auto k = constantCache(c, x, rot)) return k;
  ir::Node* unsq = c->producer();
  if (unsq == nullptr || unsq->opType() != "Unsqueeze" || !unsq->domain().empty() ||
      unsq->numInputs() != 2 || pass::constantInts(unsq->input(1)) != std::vector<int64_t>{1})
    return std::nullopt;
  Cache cache;
  ir::Value* e = unsq->input(0);
  const Dims* es = shapeOf(e);
  if (es == nullptr || es->size() != 3 || !sameDim((*es)[1], x[2]) || !(*es)[2].isKnown() ||
      (*es)[2].value != rot)
    return std::nullopt;
  cache.dims = {(*es)[0], (*es)[1], ir::Dim::known(rot / 2)};
  ir::Value* v = e;
  while (ir::Node* p = v->producer()) {
    if (p->opType() == "Concat" && p->domain().empty() && concatsLastAxis(*p, 3) &&
        p->input(0) == p->input(1)) {
      cache.base = p->input(0);
      return cache;
    }
    if (!keepsHalves(*p)) return std::nullopt;
    cache.unary.push_back(p);
    v = p->input(0);
  }
  return std::nullopt;
}

/// What the pattern found.
struct Rotary {
  ir::Value* x0 = nullptr;  ///< RotaryEmbedding's input
  ir::Node* out = nullptr;  ///< the node whose result RotaryEmbedding computes
  int64_t rot = 0;          ///< rotated features; the head size for full rotation
  bool partial = false;
  Cache cos, sin;
  std::vector<ir::Node*> chain;  ///< users first
};

class RotaryPattern final : public rewrite::Pattern {
 public:
  RotaryPattern() : Pattern("fuse-rotary-half", "Add", "", 3, 23), rule_(rule()) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    auto r = matchAt(node, ctx);
    if (!r) return false;
    rewriteAt(*r, ctx);
    return true;
  }

 private:
  /// y = Add(Mul(x, C), Mul(Concat(Neg(Slice(x, h:2h)), Slice(x, 0:h)), S)).
  static Matcher rule() {
    Matcher rotated =
        singleUse(
            op("Concat",
               singleUse(op("Neg", bind("hi", singleUse(op("Slice", bind("x"), any(), any(), any(),
                                                           anyOrAbsent()))))),
               bind("lo", singleUse(op("Slice", bind("x"), any(), any(), any(), anyOrAbsent())))))
            .orFail("no rotate_half: Concat(Neg(Slice(x)), Slice(x))");
    // x * cos is read after the match (x is bound inside rotate_half, which decides the order).
    return commutative("Add", bind("xc", singleUse(op("Mul", any(), any()))),
                       singleUse(commutative("Mul", bind("rot", rotated), bind("sin"))))
        .orFail("no x * cos + rotate_half(x) * sin");
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
    const int64_t h = r.rot / 2;
    auto hi = lastAxisRange(*m.node("hi"), 4, r.rot);
    auto lo = lastAxisRange(*m.node("lo"), 4, r.rot);
    if (!concatsLastAxis(*m.node("rot"), 4) || hi != std::make_pair(h, r.rot) ||
        lo != std::make_pair(int64_t{0}, h))
      return ctx.fail("the slices are not the two halves of the last axis"), std::nullopt;
    if (!pass::sameKnownShape(node->output(0), x))
      return ctx.fail("the result is broadcast past x's shape"), std::nullopt;
    r.x0 = x;
    r.out = node;
    r.chain = m.nodes();
    matchPartial(node, r);
    const Dims& x0 = *shapeOf(r.x0);
    auto cos = matchCache(cos_v, x0, r.rot);
    auto sin = matchCache(m["sin"], x0, r.rot);
    if (!cos || !sin)
      return ctx.fail("cos or sin is not [B|1, 1, S, rot] with equal halves"), std::nullopt;
    r.cos = std::move(*cos);
    r.sin = std::move(*sin);
    if (!batchFits(r.cos.dims[0], x0[0]) || !batchFits(r.sin.dims[0], x0[0]))
      return ctx.fail("the caches' batch is neither x's nor 1"), std::nullopt;
    return r;
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
    if (lastAxisRange(*head, 4, d) != std::make_pair(int64_t{0}, r.rot) || r.rot >= d) return false;
    // x's uses are the chain's three (Mul and the two halves' Slices).
    if (r.x0->uses().size() != 3 || r.x0->isGraphOutput()) return false;
    ir::Node* cat = node->output(0)->uses()[0].user;
    if (cat->opType() != "Concat" || !cat->domain().empty() || !concatsLastAxis(*cat, 4) ||
        cat->input(0) != node->output(0))
      return false;
    ir::Node* tail = cat->input(1)->producer();
    if (tail == nullptr || tail->opType() != "Slice" || !tail->domain().empty() ||
        tail->input(0) != x0 || !pass::hasSingleUse(cat->input(1)) ||
        lastAxisRange(*tail, 4, d) != std::make_pair(r.rot, d))
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

  /// Expand(v: [1, S, h], [B, 1, 1]), B read from a graph input holding x0's batch symbol where
  /// one does (so that every layer's caches read one Shape and merge), else from x0.
  static ir::Value* expandBatch(ir::Value* v, const Dims& dims, const Rotary& r,
                                PatternContext& ctx) {
    auto& rw = ctx.rewriter();
    ir::Graph& g = *r.out->owningGraph();
    const ir::Dim& b = (*shapeOf(r.x0))[0];
    ir::Value* shape = nullptr;
    if (b.isKnown()) {
      shape = rw.createInitializer(g, "rotary_batch", pass::makeInt64Tensor({b.value, 1, 1}, {3}));
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
      ir::Value* ones = rw.createInitializer(g, "rotary_ones", pass::makeInt64Tensor({1, 1}, {2}));
      it.shape = Dims{ir::Dim::known(3)};
      ir::Node* cat = rw.createNode("Concat", "", {sh->output(0), ones}, {it});
      rw.setAttribute(cat, intAttr("axis", 0));
      shape = cat->output(0);
    }
    ir::Type t = v->type();
    t.shape = Dims{b, dims[1], dims[2]};
    return rw.createNode("Expand", "", {v, shape}, {t})->output(0);
  }

  static void rewriteAt(const Rotary& r, PatternContext& ctx) {
    auto& rw = ctx.rewriter();
    rw.setInsertionPoint(r.out);
    ir::Value* c = makeCache(r.cos, r, ctx);
    ir::Value* s = makeCache(r.sin, r, ctx);
    ir::Node* rope = rw.createNodeLike("RotaryEmbedding", "", {r.x0, c, s}, r.out);
    if (r.partial) rw.setAttribute(rope, intAttr("rotary_embedding_dim", r.rot));
    rw.replaceAllUsesWith(r.out->output(0), rope->output(0));
    rw.eraseDeadNodes(r.chain);
  }

  const Matcher rule_;
};

class FuseRotaryPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-rotary"; }
  std::string summary() const override {
    return "Fuse rotary position embedding (x * cos + rotate_half(x) * sin) into RotaryEmbedding "
           "(opset 23+)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<RotaryPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseRotaryPass() {
  return std::make_unique<FuseRotaryPass>();
}

}  // namespace onnxopt::passes
