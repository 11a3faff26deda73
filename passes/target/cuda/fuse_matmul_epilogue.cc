// fuse-matmul-epilogue (CUDA target): a matrix product, its bias and its activation become one
// ai.onnxopt op, which the CUDA runtime runs as one cuBLASLt call with a bias (and ReLU/GELU)
// epilogue instead of a GEMM, a broadcast Add and an activation kernel.
//
//   Add(MatMul(A, W), c)              ==>  ai.onnxopt.MatMulBias(A, W, c)
//   Gemm(A, W, c)                     ==>  ai.onnxopt.MatMulBias(A, W, c)   transA 0, alpha 1, beta 1
//   Gemm<transB=1>(A, W, c)           ==>  ai.onnxopt.MatMulBias(A, W^T, c) W constant, used only
//                                                                         here: transposed once
//   Relu(ai.onnxopt.MatMulBias(A, W, c))            ==>  ai.onnxopt.MatMulBiasRelu(A, W, c)
//   Gelu<approximate>(ai.onnxopt.MatMulBias(A, W, c))
//                                     ==>  ai.onnxopt.MatMulBiasGelu<approximate>(A, W, c)
//   Relu / Gelu(MatMul(A, W))         ==>  ai.onnxopt.MatMulBiasRelu / Gelu(A, W, 0)  no bias
//   Gelu(Reshape(Gemm(A, W), s))      ==>  Reshape(ai.onnxopt.MatMulBiasGelu(A, W, 0), s)
//                                          (Gemm without C, transposes or alpha; GPT-2's export)
//
// where A has rank >= 2 (its leading dims fold into the rows), W is [K, N] (rank 2), c is [N]
// (one bias per output column: it broadcasts over the product without growing it), the
// intermediate values have no other user, and the CUDA kernel table claims the fused op for the
// element types (kernels/cuda/ops.def): float, float16, bfloat16. Add's operands in either order.
// The model gets each op's function (its decomposition; passes/target/target_ops.cc), so other
// tools still run the file.
#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/kernels/reference.h"
#include "target_pattern_pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// A fused node in place of `last`, the end of the matched chain, which keeps its name and type.
bool replaceWith(ir::Node* last, const std::string& op, const std::vector<ir::Value*>& inputs,
                 PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  ir::Node* fused = rw.createNodeLike(op, kTargetDomain, inputs, last);
  rw.copyAttribute(*last, fused, "approximate");  // Gelu's; no other matched root has one
  // The fused value takes the name of the chain's result (per-layer checks compare by name).
  rw.replaceNode(last, {fused->output(0)});
  return true;
}

class MatMulBiasPattern final : public TargetPattern {
 public:
  explicit MatMulBiasPattern(TargetClaims claims)
      : TargetPattern(claims, "fuse-matmul-bias", "Add") {}
  bool matchAndRewrite(ir::Node* add, PatternContext& ctx) const override {
    for (size_t side = 0; side < 2; ++side) {
      ir::Node* mm = pass::singleUseProducer(add->input(side), "MatMul");
      ir::Value* c = add->input(1 - side);
      if (mm == nullptr || c == nullptr) continue;
      auto ra = pass::rankOf(mm->input(0));
      auto ws = pass::staticShape(mm->input(1));
      auto cs = pass::staticShape(c);
      if (!ra || *ra < 2) return ctx.fail("A is not known to have rank 2 or more");
      if (!ws || ws->size() != 2) return ctx.fail("W is not a known 2-D shape");
      if (!cs || *cs != std::vector<int64_t>{(*ws)[1]}) {
        return ctx.fail("the bias is not [{}] (one per output column)", (*ws)[1]);
      }
      auto ta = pass::elemTypeOf(mm->input(0));
      if (!ta || ta != pass::elemTypeOf(mm->input(1)) || ta != pass::elemTypeOf(c)) {
        return ctx.fail("A, W and the bias do not share one known type");
      }
      if (!claims_("MatMulBias", {mm->input(0), mm->input(1), c})) {
        return ctx.fail("no CUDA kernel for MatMulBias of {}", dataTypeName(*ta));
      }
      replaceWith(add, "MatMulBias", {mm->input(0), mm->input(1), c}, ctx);
      ctx.rewriter().eraseNode(mm);
      return true;
    }
    return ctx.fail("no single-use MatMul operand");
  }
};

/// Gemm(A, W, c) with transA 0, alpha 1 and beta 1 -> MatMulBias(A, W', c): W' is W, or W^T stored
/// once for transB 1 (W constant and used only here, so the model does not grow).
class GemmBiasPattern final : public TargetPattern {
 public:
  explicit GemmBiasPattern(TargetClaims claims)
      : TargetPattern(claims, "fuse-gemm-bias", "Gemm", "", 1, 11) {}
  bool matchAndRewrite(ir::Node* gemm, PatternContext& ctx) const override {
    if (gemm->numInputs() < 3 || gemm->input(2) == nullptr) return ctx.fail("no C");
    if (pass::attrInt(*gemm, "transA", 0) != 0 || pass::attrFloat(*gemm, "alpha", 1.0f) != 1.0f ||
        pass::attrFloat(*gemm, "beta", 1.0f) != 1.0f) {
      return ctx.fail("transA, alpha or beta is not the default");
    }
    ir::Value* a = gemm->input(0);
    ir::Value* w = gemm->input(1);
    ir::Value* c = gemm->input(2);
    bool trans_b = pass::attrInt(*gemm, "transB", 0) != 0;
    auto ra = pass::rankOf(a);
    auto ws = pass::staticShape(w);
    if (!ra || *ra != 2 || !ws || ws->size() != 2) return ctx.fail("A or W is not known 2-D");
    int64_t n = trans_b ? (*ws)[0] : (*ws)[1];
    if (pass::staticShape(c) != std::vector<int64_t>{n}) {
      return ctx.fail("C is not [{}] (one per output column)", n);
    }
    auto ta = pass::elemTypeOf(a);
    if (!ta || ta != pass::elemTypeOf(w) || ta != pass::elemTypeOf(c)) {
      return ctx.fail("A, W and C do not share one known type");
    }
    if (!claims_("MatMulBias", {a, w, c})) {
      return ctx.fail("no CUDA kernel for MatMulBias of {}", dataTypeName(*ta));
    }
    ir::Value* weight = w;
    if (trans_b) {
      std::optional<ir::Tensor> data = pass::constantTensor(w);
      if (!data || !pass::hasSingleUse(w)) {
        return ctx.fail("transB with a W that is not a constant used only here");
      }
      kernels::HostTensor host = bridge::toHost(*data);
      kernels::KernelAttrs perm;
      perm.int_lists["perm"] = {1, 0};
      auto t = kernels::runReferenceKernel("Transpose", 13, {&host}, perm, 1);
      if (!t.isOk()) return ctx.fail("{}", t.status().message());
      weight = ctx.rewriter().createInitializer(*gemm->owningGraph(), w->name() + "_transposed",
                                                bridge::fromHost(std::move((*t)[0])));
    }
    return replaceWith(gemm, "MatMulBias", {a, weight, c}, ctx);
  }
};

/// Relu or Gelu of a single-use MatMulBias.
class MatMulBiasActivationPattern final : public TargetPattern {
 public:
  MatMulBiasActivationPattern(TargetClaims claims, const char* activation, const char* fused,
                              int64_t min_opset)
      : TargetPattern(claims, std::string("fuse-matmul-bias-") + activation, activation, "", 1,
                      min_opset),
        fused_(fused) {}
  bool matchAndRewrite(ir::Node* act, PatternContext& ctx) const override {
    ir::Value* in = act->input(0);
    ir::Node* mb = in == nullptr ? nullptr : in->producer();
    if (mb == nullptr || mb->opType() != "MatMulBias" || mb->domain() != kTargetDomain ||
        !pass::hasSingleUse(in)) {
      return ctx.fail("not the only user of a MatMulBias");
    }
    std::vector<const ir::Value*> operands(mb->inputs().begin(), mb->inputs().end());
    if (!claims_(fused_, operands)) return ctx.fail("no CUDA kernel for {}", fused_);
    replaceWith(act, fused_, {mb->input(0), mb->input(1), mb->input(2)}, ctx);
    ctx.rewriter().eraseNode(mb);
    return true;
  }

 private:
  std::string fused_;
};

/// Relu or Gelu of a bias-free product (a MatMul, or a Gemm without C, transposes or scaling,
/// possibly behind a Reshape, which commutes with the activation) -> the fused op with a zero bias
/// (cuBLASLt's activation epilogues come with the bias): models whose zero biases eliminate-noop
/// removed, and MLPs without bias.
class ProductActivationPattern final : public TargetPattern {
 public:
  ProductActivationPattern(TargetClaims claims, const char* activation, const char* fused,
                           int64_t min_opset)
      : TargetPattern(claims, std::string("fuse-matmul-") + activation, activation, "", 1,
                      min_opset),
        fused_(fused) {}
  bool matchAndRewrite(ir::Node* act, PatternContext& ctx) const override {
    ir::Value* in = act->input(0);
    ir::Node* reshape = pass::singleUseProducer(in, "Reshape");
    ir::Value* product = reshape != nullptr ? reshape->input(0) : in;
    ir::Node* mm = pass::singleUseProducer(product, "MatMul");
    if (mm == nullptr) {
      mm = pass::singleUseProducer(product, "Gemm");
      if (mm != nullptr &&
          ((mm->numInputs() > 2 && mm->input(2) != nullptr) ||
           pass::attrInt(*mm, "transA", 0) != 0 || pass::attrInt(*mm, "transB", 0) != 0 ||
           pass::attrFloat(*mm, "alpha", 1.0f) != 1.0f)) {
        return ctx.fail("a Gemm with C, a transpose or alpha");
      }
    }
    if (mm == nullptr) return ctx.fail("not the only user of a MatMul or Gemm (behind a Reshape)");
    ir::Value* a = mm->input(0);
    ir::Value* w = mm->input(1);
    auto ra = pass::rankOf(a);
    auto ws = pass::staticShape(w);
    auto ta = pass::elemTypeOf(a);
    if (!ra || *ra < 2 || !ws || ws->size() != 2) return ctx.fail("A or W is not of known rank");
    if (!ta || ta != pass::elemTypeOf(w) || !pass::isFloatType(*ta)) {
      return ctx.fail("A and W do not share one float type");
    }
    auto& rw = ctx.rewriter();
    if (!claims_(fused_, {a, w, w})) return ctx.fail("no CUDA kernel for {}", fused_);
    ir::Value* zero = rw.createInitializer(
        *act->owningGraph(), w->name() + "_zero_bias",
        pass::makeFloatTensor(*ta, {(*ws)[1]}, std::vector<double>(static_cast<size_t>((*ws)[1]))));
    rw.setInsertionPoint(mm);
    ir::Node* fused = rw.createNode(fused_, kTargetDomain, {a, w, zero}, {product->type()});
    rw.copyAttribute(*act, fused, "approximate");
    if (reshape != nullptr) {
      rw.setInput(reshape, 0, fused->output(0));
      rw.replaceAllUsesWith(act->output(0), reshape->output(0));
    } else {
      rw.replaceAllUsesWith(act->output(0), fused->output(0));
    }
    rw.eraseDeadNodes({act, mm});
    return true;
  }

 private:
  std::string fused_;
};

class FuseMatMulEpiloguePass final : public TargetPatternPass {
 public:
  std::string id() const override { return "fuse-matmul-epilogue"; }
  std::string summary() const override {
    return "MatMul/Gemm + bias (+ Relu/Gelu) into ai.onnxopt.MatMulBias* (CUDA target: one "
           "cuBLASLt call with an epilogue)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<MatMulBiasPattern>(targetKernels()));
    list.push_back(std::make_unique<GemmBiasPattern>(targetKernels()));
    list.push_back(std::make_unique<MatMulBiasActivationPattern>(targetKernels(), "Relu",
                                                                 "MatMulBiasRelu", 1));
    list.push_back(std::make_unique<MatMulBiasActivationPattern>(targetKernels(), "Gelu",
                                                                 "MatMulBiasGelu", 20));
    list.push_back(
        std::make_unique<ProductActivationPattern>(targetKernels(), "Relu", "MatMulBiasRelu", 1));
    list.push_back(
        std::make_unique<ProductActivationPattern>(targetKernels(), "Gelu", "MatMulBiasGelu", 20));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseMatMulEpiloguePass() {
  return std::make_unique<FuseMatMulEpiloguePass>();
}

}  // namespace onnxopt::passes
