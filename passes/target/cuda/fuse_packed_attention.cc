// fuse-packed-attention (CUDA target): attention whose Q, K and V are three parts of one product
// reads them in place, so the packed projection is not split by three copies, and the three
// projections of one input become one GEMM (one launch, and a wider one, where three were):
//
//   Q, K, V = Split<axis=-1, 3 equal parts>(QKV)
//   SafeAttention(Q, K, V, M)                      ==>  SafePackedAttention(QKV, M)
//
//   SafeAttention(P(X, Wq[, bq]), P(X, Wk[, bk]), P(X, Wv[, bv]), M)
//                                                  ==>  SafePackedAttention(P(X, W[, b]), M)
//        P = MatMul or ai.onnxopt.MatMulBias;  W = [Wq | Wk | Wv] (columns), b = [bq | bk | bv]
//
// (attributes num_heads and scale kept). Split's parts must be equal (no split input, or one
// constant of three equal sizes) along the last of three dims, each read only here; the
// projections' weights are constants of one [K, N] shape and one type (the biases constants of
// [N], zeros where a plain MatMul has none), each product read only here. Where the CUDA kernel
// table claims the ops for the types. GPT-2 exports the first form (c_attn's Split), BERT the
// second (query, key and value Linear layers).
#include <cstring>

#include "target_pattern_pass.h"

#include "onnxopt/ir/constants.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// Whether `node` splits its 3-D input's last dim into three equal parts, all of them present.
bool equalThirds(const ir::Node& node, int64_t opset) {
  if (node.numOutputs() != 3) return false;
  for (size_t i = 0; i < 3; ++i) {
    if (node.output(i) == nullptr) return false;
  }
  auto rank = pass::rankOf(node.input(0));
  int64_t axis = pass::attrInt(node, "axis", 0);
  if (!rank || *rank != 3 || (axis != 2 && axis != -1)) return false;
  auto dims = pass::staticShape(node.input(0));
  if (!dims || (*dims)[2] % 3 != 0) return false;
  const int64_t third = (*dims)[2] / 3;
  std::optional<std::vector<int64_t>> split;
  if (opset >= 13) {
    if (node.numInputs() > 1 && node.input(1) != nullptr) split = pass::constantInts(node.input(1));
  } else {
    split = pass::attrInts(node, "split");
  }
  if (split) return *split == std::vector<int64_t>{third, third, third};
  // No split given: equal parts (num_outputs 3 at opset 18, the outputs' count before).
  return node.numInputs() < 2 || node.input(1) == nullptr;
}

void replaceAttention(ir::Node* attention, ir::Value* qkv, PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  ir::Node* fused = rw.createNodeLike("SafePackedAttention", kTargetDomain,
                                      {qkv, attention->input(3)}, attention);
  rw.copyAttribute(*attention, fused, "num_heads");
  rw.copyAttribute(*attention, fused, "scale");
  std::string name = attention->output(0)->name();
  rw.replaceNode(attention, {fused->output(0)});
  if (fused->output(0)->name() != name) rw.setName(fused->output(0), name);
}

/// Split(QKV) -> SafeAttention  ==>  SafePackedAttention(QKV).
class SplitPattern final : public rewrite::Pattern {
 public:
  SplitPattern() : Pattern("fuse-packed-attention-split", "SafeAttention", kTargetDomain) {}
  bool matchAndRewrite(ir::Node* attention, PatternContext& ctx) const override {
    ir::Node* split = attention->input(0) == nullptr ? nullptr : attention->input(0)->producer();
    if (split == nullptr || split->opType() != "Split" || !split->domain().empty()) {
      return ctx.fail("Q is not a Split's output");
    }
    for (size_t i = 0; i < 3; ++i) {
      ir::Value* part = attention->input(i);
      if (part == nullptr || part->producer() != split || part->outputIndex() != i ||
          !pass::onlyUsedBy(part, attention)) {
        return ctx.fail("Q, K and V are not the Split's outputs 0, 1, 2, each read only here");
      }
    }
    if (!equalThirds(*split, ctx.opset())) return ctx.fail("the Split is not into equal thirds");
    ir::Value* qkv = split->input(0);
    if (!cudaClaims("SafePackedAttention", {qkv, attention->input(3)})) {
      return ctx.fail("no CUDA kernel for SafePackedAttention of these types");
    }
    replaceAttention(attention, qkv, ctx);
    ctx.rewriter().eraseNode(split);
    return true;
  }
};

/// The columns of `parts` ([K, N] each, one type) side by side: [K, 3N].
ir::Tensor concatColumns(const std::vector<ir::Tensor>& parts) {
  const auto& dims = parts[0].dims();
  const size_t elem = dataTypeBits(parts[0].dtype()) / 8;
  const size_t rows = static_cast<size_t>(dims[0]), row = static_cast<size_t>(dims[1]) * elem;
  std::string bytes(rows * row * parts.size(), '\0');
  for (size_t r = 0; r < rows; ++r) {
    for (size_t p = 0; p < parts.size(); ++p) {
      std::memcpy(bytes.data() + (r * parts.size() + p) * row, parts[p].data() + r * row, row);
    }
  }
  ir::Tensor t(parts[0].dtype(), {dims[0], dims[1] * static_cast<int64_t>(parts.size())});
  t.setBytes(std::move(bytes));
  return t;
}

/// SafeAttention(P(X, Wq), P(X, Wk), P(X, Wv), M)  ==>  SafePackedAttention(P(X, W), M).
class ProjectionsPattern final : public rewrite::Pattern {
 public:
  ProjectionsPattern()
      : Pattern("fuse-packed-attention-projections", "SafeAttention", kTargetDomain) {}
  bool matchAndRewrite(ir::Node* attention, PatternContext& ctx) const override {
    std::vector<ir::Node*> products;
    std::vector<ir::Tensor> weights, biases;
    bool any_bias = false;
    for (size_t i = 0; i < 3; ++i) {
      ir::Value* v = attention->input(i);
      ir::Node* p = v == nullptr ? nullptr : v->producer();
      bool plain = p != nullptr && p->opType() == "MatMul" && p->domain().empty();
      bool biased = p != nullptr && p->opType() == "MatMulBias" && p->domain() == kTargetDomain;
      if ((!plain && !biased) || !pass::onlyUsedBy(v, attention)) {
        return ctx.fail("input {} is not a MatMul or MatMulBias read only here", i);
      }
      if (!products.empty() && p->input(0) != products[0]->input(0)) {
        return ctx.fail("the projections read different inputs");
      }
      std::optional<ir::Tensor> w = ir::constantTensor(p->input(1));
      if (!w || w->dims().size() != 2 || w->byteSize() == 0 ||
          (!weights.empty() &&
           (w->dims() != weights[0].dims() || w->dtype() != weights[0].dtype()))) {
        return ctx.fail("the weights are not constants of one [K, N] shape and type");
      }
      std::optional<ir::Tensor> b;
      if (biased) {
        b = ir::constantTensor(p->input(2));
        if (!b || b->dims() != std::vector<int64_t>{w->dims()[1]} || b->dtype() != w->dtype()) {
          return ctx.fail("bias {} is not a constant [N] of the weight's type", i);
        }
        any_bias = true;
      } else {
        b = ir::Tensor(w->dtype(), {w->dims()[1]});
        b->setBytes(
            std::string(static_cast<size_t>(w->dims()[1]) * dataTypeBits(w->dtype()) / 8, '\0'));
      }
      products.push_back(p);
      weights.push_back(std::move(*w));
      biases.push_back(std::move(*b));
    }
    ir::Value* x = products[0]->input(0);
    // Claims first, before the graph changes: the merged product's operands have the types of
    // the first projection's (the biases were checked to have the weights' type).
    ir::Value* w0 = products[0]->input(1);
    if (any_bias && !cudaClaims("MatMulBias", {x, w0, w0})) {
      return ctx.fail("no CUDA kernel for the merged MatMulBias");
    }
    if (!cudaClaims("SafePackedAttention", {products[0]->output(0), attention->input(3)})) {
      return ctx.fail("no CUDA kernel for SafePackedAttention of these types");
    }
    auto& rw = ctx.rewriter();
    ir::Graph& graph = *attention->owningGraph();
    ir::Value* w =
        rw.createInitializer(graph, products[0]->input(1)->name() + "_qkv", concatColumns(weights));
    std::vector<ir::Value*> inputs = {x, w};
    std::string op = "MatMul";
    if (any_bias) {
      std::vector<ir::Tensor> rows;
      for (ir::Tensor& b : biases) {
        b.setDims({1, b.dims()[0]});
        rows.push_back(b);
      }
      ir::Tensor b = concatColumns(rows);
      b.setDims({b.dims()[1]});
      inputs.push_back(
          rw.createInitializer(graph, products[0]->input(1)->name() + "_qkv_bias", std::move(b)));
      op = "MatMulBias";
    }
    rw.setInsertionPoint(products[0]);
    ir::Node* packed = rw.createNode(op, any_bias ? kTargetDomain : "", inputs, 1);
    // Named after the query projection's value (unique in the graph, as node names must be).
    rw.setName(packed->output(0),
               rewrite::uniqueValueName(graph, products[0]->output(0)->name() + "_qkv"));
    rw.setName(packed, packed->output(0)->name());
    // [..., 3N]: the product's type with its last dim tripled.
    ir::Type type = products[0]->output(0)->type();
    if (type.shape && !type.shape->empty())
      type.shape->back() = ir::Dim::known(3 * weights[0].dims()[1]);
    rw.setType(packed->output(0), type);
    rw.setInsertionPoint(attention);
    replaceAttention(attention, packed->output(0), ctx);
    rw.eraseDeadNodes(products);
    return true;
  }
};

class FusePackedAttentionPass final : public TargetPatternPass {
 public:
  std::string id() const override { return "fuse-packed-attention"; }
  std::string summary() const override {
    return "SafeAttention on three parts of one product (a Split, or three projections of one "
           "input merged into one) into ai.onnxopt.SafePackedAttention (CUDA target)";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<SplitPattern>());
    list.push_back(std::make_unique<ProjectionsPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFusePackedAttentionPass() {
  return std::make_unique<FusePackedAttentionPass>();
}

}  // namespace onnxopt::passes
