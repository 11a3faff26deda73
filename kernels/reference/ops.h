// Declarations of the reference kernel entry points, one per op family; registry.cc maps op names
// to them. Kernels that serve several ops switch on ctx.op.
#pragma once

#include "common.h"

namespace onnxopt::kernels::ref {

// elementwise.cc
StatusOr<Outputs> binaryArithmetic(const KernelContext& ctx);  // Add Sub Mul Div Mod
StatusOr<Outputs> powKernel(const KernelContext& ctx);
StatusOr<Outputs> variadicKernel(const KernelContext& ctx);    // Min Max Sum Mean
StatusOr<Outputs> comparisonKernel(const KernelContext& ctx);  // Equal Less Greater ...
StatusOr<Outputs> logicalKernel(const KernelContext& ctx);     // And Or Xor Not
StatusOr<Outputs> bitwiseKernel(const KernelContext& ctx);     // BitwiseAnd/Or/Xor/Not
StatusOr<Outputs> unaryKernel(const KernelContext& ctx);       // Neg Abs Sqrt Exp ...
StatusOr<Outputs> clipKernel(const KernelContext& ctx);
StatusOr<Outputs> whereKernel(const KernelContext& ctx);
StatusOr<Outputs> isNaNKernel(const KernelContext& ctx);
StatusOr<Outputs> isInfKernel(const KernelContext& ctx);

// shape_ops.cc
StatusOr<Outputs> shapeKernel(const KernelContext& ctx);
StatusOr<Outputs> sizeKernel(const KernelContext& ctx);
StatusOr<Outputs> identityKernel(const KernelContext& ctx);
StatusOr<Outputs> reshapeKernel(const KernelContext& ctx);
StatusOr<Outputs> flattenKernel(const KernelContext& ctx);
StatusOr<Outputs> squeezeKernel(const KernelContext& ctx);
StatusOr<Outputs> unsqueezeKernel(const KernelContext& ctx);
StatusOr<Outputs> transposeKernel(const KernelContext& ctx);
StatusOr<Outputs> concatKernel(const KernelContext& ctx);
StatusOr<Outputs> splitKernel(const KernelContext& ctx);
StatusOr<Outputs> sliceKernel(const KernelContext& ctx);
StatusOr<Outputs> gatherKernel(const KernelContext& ctx);
StatusOr<Outputs> gatherElementsKernel(const KernelContext& ctx);
StatusOr<Outputs> expandKernel(const KernelContext& ctx);
StatusOr<Outputs> tileKernel(const KernelContext& ctx);
StatusOr<Outputs> padKernel(const KernelContext& ctx);

// reduce.cc
StatusOr<Outputs> reduceKernel(const KernelContext& ctx);  // Reduce*
StatusOr<Outputs> argMinMaxKernel(const KernelContext& ctx);

// linalg.cc
StatusOr<Outputs> matMulKernel(const KernelContext& ctx);
StatusOr<Outputs> gemmKernel(const KernelContext& ctx);

// misc.cc
StatusOr<Outputs> castKernel(const KernelContext& ctx);  // Cast CastLike
StatusOr<Outputs> rangeKernel(const KernelContext& ctx);
StatusOr<Outputs> constantOfShapeKernel(const KernelContext& ctx);
StatusOr<Outputs> nonZeroKernel(const KernelContext& ctx);
StatusOr<Outputs> cumSumKernel(const KernelContext& ctx);
StatusOr<Outputs> oneHotKernel(const KernelContext& ctx);
StatusOr<Outputs> dequantizeLinearKernel(const KernelContext& ctx);
StatusOr<Outputs> quantizeLinearKernel(const KernelContext& ctx);

}  // namespace onnxopt::kernels::ref
