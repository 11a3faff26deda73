// fuse-gated-mlp (CUDA target): a gated MLP's gate and up projections of one input become one
// product over their weights side by side, and the gate's activation times up one elementwise
// ai.onnxopt op over its two halves (one GEMM where there were two, one kernel for the
// activation and the product, neither intermediate written):
//
//   Mul(Silu(P(X, Wg[, bg])), P(X, Wu[, bu]))
//        ==>  ai.onnxopt.SwiGlu(P(X, [Wg | Wu][, [bg | bu]]))          Silu(a) = Mul(a, Sigmoid(a))
//   Mul(Gelu<approximate>(P(X, Wg[, bg])), P(X, Wu[, bu]))            (opset 20+)
//        ==>  ai.onnxopt.GeGlu<approximate>(P(X, [Wg | Wu][, [bg | bu]]))
//
//   SwiGlu(A) = Silu(A[..., :N]) * A[..., N:],  GeGlu(A) = Gelu(A[..., :N]) * A[..., N:]
//
// P a projection by a constant weight (packed_projection.h): MatMul, ai.onnxopt.MatMulBias or
// Add(MatMul, b), at opset 13+ (the functions' Split). Wg and Wu constants of one [K, N] shape
// and type (so the Mul does not broadcast), each intermediate read only by the next (the gate's
// product by the activation alone, Silu's Sigmoid by its Mul), Mul's operands in either order,
// Silu's Mul too. Where the CUDA kernel table claims the op (and MatMulBias where there are
// biases) for the type. Llama, Qwen2, Mistral and Phi-3 export down(silu(gate(x)) * up(x));
// Gemma the GELU (tanh) form. A product already packed, the two equal halves of one Split's last
// dim (-O3's own output, whose function bodies -O1 inlines), is taken as it is:
//
//   G, U = Split<axis=-1, two equal parts>(A); Mul(Silu(G), U)  ==>  ai.onnxopt.SwiGlu(A)
#include "packed_projection.h"
#include "target_pattern_pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

bool isOp(const ir::Node* n, const char* op) {
  return n != nullptr && n->opType() == op && n->domain().empty();
}

/// The gate's activation: `v` as Silu(a) or Gelu(a), and its nodes (users first).
struct Gate {
  const char* fused = nullptr;  ///< SwiGlu or GeGlu
  ir::Value* input = nullptr;   ///< a
  std::vector<ir::Node*> nodes;
};

/// `v` = Mul(a, Sigmoid(a)) (either order), Sigmoid read only by the Mul, a only by both; or
/// Gelu(a), a read only there.
std::optional<Gate> gateOf(ir::Value* v) {
  ir::Node* n = v == nullptr ? nullptr : v->producer();
  if (isOp(n, "Gelu") && pass::hasSingleUse(n->input(0))) {
    return Gate{"GeGlu", n->input(0), {n}};
  }
  if (!isOp(n, "Mul")) return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    ir::Value* s = n->input(side);
    ir::Value* a = n->input(1 - side);
    ir::Node* sigmoid = s == nullptr ? nullptr : s->producer();
    if (!isOp(sigmoid, "Sigmoid") || sigmoid->input(0) != a || !pass::hasSingleUse(s)) continue;
    // a feeds the Sigmoid and the Mul, and nothing else.
    if (a->isGraphOutput() || a->uses().size() != 2) return std::nullopt;
    return Gate{"SwiGlu", a, {n, sigmoid}};
  }
  return std::nullopt;
}

/// SwiGlu's decomposition splits A in halves by its outputs' count, which Split does from 13.
constexpr int64_t kMinOpset = 13;

/// The Split whose outputs 0 and 1 are `g` and `u`, the two equal halves of its input's last dim
/// (no sizes and an even known last dim, or two equal constant sizes), or nullptr.
ir::Node* halvesSplit(const ir::Value* g, const ir::Value* u) {
  ir::Node* split = g->producer();
  if (!isOp(split, "Split") || u->producer() != split || split->numOutputs() != 2 ||
      g->outputIndex() != 0 || u->outputIndex() != 1) {
    return nullptr;
  }
  auto rank = pass::rankOf(split->input(0));
  const int64_t axis = pass::attrInt(*split, "axis", 0);
  if (!rank || (axis != -1 && axis != *rank - 1)) return nullptr;
  if (split->numInputs() > 1 && split->input(1) != nullptr) {
    auto sizes = pass::constantInts(split->input(1));
    return sizes && sizes->size() == 2 && (*sizes)[0] == (*sizes)[1] ? split : nullptr;
  }
  if (auto sizes = pass::attrInts(*split, "split")) {
    return sizes->size() == 2 && (*sizes)[0] == (*sizes)[1] ? split : nullptr;
  }
  // The last dim known (the leading ones may be symbols: a batch, a sequence).
  const auto& shape = split->input(0)->type().shape;
  return shape && !shape->empty() && shape->back().isKnown() && shape->back().value % 2 == 0
             ? split
             : nullptr;
}

class GatedMlpPattern final : public TargetPattern {
 public:
  explicit GatedMlpPattern(TargetClaims claims)
      : TargetPattern(claims, "fuse-gated-mlp", "Mul", "", 1, kMinOpset) {}
  bool matchAndRewrite(ir::Node* mul, PatternContext& ctx) const override {
    for (size_t side = 0; side < 2; ++side) {
      ir::Value* g = mul->input(side);
      ir::Value* u = mul->input(1 - side);
      std::optional<Gate> gate = gateOf(g);
      if (!gate || !pass::hasSingleUse(g)) continue;
      if (!pass::hasSingleUse(u)) return ctx.fail("up is read elsewhere too");
      if (kernels::Support ok = claims_(gate->fused, {u}); !ok) {
        return ctx.fail("no CUDA kernel: {}", ok.reason);
      }
      // Already packed: the halves of one Split (the function body, inlined by -O1).
      if (ir::Node* split = halvesSplit(gate->input, u)) {
        replaceMul(mul, *gate, split->input(0), ctx);
        ctx.rewriter().eraseNode(split);
        return true;
      }
      std::optional<Projection> gp = projectionOf(gate->input);
      std::optional<Projection> up = projectionOf(u);
      if (!gp || !up) return ctx.fail("the gate or up is no projection by a constant weight");
      if (gp->weight.dims() != up->weight.dims()) {
        return ctx.fail("the gate's and up's weights differ in shape");
      }
      std::vector<Projection> projections = {std::move(*gp), std::move(*up)};
      if (std::string why = whyNotPackable(projections, claims_); !why.empty()) {
        return ctx.fail("{}", why);
      }
      replaceMul(mul, *gate, packProjections(projections, "_gate_up", ctx), ctx);
      for (const Projection& p : projections) ctx.rewriter().eraseDeadNodes(p.nodes());
      return true;
    }
    return ctx.fail("neither operand is Silu or Gelu of a value read only there");
  }

 private:
  /// The gated op of `packed` in `mul`'s place (its name and type), the gate's nodes erased.
  static void replaceMul(ir::Node* mul, const Gate& gate, ir::Value* packed, PatternContext& ctx) {
    auto& rw = ctx.rewriter();
    rw.setInsertionPoint(mul);
    ir::Node* fused = rw.createNode(gate.fused, kTargetDomain, {packed}, 1);
    if (gate.nodes[0]->opType() == "Gelu") rw.copyAttribute(*gate.nodes[0], fused, "approximate");
    rw.setName(fused, mul->name());
    rw.setType(fused->output(0), mul->output(0)->type());
    rw.replaceNode(mul, {fused->output(0)});
    rw.eraseDeadNodes(gate.nodes);
  }
};

class FuseGatedMlpPass final : public TargetPatternPass {
 public:
  std::string id() const override { return "fuse-gated-mlp"; }
  std::string summary() const override {
    return "Mul(Silu or Gelu of one projection, another projection of its input) into one packed "
           "product and ai.onnxopt.SwiGlu or GeGlu (CUDA target)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<GatedMlpPattern>(targetKernels()));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseGatedMlpPass() {
  return std::make_unique<FuseGatedMlpPass>();
}

}  // namespace onnxopt::passes
