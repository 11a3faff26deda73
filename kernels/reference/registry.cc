// The reference kernel registry: op name -> (first supported opset, kernel, accepted element
// types), input validation shared by every kernel, the public entry points of reference.h and
// capabilities.h (referenceCapabilities), plus HostTensor::zeros.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/reference.h"
#include "ops.h"

namespace onnxopt::kernels {

namespace {

using ref::KernelFn;

// The newest opset whose semantics the kernels are known to follow for these ops (the versions
// after 23 only extend type lists).
constexpr int64_t kMaxOpset = 28;

/// The newest opset of each other domain with reference kernels; a domain not listed has none.
/// Ops of such a domain are registered by referenceOpName, e.g. "ai.onnx.ml.Binarizer", and their
/// `min_opset` counts in that domain's versions.
int64_t maxOpset(const std::string& domain) {
  if (domain.empty() || domain == "ai.onnx") return kMaxOpset;
  if (domain == "ai.onnx.ml") return 5;
  if (domain == "ai.onnx.preview.training" || domain == "ai.onnx.preview") return 1;
  if (domain == "ai.onnxopt") return 1;     // our own ops (include/onnxopt/passes/target_ops.h)
  if (domain == "com.microsoft") return 1;  // onnxruntime's contrib ops (microsoft_ops.cc)
  return 0;
}

/// The domain part of a registry name ("" for a default-domain op).
std::string domainOf(const std::string& name) {
  auto dot = name.rfind('.');
  return dot == std::string::npos ? std::string() : name.substr(0, dot);
}

/// The element types a kernel accepts, per input (and per output where it constrains one beyond
/// its inputs): what kernels::referenceCapabilities() answers from. Each list is what the kernel's
/// own type dispatch (visitType, visitFloat, checkMovable, readInts, readFloats) lets through;
/// tests/kernels/capabilities_test.cc runs every op on every type to keep the two in step.
struct Signature {
  std::vector<TypeSet> inputs = {};   ///< per input position; with `variadic` the last one repeats
  std::vector<TypeSet> outputs = {};  ///< per output position; empty: outputs follow the inputs
  bool variadic = false;
  bool channels_first = false;  ///< reads [N, C, spatial...] data: NCHW only
  /// Cast and CastLike: to the input's own type, the kernel copies any type.
  bool same_type_copies = false;
};

struct Entry {
  int64_t min_opset;
  KernelFn fn;
  Signature types;
  /// Before this opset `older_types` apply instead (Clip's attributes took floats only; Pad's
  /// attribute value converts to the element type).
  int64_t types_since = 0;
  Signature older_types = {};

  const Signature& typesAt(int64_t opset) const {
    return opset < types_since ? older_types : types;
  }
};

/// Types whose every element the kernels can visit as a C++ number (visitType).
constexpr TypeSet kVisitable = kNumericTypes | TypeSet{DataType::kBool};
constexpr TypeSet kBool = {DataType::kBool};
constexpr TypeSet kString = {DataType::kString};
/// The float8, float4 and packed integer types (low_precision.h).
constexpr TypeSet kLowPrecision = {DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ,
                                   DataType::kFloat8E5M2,   DataType::kFloat8E5M2FNUZ,
                                   DataType::kFloat8E8M0,   DataType::kFloat4E2M1,
                                   DataType::kInt4,         DataType::kUint4,
                                   DataType::kInt2,         DataType::kUint2};
/// Cast and CastLike: every number type, bool and string (string to string aside).
constexpr TypeSet kCastTypes = kVisitable | kLowPrecision | kString;
/// QuantizeLinear outputs, DequantizeLinear inputs (which also take int32).
constexpr TypeSet kQuantOutputs = {
    DataType::kInt8,           DataType::kUint8,      DataType::kInt16,
    DataType::kUint16,         DataType::kInt4,       DataType::kUint4,
    DataType::kInt2,           DataType::kUint2,      DataType::kFloat8E4M3FN,
    DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ,
    DataType::kFloat4E2M1};
constexpr TypeSet kQuantInts = kQuantOutputs | TypeSet{DataType::kInt32};
constexpr TypeSet kDequantOutputs = {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16};
/// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv operands.
constexpr TypeSet kInt8s = {DataType::kInt8, DataType::kUint8};

/// The types every kernel's input validation admits: strings and every type of known width.
TypeSet storedTypes() {
  TypeSet s = kString;
  for (int32_t c = 1; c <= kMaxKnownDataType; ++c) {
    if (dataTypeBits(static_cast<DataType>(c)) > 0) s = s | TypeSet{static_cast<DataType>(c)};
  }
  return s;
}

/// The types the data-movement kernels copy element by element: strings and byte-sized types.
TypeSet movableTypes() {
  TypeSet s;
  for (DataType t : storedTypes().types()) {
    if (ref::isMovable(t)) s = s | TypeSet{t};
  }
  return s;
}

Signature in(std::initializer_list<TypeSet> inputs) {
  return Signature{inputs};
}
Signature variadic(TypeSet each) {
  Signature s{{each}};
  s.variadic = true;
  return s;
}
Signature image(std::initializer_list<TypeSet> inputs) {
  Signature s{inputs};
  s.channels_first = true;
  return s;
}
Signature withOutputs(Signature s, std::initializer_list<TypeSet> outputs) {
  s.outputs = outputs;
  return s;
}

const std::map<std::string, Entry>& registry() {
  static const std::map<std::string, Entry> table = [] {
    const TypeSet kAny = storedTypes();
    const TypeSet kMove = movableTypes();
    // Short names, so that the table reads as a table: numeric, float, integer, index types.
    const TypeSet N = kNumericTypes, F = kFloatTypes, I = kIntTypes, X = kIndexTypes;
    const TypeSet kFloatOrSigned = kFloatTypes | kSignedIntTypes;
    Signature binary = in({N, N});
    Signature unary_float = in({F});
    Signature compare = in({N, N});
    Signature cast = withOutputs(in({kCastTypes}), {kCastTypes});
    cast.same_type_copies = true;
    Signature cast_like = withOutputs(in({kCastTypes, kCastTypes}), {kCastTypes});
    cast_like.same_type_copies = true;
    Signature reduce = in({N, X});
    const TypeSet kUnsigned = {DataType::kUint8, DataType::kUint16, DataType::kUint32,
                               DataType::kUint64};
    Signature reduce_min_max = in({N | kBool, X});
    // onnxruntime's contrib ops: their float types, and their index types.
    const TypeSet kOrtF = {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16};
    const TypeSet kI32 = {DataType::kInt32}, kI64 = {DataType::kInt64};
    return std::map<std::string, Entry>{
        // elementwise.cc
        {"Add", {7, ref::binaryArithmetic, binary}},
        {"Sub", {7, ref::binaryArithmetic, binary}},
        {"Mul", {7, ref::binaryArithmetic, binary}},
        {"Div", {7, ref::binaryArithmetic, binary}},
        {"Mod", {10, ref::binaryArithmetic, binary}},
        {"Pow", {7, ref::powKernel, binary}},
        {"Min", {7, ref::variadicKernel, variadic(N)}},
        {"Max", {7, ref::variadicKernel, variadic(N)}},
        {"Sum", {7, ref::variadicKernel, variadic(N)}},
        {"Mean", {7, ref::variadicKernel, variadic(F)}},
        {"Equal", {7, ref::comparisonKernel, in({kVisitable | kString, kVisitable | kString})}},
        {"Less", {7, ref::comparisonKernel, compare}},
        {"Greater", {7, ref::comparisonKernel, compare}},
        {"LessOrEqual", {12, ref::comparisonKernel, compare}},
        {"GreaterOrEqual", {12, ref::comparisonKernel, compare}},
        {"And", {7, ref::logicalKernel, in({kBool, kBool})}},
        {"Or", {7, ref::logicalKernel, in({kBool, kBool})}},
        {"Xor", {7, ref::logicalKernel, in({kBool, kBool})}},
        {"Not", {1, ref::logicalKernel, in({kBool})}},  // unchanged since opset 1
        {"BitwiseAnd", {18, ref::bitwiseKernel, in({I, I})}},
        {"BitwiseOr", {18, ref::bitwiseKernel, in({I, I})}},
        {"BitwiseXor", {18, ref::bitwiseKernel, in({I, I})}},
        {"BitwiseNot", {18, ref::bitwiseKernel, in({I})}},
        {"Neg", {7, ref::unaryKernel, in({kFloatOrSigned})}},
        {"Abs", {7, ref::unaryKernel, in({N})}},
        {"Sqrt", {7, ref::unaryKernel, unary_float}},
        {"Reciprocal", {7, ref::unaryKernel, unary_float}},
        {"Exp", {7, ref::unaryKernel, unary_float}},
        {"Log", {7, ref::unaryKernel, unary_float}},
        {"Floor", {7, ref::unaryKernel, unary_float}},
        {"Ceil", {7, ref::unaryKernel, unary_float}},
        {"Round", {11, ref::unaryKernel, unary_float}},
        {"Sign", {9, ref::unaryKernel, in({N})}},
        {"Sin", {7, ref::unaryKernel, unary_float}},
        {"Cos", {7, ref::unaryKernel, unary_float}},
        {"Tanh", {7, ref::unaryKernel, unary_float}},
        {"Sigmoid", {7, ref::unaryKernel, unary_float}},
        {"Relu", {7, ref::unaryKernel, in({kFloatOrSigned})}},
        {"Erf", {9, ref::unaryKernel, in({N})}},
        {"Clip", {7, ref::clipKernel, in({N, N, N}), 11, in({F})}},
        {"Where", {9, ref::whereKernel, in({kBool, kMove, kMove})}},
        {"IsNaN", {9, ref::isNaNKernel, in({F})}},
        {"IsInf", {10, ref::isInfKernel, in({F})}},
        // shape_ops.cc
        {"Shape", {7, ref::shapeKernel, in({kAny})}},
        {"Size", {7, ref::sizeKernel, in({kAny})}},
        {"Identity", {7, ref::identityKernel, in({kAny})}},
        {"Reshape", {7, ref::reshapeKernel, in({kAny, X})}},
        {"Flatten", {7, ref::flattenKernel, in({kAny})}},
        {"Squeeze", {7, ref::squeezeKernel, in({kAny, X})}},
        {"Unsqueeze", {7, ref::unsqueezeKernel, in({kAny, X})}},
        {"Transpose", {7, ref::transposeKernel, in({kMove})}},
        {"Concat", {7, ref::concatKernel, variadic(kMove)}},
        {"Split", {7, ref::splitKernel, in({kMove, X})}},
        {"Slice", {7, ref::sliceKernel, in({kMove, X, X, X, X})}},
        {"Gather", {7, ref::gatherKernel, in({kMove, X})}},
        {"GatherElements", {11, ref::gatherElementsKernel, in({kMove, X})}},
        {"Expand", {8, ref::expandKernel, in({kMove, X})}},
        {"Tile", {7, ref::tileKernel, in({kMove, X})}},
        {"Pad", {7, ref::padKernel, in({kMove, X, kMove, X}), 11, in({kVisitable | kString})}},
        // reduce.cc
        {"ReduceSum", {7, ref::reduceKernel, reduce}},
        {"ReduceMean", {7, ref::reduceKernel, reduce}},
        {"ReduceMax", {7, ref::reduceKernel, reduce_min_max}},
        {"ReduceMin", {7, ref::reduceKernel, reduce_min_max}},
        {"ReduceProd", {7, ref::reduceKernel, reduce}},
        {"ReduceL1", {7, ref::reduceKernel, reduce}},
        {"ReduceL2", {7, ref::reduceKernel, reduce}},
        {"ReduceSumSquare", {7, ref::reduceKernel, reduce}},
        {"ReduceLogSum", {7, ref::reduceKernel, reduce}},
        {"ReduceLogSumExp", {7, ref::reduceKernel, reduce}},
        {"ArgMax", {7, ref::argMinMaxKernel, in({N})}},
        {"ArgMin", {7, ref::argMinMaxKernel, in({N})}},
        // linalg.cc
        {"MatMul", {7, ref::matMulKernel, in({N, N})}},
        {"Gemm", {7, ref::gemmKernel, in({N, N, N})}},
        // misc.cc
        {"Cast", {7, ref::castKernel, cast}},
        {"CastLike", {15, ref::castKernel, cast_like}},
        {"Range", {11, ref::rangeKernel, variadic(N - TypeSet{DataType::kUint64})}},
        {"ConstantOfShape", {9, ref::constantOfShapeKernel, withOutputs(in({X}), {kMove})}},
        {"NonZero", {9, ref::nonZeroKernel, in({kVisitable})}},
        {"CumSum", {11, ref::cumSumKernel, in({N, X})}},
        {"OneHot", {9, ref::oneHotKernel, in({kVisitable, kVisitable, kMove})}},
        {"DequantizeLinear",
         {10, ref::dequantizeLinearKernel,
          withOutputs(in({kQuantInts, kDequantOutputs, kQuantInts}), {kDequantOutputs})}},
        {"QuantizeLinear",
         {10, ref::quantizeLinearKernel,
          withOutputs(in({F | TypeSet{DataType::kInt32}, F, kQuantOutputs}), {kQuantOutputs})}},
        // nn.cc
        {"LeakyRelu", {6, ref::activationKernel, unary_float}},
        {"Elu", {6, ref::activationKernel, unary_float}},
        {"Selu", {6, ref::activationKernel, unary_float}},
        {"Celu", {12, ref::activationKernel, unary_float}},
        {"HardSigmoid", {6, ref::activationKernel, unary_float}},
        {"HardSwish", {14, ref::activationKernel, unary_float}},
        {"Softplus", {1, ref::activationKernel, unary_float}},
        {"Softsign", {1, ref::activationKernel, unary_float}},
        {"Mish", {18, ref::activationKernel, unary_float}},
        {"ThresholdedRelu", {10, ref::activationKernel, unary_float}},
        {"Gelu", {20, ref::activationKernel, unary_float}},
        {"PRelu", {7, ref::preluKernel, in({N, N})}},
        {"Softmax", {1, ref::softmaxKernel, unary_float}},
        {"LogSoftmax", {1, ref::softmaxKernel, unary_float}},
        {"Dropout", {7, ref::dropoutKernel, in({kMove - kString, F, kBool})}},
        {"Conv", {1, ref::convKernel, image({F, F, F})}},
        {"ConvTranspose", {1, ref::convTransposeKernel, image({F, F, F})}},
        // storage_order and Indices from 8
        {"MaxPool", {8, ref::poolKernel, image({N})}},
        {"AveragePool", {7, ref::poolKernel, image({F})}},
        {"GlobalAveragePool", {1, ref::globalPoolKernel, image({F})}},
        {"GlobalMaxPool", {1, ref::globalPoolKernel, image({F})}},
        {"BatchNormalization", {7, ref::batchNormKernel, image({F, F, F, F, F})}},
        // nn_norm.cc
        {"LayerNormalization", {17, ref::layerNormKernel, in({F, F, F})}},
        {"RMSNormalization", {23, ref::layerNormKernel, in({F, F})}},
        {"InstanceNormalization", {6, ref::instanceNormKernel, image({F, F, F})}},
        {"GroupNormalization", {18, ref::groupNormKernel, image({F, F, F})}},
        // nonpad_kv_seqlen (input 6) from opset 24
        {"Attention",
         {23, ref::attentionKernel, in({F, F, F, F | kBool, F, F, TypeSet{DataType::kInt64}}), 24,
          in({F, F, F, F | kBool, F, F, TypeSet{}})}},
        // nn_einsum.cc
        {"Einsum", {12, ref::einsumKernel, variadic(N)}},
        // rnn.cc: X W R B sequence_lens initial_h (initial_c P)
        {"LSTM", {7, ref::recurrentKernel, in({F, F, F, F, X, F, F, F})}},
        {"GRU", {7, ref::recurrentKernel, in({F, F, F, F, X, F})}},
        {"RNN", {7, ref::recurrentKernel, in({F, F, F, F, X, F})}},
        // string_ops.cc
        {"StringConcat", {20, ref::stringConcatKernel, in({kString, kString})}},
        {"StringSplit",
         {20, ref::stringSplitKernel,
          withOutputs(in({kString}), {kString, TypeSet{DataType::kInt64}})}},
        {"StringNormalizer", {10, ref::stringNormalizerKernel, in({kString})}},
        {"RegexFullMatch", {20, ref::regexFullMatchKernel, withOutputs(in({kString}), {kBool})}},
        // resize.cc and sampling.cc (resample.h)
        {"Resize", {10, ref::resizeKernel, in({kMove, F, F, X}), 11, in({kMove, F})}},
        {"Upsample", {7, ref::resizeKernel, in({kMove, F})}},
        {"DepthToSpace", {1, ref::depthSpaceKernel, image({kMove})}},
        {"SpaceToDepth", {1, ref::depthSpaceKernel, image({kMove})}},
        {"CenterCropPad", {18, ref::centerCropPadKernel, in({kMove, X})}},
        {"GridSample", {16, ref::gridSampleKernel, image({N, F})}},
        {"AffineGrid", {20, ref::affineGridKernel, in({F, X})}},
        {"RoiAlign", {10, ref::roiAlignKernel, image({F, F, X})}},
        {"Col2Im", {18, ref::col2ImKernel, in({N, X, X})}},
        {"MaxUnpool", {9, ref::maxUnpoolKernel, image({kMove, X, X})}},
        // quantized.cc
        {"DynamicQuantizeLinear",
         {11, ref::dynamicQuantizeLinearKernel,
          withOutputs(
              in({TypeSet{DataType::kFloat}}),
              {TypeSet{DataType::kUint8}, TypeSet{DataType::kFloat}, TypeSet{DataType::kUint8}})}},
        {"MatMulInteger", {10, ref::matMulIntegerKernel, in({kInt8s, kInt8s, kInt8s, kInt8s})}},
        {"ConvInteger", {10, ref::convIntegerKernel, image({kInt8s, kInt8s, kInt8s, kInt8s})}},
        {"QLinearMatMul",
         {10, ref::qLinearMatMulKernel,
          in({kInt8s, kDequantOutputs, kInt8s, kInt8s, kDequantOutputs, kInt8s, kDequantOutputs,
              kInt8s})}},
        {"QLinearConv",
         {10, ref::qLinearConvKernel,
          image({kInt8s, kDequantOutputs, kInt8s, kInt8s, kDequantOutputs, kInt8s, kDequantOutputs,
                 kInt8s, TypeSet{DataType::kInt32}})}},
        // signal.cc
        {"HannWindow", {17, ref::windowKernel, withOutputs(in({X}), {N})}},
        {"HammingWindow", {17, ref::windowKernel, withOutputs(in({X}), {N})}},
        {"BlackmanWindow", {17, ref::windowKernel, withOutputs(in({X}), {N})}},
        {"DFT", {17, ref::dftKernel, in({F, X, X})}},
        {"STFT", {17, ref::stftKernel, in({F, X, F, X})}},
        {"MelWeightMatrix",
         {17, ref::melWeightMatrixKernel, withOutputs(in({X, X, X, F, F}), {N})}},
        // random.cc: fold-constants never folds these (pass::isNondeterministicOp)
        {"RandomNormal", {1, ref::randomKernel, withOutputs(in({}), {F})}},
        {"RandomUniform", {1, ref::randomKernel, withOutputs(in({}), {F})}},
        {"RandomNormalLike", {1, ref::randomKernel, withOutputs(in({kAny}), {F})}},
        {"RandomUniformLike", {1, ref::randomKernel, withOutputs(in({kAny}), {F})}},
        {"Bernoulli", {15, ref::bernoulliKernel, withOutputs(in({F}), {N | kBool})}},
        {"Multinomial",
         {7, ref::multinomialKernel,
          withOutputs(in({F}), {TypeSet{DataType::kInt32, DataType::kInt64}})}},
        // indexing.cc and math_extra.cc
        {"TopK", {1, ref::topKKernel, in({N, X}), 11, in({F, X})}},
        {"ScatterND", {11, ref::scatterNDKernel, in({kMove, X, kMove})}},
        {"ScatterElements", {11, ref::scatterElementsKernel, in({kMove, X, kMove})}},
        {"Scatter", {9, ref::scatterElementsKernel, in({kMove, X, kMove})}},
        {"GatherND", {11, ref::gatherNDKernel, in({kMove, X})}},
        {"Trilu", {14, ref::triluKernel, in({kMove, X})}},
        {"Compress", {9, ref::compressKernel, in({kMove, kBool})}},
        {"ReverseSequence",
         {10, ref::reverseSequenceKernel, in({kMove, TypeSet{DataType::kInt64}})}},
        {"Unique", {11, ref::uniqueKernel, in({kVisitable | kString})}},
        {"EyeLike", {9, ref::eyeLikeKernel, withOutputs(in({kVisitable}), {kVisitable})}},
        {"NonMaxSuppression", {10, ref::nonMaxSuppressionKernel, in({F, F, X, F, F})}},
        {"TensorScatter", {24, ref::tensorScatterKernel, in({kMove, kMove, X})}},
        {"Acos", {7, ref::floatMathKernel, unary_float}},
        {"Asin", {7, ref::floatMathKernel, unary_float}},
        {"Atan", {7, ref::floatMathKernel, unary_float}},
        {"Tan", {7, ref::floatMathKernel, unary_float}},
        {"Acosh", {9, ref::floatMathKernel, unary_float}},
        {"Asinh", {9, ref::floatMathKernel, unary_float}},
        {"Atanh", {9, ref::floatMathKernel, unary_float}},
        {"Cosh", {9, ref::floatMathKernel, unary_float}},
        {"Sinh", {9, ref::floatMathKernel, unary_float}},
        {"Swish", {24, ref::floatMathKernel, unary_float}},
        {"Shrink", {9, ref::shrinkKernel, in({N})}},
        {"Hardmax", {1, ref::hardmaxKernel, unary_float}},
        {"CumProd", {26, ref::cumSumKernel, in({N, X})}},
        {"Det", {11, ref::detKernel, unary_float}},
        {"LRN", {1, ref::lrnKernel, image({F})}},
        {"LpNormalization", {1, ref::lpNormalizationKernel, unary_float}},
        {"MeanVarianceNormalization", {9, ref::meanVarianceNormKernel, unary_float}},
        {"BitShift", {11, ref::bitShiftKernel, in({kUnsigned, kUnsigned})}},
        {"NegativeLogLikelihoodLoss", {12, ref::nllLossKernel, in({F, X, F})}},
        {"SoftmaxCrossEntropyLoss", {12, ref::softmaxCrossEntropyKernel, in({F, X, F})}},
        {"LpPool", {1, ref::poolKernel, image({F})}},  // nn.cc's pool kernel
        {"BitCast", {26, ref::bitCastKernel, withOutputs(in({kAny - kString}), {kAny - kString})}},
        // deform_conv.cc (X W offset B mask) and stateful.cc: every input float, float16 or
        // bfloat16 (LinearAttention's past_state, input 3, may differ from the others)
        {"DeformConv", {19, ref::deformConvKernel, image({F, F, F, F, F})}},
        {"CausalConvWithState",
         {27, ref::causalConvWithStateKernel,
          Signature{std::vector<TypeSet>(4, F - TypeSet{DataType::kDouble})}}},
        {"LinearAttention",
         {27, ref::linearAttentionKernel,
          Signature{std::vector<TypeSet>(6, F - TypeSet{DataType::kDouble})}}},
        // attention_extra.cc
        {"RotaryEmbedding", {23, ref::rotaryEmbeddingKernel, in({F, F, F, X})}},
        {"ai.onnx.preview.FlexAttention", {1, ref::flexAttentionKernel, in({F, F, F})}},
        // text.cc
        {"TfIdfVectorizer",
         {9, ref::tfIdfVectorizerKernel,
          withOutputs(in({kString | TypeSet{DataType::kInt32, DataType::kInt64}}),
                      {TypeSet{DataType::kFloat}})}},
        // target_ops.cc: ai.onnxopt, our own ops, each its function body
        {"ai.onnxopt.MatMulBias", {1, ref::matMulBiasKernel, in({F, F, F})}},
        {"ai.onnxopt.MatMulBiasRelu", {1, ref::matMulBiasKernel, in({F, F, F})}},
        {"ai.onnxopt.MatMulBiasGelu", {1, ref::matMulBiasKernel, in({F, F, F})}},
        {"ai.onnxopt.SkipLayerNormalization", {1, ref::skipLayerNormKernel, in({F, F, F, F})}},
        {"ai.onnxopt.SkipRMSNormalization", {1, ref::skipLayerNormKernel, in({F, F, F})}},
        {"ai.onnxopt.SwiGlu", {1, ref::gluKernel, in({F})}},
        {"ai.onnxopt.GeGlu", {1, ref::gluKernel, in({F})}},
        {"ai.onnxopt.NhwcConv", {1, ref::nhwcConvKernel, in({F, F, F})}},
        {"ai.onnxopt.NhwcConvRelu", {1, ref::nhwcConvKernel, in({F, F, F})}},
        {"ai.onnxopt.NhwcConvAddRelu", {1, ref::nhwcConvKernel, in({F, F, F, F})}},
        {"ai.onnxopt.NhwcMaxPool", {1, ref::nhwcPoolKernel, in({F})}},
        {"ai.onnxopt.NhwcAveragePool", {1, ref::nhwcPoolKernel, in({F})}},
        {"ai.onnxopt.SafeAttention", {1, ref::safeAttentionKernel, in({F, F, F, F})}},
        {"ai.onnxopt.SafePackedAttention", {1, ref::safePackedAttentionKernel, in({F, F})}},
        {"ai.onnxopt.SeqFirstPackedAttention", {1, ref::seqFirstPackedAttentionKernel, in({F})}},
        {"ai.onnxopt.PackedAttention", {1, ref::packedAttentionKernel, in({F})}},
        // microsoft_ops.cc, microsoft_attention.cc: onnxruntime's contrib ops; onnxruntime keeps
        // SimplifiedLayerNormalization in the default domain, at every opset
        {"SimplifiedLayerNormalization",
         {1, ref::simplifiedLayerNormKernel,
          withOutputs(in({F, F}), {F, TypeSet{DataType::kFloat}})}},
        {"com.microsoft.SkipSimplifiedLayerNormalization",
         {1, ref::skipSimplifiedLayerNormKernel, in({kOrtF, kOrtF, kOrtF, kOrtF})}},
        {"com.microsoft.RotaryEmbedding",
         {1, ref::contribRotaryEmbeddingKernel, in({kOrtF, kI64, kOrtF, kOrtF})}},
        {"com.microsoft.MatMulNBits",
         {1, ref::matMulNBitsKernel,
          in({kOrtF, TypeSet{DataType::kUint8}, kOrtF, kOrtF | TypeSet{DataType::kUint8},
              TypeSet{DataType::kInt32}, kOrtF})}},
        // query key value past_key past_value seqlens_k total_sequence_length cos_cache sin_cache
        // position_ids attention_bias head_sink
        {"com.microsoft.GroupQueryAttention",
         {1, ref::groupQueryAttentionKernel,
          in({kOrtF, kOrtF, kOrtF, kOrtF, kOrtF, kI32, kI32, kOrtF, kOrtF, kI64, kOrtF, kOrtF})}},
        // ml.cc: ai.onnx.ml, by referenceOpName, at that domain's opsets
        {"ai.onnx.ml.Binarizer",
         {1, ref::binarizerKernel,
          in({TypeSet{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32}})}},
        {"ai.onnx.ml.ArrayFeatureExtractor",
         {1, ref::arrayFeatureExtractorKernel,
          in({TypeSet{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32,
                      DataType::kString},
              TypeSet{DataType::kInt64}})}},
        {"ai.onnx.ml.LabelEncoder",
         {1, ref::labelEncoderKernel,
          in({TypeSet{DataType::kString, DataType::kInt64, DataType::kFloat, DataType::kInt32,
                      DataType::kInt16, DataType::kDouble}}),
          4, in({TypeSet{DataType::kString, DataType::kInt64, DataType::kFloat}})}},
        {"ai.onnx.ml.TreeEnsemble",
         {5, ref::treeEnsembleKernel,
          in({TypeSet{DataType::kFloat, DataType::kDouble, DataType::kFloat16}})}},
        {"ai.onnx.ml.Normalizer",
         {1, ref::normalizerKernel,
          in({TypeSet{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32}})}},
        {"ai.onnx.ml.Scaler",
         {1, ref::scalerKernel,
          in({TypeSet{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32}})}},
        {"ai.onnx.ml.Imputer",
         {1, ref::imputerKernel,
          in({TypeSet{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32}})}},
        {"ai.onnx.ml.OneHotEncoder",
         {1, ref::oneHotEncoderKernel,
          in({TypeSet{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32,
                      DataType::kString}})}},
        {"ai.onnx.ml.FeatureVectorizer",
         {1, ref::featureVectorizerKernel,
          variadic(
              TypeSet{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32})}},
        {"ai.onnx.ml.LinearRegressor",
         {1, ref::linearRegressorKernel,
          in({TypeSet{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32}})}},
        // training.cc: R (float/double), T (int64), then the optimized tensors (float/double)
        {"ai.onnx.preview.training.Adagrad",
         {1, ref::optimizerKernel,
          Signature{
              .inputs = {TypeSet{DataType::kFloat, DataType::kDouble}, TypeSet{DataType::kInt64},
                         TypeSet{DataType::kFloat, DataType::kDouble}},
              .variadic = true}}},
        {"ai.onnx.preview.training.Momentum",
         {1, ref::optimizerKernel,
          Signature{
              .inputs = {TypeSet{DataType::kFloat, DataType::kDouble}, TypeSet{DataType::kInt64},
                         TypeSet{DataType::kFloat, DataType::kDouble}},
              .variadic = true}}},
        {"ai.onnx.preview.training.Adam",
         {1, ref::optimizerKernel,
          Signature{
              .inputs = {TypeSet{DataType::kFloat, DataType::kDouble}, TypeSet{DataType::kInt64},
                         TypeSet{DataType::kFloat, DataType::kDouble}},
              .variadic = true}}},
    };
  }();
  return table;
}

const Entry* findEntry(const std::string& op, int64_t opset) {
  if (opset > maxOpset(domainOf(op))) return nullptr;
  auto it = registry().find(op);
  if (it == registry().end() || opset < it->second.min_opset) return nullptr;
  return &it->second;
}

// Every kernel relies on this: dims are non-negative and the payload matches them, so element
// reads stay in bounds.
Status validateInput(const std::string& op, size_t index, const HostTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.dims) {
    if (d < 0) return invalidArgument("{}: input {} has a negative dimension", op, index);
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return invalidArgument("{}: input {} has too many elements", op, index);
    }
    n *= d;
  }
  if (t.dtype == DataType::kString) {
    if (t.strings.size() != static_cast<uint64_t>(n)) {
      return invalidArgument("{}: input {} has {} strings for {} elements", op, index,
                             t.strings.size(), n);
    }
    return Status::ok();
  }
  if (dataTypeBits(t.dtype) == 0) {
    return makeError(StatusCode::kUnimplemented, "{}: input {} has unsupported element type {}", op,
                     index, dataTypeName(t.dtype));
  }
  auto expected = dataTypeStorageBytes(t.dtype, static_cast<uint64_t>(n));
  if (!expected) return invalidArgument("{}: input {} has a byte size that overflows", op, index);
  if (t.bytes.size() != *expected) {
    return invalidArgument("{}: input {} has {} bytes, expected {}", op, index, t.bytes.size(),
                           *expected);
  }
  return Status::ok();
}

}  // namespace

HostTensor HostTensor::zeros(DataType dtype, std::vector<int64_t> dims) {
  HostTensor t;
  t.dtype = dtype;
  uint64_t n = 1;
  for (int64_t d : dims) n *= d > 0 ? static_cast<uint64_t>(d) : 0;
  t.dims = std::move(dims);
  if (dtype == DataType::kString) {
    t.strings.assign(static_cast<size_t>(n), std::string());
  } else {
    auto bytes = dataTypeStorageBytes(dtype, n);
    ONNXOPT_CHECK(bytes.has_value(), "HostTensor::zeros: the byte size overflows");
    t.bytes.assign(static_cast<size_t>(*bytes), '\0');
  }
  return t;
}

std::string referenceOpName(const std::string& domain, const std::string& op) {
  return domain.empty() || domain == "ai.onnx" ? op : domain + "." + op;
}

namespace {

/// Plugin kernels, by referenceOpName. Registered at start-up (plugin loading), read by every
/// kernel call: a reader-writer lock would do, a mutex is simpler and uncontended in practice.
std::mutex& pluginMutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::shared_ptr<const ReferencePluginKernel>>& pluginKernels() {
  static std::map<std::string, std::shared_ptr<const ReferencePluginKernel>> kernels;
  return kernels;
}

std::shared_ptr<const ReferencePluginKernel> findPluginKernel(const std::string& name,
                                                              int64_t opset) {
  std::lock_guard<std::mutex> lock(pluginMutex());
  auto it = pluginKernels().find(name);
  if (it == pluginKernels().end() || opset < it->second->since) return nullptr;
  return it->second;
}

}  // namespace

Status registerReferenceKernel(ReferencePluginKernel kernel) {
  if (kernel.domain.empty() || kernel.domain == "ai.onnx" || maxOpset(kernel.domain) > 0) {
    return invalidArgument(
        "reference kernel {}.{}: a plugin registers ops of its own domain, not "
        "'{}'",
        kernel.domain, kernel.op, kernel.domain);
  }
  if (kernel.op.empty() || !kernel.run) {
    return invalidArgument("reference kernel {}.{}: needs an op name and a run function",
                           kernel.domain, kernel.op);
  }
  std::string name = referenceOpName(kernel.domain, kernel.op);
  std::lock_guard<std::mutex> lock(pluginMutex());
  auto [it, inserted] =
      pluginKernels().emplace(name, std::make_shared<const ReferencePluginKernel>(kernel));
  if (!inserted) return invalidArgument("reference kernel {}: registered twice", name);
  return Status::ok();
}

bool hasReferenceKernel(const std::string& op, int64_t opset) {
  return findEntry(op, opset) != nullptr || findPluginKernel(op, opset) != nullptr;
}

std::vector<std::string> referenceKernelOps() {
  std::vector<std::string> ops;
  for (const auto& [name, entry] : registry()) ops.push_back(name);
  {
    std::lock_guard<std::mutex> lock(pluginMutex());
    for (const auto& [name, kernel] : pluginKernels()) ops.push_back(name);
  }
  std::sort(ops.begin(), ops.end());
  return ops;
}

namespace {

/// The types the signature allows at input `i`: the list's, the last one's for a variadic op;
/// nullopt past the list (the kernel ignores such inputs).
std::optional<TypeSet> inputTypes(const Signature& sig, size_t i) {
  if (i < sig.inputs.size()) return sig.inputs[i];
  if (sig.variadic && !sig.inputs.empty()) return sig.inputs.back();
  return std::nullopt;
}

class ReferenceCapabilities final : public Capabilities {
 public:
  const char* name() const override { return "reference"; }

  Support supports(const OpQuery& q) const override {
    const std::string name = referenceOpName(q.domain, q.op);
    const std::string domain = domainOf(name);
    if (auto plugin = findPluginKernel(name, q.opset)) {
      for (size_t i = 0; i < q.inputs.size() && !plugin->inputs.empty(); ++i) {
        TypeSet allowed = plugin->inputs[std::min(i, plugin->inputs.size() - 1)];
        if (q.inputs[i] != DataType::kUndefined && !allowed.contains(q.inputs[i])) {
          return Support::no(fmt::format("{}: input {} is {}; the plugin's kernel takes {}", q.op,
                                         i, dataTypeName(q.inputs[i]), allowed.toString()));
        }
      }
      return Support::yes();
    }
    if (maxOpset(domain) == 0) {
      return Support::no(fmt::format("domain '{}' has no reference kernels", domain));
    }
    auto it = registry().find(name);
    if (it == registry().end()) return Support::no("no reference kernel for " + name);
    const Entry& e = it->second;
    if (q.opset < e.min_opset || q.opset > maxOpset(domain)) {
      return Support::no(
          fmt::format("no reference kernel for {} at opset {} (it covers opsets {} "
                      "to {})",
                      name, q.opset, e.min_opset, maxOpset(domain)));
    }
    const Signature& sig = e.typesAt(q.opset);
    if (sig.channels_first && q.layout == Layout::kNHWC) {
      return Support::no(
          fmt::format("{}: the reference kernel reads channels-first (NCHW) data, not NHWC", q.op));
    }
    if (sig.same_type_copies && copiesOwnType(q)) return Support::yes();
    for (size_t i = 0; i < q.inputs.size(); ++i) {
      DataType t = q.inputs[i];
      auto allowed = inputTypes(sig, i);
      if (t == DataType::kUndefined || !allowed || allowed->contains(t)) continue;
      if (allowed->empty()) {
        return Support::no(fmt::format("{}: the reference kernel does not take input {}", q.op, i));
      }
      return Support::no(fmt::format("{}: input {} is {}; the reference kernel takes {}", q.op, i,
                                     dataTypeName(t), allowed->toString()));
    }
    for (size_t i = 0; i < q.outputs.size() && i < sig.outputs.size(); ++i) {
      DataType t = q.outputs[i];
      if (t == DataType::kUndefined || sig.outputs[i].contains(t)) continue;
      return Support::no(fmt::format("{}: output {} is {}; the reference kernel produces {}", q.op,
                                     i, dataTypeName(t), sig.outputs[i].toString()));
    }
    return Support::yes();
  }

 private:
  /// Cast/CastLike to input 0's own type (or to a type not known): every type the kernels store.
  static bool copiesOwnType(const OpQuery& q) {
    if (q.inputs.empty() || q.inputs[0] == DataType::kUndefined) return false;
    DataType target = !q.outputs.empty() ? q.outputs[0] : DataType::kUndefined;
    if (target == DataType::kUndefined && q.op == "CastLike" && q.inputs.size() > 1) {
      target = q.inputs[1];
    }
    if (target != DataType::kUndefined && target != q.inputs[0]) return false;
    static const TypeSet kStored = storedTypes();
    return kStored.contains(q.inputs[0]);
  }
};

}  // namespace

const Capabilities& referenceCapabilities() {
  static const ReferenceCapabilities caps;
  return caps;
}

StatusOr<std::vector<HostTensor>> runReferenceKernel(const std::string& op, int64_t opset,
                                                     const std::vector<const HostTensor*>& inputs,
                                                     const KernelAttrs& attrs, size_t num_outputs) {
  const Entry* entry = findEntry(op, opset);
  std::shared_ptr<const ReferencePluginKernel> plugin =
      entry == nullptr ? findPluginKernel(op, opset) : nullptr;
  if (entry == nullptr && plugin == nullptr) {
    return makeError(StatusCode::kUnimplemented, "no reference kernel for {} at opset {}", op,
                     opset);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr) RETURN_IF_ERROR(validateInput(op, i, *inputs[i]));
  }
  if (num_outputs == 0) return invalidArgument("{}: num_outputs is 0", op);
  std::vector<HostTensor> outputs;
  if (plugin != nullptr) {
    ASSIGN_OR_RETURN(outputs, plugin->run(inputs, attrs, num_outputs));
  } else {
    ref::KernelContext ctx{op, opset, inputs, attrs, num_outputs};
    ASSIGN_OR_RETURN(outputs, entry->fn(ctx));
  }
  if (outputs.size() != num_outputs) {
    return invalidArgument("{}: the op produces {} outputs, {} requested", op, outputs.size(),
                           num_outputs);
  }
  return outputs;
}

}  // namespace onnxopt::kernels
