// What fuse-layernorm and fuse-rmsnorm share: the root mean square under the division, and the
// normalization tail: trailing axes, the affine Mul/Add read forward, Scale and B shaped like the
// normalized dims, the fused node.
//
//   sd = Sqrt(Add(ReduceMean(Pow(t, 2) | Mul(t, t), axes), eps))
//   y  = [Add]([Mul](t / sd, gamma), beta)
//   ==>  y = op<axis = r - k, epsilon = eps>(x, gamma, [beta])     axes = the trailing k of r
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "onnxopt/pass/pattern_match.h"
#include "onnxopt/rewrite/pattern.h"

namespace onnxopt::passes::norm {

/// Pow(t, 2) or Mul(t, t), single-use, of the value bound to `t`; `what` names t in the reasons
/// ("Pow is not t^2 of <what>").
pass::match::Matcher squareOf(const std::string& t, const std::string& what);
/// Sqrt(Add(ReduceMean(square), eps)), every link single-use, binding the ReduceMean's output as
/// "mean" and the scalar as "eps"; `mean_reason` says why when the ReduceMean plus eps is missing.
pass::match::Matcher sqrtOfMeanPlusEps(const pass::match::Matcher& square,
                                       const std::string& mean_reason);

/// A normalization input (Scale or B): `value` itself when it is shaped like the normalized dims,
/// else `tensor`, its broadcast (or a fill), made an initializer on rewrite.
struct Param {
  ir::Value* value = nullptr;
  std::optional<ir::Tensor> tensor{};
};

/// A matched normalization, ready to rewrite (nothing is created before the rewrite).
struct Normalization {
  ir::Value* x = nullptr;
  int64_t axis = 0;
  double epsilon = 0.0;
  std::vector<Param> params{};  ///< Scale, then B when there is one
  ir::Node* last = nullptr;     ///< the last node of the chain, whose output the fused node takes
  std::vector<ir::Node*> chain{};  ///< the decomposed nodes, users first
};

/// The tail shared by both fusions, after the pattern matched the decomposition rooted at `norm`
/// (a `chain`, users first) over x with the reductions `reductions`: x float, float16 or bfloat16
/// of known rank; the reductions over the same trailing axes; the normalized dims static; then the
/// optional Mul by gamma and, with `with_bias`, Add of beta, read forward, each a constant of x's
/// type broadcasting over the normalized dims. nullopt (with ctx.fail's reason) when not.
std::optional<Normalization> matchTail(ir::Node* norm, ir::Value* x, double epsilon,
                                       const std::vector<const ir::Node*>& reductions,
                                       std::vector<ir::Node*> chain, bool with_bias,
                                       rewrite::PatternContext& ctx);

/// A normalization computed in float between casts from and back to x's type T (float16 or
/// bfloat16), rooted at the outer Cast, with the affine tail in T read forward:
///
///   Cast<T>(op<stash_type = float>(Cast<float>(x: T), ones [, zeros]))  [Mul(., gamma: T)]
///   [Add(., beta: T)]   ==>   op<stash_type = float>(x, gamma | ones, [beta | zeros])
///
/// Exact by op's definition: it casts X to the stash type, normalizes, casts the result back to T
/// and applies Scale (and B) in T, which is what the casts and the T tail do. Needs x's normalized
/// dims static; the op's Mean and InvStdDev unused. nullopt (with ctx.fail's reason) when not.
std::optional<Normalization> matchCastNormalization(ir::Node* cast, const char* op_type,
                                                    bool with_bias, rewrite::PatternContext& ctx);

/// Replaces the chain's result by `op`(x, Scale [, B]) <axis, epsilon> and erases the chain; new
/// Scale and B initializers are named from `names`.
void rewrite(const char* op, Normalization& n, const std::vector<const char*>& names,
             rewrite::PatternContext& ctx);

/// matchCastNormalization and rewrite as a pattern rooted at Cast (fuse-layernorm-cast,
/// fuse-rmsnorm-cast).
class CastNormPattern final : public rewrite::Pattern {
 public:
  CastNormPattern(const char* name, const char* op_type, bool with_bias,
                  std::vector<const char*> names, int64_t min_opset)
      : Pattern(name, "Cast", "", 2, min_opset),
        op_type_(op_type),
        with_bias_(with_bias),
        names_(std::move(names)) {}
  bool matchAndRewrite(ir::Node* node, rewrite::PatternContext& ctx) const override {
    auto n = matchCastNormalization(node, op_type_, with_bias_, ctx);
    if (!n) return false;
    rewrite(op_type_, *n, names_, ctx);
    return true;
  }

 private:
  const char* op_type_;
  bool with_bias_;
  std::vector<const char*> names_;
};

}  // namespace onnxopt::passes::norm
