// Constant data behind values: initializers and Constant nodes.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "onnxopt/ir/graph.h"

namespace onnxopt::ir {

/// The tensor a Constant node produces, built from whichever value* attribute it has (not
/// sparse_value, not attribute references).
std::optional<Tensor> constantNodeTensor(const Node& node);
/// The tensor a Constant's value attribute `a` holds (value, value_float(s), value_int(s),
/// value_string(s)), or nullopt for any other attribute (sparse_value, a reference).
std::optional<Tensor> constantAttributeTensor(const Attribute& a);
/// The constant data behind `value`: an initializer (not an overridable graph-input default, not a
/// weight-stripped tensor without data), or the output of a Constant node. nullopt otherwise.
std::optional<Tensor> constantTensor(const Value* value);
/// An int64/int32 tensor's elements; empty for other types or short data.
std::vector<int64_t> tensorInts(const Tensor& tensor);

}  // namespace onnxopt::ir
