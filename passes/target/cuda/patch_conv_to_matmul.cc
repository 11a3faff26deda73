// patch-conv-to-matmul (CUDA target): a convolution whose windows tile the image without overlap
// (a vision transformer's patch embedding: kernel = stride, no padding) is one GEMM over the
// patches, and gathering the patches is a reshape and a transpose (im2col with nothing to copy
// twice):
//
//   Y = Conv<kernel_shape = strides = [kh, kw]>(X[N, C, H, W], W[M, C, kh, kw], B[M])
//   ==>  P = Reshape(X, [0, C, H / kh, kh, W / kw, kw])
//        Q = Transpose<perm = [0, 2, 4, 1, 3, 5]>(P)        [N, H / kh, W / kw, C, kh, kw]
//        R = Reshape(Q, [0, H / kh, W / kw, C kh kw])
//        Y = Transpose<perm = [0, 3, 1, 2]>(MatMul(R, W') + B)
//
// W' = W reshaped to [M, C kh kw] and transposed, stored once as a constant. The Add of B (when
// the Conv has one) is left for fuse-matmul-epilogue to take into the GEMM. The final Transpose
// back to NCHW stays: ViT's own Reshape (flatten the patches) and Transpose (channels last) after
// it undo it, but optimize-transposes does not see through the Reshape between them. cuDNN runs
// vit_b_16's 16 x 16 patch Conv on a generic engine at best, slower than the GEMM
// (docs/gpu_benchmarks.md, "Measurements behind design choices").
//
// Conditions: X 4-D with C, H and W known, H and W multiples of the kernel (a Conv that drops a
// remainder is left alone), kernel = strides, pads 0 (auto_pad NOTSET or VALID), dilations 1,
// group 1, a kernel of more than one element (a 1 x 1 Conv is already a GEMM to cuDNN), W a
// constant of X's float type (and B of it too). Nothing of our own domain is written: the result
// is portable ONNX.
#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/kernels/reference.h"
#include "target_pattern_pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// `dims` as a tensor type of element `t` whose first dim is `first` (the batch, as X has it).
ir::Type typeWith(ir::DataType t, const ir::Dim& first, const std::vector<int64_t>& rest) {
  std::vector<ir::Dim> dims = {first};
  for (int64_t d : rest) dims.push_back(ir::Dim::known(d));
  return ir::Type::tensor(t, std::move(dims));
}

/// Reshape(v, shape) with `shape` a new int64 constant (0 keeps the batch dim as it is).
ir::Value* createReshape(rewrite::Rewriter& rw, ir::Graph& graph, ir::Value* v,
                         const std::vector<int64_t>& shape, ir::Type type,
                         const std::string& name) {
  ir::Value* s = rw.createInitializer(
      graph, name, pass::makeInt64Tensor(shape, {static_cast<int64_t>(shape.size())}));
  return rw.createNode("Reshape", "", {v, s}, {std::move(type)})->output(0);
}

class PatchConvPattern final : public rewrite::Pattern {
 public:
  PatchConvPattern() : Pattern("patch-conv-to-matmul", "Conv") {}
  bool matchAndRewrite(ir::Node* conv, PatternContext& ctx) const override {
    if (conv->numInputs() < 2 || conv->input(0) == nullptr) return ctx.fail("no X or W");
    ir::Value* x = conv->input(0);
    ir::Value* w = conv->input(1);
    ir::Value* b = conv->numInputs() > 2 ? conv->input(2) : nullptr;
    std::optional<ir::Tensor> weight = pass::constantTensor(w);
    if (!weight || weight->dims().size() != 4) return ctx.fail("W is not a 4-D constant");
    auto t = pass::elemTypeOf(x);
    if (!t || !pass::isFloatType(*t) || pass::elemTypeOf(w) != t ||
        (b != nullptr && pass::elemTypeOf(b) != t) || pass::elemTypeOf(conv->output(0)) != t) {
      return ctx.fail("X, W, B and Y do not share one known float type");
    }
    if (pass::rankOf(x) != 4 || !x->type().shape) return ctx.fail("X is not known to be 4-D");
    std::optional<std::vector<int64_t>> chw = pass::staticDimsFrom(x, 1);
    if (!chw) return ctx.fail("X's channels and spatial dims are not all known");
    const int64_t c = (*chw)[0], h = (*chw)[1], wd = (*chw)[2];
    const int64_t m = weight->dims()[0], kh = weight->dims()[2], kw = weight->dims()[3];
    if (weight->dims()[1] != c) return ctx.fail("W's channels are not X's (group > 1?)");
    if (pass::attrInt(*conv, "group", 1) != 1) return ctx.fail("group is not 1");
    if (kh * kw <= 1) return ctx.fail("a 1 x 1 kernel");
    auto kernel = pass::attrInts(*conv, "kernel_shape");
    if (kernel && *kernel != std::vector<int64_t>{kh, kw}) {
      return ctx.fail("kernel_shape is not W's");
    }
    if (pass::attrInts(*conv, "strides") != std::vector<int64_t>{kh, kw}) {
      return ctx.fail("the strides are not the kernel's size");
    }
    if (auto d = pass::attrInts(*conv, "dilations"); d && *d != std::vector<int64_t>{1, 1}) {
      return ctx.fail("dilated");
    }
    std::string auto_pad = "NOTSET";
    if (const ir::Attribute* a = conv->findAttribute("auto_pad")) auto_pad = a->s;
    if (auto_pad != "NOTSET" && auto_pad != "VALID") return ctx.fail("auto_pad {}", auto_pad);
    if (auto pads = pass::attrInts(*conv, "pads");
        pads && *pads != std::vector<int64_t>(4, 0) && auto_pad == "NOTSET") {
      return ctx.fail("padded");
    }
    if (h % kh != 0 || wd % kw != 0) return ctx.fail("the patches do not tile X");

    // W' = transpose(reshape(W, [M, C kh kw])): [C kh kw, M].
    const int64_t k = c * kh * kw;
    kernels::HostTensor host = bridge::toHost(*weight);
    host.dims = {m, k};
    kernels::KernelAttrs perm;
    perm.int_lists["perm"] = {1, 0};
    auto wt = kernels::runReferenceKernel("Transpose", 13, {&host}, perm, 1);
    if (!wt.isOk()) return ctx.fail("{}", wt.status().message());

    auto& rw = ctx.rewriter();
    ir::Graph& graph = *conv->owningGraph();
    const std::string base = conv->output(0)->name();
    const ir::Dim n = (*x->type().shape)[0];
    const int64_t hp = h / kh, wp = wd / kw;
    ir::Value* p = createReshape(rw, graph, x, {0, c, hp, kh, wp, kw},
                                 typeWith(*t, n, {c, hp, kh, wp, kw}), base + "_patch_dims");
    ir::Value* q = pass::createTranspose(rw, p, {0, 2, 4, 1, 3, 5});
    ir::Value* r = createReshape(rw, graph, q, {0, hp, wp, k}, typeWith(*t, n, {hp, wp, k}),
                                 base + "_patch_rows");
    ir::Value* w_rows =
        rw.createInitializer(graph, w->name() + "_patches", bridge::fromHost(std::move((*wt)[0])));
    ir::Value* y =
        rw.createNode("MatMul", "", {r, w_rows}, {typeWith(*t, n, {hp, wp, m})})->output(0);
    if (b != nullptr) y = rw.createNode("Add", "", {y, b}, {y->type()})->output(0);
    ir::Value* back = pass::createTranspose(rw, y, {0, 3, 1, 2});
    rw.replaceNode(conv, {back});  // which gives `back` the Conv's output name
    return true;
  }
};

class PatchConvToMatMulPass final : public TargetPatternPass {
 public:
  std::string id() const override { return "patch-conv-to-matmul"; }
  std::string summary() const override {
    return "Conv whose windows tile X (kernel = stride, no pads) to a reshape, a transpose and a "
           "MatMul over the patches (CUDA target: one GEMM instead of cuDNN's generic engine)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<PatchConvPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createPatchConvToMatMulPass() {
  return std::make_unique<PatchConvToMatMulPass>();
}

}  // namespace onnxopt::passes
