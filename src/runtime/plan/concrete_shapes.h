// Concrete output dims of common ops from concrete input dims and known shape inputs: the
// lowering's second source of dims where symbolic inference has none (an unnamed input dim, a
// target that only a host evaluation made concrete). Internal to the lowering (plan.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/kernels/host_tensor.h"

namespace onnxopt::runtime::plan_detail {

/// What is known of one input: its dims (nullptr when not concrete) and its data (nullptr when
/// not known when planning).
struct KnownInput {
  const std::vector<int64_t>* dims = nullptr;
  const kernels::HostTensor* value = nullptr;
};

/// Elementwise ops of one data input (Relu, Exp, Clip, ...).
bool isUnaryElementwise(const std::string& op);
/// Ops whose output is the multidirectional (numpy) broadcast of their inputs (Add, Where, ...).
bool broadcasts(const std::string& op);
/// Either: each output element depends only on the input elements at its index, so the output
/// may take the buffer of an input of its dtype and size (in-place reuse).
bool isElementwise(const std::string& op);

/// Output 0's dims of a default-domain `op`: elementwise and normalization ops (input 0's dims),
/// broadcasting ops (the inputs broadcast), Concat, Reshape, Expand, ConstantOfShape, Tile, Range,
/// Resize and TopK (from their known shape inputs). nullopt for other ops, missing knowledge, or inputs
/// that break the op's contract (the kernel reports those when it runs).
std::optional<std::vector<int64_t>> concreteOutputDims(const std::string& op,
                                                       const kernels::KernelAttrs& attrs,
                                                       const std::vector<KnownInput>& inputs);

}  // namespace onnxopt::runtime::plan_detail
