// fuse-gemm: weight absorption and attribute embedding around Gemm.
//
//   Add(MatMul(A, B), C)       ->  Gemm(A, B, C)          A, B of rank 2; C broadcastable to [M, N]
//                                                        (higher ranks keep MatMul + Add)
//   Gemm<alpha>(A, B, C), B constant   ->  Gemm<alpha=1>(A, alpha * B, C)
//   Gemm<beta>(A, B, C),  C constant   ->  Gemm<beta=1>(A, B, beta * C)
//   Gemm(Transpose<[1,0]>(A), B)       ->  Gemm<transA = !transA>(A, B)      (likewise for B)
//
// Constants are recomputed in double and stored in their element type.
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

ir::Attribute intAttr(const char* name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
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
      auto elem = pass::elemTypeOf(mm->input(0));
      if (!elem || !pass::isFloatType(*elem) || *elem == DataType::kBfloat16) {
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
      if (!ctx.rewriter().canReplaceWithoutIdentity(node->output(0), mm_out)) {
        return ctx.fail("would rename a model output");
      }
      auto& rw = ctx.rewriter();
      ir::Node* gemm = rw.createNode("Gemm", "", {mm->input(0), mm->input(1), c}, 1);
      gemm->setName(mm->name());
      gemm->output(0)->setType(node->output(0)->type());
      rw.replaceNode(node, {gemm->output(0)});
      rw.eraseNode(mm);
      return true;
    }
    return ctx.fail("no single-use 2-D MatMul operand");
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
      rw.setAttribute(node, intAttr(attr, pass::attrInt(*node, attr, 0) == 0 ? 1 : 0));
      rw.setInput(node, i, t->input(0));
      rw.eraseNode(t);
      return true;
    }
    return ctx.fail("no single-use 2-D Transpose operand");
  }
};

class FuseGemmPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-gemm"; }
  std::string summary() const override {
    return "MatMul+Add to Gemm (2-D), fold Gemm alpha/beta into constants, Transpose into transA/B";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<MatMulAddPattern>());
    list.push_back(std::make_unique<GemmScalePattern>());
    list.push_back(std::make_unique<TransposeIntoGemmPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseGemmPass() {
  return std::make_unique<FuseGemmPass>();
}

}  // namespace onnxopt::passes
