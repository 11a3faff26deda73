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
// 3-D form, when Q, K and V are all split into heads from rank-3 tensors and Y is merged back:
//   Transpose<0,2,1,3>(Reshape(x: [B,S,H*D]) -> [B,S,H,D])  (for K: Transpose<0,2,3,1> as K^T)
//   Reshape(Transpose<0,2,1,3>(Y)) -> [B,S,Hq*Dv]
//   ==>  Attention<q_num_heads=Hq, kv_num_heads=Hkv>(q, k, v [, M]) : [B,S,Hq*Dv]
//
// The mask M must be float like Q, with its last two dims equal to the scores' (onnxruntime does
// not broadcast those) and the rest 1 or equal. Scales are scalar constants. Float, float16 and
// bfloat16. Every intermediate must have no other user.
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using pass::floatAttr;
using pass::intAttr;
using pass::otherOperand;
using rewrite::PatternContext;

/// Dims that are known to be equal (never two unknowns).
bool sameDim(const ir::Dim& a, const ir::Dim& b) {
  return !a.isUnknown() && !b.isUnknown() && a.kind == b.kind && a.value == b.value &&
         a.param == b.param;
}

const std::vector<ir::Dim>* shapeOf(const ir::Value* v) {
  if (v == nullptr || !v->type().isTensor() || !v->type().shape) return nullptr;
  return &*v->type().shape;
}

/// Follows a single-use Mul by a scalar constant, multiplying `scale` by it.
ir::Value* throughScalarMul(ir::Value* v, double& scale) {
  ir::Node* mul = pass::singleUseProducer(v, "Mul");
  if (mul == nullptr) return v;
  for (int side = 0; side < 2; ++side) {
    if (auto c = pass::scalarConstant(mul->input(side))) {
      scale *= *c;
      return mul->input(1 - side);
    }
  }
  return v;
}

/// Kkv when `v` is repeat_kv(Kkv) as HF writes it; else `v`.
ir::Value* throughRepeatKv(ir::Value* v) {
  ir::Node* reshape = v->producer();
  if (reshape == nullptr || reshape->opType() != "Reshape" || !reshape->domain().empty()) return v;
  ir::Node* expand = reshape->input(0)->producer();
  if (expand == nullptr || expand->opType() != "Expand") return v;
  ir::Node* unsq = expand->input(0)->producer();
  if (unsq == nullptr || unsq->opType() != "Unsqueeze" || unsq->numInputs() < 2) return v;
  auto axes = pass::constantInts(unsq->input(1));
  ir::Value* kv = unsq->input(0);
  const auto* k = shapeOf(kv);
  const auto* e = shapeOf(expand->output(0));
  const auto* r = shapeOf(v);
  if (!axes || *axes != std::vector<int64_t>{2} || k == nullptr || e == nullptr || r == nullptr ||
      k->size() != 4 || e->size() != 5 || r->size() != 4) {
    return v;
  }
  const auto& K = *k;
  const auto& E = *e;
  const auto& R = *r;
  if (!sameDim(E[0], K[0]) || !sameDim(E[1], K[1]) || !sameDim(E[3], K[2]) ||
      !sameDim(E[4], K[3]) || !K[1].isKnown() || !E[2].isKnown()) {
    return v;
  }
  if (!sameDim(R[0], K[0]) || !R[1].isKnown() || R[1].value != K[1].value * E[2].value ||
      !sameDim(R[2], K[2]) || !sameDim(R[3], K[3])) {
    return v;
  }
  return kv;
}

/// x when `v4` = Transpose<perm>(Reshape(x: [B,S,H*D]) -> [B,S,H,D]); else nullptr.
ir::Value* headsFrom3d(ir::Value* v4, const std::vector<int64_t>& perm) {
  ir::Node* tr = v4 != nullptr ? v4->producer() : nullptr;
  if (tr == nullptr || tr->opType() != "Transpose" || pass::attrInts(*tr, "perm") != perm)
    return nullptr;
  ir::Node* reshape = tr->input(0)->producer();
  if (reshape == nullptr || reshape->opType() != "Reshape") return nullptr;
  ir::Value* x = reshape->input(0);
  const auto* xs = shapeOf(x);
  const auto* rs = shapeOf(reshape->output(0));
  if (xs == nullptr || rs == nullptr || xs->size() != 3 || rs->size() != 4) return nullptr;
  const auto& X = *xs;
  const auto& R = *rs;
  if (!sameDim(X[0], R[0]) || !sameDim(X[1], R[1]) || !X[2].isKnown() || !R[2].isKnown() ||
      !R[3].isKnown() || X[2].value != R[2].value * R[3].value) {
    return nullptr;
  }
  return x;
}

class AttentionPattern final : public rewrite::Pattern {
 public:
  AttentionPattern() : Pattern("fuse-attention", "MatMul", "", 4, 23) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Node* softmax = pass::singleUseProducer(node->input(0), "Softmax");
    if (softmax == nullptr) return ctx.fail("no Softmax probabilities");
    const auto* ps = shapeOf(softmax->output(0));
    if (ps == nullptr || ps->size() != 4) return ctx.fail("scores not rank 4");
    int64_t axis = pass::attrInt(*softmax, "axis", -1);
    if (axis != -1 && axis != 3) return ctx.fail("Softmax not over the last axis");

    // Scores, with an optional additive mask.
    ir::Value* s = softmax->input(0);
    ir::Value* mask = nullptr;
    ir::Node* add = pass::singleUseProducer(s, "Add");
    std::vector<ir::Node*> chain{node, softmax};
    if (add != nullptr) {
      for (int side = 0; side < 2 && mask == nullptr; ++side) {
        ir::Node* p = add->input(side)->producer();
        if (p != nullptr && pass::hasSingleUse(add->input(side)) &&
            (p->opType() == "Mul" || p->opType() == "Div" || p->opType() == "MatMul")) {
          mask = add->input(1 - side);
          s = add->input(side);
        }
      }
      if (mask == nullptr) return ctx.fail("Add is not scores plus a mask");
      chain.push_back(add);
    }
    double scale = 1.0;
    if (ir::Node* div = pass::singleUseProducer(s, "Div")) {
      auto c = pass::scalarConstant(div->input(1));
      if (!c || *c == 0.0) return ctx.fail("scores divided by a non-constant");
      scale /= *c;
      s = div->input(0);
      chain.push_back(div);
    } else if (ir::Node* mul = pass::singleUseProducer(s, "Mul")) {
      ir::Value* before = s;
      s = throughScalarMul(s, scale);
      if (s == before) return ctx.fail("scores multiplied by a non-scalar");
      chain.push_back(mul);
    }
    ir::Node* qk = pass::singleUseProducer(s, "MatMul");
    if (qk == nullptr) return ctx.fail("no Q*K^T MatMul");
    chain.push_back(qk);
    ir::Value* q = throughScalarMul(qk->input(0), scale);
    ir::Value* kt = throughScalarMul(qk->input(1), scale);
    if (q != qk->input(0)) chain.push_back(qk->input(0)->producer());
    if (kt != qk->input(1)) chain.push_back(qk->input(1)->producer());
    // K^T = Transpose<perm>(K0), or K^T itself (K0 = K^T, perm = identity).
    ir::Node* ktr = kt->producer();
    if (ktr != nullptr && (ktr->opType() != "Transpose" || !ktr->domain().empty())) ktr = nullptr;
    auto perm = ktr != nullptr ? pass::attrInts(*ktr, "perm")
                               : std::optional<std::vector<int64_t>>({0, 1, 2, 3});
    if (!perm || perm->size() != 4) return ctx.fail("K^T's Transpose is not rank 4");
    std::vector<int64_t> kperm{(*perm)[0], (*perm)[1], (*perm)[3], (*perm)[2]};
    ir::Value* k0 = ktr != nullptr ? ktr->input(0) : kt;
    ir::Value* v = node->input(1);

    // Element types and shapes: Q [B,Hq,S,D], K [B,Hkv,L,D] (through kperm), V [B,Hkv,L,Dv].
    auto elem = pass::elemTypeOf(q);
    if (!elem ||
        (*elem != DataType::kFloat && *elem != DataType::kFloat16 && *elem != DataType::kBfloat16))
      return ctx.fail("element type not float, float16 or bfloat16");
    if (pass::elemTypeOf(k0) != elem || pass::elemTypeOf(v) != elem)
      return ctx.fail("Q, K and V element types differ");
    const auto* qs = shapeOf(q);
    const auto* k0s = shapeOf(k0);
    if (qs == nullptr || k0s == nullptr || qs->size() != 4 || k0s->size() != 4)
      return ctx.fail("Q or K not rank 4");
    std::vector<ir::Dim> ks;
    for (int64_t p : kperm) ks.push_back((*k0s)[static_cast<size_t>(p)]);
    if (mask != nullptr) {
      const auto* ms = shapeOf(mask);
      if (pass::elemTypeOf(mask) != elem || ms == nullptr || ms->size() < 2 || ms->size() > 4)
        return ctx.fail("mask not a float tensor of rank 2 to 4");
      size_t off = 4 - ms->size();
      for (size_t i = 0; i < ms->size(); ++i) {
        const ir::Dim& want = (*ps)[off + i];
        const ir::Dim& got = (*ms)[i];
        bool ok = sameDim(got, want) || (i + 2 < ms->size() && got.isKnown() && got.value == 1);
        if (!ok) return ctx.fail("mask does not match the scores' shape");
      }
    }
    ir::Value* k_unrep = nullptr;  // K (4-D) when it needs no new Transpose
    bool k_identity = kperm == std::vector<int64_t>{0, 1, 2, 3};
    if (k_identity) k_unrep = throughRepeatKv(k0);
    ir::Value* v_unrep = throughRepeatKv(v);

    // 3-D form: every input split into heads from rank 3, and the output merged back.
    ir::Value* q3 = headsFrom3d(q, {0, 2, 1, 3});
    ir::Value* k3 = (ktr != nullptr && *perm == std::vector<int64_t>{0, 2, 3, 1})
                        ? headsFrom3d(kt, {0, 2, 3, 1})
                        : headsFrom3d(k_unrep, {0, 2, 1, 3});
    ir::Value* v3 = headsFrom3d(v_unrep, {0, 2, 1, 3});
    ir::Node* out_tr = nullptr;
    ir::Node* out_reshape = nullptr;
    if (pass::hasSingleUse(node->output(0))) {
      out_tr = node->output(0)->uses()[0].user;
      if (out_tr->opType() != "Transpose" ||
          pass::attrInts(*out_tr, "perm") != std::vector<int64_t>{0, 2, 1, 3} ||
          !pass::hasSingleUse(out_tr->output(0))) {
        out_tr = nullptr;
      } else {
        out_reshape = out_tr->output(0)->uses()[0].user;
        const auto* os = shapeOf(out_reshape->output(0));
        const auto* ts = shapeOf(out_tr->output(0));
        if (out_reshape->opType() != "Reshape" || os == nullptr || ts == nullptr ||
            os->size() != 3 || ts->size() != 4 || !sameDim((*os)[0], (*ts)[0]) ||
            !sameDim((*os)[1], (*ts)[1]) || !(*os)[2].isKnown() || !(*ts)[2].isKnown() ||
            !(*ts)[3].isKnown() || (*os)[2].value != (*ts)[2].value * (*ts)[3].value) {
          out_tr = nullptr;
          out_reshape = nullptr;
        }
      }
    }
    bool three_d = q3 && k3 && v3 && out_reshape;

    ir::Value* kq = k_unrep;  // nullptr: K needs its own Transpose (made below)
    const auto* kvs = k_unrep != nullptr ? shapeOf(k_unrep) : nullptr;
    const auto* vs = shapeOf(v_unrep);
    if (vs == nullptr || vs->size() != 4) return ctx.fail("V not rank 4");
    const std::vector<ir::Dim>& K = kvs != nullptr ? *kvs : ks;
    const auto& Q = *qs;
    const auto& V = *vs;
    if (!Q[1].isKnown() || !K[1].isKnown() || !V[1].isKnown() || K[1].value != V[1].value ||
        K[1].value == 0 || Q[1].value % K[1].value != 0)
      return ctx.fail("head counts unknown or Q's not a multiple of K's and V's");
    if (!sameDim(Q[0], K[0]) || !sameDim(Q[0], V[0]) || !sameDim(Q[3], K[3]) ||
        !sameDim(K[2], V[2]))
      return ctx.fail("Q, K and V shapes do not line up");

    auto& rw = ctx.rewriter();
    rw.setInsertionPoint(three_d ? out_reshape : node);
    std::vector<ir::Value*> inputs;
    if (three_d) {
      inputs = {q3, k3, v3};
    } else {
      if (kq == nullptr) {
        ir::Type t = k0->type();
        t.shape = ks;
        ir::Node* tr = rw.createNode("Transpose", "", {k0}, {t});
        rw.setAttribute(tr, pass::intsAttr("perm", kperm));
        kq = tr->output(0);
      }
      inputs = {q, kq, v_unrep};
    }
    if (mask != nullptr) inputs.push_back(mask);
    ir::Node* attn = rw.createNode("Attention", "", inputs, 1);
    rw.setAttribute(attn, floatAttr("scale", static_cast<float>(scale)));
    ir::Value* out = node->output(0);
    if (three_d) {
      rw.setAttribute(attn, intAttr("q_num_heads", Q[1].value));
      rw.setAttribute(attn, intAttr("kv_num_heads", K[1].value));
      out = out_reshape->output(0);
      chain.insert(chain.begin(), {out_reshape, out_tr});
    }
    rw.setType(attn->output(0), out->type());
    rw.replaceAllUsesWith(out, attn->output(0));
    if (ktr != nullptr) chain.push_back(ktr);
    rw.eraseDeadNodes(chain);
    return true;
  }
};

class FuseAttentionPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-attention"; }
  std::string summary() const override {
    return "Fuse scaled dot-product attention (MatMul, scale, mask, Softmax, MatMul) into "
           "Attention (opset 23+)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<AttentionPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseAttentionPass() {
  return std::make_unique<FuseAttentionPass>();
}

}  // namespace onnxopt::passes
