// Host half shared by the reduction-like CUDA families (reduce, arg_reduce, scan, topk): axes
// normalized with errors naming the op, the walk of a reduction (ReduceLayout), and the checks of
// an input and an output view that canImplement reports.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/reduce/reduce_layout.h"
#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/tensor_view.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels::cuda {

/// `axis` in [0, rank) (negative counts from the end); kInvalidArgument naming `op` otherwise.
StatusOr<int64_t> normalizeAxis(const std::string& op, int64_t axis, int64_t rank);

/// Per dim of a rank-`rank` tensor, whether `axes` (negative allowed, no repeats) names it.
StatusOr<std::vector<bool>> axesMask(const std::string& op, const std::vector<int64_t>& axes,
                                     int64_t rank);

/// The dims of reducing `dims` over `reduced`: 1 there (keepdims) or dropped.
std::vector<int64_t> reducedShape(const std::vector<int64_t>& dims,
                                  const std::vector<bool>& reduced, bool keepdims);

/// The reduced dims of `in` that make `out` (keepdims or not), when the shapes tell them: for an
/// axes input known only at run time, whose effect the plan's output shape shows. nullopt when
/// no set of dims, or several that differ in a dim other than 1, make `out`.
std::optional<std::vector<bool>> axesFromShapes(const std::vector<int64_t>& in,
                                                const std::vector<int64_t>& out, bool keepdims);

/// The walk of `x` (rank at most kMaxReduceRank) reduced over `reduced` (an empty layout for a
/// view the kernels do not take: canImplement refuses it).
ReduceLayout planReduction(const ConstTensorView& x, const std::vector<bool>& reduced);

/// The walk of `x` along one (normalized) axis: the kept dims are the lines, the axis the group.
ReduceLayout planAxis(const ConstTensorView& x, int64_t axis);

/// The product of the dims after `axis`.
int64_t innerSize(const std::vector<int64_t>& dims, int64_t axis);

/// "[2, 3]".
std::string shapeText(const std::vector<int64_t>& dims);

/// No unless `x` is in device memory with rank at most kMaxReduceRank (`what`: "input 0").
Support reduceInputSupport(const std::string& op, const ConstTensorView& x, const char* what);

/// No unless `y` is a contiguous device tensor of `dtype` and `dims` (`what`: "output 0").
Support reduceOutputSupport(const std::string& op, const TensorView& y, DataType dtype,
                            const std::vector<int64_t>& dims, const char* what);

}  // namespace onnxopt::kernels::cuda
