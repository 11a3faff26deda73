// fuse-attention: scaled dot-product attention becomes Attention (opset 23).
//
//   S = MatMul(Q [* cq], Transpose<p>(K0) [* ck])   Transpose<p>(K0) is K^T: K = Transpose<p'>(K0)
//   P = Softmax<axis=-1>(S [* c | / c] [+ M])        with p' = p with its last two entries swapped
//   Y = MatMul(P, V)
//   ==>  Y = Attention<scale = cq*ck*c (or /c)>(Q, K, V [, M])
//
// K^T that is no Transpose gets one for K. Q: [B, Hq, S, D], K: [B, Hkv, L, D], V: [B, Hkv, L, Dv]
// with Hq a multiple of Hkv. This is what PyTorch's legacy and dynamo exporters write for HF
// transformers' eager and SDPA attention.
//
// Grouped KV heads (repeat_kv) are read through, since Attention groups heads itself:
//   Reshape(Expand(Unsqueeze<axes=[2]>(Kkv), [B,Hkv,n,L,D]), [B,Hkv*n,L,D])  ==>  Kkv
//
// A KV cache (HF's DynamicCache.update) goes into Attention's own past and present:
//   K = Concat<axis=2>(Kp, Kc), V = Concat<axis=2>(Vp, Vc)     Kp, Vp: [B, Hkv, P, D]
//   ==>  Y, K, V = Attention(Q, Kc, Vc, M, Kp, Vp)            (present_key and present_value)
// where the Concats' other readers are graph outputs (the present cache) and the repeat_kv read
// through; the mask then covers the P + L keys as before. With Q, Kc and Vc split into heads from
// rank 3 (and Y merged back), Attention takes the 3-D forms below and the 4-D past.
//
// 3-D form, when Q, K and V are all split into heads from rank-3 tensors and Y is merged back:
//   Transpose<0,2,1,3>(Reshape(x: [B,S,H*D]) -> [B,S,H,D])  (for K: Transpose<0,2,3,1> as K^T)
//   Reshape(Transpose<0,2,1,3>(Y)) -> [B,S,Hq*Dv]
//   ==>  Attention<q_num_heads=Hq, kv_num_heads=Hkv>(q, k, v [, M]) : [B,S,Hq*Dv]
//
// The mask M must be float like Q, with its last two dims equal to the scores' (onnxruntime does
// not broadcast those) and the rest 1 or equal. Scales are scalar constants. Float, float16 and
// bfloat16. Every intermediate must have no other user.
#include "../target/cuda/target_pattern_pass.h"
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
using pass::floatAttr;
using pass::intAttr;
using rewrite::PatternContext;

/// Kkv when `v` is repeat_kv(Kkv) as HF writes it, its three nodes appended to *nodes; else `v`.
ir::Value* throughRepeatKv(ir::Value* v, std::vector<ir::Node*>* nodes) {
  static const Matcher kRepeat = op(
      "Reshape", bind("e", op("Expand", op("Unsqueeze", bind("kv"), bind("axes")), any())), any());
  Match m = kRepeat.match(v);
  if (!m) return v;
  auto axes = pass::constantInts(m["axes"]);
  const Dims* k = shapeOf(m["kv"]);
  const Dims* e = shapeOf(m["e"]);
  const Dims* r = shapeOf(v);
  if (!axes || *axes != std::vector<int64_t>{2} || k == nullptr || e == nullptr || r == nullptr ||
      k->size() != 4 || e->size() != 5 || r->size() != 4) {
    return v;
  }
  const Dims& K = *k;
  const Dims& E = *e;
  const Dims& R = *r;
  if (!sameDim(E[0], K[0]) || !sameDim(E[1], K[1]) || !sameDim(E[3], K[2]) ||
      !sameDim(E[4], K[3]) || !K[1].isKnown() || !E[2].isKnown()) {
    return v;
  }
  if (!sameDim(R[0], K[0]) || !R[1].isKnown() || R[1].value != K[1].value * E[2].value ||
      !sameDim(R[2], K[2]) || !sameDim(R[3], K[3])) {
    return v;
  }
  nodes->insert(nodes->end(),
                {v->producer(), m.node("e"), m["e"]->producer()->input(0)->producer()});
  return m["kv"];
}

/// True when `merged` ([B,S,H*D]) is `split` ([B,S,H,D]) with its last two dims merged.
bool mergesHeads(const Dims* merged, const Dims* split) {
  if (merged == nullptr || split == nullptr || merged->size() != 3 || split->size() != 4) {
    return false;
  }
  const Dims& X = *merged;
  const Dims& R = *split;
  return sameDim(X[0], R[0]) && sameDim(X[1], R[1]) && X[2].isKnown() && R[2].isKnown() &&
         R[3].isKnown() && X[2].value == R[2].value * R[3].value;
}

/// x when `v4` = Transpose<perm>(Reshape(x: [B,S,H*D]) -> [B,S,H,D]); else nullptr. With
/// `factor`, also Transpose<perm>(Mul(Reshape(x), c)) for a scalar constant c (the transpose
/// optimizer moves Q's scaling there), c stored in *factor (1 without one).
ir::Value* headsFrom3d(ir::Value* v4, const std::vector<int64_t>& perm, double* factor = nullptr) {
  static const Matcher kHeads = op(
      "Transpose", oneOf({bind("mul", singleUse(commutative(
                                          "Mul", bind("r", op("Reshape", bind("x"), anyOrAbsent())),
                                          bind("c", scalar())))),
                          bind("r", op("Reshape", bind("x"), anyOrAbsent()))}));
  if (factor != nullptr) *factor = 1.0;
  Match m = kHeads.match(v4);
  if (!m || pass::attrInts(*v4->producer(), "perm") != perm) return nullptr;
  if (m["mul"] != nullptr) {
    if (factor == nullptr || !pass::hasSingleUse(m["r"])) return nullptr;
    *factor = m.scalar("c").value_or(1.0);
  }
  return mergesHeads(shapeOf(m["x"]), shapeOf(m["r"])) ? m["x"] : nullptr;
}

/// t when `kt` = Reshape(Transpose<0,2,1>(Reshape(t: [B,H,L,D]) -> [B*H,L,D])) -> [B,H,D,L], i.e.
/// Transpose<0,1,3,2>(t) through a batch of 3-D matrices (torch's export of k.transpose(-2, -1)
/// inside SDPA's decomposition); the three nodes in *nodes. Else nullptr.
ir::Value* batchedTranspose(ir::Value* kt, std::vector<ir::Node*>* nodes) {
  static const Matcher kBatched =
      op("Reshape",
         bind("tr", singleUse(op("Transpose",
                                 bind("r", singleUse(op("Reshape", bind("t"), anyOrAbsent())))))),
         anyOrAbsent());
  Match m = kBatched.match(kt);
  if (!m || pass::attrInts(*m.node("tr"), "perm") != std::vector<int64_t>{0, 2, 1}) {
    return nullptr;
  }
  const Dims* t = shapeOf(m["t"]);
  const Dims* r = shapeOf(m["r"]);
  const Dims* out = shapeOf(kt);
  if (t == nullptr || r == nullptr || out == nullptr || t->size() != 4 || r->size() != 3 ||
      out->size() != 4) {
    return nullptr;
  }
  const Dims& T = *t;
  const Dims& R = *r;
  const Dims& O = *out;
  for (const ir::Dim* d : {&T[0], &T[1], &R[0]}) {
    if (!d->isKnown()) return nullptr;
  }
  if (R[0].value != T[0].value * T[1].value || !sameDim(R[1], T[2]) || !sameDim(R[2], T[3]) ||
      !sameDim(O[0], T[0]) || !sameDim(O[1], T[1]) || !sameDim(O[2], T[3]) ||
      !sameDim(O[3], T[2])) {
    return nullptr;
  }
  *nodes = {kt->producer(), m.node("tr"), m.node("r")};
  return m["t"];
}

/// True when `flat` ([B*S,H*D], static) is `split` ([B,S,H,D]) with its first two and last two
/// dims merged (the head merge straight into a 2-D Gemm, as GPT-2's export writes it).
bool mergesHeadsFlat(const Dims* flat, const Dims* split) {
  if (flat == nullptr || split == nullptr || flat->size() != 2 || split->size() != 4) return false;
  for (const ir::Dim& d : *split) {
    if (!d.isKnown()) return false;
  }
  const Dims& F = *flat;
  const Dims& R = *split;
  return F[0].isKnown() && F[1].isKnown() && F[0].value == R[0].value * R[1].value &&
         F[1].value == R[2].value * R[3].value;
}

/// Y's Transpose<0,2,1,3> and the Reshape merging its heads back to [B,S,Hq*Dv] (or, *flat set,
/// to [B*S,Hq*Dv]), when they follow.
std::pair<ir::Node*, ir::Node*> headsMergedAfter(const ir::Node& node, bool* flat) {
  *flat = false;
  if (!pass::hasSingleUse(node.output(0))) return {nullptr, nullptr};
  ir::Node* tr = node.output(0)->uses()[0].user;
  if (tr->opType() != "Transpose" ||
      pass::attrInts(*tr, "perm") != std::vector<int64_t>{0, 2, 1, 3} ||
      !pass::hasSingleUse(tr->output(0))) {
    return {nullptr, nullptr};
  }
  ir::Node* reshape = tr->output(0)->uses()[0].user;
  if (reshape->opType() != "Reshape") return {nullptr, nullptr};
  if (mergesHeadsFlat(shapeOf(reshape->output(0)), shapeOf(tr->output(0)))) {
    *flat = true;
    return {tr, reshape};
  }
  if (!mergesHeads(shapeOf(reshape->output(0)), shapeOf(tr->output(0)))) return {nullptr, nullptr};
  return {tr, reshape};
}

/// What the pattern found: Attention's operands and the chain it replaces.
struct AttentionMatch {
  ir::Value* q = nullptr;
  ir::Node* ktr = nullptr;     ///< K^T's Transpose; nullptr when K^T is no Transpose
  ir::Value* kt = nullptr;     ///< K^T
  ir::Value* k0 = nullptr;     ///< ktr's input (K^T itself without ktr)
  std::vector<int64_t> perm;   ///< ktr's perm (the identity without ktr)
  std::vector<int64_t> kperm;  ///< K = Transpose<kperm>(k0)
  Dims k_dims;                 ///< K's dims through kperm
  ir::Value* k = nullptr;      ///< K when it needs no new Transpose (through repeat_kv)
  ir::Value* v = nullptr;      ///< V, through repeat_kv
  ir::Value* mask = nullptr;
  double scale = 1.0;
  int64_t q_heads = 0;
  int64_t kv_heads = 0;
  // The 3-D form: Q, K and V split into heads from q3, k3, v3, and Y merged back by out_reshape.
  ir::Value* q3 = nullptr;
  ir::Value* k3 = nullptr;
  ir::Value* v3 = nullptr;
  ir::Node* out_tr = nullptr;
  ir::Node* out_reshape = nullptr;
  bool out_flat = false;           ///< out_reshape merges to [B*S, Hq*Dv]: it stays, reading Y
  bool guarded = false;            ///< P = Where(IsNaN(P0), 0, P0): ai.onnxopt.SafeAttention
  std::vector<ir::Node*> chain;    ///< users first
  std::vector<ir::Node*> repeats;  ///< repeat_kv's nodes read through, users first
  ir::Node* k_cat = nullptr;       ///< K = Concat(past_key, K): the KV cache
  ir::Node* v_cat = nullptr;
  bool threeD() const { return q3 && k3 && v3 && out_reshape; }
};

class AttentionPattern final : public TargetPattern {
 public:
  AttentionPattern(TargetClaims claims, bool nan_guard)
      : TargetPattern(claims, "fuse-attention", "MatMul", "", 4, 23),
        nan_guard_(nan_guard),
        rule_(rule(false)),
        guarded_rule_(rule(true)) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    auto a = matchAt(node, ctx);
    if (!a) return false;
    rewriteAt(node, *a, ctx);
    return true;
  }

 private:
  /// Y = MatMul(Softmax([Add](S [* c | / c], M)), V),  S = MatMul(Q [* cq], K^T [* ck]); guarded:
  /// Y = MatMul(Where(IsNaN(P), z, P), V), P = Softmax(...) (z and P checked in matchAt).
  static Matcher rule(bool guarded) {
    auto scaled = [](const std::string& x) {
      return oneOf(
          {bind(x + "_mul", singleUse(commutative("Mul", bind(x), bind(x + "_c", scalar())))),
           bind(x)});
    };
    Matcher qk =
        bind("qk", singleUse(op("MatMul", scaled("q"), scaled("kt")))).orFail("no Q*K^T MatMul");
    Matcher scores = oneOf({bind("div", singleUse(op("Div", qk, bind("div_c", scalar()))))
                                .orFail("scores divided by a non-constant"),
                            bind("mul", singleUse(commutative("Mul", qk, bind("mul_c", scalar()))))
                                .orFail("scores multiplied by a non-scalar"),
                            qk});
    Matcher masked = oneOf({bind("add", singleUse(commutative("Add", scores, bind("mask"))))
                                .orFail("Add is not scores plus a mask"),
                            scores});
    if (guarded) {
      Matcher probs =
          bind("guard",
               singleUse(op("Where", bind("isnan", singleUse(op("IsNaN", bind("p", any())))),
                            bind("zero", scalar()), bind("softmax", op("Softmax", masked)))))
              .orFail("no NaN-guarded Softmax probabilities");
      return op("MatMul", probs, bind("v"));
    }
    Matcher probs =
        bind("softmax", singleUse(op("Softmax", masked))).orFail("no Softmax probabilities");
    return op("MatMul", probs, bind("v"));
  }

  std::optional<AttentionMatch> matchAt(ir::Node* node, PatternContext& ctx) const {
    Match m = rule_.match(node);
    bool guarded = false;
    if (!m && nan_guard_) {
      if (Match g = guarded_rule_.match(node)) {
        m = std::move(g);
        guarded = true;
      }
    }
    if (!m) return ctx.fail("{}", m.why()), std::nullopt;
    ir::Node* softmax = m.node("softmax");
    if (guarded && (m["p"] != softmax->output(0) || softmax->output(0)->uses().size() != 2 ||
                    m.scalar("zero").value_or(1.0) != 0.0)) {
      return ctx.fail("the NaN guard is not Where(IsNaN(P), 0, P)"), std::nullopt;
    }
    const Dims* ps = shapeOf(softmax->output(0));
    if (ps == nullptr || ps->size() != 4) return ctx.fail("scores not rank 4"), std::nullopt;
    int64_t axis = pass::attrInt(*softmax, "axis", -1);
    if (axis != -1 && axis != 3) return ctx.fail("Softmax not over the last axis"), std::nullopt;
    AttentionMatch a;
    if (auto d = m.scalar("div_c")) {
      if (*d == 0.0) return ctx.fail("scores divided by a non-constant"), std::nullopt;
      a.scale /= *d;
    } else if (auto c = m.scalar("mul_c")) {
      a.scale *= *c;
    }
    for (const char* factor : {"q_c", "kt_c"}) {
      if (auto c = m.scalar(factor)) a.scale *= *c;
    }
    a.q = m["q"];
    a.kt = m["kt"];
    a.mask = m["mask"];
    a.guarded = guarded;
    a.chain = {node,          m.node("guard"), m.node("isnan"), softmax,         m.node("add"),
               m.node("div"), m.node("mul"),   m.node("qk"),    m.node("q_mul"), m.node("kt_mul")};
    // K^T = Transpose<perm>(K0), or K^T itself (K0 = K^T, perm = identity).
    a.ktr = a.kt->producer();
    if (a.ktr != nullptr && (a.ktr->opType() != "Transpose" || !a.ktr->domain().empty())) {
      a.ktr = nullptr;
    }
    auto perm = a.ktr != nullptr ? pass::attrInts(*a.ktr, "perm")
                                 : std::optional<std::vector<int64_t>>({0, 1, 2, 3});
    if (!perm || perm->size() != 4) return ctx.fail("K^T's Transpose is not rank 4"), std::nullopt;
    a.perm = *perm;
    a.kperm = {a.perm[0], a.perm[1], a.perm[3], a.perm[2]};
    a.k0 = a.ktr != nullptr ? a.ktr->input(0) : a.kt;
    if (a.ktr == nullptr) {
      std::vector<ir::Node*> nodes;
      if (ir::Value* t = batchedTranspose(a.kt, &nodes)) {
        // K^T = Transpose<0,1,3,2>(t) through Reshapes: K is t itself.
        a.k0 = t;
        a.perm = {0, 1, 3, 2};
        a.kperm = {0, 1, 2, 3};
        a.chain.insert(a.chain.end(), nodes.begin(), nodes.end());
      }
    }
    if (!checkOperands(*ps, node->input(1), a, ctx) || !matchHeads(*node, a, ctx)) {
      return std::nullopt;
    }
    if (!guarded) matchCache(a);
    if (guarded) {
      if (!a.threeD() || a.mask == nullptr || a.q_heads != a.kv_heads) {
        return ctx.fail("a NaN-guarded softmax fuses only 3-D, with a mask, without grouped heads"),
               std::nullopt;
      }
      if (kernels::Support s = claims_("SafeAttention", {a.q3, a.k3, a.v3, a.mask}); !s) {
        return ctx.fail("no CUDA kernel for SafeAttention: {}", s.reason), std::nullopt;
      }
    }
    return a;
  }

  /// Element types, Q and K of rank 4, the mask; K and V read through repeat_kv.
  static bool checkOperands(const Dims& scores, ir::Value* v, AttentionMatch& a,
                            PatternContext& ctx) {
    auto elem = pass::elemTypeOf(a.q);
    if (!elem ||
        (*elem != DataType::kFloat && *elem != DataType::kFloat16 && *elem != DataType::kBfloat16))
      return ctx.fail("element type not float, float16 or bfloat16");
    if (pass::elemTypeOf(a.k0) != elem || pass::elemTypeOf(v) != elem)
      return ctx.fail("Q, K and V element types differ");
    const Dims* qs = shapeOf(a.q);
    const Dims* k0s = shapeOf(a.k0);
    if (qs == nullptr || k0s == nullptr || qs->size() != 4 || k0s->size() != 4)
      return ctx.fail("Q or K not rank 4");
    for (int64_t p : a.kperm) a.k_dims.push_back((*k0s)[static_cast<size_t>(p)]);
    if (a.mask != nullptr) {
      const Dims* ms = shapeOf(a.mask);
      if (pass::elemTypeOf(a.mask) != elem || ms == nullptr || ms->size() < 2 || ms->size() > 4)
        return ctx.fail("mask not a float tensor of rank 2 to 4");
      size_t off = 4 - ms->size();
      for (size_t i = 0; i < ms->size(); ++i) {
        const ir::Dim& want = scores[off + i];
        const ir::Dim& got = (*ms)[i];
        bool ok = sameDim(got, want) || (i + 2 < ms->size() && got.isKnown() && got.value == 1);
        if (!ok) return ctx.fail("mask does not match the scores' shape");
      }
    }
    if (a.kperm == std::vector<int64_t>{0, 1, 2, 3}) a.k = throughRepeatKv(a.k0, &a.repeats);
    a.v = throughRepeatKv(v, &a.repeats);
    return true;
  }

  /// The 3-D form (every input split into heads from rank 3, and the output merged back), and the
  /// head counts: Q [B,Hq,S,D], K [B,Hkv,L,D], V [B,Hkv,L,Dv] with Hq a multiple of Hkv.
  static bool matchHeads(const ir::Node& node, AttentionMatch& a, PatternContext& ctx) {
    double q_factor = 1.0, k_factor = 1.0;
    a.q3 = headsFrom3d(a.q, {0, 2, 1, 3}, &q_factor);
    a.k3 = (a.ktr != nullptr && a.perm == std::vector<int64_t>{0, 2, 3, 1})
               ? headsFrom3d(a.kt, {0, 2, 3, 1}, &k_factor)
               : headsFrom3d(a.k, {0, 2, 1, 3}, &k_factor);
    a.v3 = headsFrom3d(a.v, {0, 2, 1, 3});
    std::tie(a.out_tr, a.out_reshape) = headsMergedAfter(node, &a.out_flat);
    // The 3-D form reads Q and K before their head split's scalings: they join the scale.
    if (a.threeD()) a.scale *= q_factor * k_factor;
    const Dims* kvs = a.k != nullptr ? shapeOf(a.k) : nullptr;
    const Dims* vs = shapeOf(a.v);
    if (vs == nullptr || vs->size() != 4) return ctx.fail("V not rank 4");
    const Dims& K = kvs != nullptr ? *kvs : a.k_dims;
    const Dims& Q = *shapeOf(a.q);
    const Dims& V = *vs;
    if (!Q[1].isKnown() || !K[1].isKnown() || !V[1].isKnown() || K[1].value != V[1].value ||
        K[1].value == 0 || Q[1].value % K[1].value != 0)
      return ctx.fail("head counts unknown or Q's not a multiple of K's and V's");
    if (!sameDim(Q[0], K[0]) || !sameDim(Q[0], V[0]) || !sameDim(Q[3], K[3]) ||
        !sameDim(K[2], V[2]))
      return ctx.fail("Q, K and V shapes do not line up");
    a.q_heads = Q[1].value;
    a.kv_heads = K[1].value;
    return true;
  }

  /// The KV cache: K = Concat<axis=2>(Kp, Kc) and V likewise, 4-D, whose results only the graph
  /// outputs, repeat_kv and the chain read (all of which go: the present values are defined at
  /// the Attention, after them).
  static void matchCache(AttentionMatch& a) {
    if (a.threeD() || a.k == nullptr) return;
    if (a.ktr != nullptr && !pass::hasSingleUse(a.ktr->output(0))) return;
    for (const ir::Node* r : a.repeats) {
      if (!pass::hasSingleUse(r->output(0))) return;
    }
    auto cacheConcat = [&](ir::Value* x) -> ir::Node* {
      ir::Node* cat = x->producer();
      if (cat == nullptr || cat->opType() != "Concat" || !cat->domain().empty() ||
          cat->numInputs() != 2 || pass::normalizeAxis(pass::attrInt(*cat, "axis", 0), 4) != 2)
        return nullptr;
      const Dims* past = shapeOf(cat->input(0));
      const Dims* cur = shapeOf(cat->input(1));
      if (past == nullptr || cur == nullptr || past->size() != 4 || cur->size() != 4 ||
          !sameDim((*past)[0], (*cur)[0]) || !sameDim((*past)[1], (*cur)[1]) ||
          !sameDim((*past)[3], (*cur)[3]) || pass::elemTypeOf(cat->input(0)) != pass::elemTypeOf(x))
        return nullptr;
      const ir::Node* ret = x->owningGraph()->returnNode();
      for (const ir::Use& u : x->uses()) {
        auto in = [&](const std::vector<ir::Node*>& list) {
          return std::find(list.begin(), list.end(), u.user) != list.end();
        };
        if (u.user != ret && u.user != a.ktr && !in(a.chain) && !in(a.repeats)) return nullptr;
      }
      return cat;
    };
    ir::Node* k_cat = cacheConcat(a.k);
    ir::Node* v_cat = cacheConcat(a.v);
    if (k_cat == nullptr || v_cat == nullptr) return;
    a.k_cat = k_cat;
    a.v_cat = v_cat;
    // The 3-D form with a cache: the new keys and values split into heads from rank 3 (the past
    // stays 4-D, as Attention's past_key/past_value are). Their head splits take no scaling, which
    // the past keys would lack.
    double q_factor = 1.0;
    a.q3 = headsFrom3d(a.q, {0, 2, 1, 3}, &q_factor);
    ir::Value* k3 = headsFrom3d(k_cat->input(1), {0, 2, 1, 3});
    ir::Value* v3 = headsFrom3d(v_cat->input(1), {0, 2, 1, 3});
    if (a.q3 == nullptr || k3 == nullptr || v3 == nullptr || a.out_reshape == nullptr) return;
    a.k3 = k3;
    a.v3 = v3;
    a.scale *= q_factor;
  }

  static void rewriteAt(ir::Node* node, AttentionMatch& a, PatternContext& ctx) {
    auto& rw = ctx.rewriter();
    const bool three_d = a.threeD();
    rw.setInsertionPoint(three_d ? a.out_reshape : node);
    std::vector<ir::Value*> inputs;
    if (three_d) {
      inputs = {a.q3, a.k3, a.v3};
    } else {
      ir::Value* k = a.k;  // nullptr: K needs its own Transpose
      if (k == nullptr) {
        ir::Type t = a.k0->type();
        t.shape = a.k_dims;
        ir::Node* tr = rw.createNode("Transpose", "", {a.k0}, {t});
        rw.setAttribute(tr, pass::intsAttr("perm", a.kperm));
        k = tr->output(0);
      }
      inputs = {a.q, k, a.v};
    }
    if (a.mask != nullptr || a.k_cat != nullptr) inputs.push_back(a.mask);
    if (a.k_cat != nullptr) {
      if (!three_d) {
        inputs[1] = a.k_cat->input(1);
        inputs[2] = a.v_cat->input(1);
      }
      inputs.push_back(a.k_cat->input(0));
      inputs.push_back(a.v_cat->input(0));
    }
    ir::Node* attn =
        rw.createNode(a.guarded ? "SafeAttention" : "Attention", a.guarded ? kTargetDomain : "",
                      inputs, a.k_cat != nullptr ? 3 : 1);
    rw.setAttribute(attn, floatAttr("scale", static_cast<float>(a.scale)));
    ir::Value* out = node->output(0);
    if (a.guarded) {
      rw.setAttribute(attn, intAttr("num_heads", a.q_heads));
    } else if (three_d) {
      rw.setAttribute(attn, intAttr("q_num_heads", a.q_heads));
      rw.setAttribute(attn, intAttr("kv_num_heads", a.kv_heads));
    }
    if (three_d && a.out_flat) {
      // Y [B, S, Hq*Dv] into the Reshape that flattened the merged heads, which stays.
      const Dims& t = *shapeOf(a.out_tr->output(0));
      ir::Type y = a.out_tr->output(0)->type();
      y.shape = Dims{t[0], t[1], ir::Dim::known(t[2].value * t[3].value)};
      rw.setType(attn->output(0), y);
      rw.setInput(a.out_reshape, 0, attn->output(0));
      a.chain.insert(a.chain.begin(), a.out_tr);
    } else {
      if (three_d) {
        out = a.out_reshape->output(0);
        a.chain.insert(a.chain.begin(), {a.out_reshape, a.out_tr});
      }
      rw.setType(attn->output(0), out->type());
      rw.replaceAllUsesWith(out, attn->output(0));
    }
    a.chain.push_back(a.ktr);
    a.chain.insert(a.chain.end(), a.repeats.begin(), a.repeats.end());
    rw.eraseDeadNodes(a.chain);
    if (a.k_cat != nullptr) {
      // The present cache: what the Concats computed, now Attention's second and third outputs.
      for (size_t i = 1; i < 3; ++i) {
        ir::Value* cat = (i == 1 ? a.k_cat : a.v_cat)->output(0);
        rw.setType(attn->output(i), cat->type());
        rw.replaceAllUsesWith(cat, attn->output(i));
      }
      rw.eraseDeadNodes({a.k_cat, a.v_cat});
    }
  }

  const bool nan_guard_;
  const Matcher rule_;
  const Matcher guarded_rule_;
};

class FuseAttentionPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-attention"; }
  std::string summary() const override {
    return "Fuse scaled dot-product attention (MatMul, scale, mask, Softmax, MatMul) into "
           "Attention (opset 23+)";
  }
  std::vector<pass::PassOption> options() const override {
    return {{"nan-guard", "bool", "false",
             "also fuse attention whose softmax has its NaNs made 0 (Where(IsNaN(P), 0, P), as "
             "torch exports SDPA) into ai.onnxopt.SafeAttention, where the CUDA kernel table "
             "claims it (the CUDA target's pipeline sets it)"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name != "nan-guard") return Pass::setOption(name, value);
    ASSIGN_OR_RETURN(nan_guard_, parseBool(name, value));
    return Status::ok();
  }
  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    kernels_ = ctx.target_kernels;
    ASSIGN_OR_RETURN(bool changed, PatternPass::run(model, ctx));
    if (!nan_guard_) return changed;
    // SafeAttention calls get their decomposition as a model-local function.
    ASSIGN_OR_RETURN(int64_t added, attachTargetFunctions(model));
    return changed || added > 0;
  }

 protected:
  /// With nan-guard the patterns hold the run's kernel table: built for each run.
  std::optional<std::string> patternKey() const override {
    return nan_guard_ ? std::nullopt : std::optional<std::string>("plain");
  }
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<AttentionPattern>(TargetClaims(kernels_), nan_guard_));
    return list;
  }

 private:
  bool nan_guard_ = false;
  const kernels::Capabilities* kernels_ = nullptr;
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseAttentionPass() {
  return std::make_unique<FuseAttentionPass>();
}

}  // namespace onnxopt::passes
