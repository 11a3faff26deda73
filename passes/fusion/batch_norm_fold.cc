#include "batch_norm_fold.h"

#include <cmath>

#include "onnxopt/pass/matchers.h"

namespace onnxopt::passes {

bool isInferenceBatchNorm(const ir::Node& bn, rewrite::PatternContext& ctx) {
  for (size_t i = 1; i < bn.numOutputs(); ++i) {
    if (bn.output(i) != nullptr && bn.output(i)->hasUses())
      return ctx.fail("training outputs used");
  }
  if (pass::attrInt(bn, "training_mode", 0) != 0) return ctx.fail("training mode");
  if (bn.numInputs() < 5) return ctx.fail("missing statistics");
  return true;
}

std::optional<BatchNormFold> foldBatchNorm(const ir::Node& bn, std::vector<double> bias,
                                           rewrite::PatternContext& ctx) {
  // gamma, beta, mean, var
  std::vector<std::vector<double>> p;
  for (size_t i = 1; i < 5; ++i) {
    auto t = pass::constantTensor(bn.input(i));
    auto v = t ? pass::floatValues(*t) : std::nullopt;
    if (!v || v->size() != bias.size()) {
      ctx.fail("BatchNormalization input {} is not a constant per-channel vector", i);
      return std::nullopt;
    }
    p.push_back(std::move(*v));
  }
  double eps = pass::attrFloat(bn, "epsilon", 1e-5f);
  BatchNormFold fold{std::vector<double>(bias.size()), std::move(bias)};
  for (size_t k = 0; k < fold.scale.size(); ++k) {
    fold.scale[k] = p[0][k] / std::sqrt(p[3][k] + eps);
    fold.bias[k] = (fold.bias[k] - p[2][k]) * fold.scale[k] + p[1][k];
  }
  return fold;
}

}  // namespace onnxopt::passes
