// Precision analysis for `opt --precision`: the float32 model is run once on the reference
// kernels, every value recorded, and two questions are answered from what was observed.
//
//   range:      |v| > fraction * max_finite(T), v finite  ==> v's producer and readers stay float32
//               0 < max|v| < min_normal(float16)          ==> likewise (T = float16: underflow)
//   precision:  y  = node(x)               (float32, recorded)
//               y' = round_T(node(round_T(x)))            (T storage, float32 compute)
//               max|y' - clip_T(y)| <= tol * max|clip_T(y)|   ==> the node may convert
//
// The precision question is asked of every main-graph node with a float32 output, evaluated on
// its own recorded float32 inputs (errors upstream do not count against it):
//   - a node the caller keeps float32 by default for a reason a measurement lifts
//     (`measurable`: convert-precision's accumulation-sensitive ops, the Exp/Pow/Log feeding
//     them) converts when within the tolerance (`safe`);
//   - a node reading a constant past the type's range converts when, with the constant
//     saturated to the type's largest finite value, its output equals the float32 output clipped
//     to the range (an attention mask of float32's lowest: `safe`). Its output's elements past
//     the range are masks: they read as -inf (inf) from there on, re-evaluated downstream until
//     a node's output is the recorded one again, so the masked scores an Add makes of them are
//     not values past the range (a padding mask would otherwise keep every softmax float32);
//   - any other node past the tolerance is `imprecise`: its float inputs and outputs stay float32
//     with their producers and readers (the rounding of its inputs is what it cannot bear, so
//     keeping the node alone would not help), e.g. a Cos of large rotary angles, activations
//     below float16's smallest normal.
// float32 compute on T-rounded inputs is what a runtime that accumulates in float32 computes
// (onnxruntime's and our CUDA reductions, every tensor-core GEMM); a runtime accumulating in T
// itself can lose more.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

struct PrecisionAnalysisOptions {
  /// kFloat16 or kBfloat16.
  DataType target = DataType::kFloat16;
  /// Nodes kept float32 by default that convert when measured within the tolerance (empty:
  /// none).
  std::function<bool(const ir::Node&)> measurable;
  /// A value whose magnitude passes this fraction of the type's largest finite value stays
  /// float32 (the margin covers inputs larger than the calibration's).
  double range_fraction = 0.5;
  /// The largest error a measured node may have, relative to its output's largest magnitude;
  /// 0 is 16 units of the type's rounding (float16 2^-7, bfloat16 2^-4).
  double tolerance = 0;
};

struct PrecisionFinding {
  std::string value;  ///< the value (past range) or the node's first output (measured)
  std::string op;
  double magnitude = 0;  ///< largest finite magnitude observed (the output's, for a measured node)
  bool infinite = false;
  double error = 0;    ///< measured: max |y' - clip(y)| / max |clip(y)|
  std::string reason;  ///< measured and not safe: why
  /// imprecise: the float values to keep float32 (the node's float inputs and outputs that are
  /// not constants).
  std::vector<std::string> values;
};

struct PrecisionAnalysis {
  /// Values past the range (or, for float16, wholly under its smallest normal):
  /// convert-precision's keep-values.
  std::vector<PrecisionFinding> past_range;
  /// Measured nodes within the tolerance: convert-precision's safe-values (by first output).
  std::vector<PrecisionFinding> safe;
  /// Nodes past the tolerance whose values stay float32 (keep-values += values).
  std::vector<PrecisionFinding> imprecise;
  /// Measurable or saturating nodes past the tolerance, or that could not be evaluated: they stay
  /// float32 as by default.
  std::vector<PrecisionFinding> unsafe;
};

/// Runs `model` (float32) on the reference kernels with `feeds` and answers both questions for
/// its main graph. A failed run is the run's error (the caller may convert without the analysis).
StatusOr<PrecisionAnalysis> analyzePrecision(const ir::Model& model, const std::string& source,
                                             const Feeds& feeds,
                                             const PrecisionAnalysisOptions& options);

}  // namespace onnxopt::runtime
