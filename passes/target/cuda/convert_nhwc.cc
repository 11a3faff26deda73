// convert-nhwc (CUDA target): convolutions and windowed pools move to channels-last memory, the
// layout the GPU's tensor cores take (cuDNN transposes NCHW fp16 tensors inside every call). Each
// op is wrapped in the two Transposes that keep the graph's meaning; optimize-transposes and
// merge-consecutive, run after it, push the Transposes through the elementwise ops between such
// ops and cancel them in pairs, so that only the borders of a channels-last region keep one.
//
//   Conv(X, W, B)   ==>  T<q>(ai.onnxopt.NhwcConv(T<p>(X), W', B'))
//   MaxPool(X)      ==>  T<q>(ai.onnxopt.NhwcMaxPool(T<p>(X)))
//   AveragePool(X)  ==>  T<q>(ai.onnxopt.NhwcAveragePool(T<p>(X)))
//
// T<p> is Transpose<perm=p>; p = [0, 2, 3, 1] (NCHW to NHWC), q = [0, 3, 1, 2] (back). W' is the
// constant W stored once as [M, kH, kW, C / group]; B' is B, or zeros [M] where the Conv has none
// (the fused forms of fuse-conv-activation take a bias). The attributes stay as they were (they
// name spatial dims, not memory). Conditions: X of rank 4 (2 spatial dims), a constant W, Conv's
// pads cuDNN can express (auto_pad NOTSET or VALID, each dim's two pads equal), MaxPool without
// its Indices output, and the CUDA kernel table claiming the channels-last op for the element
// type. The model gets each op's function (its decomposition), so other tools still run it.
//
// Policy: a model with a grouped Conv (group > 1: depthwise, as MobileNets) stays NCHW unless the
// option grouped=true asks: measured in fp16 (docs/gpu_benchmarks.md, the layout table and
// "Measurements behind design choices"), channels-last made resnet50 faster and mobilenet_v2
// slower through cuDNN's legacy API; which of mobilenet's convolutions costs it is not profiled
// yet (a channels-last depthwise kernel of our own is the candidate fix). The statistic
// skipped-grouped says when the policy held a model back.
#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/kernels/reference.h"
#include "target_pattern_pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

/// `op` of ai.onnxopt on T<p>(X) and `rest`, its attributes those of `node`, followed by T<q> in
/// `node`'s place (named as its output).
void wrapInNhwc(ir::Node* node, const std::string& op, const std::vector<ir::Value*>& rest,
                PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  std::vector<ir::Value*> inputs = {pass::createTranspose(rw, node->input(0), kToNhwc)};
  inputs.insert(inputs.end(), rest.begin(), rest.end());
  ir::Node* nhwc = rw.createNode(op, kTargetDomain, inputs,
                                 {pass::permutedType(node->output(0)->type(), kToNhwc)});
  for (const ir::Attribute& attr : node->attributes()) rw.copyAttribute(*node, nhwc, attr.name);
  rw.setName(nhwc, node->name());
  ir::Value* back = pass::createTranspose(rw, nhwc->output(0), kToNchw);
  // A MaxPool may declare Indices that nothing reads: no value replaces them.
  std::vector<ir::Value*> values(node->numOutputs(), nullptr);
  values[0] = back;
  rw.replaceNode(node, values);  // which gives `back` the output's name
}

/// Whether X is known to be 4-D and of a type the kernel table claims `op` for.
bool claimed(const TargetClaims& claims, const std::string& op,
             const std::vector<const ir::Value*>& inputs, PatternContext& ctx) {
  if (pass::rankOf(inputs[0]) != 4) return ctx.fail("X is not known to be 4-D");
  auto t = pass::elemTypeOf(inputs[0]);
  if (!t || !pass::isFloatType(*t)) return ctx.fail("X is not of a known float type");
  if (!claims(op, inputs)) return ctx.fail("no CUDA kernel for {} of {}", op, dataTypeName(*t));
  return true;
}

class ConvPattern final : public TargetPattern {
 public:
  explicit ConvPattern(TargetClaims claims) : TargetPattern(claims, "convert-nhwc-conv", "Conv") {}
  bool matchAndRewrite(ir::Node* conv, PatternContext& ctx) const override {
    if (conv->numInputs() < 2 || conv->input(0) == nullptr) return ctx.fail("no X or W");
    ir::Value* w = conv->input(1);
    ir::Value* b = conv->numInputs() > 2 ? conv->input(2) : nullptr;
    std::optional<ir::Tensor> weight = pass::constantTensor(w);
    if (!weight || weight->dims().size() != 4) return ctx.fail("W is not a 4-D constant");
    auto out = pass::elemTypeOf(conv->output(0));
    if (!out || pass::elemTypeOf(w) != out || (b != nullptr && pass::elemTypeOf(b) != out)) {
      return ctx.fail("X, W and B do not share one known type");
    }
    std::string auto_pad = "NOTSET";
    if (const ir::Attribute* a = conv->findAttribute("auto_pad")) auto_pad = a->s;
    if (auto_pad != "NOTSET" && auto_pad != "VALID") {
      return ctx.fail("auto_pad {}: the pads may differ at the two ends", auto_pad);
    }
    if (auto pads = pass::attrInts(*conv, "pads"); pads && auto_pad == "NOTSET") {
      if (pads->size() != 4 || (*pads)[0] != (*pads)[2] || (*pads)[1] != (*pads)[3]) {
        return ctx.fail("pads of unequal ends, which cuDNN does not take");
      }
    }
    if (!claimed(claims_, "NhwcConv", {conv->input(0), w}, ctx)) return false;
    auto& rw = ctx.rewriter();
    ir::Graph& graph = *conv->owningGraph();
    kernels::HostTensor host = bridge::toHost(*weight);
    kernels::KernelAttrs perm;
    perm.int_lists["perm"] = kToNhwc;
    auto t = kernels::runReferenceKernel("Transpose", 13, {&host}, perm, 1);
    if (!t.isOk()) return ctx.fail("{}", t.status().message());
    ir::Value* w_nhwc =
        rw.createInitializer(graph, w->name() + "_nhwc", bridge::fromHost(std::move((*t)[0])));
    if (b == nullptr) {
      b = rw.createInitializer(
          graph, conv->output(0)->name() + "_zero_bias",
          pass::makeFloatTensor(*out, {weight->dims()[0]},
                                std::vector<double>(static_cast<size_t>(weight->dims()[0]), 0.0)));
    }
    wrapInNhwc(conv, "NhwcConv", {w_nhwc, b}, ctx);
    return true;
  }
};

class PoolPattern final : public TargetPattern {
 public:
  PoolPattern(TargetClaims claims, const char* op, const char* nhwc)
      : TargetPattern(claims, std::string("convert-nhwc-") + op, op), nhwc_(nhwc) {}
  bool matchAndRewrite(ir::Node* pool, PatternContext& ctx) const override {
    if (pool->numOutputs() > 1 && pool->output(1) != nullptr && pool->output(1)->hasUses()) {
      return ctx.fail("MaxPool's Indices are used");
    }
    if (pool->numOutputs() > 1 && pool->output(1) != nullptr && pool->output(1)->isGraphOutput()) {
      return ctx.fail("MaxPool's Indices are a graph output");
    }
    if (pool->input(0) == nullptr || !claimed(claims_, nhwc_, {pool->input(0)}, ctx)) return false;
    if (pass::elemTypeOf(pool->output(0)) != pass::elemTypeOf(pool->input(0))) {
      return ctx.fail("the output's type is not known to be X's");
    }
    wrapInNhwc(pool, nhwc_, {}, ctx);
    return true;
  }

 private:
  std::string nhwc_;
};

/// Whether a graph of `model` (subgraphs included) has a Conv with group > 1.
bool hasGroupedConv(ir::Model& model) {
  for (ir::Graph* g : rewrite::allGraphs(model, /*include_functions=*/false)) {
    for (const ir::Node* n : *g) {
      if (n->opType() == "Conv" && n->domain().empty() && pass::attrInt(*n, "group", 1) > 1) {
        return true;
      }
    }
  }
  return false;
}

class ConvertNhwcPass final : public TargetPatternPass {
 public:
  std::string id() const override { return "convert-nhwc"; }
  std::string summary() const override {
    return "Conv/MaxPool/AveragePool into ai.onnxopt channels-last ops between Transposes (CUDA "
           "target; optimize-transposes removes the Transposes between them)";
  }
  std::vector<pass::PassOption> options() const override {
    return {
        {"grouped", "bool", "false",
         "convert models with grouped (depthwise) convolutions too (slower on the H200 so far)"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name != "grouped") return Pass::setOption(name, value);
    ASSIGN_OR_RETURN(grouped_, parseBool(name, value));
    return Status::ok();
  }
  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    if (!grouped_ && hasGroupedConv(model)) {
      bump("skipped-grouped");
      return false;
    }
    return TargetPatternPass::run(model, ctx);
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<ConvPattern>(targetKernels()));
    list.push_back(std::make_unique<PoolPattern>(targetKernels(), "MaxPool", "NhwcMaxPool"));
    list.push_back(
        std::make_unique<PoolPattern>(targetKernels(), "AveragePool", "NhwcAveragePool"));
    return list;
  }

 private:
  bool grouped_ = false;
};

}  // namespace

std::unique_ptr<pass::Pass> createConvertNhwcPass() {
  return std::make_unique<ConvertNhwcPass>();
}

}  // namespace onnxopt::passes
