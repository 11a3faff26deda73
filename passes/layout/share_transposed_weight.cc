// share-transposed-weight: a constant table W [V, H] that is both gathered from by rows and read
// transposed (tied embeddings: the token embedding and the language-model head of Llama, Qwen2,
// Gemma, GPT-2, BERT's masked-LM head) is stored once, transposed, and the Gathers read its
// columns:
//
//   Wt = Transpose<1,0>(W)      (kept: the head's MatMul reads it)
//   Gather(W, ids, axis=0)  ==>  Transpose<1, .., r, 0>(Gather(Wt, ids, axis=1)),  r = rank(ids)
//
// Both sides hold the same elements in the same places: Gather(Wt, ids, axis=1)[h, i..] is
// Wt[h, ids[i..]] = W[ids[i..], h], and the Transpose moves the hidden dim h last (none for a
// scalar id). Afterwards W's only readers are Transposes, so fold-constants stores Wt in its
// place; before, it kept the Transpose as a node (folding it would store the table twice), and a
// runtime that does not fold weights itself transposed the whole table on every run to read one
// row of it per token (the head's MatMul), the largest single step of a small decoder's decode.
//
// Applies when every reader of W (a constant of rank 2, no graph output) is a Gather of its rows
// (axis 0, W as the data) or Transpose<1,0>, at least one of each, and each Gather's indices have
// a known rank. Pure data movement: exact.
#include <numeric>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

bool isRowGather(const ir::Node& n, const ir::Value* w) {
  if (n.opType() != "Gather" || !n.domain().empty() || n.numInputs() != 2 || n.input(0) != w ||
      n.input(1) == w) {
    return false;
  }
  return normalizeAxis(pass::attrInt(n, "axis", 0), 2) == 0;
}

bool isMatrixTranspose(const ir::Node& n) {
  if (n.opType() != "Transpose" || !n.domain().empty() || n.numInputs() != 1) return false;
  auto perm = pass::attrInts(n, "perm");
  return !perm || *perm == std::vector<int64_t>{1, 0};  // no perm: reversed dims
}

/// W's Transpose<1,0> reader when every reader is a row Gather or such a Transpose; nullptr
/// otherwise.
ir::Node* transposedReader(const ir::Value* w) {
  ir::Node* transpose = nullptr;
  for (const ir::Use& u : w->uses()) {
    if (isMatrixTranspose(*u.user)) {
      if (transpose == nullptr) transpose = u.user;
    } else if (!isRowGather(*u.user, w)) {
      return nullptr;
    }
  }
  return transpose;
}

/// Gather(Wt, ids, axis=1)'s type: Wt's element type, dims [H, ids' dims..].
ir::Type columnsType(ir::Type wt, const ir::Value& ids) {
  if (wt.shape && ids.type().shape) {
    std::vector<ir::Dim> dims{wt.shape->front()};
    dims.insert(dims.end(), ids.type().shape->begin(), ids.type().shape->end());
    wt.shape = std::move(dims);
  } else {
    wt.shape.reset();
  }
  return wt;
}

class GatherTransposedPattern final : public rewrite::Pattern {
 public:
  GatherTransposedPattern() : Pattern("share-transposed-weight", "Gather") {}

  bool matchAndRewrite(ir::Node* gather, PatternContext& ctx) const override {
    ir::Value* w = gather->numInputs() == 2 ? gather->input(0) : nullptr;
    if (w == nullptr || !isRowGather(*gather, w)) return ctx.fail("not a Gather of rows");
    if (w->isGraphOutput() || !pass::constantTensor(w) || pass::rankOf(w) != 2) {
      return ctx.fail("the table is not a constant matrix");
    }
    ir::Node* transpose = transposedReader(w);
    if (transpose == nullptr) {
      return ctx.fail("the table has no Transpose<1,0> reader, or a reader of another kind");
    }
    if (transpose->owningGraph() != gather->owningGraph()) {
      return ctx.fail("the Transpose is in another graph than the Gather");
    }
    auto r = pass::rankOf(gather->input(1));
    if (!r) return ctx.fail("the indices' rank is unknown");
    auto& rw = ctx.rewriter();
    rw.setInsertionPoint(gather);
    ir::Value* wt = transpose->output(0);
    // A Transpose after the Gather is made again before it (it reads a constant only) and takes
    // the place of the old one.
    for (ir::Node* n = gather->next(); n != nullptr; n = n->next()) {
      if (n != transpose) continue;
      ir::Value* moved = pass::createTranspose(rw, w, {1, 0});
      rw.replaceAllUsesWith(wt, moved);
      rw.eraseNode(transpose);
      wt = moved;
      break;
    }
    ir::Node* columns = rw.createNode("Gather", "", {wt, gather->input(1)},
                                      {columnsType(wt->type(), *gather->input(1))});
    rw.setAttribute(columns, pass::intAttr("axis", 1));
    ir::Value* result = columns->output(0);
    if (*r > 0) {
      std::vector<int64_t> perm(static_cast<size_t>(*r) + 1);
      std::iota(perm.begin(), perm.end() - 1, 1);  // the index dims first, then H
      perm.back() = 0;
      result = pass::createTranspose(rw, result, perm);
    }
    rw.replaceNode(gather, {result});
    return true;
  }
};

class ShareTransposedWeightPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "share-transposed-weight"; }
  std::string summary() const override {
    return "A table both gathered by rows and transposed (tied embeddings) is stored "
           "transposed once; its Gathers read columns";
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<GatherTransposedPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createShareTransposedWeightPass() {
  return std::make_unique<ShareTransposedWeightPass>();
}

}  // namespace onnxopt::passes
