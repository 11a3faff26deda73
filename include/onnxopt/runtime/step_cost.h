// What a plan step costs in the roofline model (docs/cuda_runtime.md, "Profiles"): the bytes it
// moves through device memory and the floating-point operations of its products. `opt bench
// --profile` divides both by the step's measured time and sets the rates against the device's
// measured peaks, so that each row says whether memory or arithmetic bounds it and how close it
// comes.
#pragma once

#include <cstdint>

#include "onnxopt/runtime/plan.h"

namespace onnxopt::runtime {

struct StepCost {
  /// Each distinct input read once and each output written once (a weight counts: it is read
  /// from device memory too); 0 when some dim is known only at run time.
  int64_t bytes = 0;
  /// Multiply-adds count two. Only the products (MatMul and Gemm families, convolutions,
  /// attention, RNNs) are counted; 0 for every other op, whose arithmetic is a few operations an
  /// element and never the bound.
  double flops = 0;
  /// The products' operand type (which compute peak applies); kUndefined for other steps.
  DataType dtype = DataType::kUndefined;
};

/// The cost of `step` of `plan` (a copy: its value's bytes, no flops).
StepCost stepCost(const Plan& plan, const Step& step);

}  // namespace onnxopt::runtime
