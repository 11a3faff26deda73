// The reference kernel registry: op name -> (first supported opset, kernel), input validation
// shared by every kernel, and the public entry points of reference.h plus HostTensor::zeros.
#include <algorithm>
#include <map>

#include "onnxopt/kernels/reference.h"
#include "ops.h"

namespace onnxopt::kernels {

namespace {

using ref::KernelFn;

// The newest opset whose semantics the kernels are known to follow for these ops (the versions
// after 23 only extend type lists).
constexpr int64_t kMaxOpset = 28;

struct Entry {
  int64_t min_opset;
  KernelFn fn;
};

const std::map<std::string, Entry>& registry() {
  static const std::map<std::string, Entry> table = {
      // elementwise.cc
      {"Add", {7, ref::binaryArithmetic}},
      {"Sub", {7, ref::binaryArithmetic}},
      {"Mul", {7, ref::binaryArithmetic}},
      {"Div", {7, ref::binaryArithmetic}},
      {"Mod", {10, ref::binaryArithmetic}},
      {"Pow", {7, ref::powKernel}},
      {"Min", {7, ref::variadicKernel}},
      {"Max", {7, ref::variadicKernel}},
      {"Sum", {7, ref::variadicKernel}},
      {"Mean", {7, ref::variadicKernel}},
      {"Equal", {7, ref::comparisonKernel}},
      {"Less", {7, ref::comparisonKernel}},
      {"Greater", {7, ref::comparisonKernel}},
      {"LessOrEqual", {12, ref::comparisonKernel}},
      {"GreaterOrEqual", {12, ref::comparisonKernel}},
      {"And", {7, ref::logicalKernel}},
      {"Or", {7, ref::logicalKernel}},
      {"Xor", {7, ref::logicalKernel}},
      {"Not", {1, ref::logicalKernel}},  // unchanged since opset 1
      {"BitwiseAnd", {18, ref::bitwiseKernel}},
      {"BitwiseOr", {18, ref::bitwiseKernel}},
      {"BitwiseXor", {18, ref::bitwiseKernel}},
      {"BitwiseNot", {18, ref::bitwiseKernel}},
      {"Neg", {7, ref::unaryKernel}},
      {"Abs", {7, ref::unaryKernel}},
      {"Sqrt", {7, ref::unaryKernel}},
      {"Reciprocal", {7, ref::unaryKernel}},
      {"Exp", {7, ref::unaryKernel}},
      {"Log", {7, ref::unaryKernel}},
      {"Floor", {7, ref::unaryKernel}},
      {"Ceil", {7, ref::unaryKernel}},
      {"Round", {11, ref::unaryKernel}},
      {"Sign", {9, ref::unaryKernel}},
      {"Sin", {7, ref::unaryKernel}},
      {"Cos", {7, ref::unaryKernel}},
      {"Tanh", {7, ref::unaryKernel}},
      {"Sigmoid", {7, ref::unaryKernel}},
      {"Relu", {7, ref::unaryKernel}},
      {"Erf", {9, ref::unaryKernel}},
      {"Clip", {7, ref::clipKernel}},
      {"Where", {9, ref::whereKernel}},
      {"IsNaN", {9, ref::isNaNKernel}},
      {"IsInf", {10, ref::isInfKernel}},
      // shape_ops.cc
      {"Shape", {7, ref::shapeKernel}},
      {"Size", {7, ref::sizeKernel}},
      {"Identity", {7, ref::identityKernel}},
      {"Reshape", {7, ref::reshapeKernel}},
      {"Flatten", {7, ref::flattenKernel}},
      {"Squeeze", {7, ref::squeezeKernel}},
      {"Unsqueeze", {7, ref::unsqueezeKernel}},
      {"Transpose", {7, ref::transposeKernel}},
      {"Concat", {7, ref::concatKernel}},
      {"Split", {7, ref::splitKernel}},
      {"Slice", {7, ref::sliceKernel}},
      {"Gather", {7, ref::gatherKernel}},
      {"GatherElements", {11, ref::gatherElementsKernel}},
      {"Expand", {8, ref::expandKernel}},
      {"Tile", {7, ref::tileKernel}},
      {"Pad", {7, ref::padKernel}},
      // reduce.cc
      {"ReduceSum", {7, ref::reduceKernel}},
      {"ReduceMean", {7, ref::reduceKernel}},
      {"ReduceMax", {7, ref::reduceKernel}},
      {"ReduceMin", {7, ref::reduceKernel}},
      {"ReduceProd", {7, ref::reduceKernel}},
      {"ReduceL1", {7, ref::reduceKernel}},
      {"ReduceL2", {7, ref::reduceKernel}},
      {"ReduceSumSquare", {7, ref::reduceKernel}},
      {"ReduceLogSum", {7, ref::reduceKernel}},
      {"ReduceLogSumExp", {7, ref::reduceKernel}},
      {"ArgMax", {7, ref::argMinMaxKernel}},
      {"ArgMin", {7, ref::argMinMaxKernel}},
      // linalg.cc
      {"MatMul", {7, ref::matMulKernel}},
      {"Gemm", {7, ref::gemmKernel}},
      // misc.cc
      {"Cast", {7, ref::castKernel}},
      {"CastLike", {15, ref::castKernel}},
      {"Range", {11, ref::rangeKernel}},
      {"ConstantOfShape", {9, ref::constantOfShapeKernel}},
      {"NonZero", {9, ref::nonZeroKernel}},
      {"CumSum", {11, ref::cumSumKernel}},
      {"OneHot", {9, ref::oneHotKernel}},
      {"DequantizeLinear", {10, ref::dequantizeLinearKernel}},
      {"QuantizeLinear", {10, ref::quantizeLinearKernel}},
      // nn.cc
      {"LeakyRelu", {6, ref::activationKernel}},
      {"Elu", {6, ref::activationKernel}},
      {"Selu", {6, ref::activationKernel}},
      {"Celu", {12, ref::activationKernel}},
      {"HardSigmoid", {6, ref::activationKernel}},
      {"HardSwish", {14, ref::activationKernel}},
      {"Softplus", {1, ref::activationKernel}},
      {"Softsign", {1, ref::activationKernel}},
      {"Mish", {18, ref::activationKernel}},
      {"ThresholdedRelu", {10, ref::activationKernel}},
      {"Gelu", {20, ref::activationKernel}},
      {"PRelu", {7, ref::preluKernel}},
      {"Softmax", {1, ref::softmaxKernel}},
      {"LogSoftmax", {1, ref::softmaxKernel}},
      {"Dropout", {7, ref::dropoutKernel}},
      {"Conv", {1, ref::convKernel}},
      {"ConvTranspose", {1, ref::convTransposeKernel}},
      {"MaxPool", {8, ref::poolKernel}},  // storage_order and Indices from 8
      {"AveragePool", {7, ref::poolKernel}},
      {"GlobalAveragePool", {1, ref::globalPoolKernel}},
      {"GlobalMaxPool", {1, ref::globalPoolKernel}},
      {"BatchNormalization", {7, ref::batchNormKernel}},
      // nn_norm.cc
      {"LayerNormalization", {17, ref::layerNormKernel}},
      {"RMSNormalization", {23, ref::layerNormKernel}},
      {"InstanceNormalization", {6, ref::instanceNormKernel}},
      {"GroupNormalization", {18, ref::groupNormKernel}},
      {"Attention", {23, ref::attentionKernel}},
      // nn_einsum.cc
      {"Einsum", {12, ref::einsumKernel}},
  };
  return table;
}

const Entry* findEntry(const std::string& op, int64_t opset) {
  if (opset > kMaxOpset) return nullptr;
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

bool hasReferenceKernel(const std::string& op, int64_t opset) {
  return findEntry(op, opset) != nullptr;
}

std::vector<std::string> referenceKernelOps() {
  std::vector<std::string> ops;
  for (const auto& [name, entry] : registry()) ops.push_back(name);
  return ops;  // std::map iterates in sorted order
}

StatusOr<std::vector<HostTensor>> runReferenceKernel(const std::string& op, int64_t opset,
                                                     const std::vector<const HostTensor*>& inputs,
                                                     const KernelAttrs& attrs, size_t num_outputs) {
  const Entry* entry = findEntry(op, opset);
  if (entry == nullptr) {
    return makeError(StatusCode::kUnimplemented, "no reference kernel for {} at opset {}", op,
                     opset);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr) RETURN_IF_ERROR(validateInput(op, i, *inputs[i]));
  }
  if (num_outputs == 0) return invalidArgument("{}: num_outputs is 0", op);
  ref::KernelContext ctx{op, opset, inputs, attrs, num_outputs};
  ASSIGN_OR_RETURN(std::vector<HostTensor> outputs, entry->fn(ctx));
  if (outputs.size() != num_outputs) {
    return invalidArgument("{}: the op produces {} outputs, {} requested", op, outputs.size(),
                           num_outputs);
  }
  return outputs;
}

}  // namespace onnxopt::kernels
