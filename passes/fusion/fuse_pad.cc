// fuse-pad: attribute embedding of a constant Pad into the window op that follows.
//
//   Conv(Pad(x, p), W)               ->  Conv<pads += p_spatial>(x, W)      zero padding
//   AveragePool(Pad(x, p))           ->  AveragePool<pads += p_spatial>(x)  zero padding and
//                                                                           count_include_pad=1
//   MaxPool(Pad(x, p))               ->  MaxPool<pads += p_spatial>(x)      padding with -inf
//
// Only when the Pad is in constant mode, pads only spatial axes (N and C untouched), its pads are
// non-negative constants, the window op has auto_pad NOTSET, and the Pad output has no other user.
// Pad's layout is [b0, b1, .., e0, e1, ..]; the window op's is [b_spatial.., e_spatial..].
#include <cmath>
#include <limits>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

class PadIntoWindowPattern final : public rewrite::Pattern {
 public:
  explicit PadIntoWindowPattern(const char* op)
      : Pattern(std::string("fuse-pad-") + op, op), op_(op) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    ir::Value* in = node->input(0);
    if (in == nullptr || in->producer() == nullptr || in->producer()->opType() != "Pad" ||
        !in->producer()->domain().empty() || !pass::hasSingleUse(in)) {
      return ctx.fail("input is not a single-use Pad");
    }
    ir::Node* pad = in->producer();
    if (pass::attrInt(*node, "auto_pad", 0) != 0 ||
        (node->findAttribute("auto_pad") && node->findAttribute("auto_pad")->s != "NOTSET")) {
      return ctx.fail("auto_pad is set");
    }
    std::string mode = "constant";
    if (const ir::Attribute* m = pad->findAttribute("mode")) mode = m->s;
    if (mode != "constant") return ctx.fail("Pad mode is {}", mode);
    int64_t opset = ctx.opset();
    auto pads = opset < 11 ? pass::attrInts(*pad, "pads") : pass::constantInts(pad->input(1));
    if (!pads) return ctx.fail("pads not constant");
    if (opset >= 18 && pad->numInputs() > 3 && pad->input(3) != nullptr)
      return ctx.fail("Pad has axes");
    size_t rank = pads->size() / 2;
    if (rank < 3 || pads->size() != 2 * rank) return ctx.fail("not a spatial pad");
    for (size_t i = 0; i < pads->size(); ++i) {
      if ((*pads)[i] < 0) return ctx.fail("negative pads crop");
      if ((i % rank) < 2 && (*pads)[i] != 0) return ctx.fail("pads N or C");
    }
    // The padding value must be what the window op pads with.
    double value = 0.0;
    if (opset < 11) {
      value = pass::attrFloat(*pad, "value", 0.0f);
    } else if (pad->numInputs() > 2 && pad->input(2) != nullptr) {
      auto v = pass::constantTensor(pad->input(2));
      auto d = v && v->numElements() == 1 ? pass::elementAsDouble(*v, 0) : std::nullopt;
      if (!d) return ctx.fail("pad value not constant");
      value = *d;
    }
    if (op_ == "MaxPool") {
      if (!(std::isinf(value) && value < 0)) return ctx.fail("MaxPool needs -inf padding");
    } else if (value != 0.0) {
      return ctx.fail("padding value is not zero");
    }
    if (op_ == "AveragePool" && pass::attrInt(*node, "count_include_pad", 0) != 1) {
      return ctx.fail("AveragePool excludes padding from the count");
    }
    if (op_ != "Conv" && pass::attrInt(*node, "ceil_mode", 0) != 0) return ctx.fail("ceil_mode");
    size_t spatial = rank - 2;
    auto existing = pass::attrInts(*node, "pads").value_or(std::vector<int64_t>(2 * spatial, 0));
    if (existing.size() != 2 * spatial) return ctx.fail("pads attribute has the wrong length");
    std::vector<int64_t> merged(2 * spatial);
    for (size_t i = 0; i < spatial; ++i) {
      merged[i] = existing[i] + (*pads)[2 + i];
      merged[spatial + i] = existing[spatial + i] + (*pads)[rank + 2 + i];
    }
    ir::Attribute a;
    a.name = "pads";
    a.kind = ir::Attribute::Kind::kInts;
    a.ints = merged;
    auto& rw = ctx.rewriter();
    rw.setAttribute(node, std::move(a));
    rw.setInput(node, 0, pad->input(0));
    rw.eraseNode(pad);
    return true;
  }

 private:
  std::string op_;
};

class FusePadPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-pad"; }
  std::string summary() const override {
    return "Embed a constant spatial Pad into the pads of Conv, AveragePool or MaxPool";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    for (const char* op : {"Conv", "AveragePool", "MaxPool"}) {
      list.push_back(std::make_unique<PadIntoWindowPattern>(op));
    }
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createFusePadPass() {
  return std::make_unique<FusePadPass>();
}

}  // namespace onnxopt::passes
