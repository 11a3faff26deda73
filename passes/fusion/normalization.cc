#include "normalization.h"

#include <fmt/format.h>

#include "onnxopt/pass/matchers.h"

namespace onnxopt::passes::norm {

using namespace pass::match;  // NOLINT: the matcher vocabulary reads as the rule

Matcher squareOf(const std::string& t, const std::string& what) {
  return oneOf(
      {singleUse(op("Pow", bind(t), scalar(2.0)))
           .orFail(fmt::format("Pow is not {}^2 of {}", t, what)),
       singleUse(op("Mul", bind(t), bind(t))).orFail(fmt::format("no {0}*{0} of {1}", t, what))});
}

Matcher sqrtOfMeanPlusEps(const Matcher& square, const std::string& mean_reason) {
  Matcher mean = bind("mean", singleUse(op("ReduceMean", square, anyOrAbsent())));
  Matcher sum =
      commutative("Add", mean.orFail(mean_reason), bind("eps", scalar()).orFail(mean_reason));
  return singleUse(op("Sqrt", singleUse(sum).orFail("no epsilon Add")));
}

namespace {

/// The affine tail after n.last: a Mul by a constant broadcasting over the normalized dims only
/// and, with `with_bias`, an Add of one, read forward, each of x's type `elem`; sets n.params
/// (Scale shaped like the normalized dims, a ones fill without the Mul; B likewise) and puts the
/// tail's nodes first in n.chain.
bool matchAffine(Normalization& n, DataType elem, const std::vector<int64_t>& norm_dims,
                 bool with_bias, rewrite::PatternContext& ctx) {
  const auto k = static_cast<int64_t>(norm_dims.size());
  std::vector<ir::Node*> tail;
  auto affine = [&](const char* op_type) -> ir::Value* {
    ir::Value* out = n.last->output(0);
    if (!pass::hasSingleUse(out)) return nullptr;
    ir::Node* next = out->uses()[0].user;
    if (next->opType() != op_type || !next->domain().empty()) return nullptr;
    ir::Value* c = pass::otherOperand(*next, out);
    auto t = c != nullptr ? pass::constantTensor(c) : std::nullopt;
    if (!t || t->dtype() != elem || static_cast<int64_t>(t->dims().size()) > k) return nullptr;
    n.last = next;
    tail.insert(tail.begin(), next);  // users first
    return c;
  };
  ir::Value* gamma = affine("Mul");
  ir::Value* beta = with_bias ? affine("Add") : nullptr;
  // Scale (and B) are shaped like the normalized dims.
  auto param = [&](ir::Value* v, double fill) -> std::optional<Param> {
    std::optional<ir::Tensor> t = v != nullptr ? pass::constantTensor(v) : std::nullopt;
    if (t && t->dims() == norm_dims) return Param{.value = v};
    auto full = pass::broadcastFloatConstant(t ? &*t : nullptr, fill, elem, norm_dims);
    if (!full) return std::nullopt;
    return Param{.tensor = std::move(full)};
  };
  auto scale = param(gamma, 1.0);
  if (!scale) return ctx.fail("Scale does not broadcast to the normalized dims");
  n.params.push_back(std::move(*scale));
  if (beta != nullptr) {
    auto bias = param(beta, 0.0);
    if (!bias) return ctx.fail("B does not broadcast to the normalized dims");
    n.params.push_back(std::move(*bias));
  }
  n.chain.insert(n.chain.begin(), tail.begin(), tail.end());
  return true;
}

/// Whether `node`'s input `i` is absent or a constant whose every element is `x`.
bool absentOrAll(const ir::Node& node, size_t i, double x) {
  if (i >= node.numInputs() || node.input(i) == nullptr) return true;
  auto t = pass::constantTensor(node.input(i));
  return t && pass::allElementsEqual(*t, x);
}

}  // namespace

std::optional<Normalization> matchTail(ir::Node* norm, ir::Value* x, double epsilon,
                                       const std::vector<const ir::Node*>& reductions,
                                       std::vector<ir::Node*> chain, bool with_bias,
                                       rewrite::PatternContext& ctx) {
  auto rank = pass::rankOf(x);
  auto elem = pass::elemTypeOf(x);
  if (!rank || !elem) return ctx.fail("x's rank or type unknown"), std::nullopt;
  if (*elem != DataType::kFloat && *elem != DataType::kFloat16 && *elem != DataType::kBfloat16) {
    return ctx.fail("element type not float, float16 or bfloat16"), std::nullopt;
  }
  std::optional<std::vector<int64_t>> axes;
  for (const ir::Node* r : reductions) {
    auto a = pass::reduceAxes(*r, ctx.opset(), *rank);
    if (!a) return ctx.fail("reduction axes not constant"), std::nullopt;
    if (axes && *a != *axes) return ctx.fail("the reductions' axes differ"), std::nullopt;
    axes = std::move(a);
  }
  const auto k = static_cast<int64_t>(axes->size());
  for (int64_t i = 0; i < k; ++i) {
    if ((*axes)[static_cast<size_t>(i)] != *rank - k + i) {
      return ctx.fail("axes are not the trailing axes"), std::nullopt;
    }
  }
  Normalization n{.x = x, .axis = *rank - k, .epsilon = epsilon, .last = norm};
  // Only the normalized (trailing) dims need to be known: batch and sequence may be symbolic.
  auto norm_dims = pass::staticDimsFrom(x, n.axis);
  if (!norm_dims) return ctx.fail("normalized dims not static"), std::nullopt;
  if (!matchAffine(n, *elem, *norm_dims, with_bias, ctx)) return std::nullopt;
  n.chain.insert(n.chain.end(), chain.begin(), chain.end());
  return n;
}

std::optional<Normalization> matchCastNormalization(ir::Node* cast, const char* op_type,
                                                    bool with_bias, rewrite::PatternContext& ctx) {
  ir::Node* inner = pass::singleUseProducer(cast->input(0), op_type);
  if (inner == nullptr || !inner->domain().empty()) {
    return ctx.fail("the Cast's input is not a single-use {}", op_type), std::nullopt;
  }
  for (size_t i = 1; i < inner->numOutputs(); ++i) {
    if (inner->output(i) != nullptr && !inner->output(i)->uses().empty()) {
      return ctx.fail("Mean or InvStdDev is used"), std::nullopt;
    }
  }
  if (pass::attrInt(*inner, "stash_type", 1) != 1) {
    return ctx.fail("stash_type is not float"), std::nullopt;
  }
  ir::Node* up = inner->input(0) != nullptr ? inner->input(0)->producer() : nullptr;
  if (up == nullptr || up->opType() != "Cast" || !up->domain().empty()) {
    return ctx.fail("X is not a Cast's result"), std::nullopt;
  }
  ir::Value* x = up->input(0);
  auto elem = pass::elemTypeOf(x);
  if (elem != DataType::kFloat16 && elem != DataType::kBfloat16) {
    return ctx.fail("the upcast's input is not float16 or bfloat16"), std::nullopt;
  }
  if (pass::elemTypeOf(up->output(0)) != DataType::kFloat ||
      pass::elemTypeOf(cast->output(0)) != elem) {
    return ctx.fail("not a cast to float and back"), std::nullopt;
  }
  if (!absentOrAll(*inner, 1, 1.0) || (with_bias && !absentOrAll(*inner, 2, 0.0))) {
    return ctx.fail("Scale is not all ones or B not all zeros"), std::nullopt;
  }
  auto rank = pass::rankOf(x);
  if (!rank) return ctx.fail("x's rank unknown"), std::nullopt;
  auto axis = pass::normalizeAxis(pass::attrInt(*inner, "axis", -1), *rank);
  if (!axis) return ctx.fail("axis out of range"), std::nullopt;
  Normalization n{
      .x = x, .axis = *axis, .epsilon = pass::attrFloat(*inner, "epsilon", 1e-5F), .last = cast};
  auto norm_dims = pass::staticDimsFrom(x, n.axis);
  if (!norm_dims) return ctx.fail("normalized dims not static"), std::nullopt;
  if (!matchAffine(n, *elem, *norm_dims, with_bias, ctx)) return std::nullopt;
  n.chain.insert(n.chain.end(), {cast, inner, up});
  return n;
}

void rewrite(const char* op_type, Normalization& n, const std::vector<const char*>& names,
             rewrite::PatternContext& ctx) {
  auto& rw = ctx.rewriter();
  std::vector<ir::Value*> inputs{n.x};
  for (size_t i = 0; i < n.params.size(); ++i) {
    Param& p = n.params[i];
    inputs.push_back(
        p.tensor ? rw.createInitializer(*n.last->owningGraph(), names[i], std::move(*p.tensor))
                 : p.value);
  }
  rw.setInsertionPoint(n.last);
  ir::Value* out = n.last->output(0);
  ir::Node* fused = rw.createNode(op_type, "", inputs, {out->type()});
  rw.setAttribute(fused, pass::intAttr("axis", n.axis));
  rw.setAttribute(fused, pass::floatAttr("epsilon", static_cast<float>(n.epsilon)));
  rw.replaceAllUsesWith(out, fused->output(0));
  // Erase the decomposed chain, users first, so it cannot match again.
  rw.eraseDeadNodes(n.chain);
}

}  // namespace onnxopt::passes::norm
