// fuse-conv-activation (CUDA target): a channels-last convolution, the residual Add after it and
// the ReLU become one ai.onnxopt op, which the CUDA runtime runs as one
// cudnnConvolutionBiasActivationForward (the sum and the ReLU in the convolution's epilogue
// instead of two elementwise kernels that read and write the whole output again).
//
//   Relu(NhwcConv(X, W, B))          ==>  NhwcConvRelu(X, W, B)
//   Relu(Add(NhwcConv(X, W, B), Z))  ==>  NhwcConvAddRelu(X, W, B, Z)
//
// where the NhwcConv (and the Add) have no other user, Z is known to have the convolution's
// shape (no broadcast: cuDNN adds Z element by element), Add's operands in either order (the
// first that is such a convolution is fused; a ResNet's downsampling branch is the other), and
// the CUDA kernel table claims the fused op for the element type.
#include "target_pattern_pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// The producer of `v` when it is an NhwcConv whose output only `user` reads.
ir::Node* fusableConv(ir::Value* v, const ir::Node* user) {
  ir::Node* n = v == nullptr ? nullptr : v->producer();
  if (n == nullptr || n->opType() != "NhwcConv" || n->domain() != kTargetDomain ||
      n->numInputs() != 3 || !pass::onlyUsedBy(v, user)) {
    return nullptr;
  }
  return n;
}

/// `fused`(conv's inputs, extra...) in `relu`'s place, named as it.
void replaceWith(ir::Node* relu, ir::Node* conv, const std::string& fused,
                 const std::vector<ir::Value*>& extra, PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  std::vector<ir::Value*> inputs(conv->inputs().begin(), conv->inputs().end());
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  ir::Node* node = rw.createNodeLike(fused, kTargetDomain, inputs, relu);
  for (const ir::Attribute& a : conv->attributes()) rw.copyAttribute(*conv, node, a.name);
  rw.replaceNode(relu, {node->output(0)});  // which gives it relu's output name
}

class ConvReluPattern final : public TargetPattern {
 public:
  explicit ConvReluPattern(TargetClaims claims) : TargetPattern(claims, "fuse-conv-relu", "Relu") {}
  bool matchAndRewrite(ir::Node* relu, PatternContext& ctx) const override {
    ir::Value* in = relu->input(0);
    if (ir::Node* conv = fusableConv(in, relu)) {
      std::vector<const ir::Value*> operands(conv->inputs().begin(), conv->inputs().end());
      if (!claims_("NhwcConvRelu", operands)) return ctx.fail("no CUDA kernel for NhwcConvRelu");
      replaceWith(relu, conv, "NhwcConvRelu", {}, ctx);
      ctx.rewriter().eraseNode(conv);
      return true;
    }
    ir::Node* add = in == nullptr ? nullptr : in->producer();
    if (add == nullptr || add->opType() != "Add" || !add->domain().empty() ||
        add->numInputs() != 2 || !pass::onlyUsedBy(in, relu)) {
      return ctx.fail("not the only user of an NhwcConv or of an Add");
    }
    for (size_t side = 0; side < 2; ++side) {
      ir::Node* conv = fusableConv(add->input(side), add);
      ir::Value* z = add->input(1 - side);
      if (conv == nullptr || z == nullptr) continue;
      if (!pass::sameKnownShape(z, conv->output(0))) {
        return ctx.fail("the Add's other operand is not known to have the convolution's shape");
      }
      std::vector<const ir::Value*> operands(conv->inputs().begin(), conv->inputs().end());
      operands.push_back(z);
      if (!claims_("NhwcConvAddRelu", operands)) {
        return ctx.fail("no CUDA kernel for NhwcConvAddRelu");
      }
      replaceWith(relu, conv, "NhwcConvAddRelu", {z}, ctx);
      ctx.rewriter().eraseNode(add);
      ctx.rewriter().eraseNode(conv);
      return true;
    }
    return ctx.fail("no operand of the Add is an NhwcConv used only there");
  }
};

class FuseConvActivationPass final : public TargetPatternPass {
 public:
  std::string id() const override { return "fuse-conv-activation"; }
  std::string summary() const override {
    return "NhwcConv (+ residual Add) + Relu into ai.onnxopt.NhwcConvRelu / NhwcConvAddRelu "
           "(CUDA target: one cuDNN call with a bias, residual and ReLU epilogue)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<ConvReluPattern>(targetKernels()));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseConvActivationPass() {
  return std::make_unique<FuseConvActivationPass>();
}

}  // namespace onnxopt::passes
