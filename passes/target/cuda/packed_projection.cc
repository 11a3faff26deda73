// Projections of one input packed into one product (packed_projection.h).
#include "packed_projection.h"

#include <algorithm>
#include <cstring>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/passes/target_ops.h"

namespace onnxopt::passes {
namespace {

bool isOp(const ir::Node* n, const char* op, const std::string& domain = "") {
  return n != nullptr && n->opType() == op && n->domain() == domain;
}

/// The columns of `parts` ([K, Ni] each, one type and K) side by side: [K, sum Ni].
ir::Tensor concatColumns(const std::vector<const ir::Tensor*>& parts) {
  const size_t elem = dataTypeBits(parts[0]->dtype()) / 8;
  const size_t rows = static_cast<size_t>(parts[0]->dims()[0]);
  size_t row = 0;
  for (const ir::Tensor* p : parts) row += static_cast<size_t>(p->dims()[1]) * elem;
  std::string bytes(rows * row, '\0');
  for (size_t r = 0, at = 0; r < rows; ++r) {
    for (const ir::Tensor* p : parts) {
      const size_t part_row = static_cast<size_t>(p->dims()[1]) * elem;
      std::memcpy(bytes.data() + at, p->data() + r * part_row, part_row);
      at += part_row;
    }
  }
  ir::Tensor t(parts[0]->dtype(), {parts[0]->dims()[0], static_cast<int64_t>(row / elem)});
  t.setBytes(std::move(bytes));
  return t;
}

/// A constant [n] of `w`'s type, or nullopt.
std::optional<ir::Tensor> biasOf(const ir::Value* b, const ir::Tensor& w) {
  std::optional<ir::Tensor> t = ir::constantTensor(b);
  if (!t || t->dims() != std::vector<int64_t>{w.dims()[1]} || t->dtype() != w.dtype()) {
    return std::nullopt;
  }
  return t;
}

/// Whether any of `projections` has a bias: the packed product is then ai.onnxopt.MatMulBias.
bool anyBias(const std::vector<Projection>& projections) {
  return std::any_of(projections.begin(), projections.end(),
                     [](const Projection& p) { return p.bias.has_value(); });
}

}  // namespace

std::vector<ir::Node*> Projection::nodes() const {
  if (bias_add == nullptr) return {product};
  return {bias_add, product};
}

std::optional<Projection> projectionOf(ir::Value* v) {
  Projection p;
  ir::Node* n = v == nullptr ? nullptr : v->producer();
  if (isOp(n, "Add")) {
    for (size_t side = 0; side < 2 && p.product == nullptr; ++side) {
      ir::Node* mm = n->input(side) == nullptr ? nullptr : n->input(side)->producer();
      if (isOp(mm, "MatMul") && pass::onlyUsedBy(n->input(side), n)) {
        p.product = mm;
        p.bias_add = n;
      }
    }
    if (p.product == nullptr) return std::nullopt;
  } else if (isOp(n, "MatMul") || isOp(n, "MatMulBias", kTargetDomain)) {
    p.product = n;
  } else {
    return std::nullopt;
  }
  std::optional<ir::Tensor> w = ir::constantTensor(p.product->input(1));
  if (!w || w->dims().size() != 2 || w->byteSize() == 0) return std::nullopt;
  p.weight = std::move(*w);
  if (p.bias_add != nullptr || p.product->opType() == "MatMulBias") {
    const ir::Value* b = p.bias_add != nullptr
                             ? pass::otherOperand(*p.bias_add, p.product->output(0))
                             : p.product->input(2);
    p.bias = biasOf(b, p.weight);
    if (!p.bias) return std::nullopt;
  }
  return p;
}

std::string whyNotPackable(const std::vector<Projection>& projections, const TargetClaims& claims) {
  if (projections.size() < 2) return "fewer than two projections";
  const Projection& first = projections[0];
  for (size_t i = 1; i < projections.size(); ++i) {
    const Projection& p = projections[i];
    for (size_t j = 0; j < i; ++j) {
      if (projections[j].product == p.product) return "one product read twice";
    }
    if (p.input() != first.input()) return "the projections read different inputs";
    if (p.weight.dims()[0] != first.weight.dims()[0] || p.weight.dtype() != first.weight.dtype()) {
      return "the weights differ in K or type";
    }
  }
  // The merged product's operands have the types of the first projection's (the biases were
  // checked to have the weights' type).
  ir::Value* w = first.product->input(1);
  if (anyBias(projections) && !claims("MatMulBias", {first.input(), w, w})) {
    return "no CUDA kernel for the merged MatMulBias";
  }
  return "";
}

ir::Value* packProjections(const std::vector<Projection>& projections, const std::string& suffix,
                           rewrite::PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  const Projection& first = projections[0];
  ir::Graph& graph = *first.product->owningGraph();
  std::vector<const ir::Tensor*> weights;
  int64_t width = 0;
  for (const Projection& p : projections) {
    weights.push_back(&p.weight);
    width += p.width();
  }
  const std::string base = first.product->input(1)->name() + suffix;
  std::vector<ir::Value*> inputs = {first.input(),
                                    rw.createInitializer(graph, base, concatColumns(weights))};
  const bool biased = anyBias(projections);
  if (biased) {
    // Biases as rows [1, Ni], zeros where a projection has none, side by side.
    std::vector<ir::Tensor> rows;
    for (const Projection& p : projections) {
      ir::Tensor b(p.weight.dtype(), {1, p.width()});
      if (p.bias) {
        b = *p.bias;
        b.setDims({1, p.width()});
      } else {
        b.setBytes(std::string(static_cast<size_t>(p.width()) * dataTypeBits(b.dtype()) / 8, '\0'));
      }
      rows.push_back(std::move(b));
    }
    std::vector<const ir::Tensor*> parts;
    for (const ir::Tensor& r : rows) parts.push_back(&r);
    ir::Tensor b = concatColumns(parts);
    b.setDims({width});
    inputs.push_back(rw.createInitializer(graph, base + "_bias", std::move(b)));
  }
  // Before the first product in the graph's order, where the input is defined and every user of
  // a projection is still to come.
  ir::Node* at = nullptr;
  for (ir::Node* n : graph) {
    for (const Projection& p : projections) {
      if (p.product == n) at = n;
    }
    if (at != nullptr) break;
  }
  rw.setInsertionPoint(at);
  ir::Node* packed =
      rw.createNode(biased ? "MatMulBias" : "MatMul", biased ? kTargetDomain : "", inputs, 1);
  rw.setName(packed->output(0), rewrite::uniqueValueName(graph, first.result()->name() + suffix));
  rw.setName(packed, packed->output(0)->name());
  ir::Type type = first.result()->type();
  if (type.shape && !type.shape->empty()) type.shape->back() = ir::Dim::known(width);
  rw.setType(packed->output(0), type);
  return packed->output(0);
}

}  // namespace onnxopt::passes
