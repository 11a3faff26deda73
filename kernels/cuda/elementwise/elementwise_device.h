// The device entry points of the elementwise kernels (unary.cu, binary.cu, where.cu, cast.cu,
// glu.cu):
// plain types and cudaError_t only, so that the host half of each family (its .cc, built by the
// C++ compiler) does the argument checks and Status messages, and the .cu files hold kernels
// alone (fmt's compile-time format strings do not build under nvcc).
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/elementwise/broadcast_plan.h"
#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels::cuda {

/// One value per op of ops.def's CUDA_UNARY rows (k<op>), and Gelu's tanh form. How the device
/// args carry the attributes: Shrink's lambd and bias are alpha and beta; IsInf's detect_negative
/// and detect_positive are alpha and beta (nonzero: detected); Clip before 11 has min and max in
/// alpha and beta.
enum class UnaryOp {
#define CUDA_UNARY(op, ...) k##op,
#include "kernels/cuda/ops.def"
  kGeluTanh,  ///< Gelu with approximate = "tanh" (unary.cc picks it)
};

/// One value per op of ops.def's CUDA_BINARY rows (k<op>), and Mod's two remainders (its own
/// family: binary.cc picks one by the `fmod` attribute).
enum class BinaryOp {
#define CUDA_BINARY(op, ...) k##op,
#include "kernels/cuda/ops.def"
  kMod,   ///< integers, fmod = 0: Python's remainder (the divisor's sign)
  kFmod,  ///< fmod = 1: C's remainder (the dividend's sign), for every numeric type
};

/// Whether a binary op writes bool (comparisons) rather than its input type.
constexpr bool writesBool(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kGreater ||
         op == BinaryOp::kLessOrEqual || op == BinaryOp::kGreaterOrEqual;
}

struct UnaryDeviceArgs {
  UnaryOp op;
  DataType dtype;      ///< of input and output
  BroadcastPlan plan;  ///< one operand
  const void* x;
  void* y;
  float alpha, beta, gamma;  ///< the activation's attributes; Clip < 11: min, max
  const void* lo;            ///< Clip >= 11: a device scalar of dtype, or nullptr
  const void* hi;
};

struct BinaryDeviceArgs {
  BinaryOp op;
  DataType dtype;      ///< of input a; the output's too unless writesBool(op)
  BroadcastPlan plan;  ///< two operands
  const void* a;
  const void* b;
  void* y;
  /// Of input b: dtype, except for Pow, whose exponent may have another type
  /// (mixedPowKernelExists).
  DataType b_dtype = dtype;
};

struct WhereDeviceArgs {
  int element_bytes;   ///< of x, y and the output: 1, 2, 4 or 8
  BroadcastPlan plan;  ///< cond, x, y
  const void* cond;
  const void* x;
  const void* y;
  void* out;
};

struct CastDeviceArgs {
  DataType from;
  DataType to;
  BroadcastPlan plan;  ///< one operand
  const void* x;
  void* y;
  /// Casts to float8/float4 (Cast-19 on): clamp to the largest finite value; E8M0's round_mode
  /// (0 up, 1 down, 2 nearest).
  bool saturate = true;
  int round_mode = 0;
};

/// What the device code instantiates: the host's canImplement asks these, and the capability
/// test checks that ops.def claims nothing they lack.
bool unaryKernelExists(UnaryOp op, DataType dtype);
bool binaryKernelExists(BinaryOp op, DataType dtype);
/// Pow with a base and an exponent of different types (Pow-12 on): a base binaryKernelExists
/// takes for Pow, an exponent of any numeric CUDA type.
bool mixedPowKernelExists(DataType base, DataType exponent);

/// The gate's activation of ai.onnxopt.SwiGlu (Silu) and GeGlu (Gelu, its tanh form).
enum class GluActivation { kSilu, kGelu, kGeluTanh };

/// Y [rows, width] = act(A[:, :width]) * A[:, width:] of A [rows, 2 * width] (glu.cu).
struct GluDeviceArgs {
  GluActivation activation;
  DataType dtype;  ///< of A and Y
  int64_t rows;
  int64_t width;
  const void* a;
  void* y;
};
bool castKernelExists(DataType from, DataType to);
/// Whether a cast has a float8, float4 or packed 2-/4-bit integer side: such casts read and write
/// contiguous tensors of one element count (a linear plan), element by element.
bool isLowPrecisionCast(DataType from, DataType to);

/// Launch on `stream`; the launch status (cudaGetLastError) is returned. Nothing is launched for
/// an empty output. Arguments are not checked here: the host half did. `sm_count` (the device
/// context's) sizes the grid-stride grids of the vectorized kernels (residentBlocksFor).
cudaError_t launchUnary(const UnaryDeviceArgs& args, int sm_count, cudaStream_t stream);
cudaError_t launchBinary(const BinaryDeviceArgs& args, int sm_count, cudaStream_t stream);
cudaError_t launchWhere(const WhereDeviceArgs& args, cudaStream_t stream);
cudaError_t launchCast(const CastDeviceArgs& args, cudaStream_t stream);
cudaError_t launchGlu(const GluDeviceArgs& args, cudaStream_t stream);

}  // namespace onnxopt::kernels::cuda
