// fuse-conv-affine: weight absorption of per-channel affine ops into a preceding convolution.
//
//   BN(Conv(x, W, b))   ->  Conv(x, W * s, (b - mean) * s + beta),   s = gamma / sqrt(var + eps)
//   BN(ConvTranspose(x, W, b))  likewise, s scaling W along its output-channel axis
//                               (dim 1, per group)
//   Mul(Conv(x, W, b), c)  ->  Conv(x, W * c, b * c)
//   Add(Conv(x, W, b), c)  ->  Conv(x, W, b + c)
//     c constant with one value per output channel ([C,1,..,1], [1,C,1,..,1]) or a scalar, of
//     rank <= the Conv output's, so that the broadcast leaves the output shape as it is
//
// New weights are computed in double and stored in the original element type. The Conv output must
// have no other user and not be a graph output; weights and BN statistics must be constant; BN must
// be in inference mode (one used output, no training_mode).
#include "batch_norm_fold.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// The convolution feeding `node`'s first input, when it can absorb: a Conv/ConvTranspose of the
/// default domain whose output only `node` reads, with constant float weights (and bias).
struct ConvInfo {
  ir::Node* conv = nullptr;
  ir::Tensor weight;  ///< float (floatValues succeeds); converted only when the Conv is rewritten
  std::vector<double> bias;  ///< zeros when absent
  int64_t out_channels = 0;
  bool transposed = false;
  int64_t group = 1;
};

std::optional<ConvInfo> absorbingConv(const ir::Node& node, size_t input, PatternContext& ctx) {
  ir::Value* v = node.input(input);
  if (v == nullptr || v->producer() == nullptr) return ctx.fail("no producer"), std::nullopt;
  ir::Node* conv = v->producer();
  if (!conv->domain().empty() || (conv->opType() != "Conv" && conv->opType() != "ConvTranspose")) {
    return ctx.fail("not fed by a Conv"), std::nullopt;
  }
  if (!pass::hasSingleUse(v)) return ctx.fail("the Conv output has other users"), std::nullopt;
  auto w = pass::constantTensor(conv->input(1));
  if (!w || w->dims().size() < 3) return ctx.fail("weights not constant"), std::nullopt;
  // floatValues' conditions, checked without converting the weights (most candidates fail later).
  if (!pass::isFloatType(w->dtype()) || !w->numElements() ||
      w->byteSize() != w->expectedByteSize().value_or(~uint64_t{0})) {
    return ctx.fail("weights are not float"), std::nullopt;
  }
  ConvInfo info;
  info.conv = conv;
  info.transposed = conv->opType() == "ConvTranspose";
  info.group = pass::attrInt(*conv, "group", 1);
  info.out_channels = info.transposed ? w->dims()[1] * info.group : w->dims()[0];
  info.weight = std::move(*w);
  info.bias.assign(static_cast<size_t>(info.out_channels), 0.0);
  if (conv->numInputs() > 2 && conv->input(2) != nullptr) {
    auto b = pass::constantTensor(conv->input(2));
    auto bv = b ? pass::floatValues(*b) : std::nullopt;
    if (!bv || bv->size() != info.bias.size()) return ctx.fail("bias not constant"), std::nullopt;
    info.bias = *bv;
  }
  return info;
}

/// Per-output-channel values of a constant shaped [C], [C,1,..,1], [1,C,1,..,1] or a scalar, of
/// rank at most the Conv output's: a higher-rank constant (even [1,1,1,1,1] after a 2-D Conv)
/// would grow the result's rank under broadcasting, which the Conv alone cannot reproduce.
std::optional<std::vector<double>> perChannel(const ir::Value* v, int64_t channels,
                                              size_t conv_rank) {
  auto t = pass::constantTensor(v);
  if (!t) return std::nullopt;
  const auto& d = t->dims();
  if (d.size() > conv_rank) return std::nullopt;
  auto values = pass::floatValues(*t);
  if (!values) return std::nullopt;
  if (values->size() == 1) return std::vector<double>(static_cast<size_t>(channels), (*values)[0]);
  if (static_cast<int64_t>(values->size()) != channels) return std::nullopt;
  // The channel axis must line up with the Conv output's axis 1 under broadcasting.
  size_t channel_axis = conv_rank - d.size();  // where d[0] lands in the output
  size_t pos = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == channels) pos = channel_axis + i;
  }
  if (pos != 1) return std::nullopt;
  return values;
}

/// Replaces the Conv's weights and bias by new constants and `node`'s output by the Conv's.
void rewriteConv(ir::Node* node, ConvInfo& info, const std::vector<double>& scale,
                 const std::vector<double>& bias, PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  ir::Graph& g = *info.conv->owningGraph();
  const auto& dims = info.weight.dims();
  std::vector<double> w = *pass::floatValues(info.weight);  // absorbingConv checked it converts
  // Elements per output channel block: Conv [Cout, Cin/g, k..]; ConvTranspose [Cin, Cout/g, k..].
  size_t kernel = 1;
  for (size_t i = 2; i < dims.size(); ++i) kernel *= static_cast<size_t>(dims[i]);
  // Each weight times its output channel's scale, one channel's block of weights at a time.
  if (!info.transposed) {
    size_t per = w.size() / static_cast<size_t>(info.out_channels);
    for (size_t c = 0; c < static_cast<size_t>(info.out_channels); ++c) {
      const double s = scale[c];
      for (double *p = w.data() + c * per, *end = p + per; p != end; ++p) *p *= s;
    }
  } else {
    auto cout_g = static_cast<size_t>(dims[1]);
    auto cin_g = static_cast<size_t>(dims[0] / info.group);
    double* p = w.data();
    for (size_t ci = 0; ci < static_cast<size_t>(dims[0]); ++ci) {
      const double* group_scale = scale.data() + ci / cin_g * cout_g;
      for (size_t j = 0; j < cout_g; ++j) {
        const double s = group_scale[j];
        for (size_t k = 0; k < kernel; ++k) *p++ *= s;
      }
    }
  }
  DataType dtype = info.weight.dtype();
  ir::Value* new_w = rw.createInitializer(g, info.conv->input(1)->name() + "_fused",
                                          pass::makeFloatTensor(dtype, dims, w));
  ir::Value* new_b = rw.createInitializer(g, info.conv->input(1)->name() + "_fused_bias",
                                          pass::makeFloatTensor(dtype, {info.out_channels}, bias));
  rw.setInput(info.conv, 1, new_w);
  if (info.conv->numInputs() > 2) {
    rw.setInput(info.conv, 2, new_b);
  } else {
    rw.addInput(info.conv, new_b);
  }
  std::vector<ir::Value*> replacement(node->numOutputs(), nullptr);
  replacement[0] = info.conv->output(0);
  rw.replaceNode(node, replacement);
}

class ConvBatchNormPattern final : public rewrite::Pattern {
 public:
  ConvBatchNormPattern() : Pattern("fuse-conv-batchnorm", "BatchNormalization") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    if (!isInferenceBatchNorm(*node, ctx)) return false;
    auto info = absorbingConv(*node, 0, ctx);
    if (!info) return false;
    if (!ctx.rewriter().canReplaceWithoutIdentity(node->output(0), info->conv->output(0))) {
      return ctx.fail("would rename a model output");
    }
    auto fold = foldBatchNorm(*node, info->bias, ctx);
    if (!fold) return false;
    rewriteConv(node, *info, fold->scale, fold->bias, ctx);
    return true;
  }
};

class ConvMulAddPattern final : public rewrite::Pattern {
 public:
  explicit ConvMulAddPattern(const char* op)
      : Pattern(std::string("fuse-conv-") + (std::string(op) == "Mul" ? "mul" : "add"), op),
        mul_(std::string(op) == "Mul") {}
  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    for (size_t side = 0; side < 2; ++side) {
      auto info = absorbingConv(*node, side, ctx);
      if (!info) continue;
      if (!ctx.rewriter().canReplaceWithoutIdentity(node->output(0), info->conv->output(0))) {
        return ctx.fail("would rename a model output");
      }
      auto c = perChannel(node->input(1 - side), info->out_channels, info->weight.dims().size());
      if (!c) {
        return ctx.fail("the other operand is not a per-channel constant of rank <= the Conv's");
      }
      if (pass::constantTensor(node->input(1 - side))->dtype() != info->weight.dtype()) {
        return ctx.fail("element types differ");
      }
      size_t n = c->size();
      std::vector<double> scale(n, 1.0), bias = info->bias;
      for (size_t k = 0; k < n; ++k) {
        if (mul_) {
          scale[k] = (*c)[k];
          bias[k] *= (*c)[k];
        } else {
          bias[k] += (*c)[k];
        }
      }
      rewriteConv(node, *info, scale, bias, ctx);
      return true;
    }
    return ctx.fail("no absorbing Conv operand");
  }

 private:
  bool mul_;
};

class FuseConvAffinePass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-conv-affine"; }
  std::string summary() const override {
    return "Absorb BatchNormalization and per-channel Mul/Add into Conv/ConvTranspose weights";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<ConvBatchNormPattern>());
    list.push_back(std::make_unique<ConvMulAddPattern>("Mul"));
    list.push_back(std::make_unique<ConvMulAddPattern>("Add"));
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFuseConvAffinePass() {
  return std::make_unique<FuseConvAffinePass>();
}

}  // namespace onnxopt::passes
