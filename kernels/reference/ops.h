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

// target_ops.cc: ai.onnxopt
StatusOr<Outputs> matMulBiasKernel(const KernelContext& ctx);     // MatMulBias MatMulBiasRelu/Gelu
StatusOr<Outputs> skipLayerNormKernel(const KernelContext& ctx);  // and SkipRMSNormalization
StatusOr<Outputs> gluKernel(const KernelContext& ctx);            // SwiGlu, GeGlu
StatusOr<Outputs> safeAttentionKernel(const KernelContext& ctx);
StatusOr<Outputs> safePackedAttentionKernel(const KernelContext& ctx);
StatusOr<Outputs> seqFirstPackedAttentionKernel(const KernelContext& ctx);
StatusOr<Outputs> packedAttentionKernel(const KernelContext& ctx);
StatusOr<Outputs> nhwcConvKernel(const KernelContext& ctx);  // NhwcConv, NhwcConvRelu/AddRelu
StatusOr<Outputs> nhwcPoolKernel(const KernelContext& ctx);  // NhwcMaxPool, NhwcAveragePool

// microsoft_ops.cc and microsoft_attention.cc: onnxruntime's contrib ops (com.microsoft 1)
StatusOr<Outputs> simplifiedLayerNormKernel(const KernelContext& ctx);  // default domain
StatusOr<Outputs> skipSimplifiedLayerNormKernel(const KernelContext& ctx);
StatusOr<Outputs> contribRotaryEmbeddingKernel(const KernelContext& ctx);
StatusOr<Outputs> matMulNBitsKernel(const KernelContext& ctx);
StatusOr<Outputs> groupQueryAttentionKernel(const KernelContext& ctx);
/// Fails (kUnimplemented) unless `t` is float, float16 or bfloat16: the contrib ops' float types.
Status requireContribFloat(const KernelContext& ctx, DataType t);
/// Rotates the first `rot` features of one head in place by the angles of a cache row:
/// y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin (halves, or even and odd features when
/// interleaved).
void rotateHead(double* x, const double* cos_row, const double* sin_row, int64_t rot,
                bool interleaved);

// misc.cc
StatusOr<Outputs> castKernel(const KernelContext& ctx);  // Cast CastLike
StatusOr<Outputs> rangeKernel(const KernelContext& ctx);
StatusOr<Outputs> constantOfShapeKernel(const KernelContext& ctx);
StatusOr<Outputs> nonZeroKernel(const KernelContext& ctx);
StatusOr<Outputs> cumSumKernel(const KernelContext& ctx);  // CumSum CumProd
StatusOr<Outputs> oneHotKernel(const KernelContext& ctx);
StatusOr<Outputs> dequantizeLinearKernel(const KernelContext& ctx);
StatusOr<Outputs> quantizeLinearKernel(const KernelContext& ctx);

// nn.cc
StatusOr<Outputs> activationKernel(const KernelContext& ctx);  // LeakyRelu Elu Selu Gelu ...
StatusOr<Outputs> preluKernel(const KernelContext& ctx);
StatusOr<Outputs> softmaxKernel(const KernelContext& ctx);  // Softmax LogSoftmax
StatusOr<Outputs> dropoutKernel(const KernelContext& ctx);
StatusOr<Outputs> convKernel(const KernelContext& ctx);
StatusOr<Outputs> convTransposeKernel(const KernelContext& ctx);
StatusOr<Outputs> poolKernel(const KernelContext& ctx);        // MaxPool AveragePool
StatusOr<Outputs> globalPoolKernel(const KernelContext& ctx);  // GlobalAveragePool GlobalMaxPool
StatusOr<Outputs> batchNormKernel(const KernelContext& ctx);

// nn_norm.cc
StatusOr<Outputs> layerNormKernel(const KernelContext& ctx);  // LayerNormalization RMSNormalization
StatusOr<Outputs> instanceNormKernel(const KernelContext& ctx);
StatusOr<Outputs> groupNormKernel(const KernelContext& ctx);
StatusOr<Outputs> attentionKernel(const KernelContext& ctx);

// nn_einsum.cc
StatusOr<Outputs> einsumKernel(const KernelContext& ctx);

// rnn.cc
StatusOr<Outputs> recurrentKernel(const KernelContext& ctx);  // LSTM GRU RNN
// resize.cc and sampling.cc
StatusOr<Outputs> resizeKernel(const KernelContext& ctx);      // Resize Upsample
StatusOr<Outputs> depthSpaceKernel(const KernelContext& ctx);  // DepthToSpace SpaceToDepth
StatusOr<Outputs> centerCropPadKernel(const KernelContext& ctx);
StatusOr<Outputs> gridSampleKernel(const KernelContext& ctx);
StatusOr<Outputs> affineGridKernel(const KernelContext& ctx);
StatusOr<Outputs> roiAlignKernel(const KernelContext& ctx);
StatusOr<Outputs> col2ImKernel(const KernelContext& ctx);
StatusOr<Outputs> maxUnpoolKernel(const KernelContext& ctx);
// quantized.cc
StatusOr<Outputs> dynamicQuantizeLinearKernel(const KernelContext& ctx);
StatusOr<Outputs> matMulIntegerKernel(const KernelContext& ctx);
StatusOr<Outputs> convIntegerKernel(const KernelContext& ctx);
StatusOr<Outputs> qLinearMatMulKernel(const KernelContext& ctx);
StatusOr<Outputs> qLinearConvKernel(const KernelContext& ctx);

// signal.cc
// HannWindow HammingWindow BlackmanWindow
StatusOr<Outputs> windowKernel(const KernelContext& ctx);
StatusOr<Outputs> dftKernel(const KernelContext& ctx);
StatusOr<Outputs> stftKernel(const KernelContext& ctx);
StatusOr<Outputs> melWeightMatrixKernel(const KernelContext& ctx);

// random.cc (run only, never folded)
StatusOr<Outputs> randomKernel(const KernelContext& ctx);  // RandomNormal RandomUniform (and *Like)
StatusOr<Outputs> bernoulliKernel(const KernelContext& ctx);
StatusOr<Outputs> multinomialKernel(const KernelContext& ctx);
// indexing.cc
StatusOr<Outputs> topKKernel(const KernelContext& ctx);
StatusOr<Outputs> scatterNDKernel(const KernelContext& ctx);
StatusOr<Outputs> scatterElementsKernel(const KernelContext& ctx);  // ScatterElements Scatter
StatusOr<Outputs> gatherNDKernel(const KernelContext& ctx);
StatusOr<Outputs> triluKernel(const KernelContext& ctx);
StatusOr<Outputs> compressKernel(const KernelContext& ctx);
StatusOr<Outputs> reverseSequenceKernel(const KernelContext& ctx);
StatusOr<Outputs> uniqueKernel(const KernelContext& ctx);
StatusOr<Outputs> eyeLikeKernel(const KernelContext& ctx);
StatusOr<Outputs> nonMaxSuppressionKernel(const KernelContext& ctx);
StatusOr<Outputs> tensorScatterKernel(const KernelContext& ctx);

// math_extra.cc
StatusOr<Outputs> floatMathKernel(const KernelContext& ctx);  // Acos ... Tan, Swish
StatusOr<Outputs> shrinkKernel(const KernelContext& ctx);
StatusOr<Outputs> hardmaxKernel(const KernelContext& ctx);
StatusOr<Outputs> detKernel(const KernelContext& ctx);
StatusOr<Outputs> lrnKernel(const KernelContext& ctx);
StatusOr<Outputs> lpNormalizationKernel(const KernelContext& ctx);
StatusOr<Outputs> meanVarianceNormKernel(const KernelContext& ctx);
StatusOr<Outputs> bitShiftKernel(const KernelContext& ctx);
StatusOr<Outputs> bitCastKernel(const KernelContext& ctx);
StatusOr<Outputs> nllLossKernel(const KernelContext& ctx);
StatusOr<Outputs> softmaxCrossEntropyKernel(const KernelContext& ctx);

// attention_extra.cc
StatusOr<Outputs> rotaryEmbeddingKernel(const KernelContext& ctx);
StatusOr<Outputs> flexAttentionKernel(const KernelContext& ctx);  // ai.onnx.preview

// --- helpers shared by nn.cc and nn_norm.cc
// ---------------------------------------------------------

/// Like visitType, for the float element types only (others are kUnimplemented).
template <typename F>
Status visitFloat(const KernelContext& ctx, DataType type, F&& f) {
  return visitType(ctx, type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsFloat<T>) {
      return unsupportedType(ctx, type);
    } else {
      return f(tag);
    }
  });
}

/// All elements of t (of element type T) in its compute type.
template <typename T>
std::vector<Compute<T>> loadAll(const HostTensor& t) {
  std::vector<Compute<T>> v(static_cast<size_t>(t.numElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = load<T>(t, static_cast<int64_t>(i));
  return v;
}

/// Stores v into t (of element type T), rounding once.
template <typename T>
void storeAll(HostTensor& t, const std::vector<Compute<T>>& v) {
  for (size_t i = 0; i < v.size(); ++i) store<T>(t, static_cast<int64_t>(i), v[i]);
}

/// The elements of a float tensor of any float element type, converted to A.
template <typename A>
StatusOr<std::vector<A>> readFloats(const KernelContext& ctx, const HostTensor& t) {
  std::vector<A> v(static_cast<size_t>(t.numElements()));
  RETURN_IF_ERROR(visitFloat(ctx, t.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<A>(load<T>(t, static_cast<int64_t>(i)));
    return Status::ok();
  }));
  return v;
}

// deform_conv.cc and stateful.cc
StatusOr<Outputs> deformConvKernel(const KernelContext& ctx);
StatusOr<Outputs> causalConvWithStateKernel(const KernelContext& ctx);
StatusOr<Outputs> linearAttentionKernel(const KernelContext& ctx);

// string_ops.cc
StatusOr<Outputs> stringConcatKernel(const KernelContext& ctx);
StatusOr<Outputs> stringSplitKernel(const KernelContext& ctx);
StatusOr<Outputs> stringNormalizerKernel(const KernelContext& ctx);
StatusOr<Outputs> regexFullMatchKernel(const KernelContext& ctx);

// text.cc
StatusOr<Outputs> tfIdfVectorizerKernel(const KernelContext& ctx);

// ml.cc (ai.onnx.ml)
StatusOr<Outputs> binarizerKernel(const KernelContext& ctx);
StatusOr<Outputs> arrayFeatureExtractorKernel(const KernelContext& ctx);
StatusOr<Outputs> labelEncoderKernel(const KernelContext& ctx);
StatusOr<Outputs> treeEnsembleKernel(const KernelContext& ctx);
StatusOr<Outputs> normalizerKernel(const KernelContext& ctx);
StatusOr<Outputs> scalerKernel(const KernelContext& ctx);
StatusOr<Outputs> imputerKernel(const KernelContext& ctx);
StatusOr<Outputs> oneHotEncoderKernel(const KernelContext& ctx);
StatusOr<Outputs> featureVectorizerKernel(const KernelContext& ctx);
StatusOr<Outputs> linearRegressorKernel(const KernelContext& ctx);
// training.cc (ai.onnx.preview.training)
StatusOr<Outputs> optimizerKernel(const KernelContext& ctx);  // Adagrad Momentum Adam

}  // namespace onnxopt::kernels::ref
