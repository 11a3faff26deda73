// Evaluating a symbolic dim of shape inference (ir::Dim: a value, a symbol, or a canonical
// expression such as "2*N*S + 1" or "floor(L/2)") for concrete values of its symbols. Internal to
// the lowering (plan.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "onnxopt/ir/types.h"

namespace onnxopt::runtime::plan_detail {

/// Symbol -> its concrete value.
using Bindings = std::map<std::string, int64_t>;

/// The dim's value; nullopt when it is unknown, names an unbound symbol (a fresh, data-dependent
/// one), overflows, or is not an expression this evaluator reads.
std::optional<int64_t> evalDim(const ir::Dim& dim, const Bindings& bindings);

/// The canonical expression text (SymExpr::toString) evaluated; nullopt as above.
std::optional<int64_t> evalExprText(const std::string& text, const Bindings& bindings);

}  // namespace onnxopt::runtime::plan_detail
