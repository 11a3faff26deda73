// fuse-gemm: weight absorption and attribute embedding around Gemm.
//
//   Add(MatMul(A, B), C)       ->  Gemm(A, B, C)          A, B of rank 2; C broadcastable to [M, N]
//                                                        (higher ranks keep MatMul + Add)
//   Add(MatMul(A, B), C)       ->  Gemm(A, B, C)          M unknown (dynamic batch; A from a
//                                                        Flatten or a 2-D Reshape); B [K, N]
//                                                        known, C of shape [N] or [1, N] (or
//                                                        one element)
//   Gemm<alpha>(A, B, C), B constant   ->  Gemm<alpha=1>(A, alpha * B, C)
//   Gemm<beta>(A, B, C),  C constant   ->  Gemm<beta=1>(A, B, beta * C)
//   Gemm(Transpose<[1,0]>(A), B)       ->  Gemm<transA = !transA>(A, B)      (likewise for B)
//   BN(Gemm(A, B, C)) / BN(MatMul(A, B)), 2-D, B (and C) constant, BN over the N columns:
//                                      ->  Gemm(A, B * s, (C - mean) * s + beta),
//                                          s = gamma / sqrt(var + eps)
//
// Constants are recomputed in double and stored in their element type.
#include "batch_norm_fold.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// Gemm's element types: float, float16 and double (not bfloat16).
bool isGemmType(std::optional<DataType> elem) {
  return elem && pass::isFloatType(*elem) && *elem != DataType::kBfloat16;
}

/// Add(MatMul(A, B), c) -> Gemm(A, B, c): the Add's result becomes the Gemm's, the MatMul goes.
/// Fails when that would rename a model output.
bool rewriteAsGemm(ir::Node* add, ir::Node* mm, ir::Value* c, rewrite::PatternContext& ctx) {
  if (!ctx.rewriter().canReplaceWithoutIdentity(add->output(0), mm->output(0))) {
    return ctx.fail("would rename a model output");
  }
  auto& rw = ctx.rewriter();
  ir::Node* gemm =
      rw.createNode("Gemm", "", {mm->input(0), mm->input(1), c}, {add->output(0)->type()});
  rw.setName(gemm, mm->name());
  rw.replaceNode(add, {gemm->output(0)});
  rw.eraseNode(mm);
  return true;
}

class MatMulAddPattern final : public rewrite::Pattern {
 public:
  MatMulAddPattern() : Pattern("fuse-matmul-add-gemm", "Add") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    for (size_t side = 0; side < 2; ++side) {
      ir::Value* mm_out = node->input(side);
      ir::Value* c = node->input(1 - side);
      if (mm_out == nullptr || mm_out->producer() == nullptr) continue;
      ir::Node* mm = mm_out->producer();
      if (mm->opType() != "MatMul" || !mm->domain().empty() || !pass::hasSingleUse(mm_out))
        continue;
      auto ra = pass::rankOf(mm->input(0));
      auto rb = pass::rankOf(mm->input(1));
      if (!ra || !rb || *ra != 2 || *rb != 2) return ctx.fail("MatMul operands are not known 2-D");
      if (!isGemmType(pass::elemTypeOf(mm->input(0)))) {
        return ctx.fail("Gemm needs float, float16 or double operands");
      }
      // C must broadcast to [M, N] without growing it: rank <= 2 and its dims 1 or M/N.
      auto cs = pass::staticShape(c);
      auto out = pass::staticShape(node->output(0));
      auto mm_shape = pass::staticShape(mm_out);
      if (!cs || cs->size() > 2) return ctx.fail("bias shape unknown or rank > 2");
      if (mm_shape && out && *out != *mm_shape) return ctx.fail("the Add broadcasts the product");
      if (!mm_shape) return ctx.fail("product shape unknown");
      for (size_t i = 0; i < cs->size(); ++i) {
        int64_t want = (*mm_shape)[2 - cs->size() + i];
        if ((*cs)[i] != 1 && (*cs)[i] != want) return ctx.fail("bias does not broadcast");
      }
      return rewriteAsGemm(node, mm, c, ctx);
    }
    return ctx.fail("no single-use 2-D MatMul operand");
  }
};

/// True when `v` is known to be 2-D: by its type, or by construction where shape inference did
/// not record it: a Flatten's output, or a Reshape's to a constant two-element shape.
bool isTwoDimensional(const ir::Value* v) {
  auto rank = pass::rankOf(v);
  if (rank) return *rank == 2;
  const ir::Node* p = v == nullptr ? nullptr : v->producer();
  if (p == nullptr || !p->domain().empty()) return false;
  if (p->opType() == "Flatten") return true;
  if (p->opType() != "Reshape") return false;
  auto target = p->numInputs() >= 2 ? pass::constantInts(p->input(1)) : pass::attrInts(*p, "shape");
  return target && target->size() == 2;
}

/// The static shape of `v` from its type, or from its constant data.
std::optional<std::vector<int64_t>> knownDims(const ir::Value* v) {
  if (auto s = pass::staticShape(v)) return s;
  if (auto t = pass::constantTensor(v)) return t->dims();
  return std::nullopt;
}

/// Add(MatMul(A, B), C) -> Gemm(A, B, C) where M, the row count, is not known (a dynamic batch, or
/// A from a Flatten or a 2-D Reshape whose shape inference did not run): A is 2-D, B's shape
/// [K, N] is known, and C's shape is [], [1], [N], [1, 1] or [1, N], which broadcasts over [M, N]
/// for every M without growing it.
class AnyRowsMatMulAddPattern final : public rewrite::Pattern {
 public:
  AnyRowsMatMulAddPattern() : Pattern("fuse-matmul-add-gemm-any-rows", "Add") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    for (size_t side = 0; side < 2; ++side) {
      ir::Value* mm_out = node->input(side);
      ir::Value* c = node->input(1 - side);
      ir::Node* mm = pass::singleUseProducer(mm_out, "MatMul");
      if (mm == nullptr || c == nullptr || !isTwoDimensional(mm->input(0))) continue;
      auto bs = knownDims(mm->input(1));
      if (!bs || bs->size() != 2) return ctx.fail("B's shape is not a known 2-D shape");
      auto elem = pass::elemTypeOf(mm->input(1));
      if (auto t = pass::constantTensor(mm->input(1))) elem = t->dtype();
      if (!isGemmType(elem)) return ctx.fail("Gemm needs float, float16 or double operands");
      auto cs = knownDims(c);
      int64_t n = (*bs)[1];
      if (!cs || cs->size() > 2 || (cs->size() == 2 && (*cs)[0] != 1) ||
          (!cs->empty() && cs->back() != 1 && cs->back() != n)) {
        return ctx.fail("bias shape unknown, or not broadcast over [M, {}] for every M", n);
      }
      return rewriteAsGemm(node, mm, c, ctx);
    }
    return ctx.fail("no single-use MatMul with a 2-D first operand");
  }
};

class GemmScalePattern final : public rewrite::Pattern {
 public:
  GemmScalePattern() : Pattern("fuse-gemm-alpha-beta", "Gemm") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    float alpha = pass::attrFloat(*node, "alpha", 1.0f);
    float beta = pass::attrFloat(*node, "beta", 1.0f);
    auto& rw = ctx.rewriter();
    auto scaled = [&](size_t input, float by) -> ir::Value* {
      ir::Value* v = node->input(input);
      auto t = pass::constantTensor(v);
      auto values = t ? pass::floatValues(*t) : std::nullopt;
      if (!values) return nullptr;
      for (double& x : *values) x *= static_cast<double>(by);
      return rw.createInitializer(*node->owningGraph(), v->name() + "_scaled",
                                  pass::makeFloatTensor(t->dtype(), t->dims(), *values));
    };
    if (alpha != 1.0f) {
      if (ir::Value* b = scaled(1, alpha)) {
        rw.setInput(node, 1, b);
        rw.removeAttribute(node, "alpha");
        return true;
      }
    }
    if (beta != 1.0f && node->numInputs() > 2 && node->input(2) != nullptr) {
      if (ir::Value* c = scaled(2, beta)) {
        rw.setInput(node, 2, c);
        rw.removeAttribute(node, "beta");
        return true;
      }
    }
    return ctx.fail("alpha and beta are 1, or their operands are not constant");
  }
};

class TransposeIntoGemmPattern final : public rewrite::Pattern {
 public:
  TransposeIntoGemmPattern() : Pattern("fuse-transpose-gemm", "Gemm") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    for (size_t i = 0; i < 2; ++i) {
      ir::Value* v = node->input(i);
      if (v == nullptr || v->producer() == nullptr || v->producer()->opType() != "Transpose" ||
          !v->producer()->domain().empty() || !pass::hasSingleUse(v)) {
        continue;
      }
      ir::Node* t = v->producer();
      auto perm = pass::attrInts(*t, "perm");
      auto rank = pass::rankOf(t->input(0));
      bool swap = (perm && *perm == std::vector<int64_t>{1, 0}) || (!perm && rank && *rank == 2);
      if (!swap) continue;
      const char* attr = i == 0 ? "transA" : "transB";
      auto& rw = ctx.rewriter();
      rw.setAttribute(node, pass::intAttr(attr, pass::attrInt(*node, attr, 0) == 0 ? 1 : 0));
      rw.setInput(node, i, t->input(0));
      rw.eraseNode(t);
      return true;
    }
    return ctx.fail("no single-use 2-D Transpose operand");
  }
};

class GemmBatchNormPattern final : public rewrite::Pattern {
 public:
  GemmBatchNormPattern() : Pattern("fuse-gemm-batchnorm", "BatchNormalization") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    if (!isInferenceBatchNorm(*node, ctx)) return false;
    ir::Value* in = node->input(0);
    if (in == nullptr || in->producer() == nullptr || !pass::hasSingleUse(in)) {
      return ctx.fail("input is not a single-use node output");
    }
    ir::Node* prod = in->producer();
    bool is_gemm = prod->opType() == "Gemm";
    if ((!is_gemm && prod->opType() != "MatMul") || !prod->domain().empty()) {
      return ctx.fail("not fed by Gemm or MatMul");
    }
    if (is_gemm && (pass::attrFloat(*prod, "alpha", 1.0f) != 1.0f ||
                    pass::attrFloat(*prod, "beta", 1.0f) != 1.0f)) {
      return ctx.fail("Gemm alpha/beta not folded yet");
    }
    auto ra = pass::rankOf(prod->input(0));
    auto b = pass::constantTensor(prod->input(1));
    if (!ra || *ra != 2 || !b || b->dims().size() != 2)
      return ctx.fail("not a 2-D product with constant B");
    auto bv = pass::floatValues(*b);
    if (!bv) return ctx.fail("B is not float");
    bool trans_b = is_gemm && pass::attrInt(*prod, "transB", 0) != 0;
    int64_t n = trans_b ? b->dims()[0] : b->dims()[1];
    std::vector<double> bias(static_cast<size_t>(n), 0.0);
    if (is_gemm && prod->numInputs() > 2 && prod->input(2) != nullptr) {
      auto c = pass::constantTensor(prod->input(2));
      auto cv = c ? pass::floatValues(*c) : std::nullopt;
      // Only a per-column C ([N] or [1, N]) can be rescaled per column.
      if (!cv || static_cast<int64_t>(cv->size()) != n || c->dims().back() != n) {
        return ctx.fail("C is not a constant per-column vector");
      }
      bias = *cv;
    }
    auto fold = foldBatchNorm(*node, std::move(bias), ctx);
    if (!fold) return false;
    if (!ctx.rewriter().canReplaceWithoutIdentity(node->output(0), in)) {
      return ctx.fail("would rename a model output");
    }
    for (size_t i = 0; i < bv->size(); ++i) {
      size_t col = trans_b ? i / static_cast<size_t>(b->dims()[1]) : i % static_cast<size_t>(n);
      (*bv)[i] *= fold->scale[col];
    }
    auto& rw = ctx.rewriter();
    ir::Graph& g = *prod->owningGraph();
    ir::Value* new_b = rw.createInitializer(g, prod->input(1)->name() + "_fused",
                                            pass::makeFloatTensor(b->dtype(), b->dims(), *bv));
    ir::Value* new_c = rw.createInitializer(g, prod->input(1)->name() + "_fused_bias",
                                            pass::makeFloatTensor(b->dtype(), {n}, fold->bias));
    ir::Node* gemm = prod;
    if (!is_gemm) {
      gemm = rw.createNode("Gemm", "", {prod->input(0), new_b, new_c}, {node->output(0)->type()});
      std::vector<ir::Value*> replacement(node->numOutputs(), nullptr);
      replacement[0] = gemm->output(0);
      rw.replaceNode(node, replacement);
      rw.eraseNode(prod);
      return true;
    }
    rw.setInput(gemm, 1, new_b);
    if (gemm->numInputs() > 2) {
      rw.setInput(gemm, 2, new_c);
    } else {
      rw.addInput(gemm, new_c);
    }
    std::vector<ir::Value*> replacement(node->numOutputs(), nullptr);
    replacement[0] = gemm->output(0);
    rw.replaceNode(node, replacement);
    return true;
  }
};

class FuseGemmPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-gemm"; }
  std::string summary() const override {
    return "MatMul+Add to Gemm (2-D), Gemm/MatMul+BatchNormalization, alpha/beta and Transpose "
           "into Gemm";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<MatMulAddPattern>());
    list.push_back(std::make_unique<AnyRowsMatMulAddPattern>());
    list.push_back(std::make_unique<GemmScalePattern>());
    list.push_back(std::make_unique<TransposeIntoGemmPattern>());
    list.push_back(std::make_unique<GemmBatchNormPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseGemmPass() {
  return std::make_unique<FuseGemmPass>();
}

}  // namespace onnxopt::passes
