// Projections of one input packed into one product, which the CUDA target's fusions share:
//
//   P(X, W1[, b1]), ..., P(X, Wn[, bn])  ==>  P(X, [W1 | ... | Wn][, [b1 | ... | bn]])
//        P = MatMul, ai.onnxopt.MatMulBias or Add(MatMul(X, W), b)
//
// each Wi a constant [K, Ni] (one K and type, the widths free: a grouped-query attention's K and V
// are narrower than its Q), each bi a constant [Ni] of that type (zeros where one has none). The
// packed product's columns are the projections' side by side, so part i of its last dim is
// projection i. fuse-packed-attention packs BERT's and the decoders' Q, K and V, fuse-gated-mlp a
// gated MLP's gate and up projections.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "target_pattern_pass.h"

namespace onnxopt::passes {

/// X times a constant [K, N] weight, plus a constant [N] bias where it has one.
struct Projection {
  ir::Node* product = nullptr;   ///< MatMul or ai.onnxopt.MatMulBias
  ir::Node* bias_add = nullptr;  ///< Add(MatMul, b), or nullptr
  ir::Tensor weight;
  std::optional<ir::Tensor> bias;

  ir::Value* input() const { return product->input(0); }
  /// The projection's value: the bias Add's result, or the product's.
  ir::Value* result() const { return (bias_add != nullptr ? bias_add : product)->output(0); }
  int64_t width() const { return weight.dims()[1]; }
  /// The nodes the projection is made of, users first (the Add, then the product).
  std::vector<ir::Node*> nodes() const;
};

/// `v` as a projection: MatMul(X, W), ai.onnxopt.MatMulBias(X, W, b), or Add(MatMul(X, W), b)
/// (either operand order) whose MatMul only the Add reads; W a constant [K, N], b a constant [N]
/// of W's type. nullopt for anything else.
std::optional<Projection> projectionOf(ir::Value* v);

/// Empty when `projections` (two or more, distinct) read one input with weights of one K and
/// type, and the target claims MatMulBias for them where any has a bias; otherwise why not.
std::string whyNotPackable(const std::vector<Projection>& projections, const TargetClaims& claims);

/// The packed product of `projections` (whyNotPackable said yes): one MatMul, or MatMulBias
/// where any has a bias, of the input and the weights' columns side by side, before the first
/// of the projections' products in the graph; its value is named after the first projection's
/// result + `suffix` and typed as it with the widths' sum as its last dim. The projections stay.
ir::Value* packProjections(const std::vector<Projection>& projections, const std::string& suffix,
                           rewrite::PatternContext& ctx);

}  // namespace onnxopt::passes
