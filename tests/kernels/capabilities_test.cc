// Tests of kernels::referenceCapabilities() and TensorView. The capability table must tell the
// truth about the kernels: for every registered op, a tiny valid case is run with each element
// type in each of its type roles; a type the query accepts must run, and a type it refuses must be
// refused by the kernel too (kUnimplemented; kInvalidArgument where an index or condition input
// of another type breaks the op's contract).
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/kernels/tensor_view.h"
#include "test_tensors.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;
using Roles = std::vector<DataType>;

/// A tensor of `type` holding `values` (strings "1", "2" for a string tensor; zero bytes for the
/// types without numbers: the kernels only move or refuse those).
HostTensor tensorOf(DataType type, const Dims& dims, const std::vector<double>& values) {
  HostTensor t = test::tensorOf(type, dims, values);
  if (type == DataType::kString) {
    for (size_t j = 0; j < values.size() && j < t.strings.size(); ++j) {
      t.strings[j] = std::to_string(static_cast<int64_t>(values[j]));
    }
  }
  return t;
}

/// One input of a case: its type role (an index into the case's roles), shape and values.
struct In {
  int role;
  Dims dims;
  std::vector<double> values;
};

/// A tiny valid invocation of an op whose element types are roles ("T", "Tind"): every role
/// starts at its default, and the sweep swaps one role's type at a time.
struct Case {
  std::string op;
  int64_t opset;
  Roles defaults;
  std::vector<In> inputs;
  std::function<KernelAttrs(const Roles&)> attrs = [](const Roles&) { return KernelAttrs{}; };
  size_t num_outputs = 1;
  std::vector<int> output_roles = {};  ///< roles of outputs the query is told about
  std::set<int> contract_roles = {};   ///< another type there is kInvalidArgument
};

KernelAttrs intAttrs(std::map<std::string, int64_t> ints) {
  KernelAttrs a;
  a.ints = std::move(ints);
  return a;
}
std::function<KernelAttrs(const Roles&)> fixed(KernelAttrs a) {
  return [a](const Roles&) { return a; };
}

constexpr DataType kF = DataType::kFloat;
constexpr DataType kI64 = DataType::kInt64;
constexpr DataType kB = DataType::kBool;

std::vector<Case> cases() {
  std::vector<Case> out;
  auto unary = [&](const std::string& op, int64_t opset, DataType t = kF) {
    out.push_back({op, opset, {t}, {{0, {2}, {1, 2}}}});
  };
  auto binary = [&](const std::string& op, int64_t opset, DataType t = kF) {
    out.push_back({op, opset, {t}, {{0, {2}, {1, 2}}, {0, {2}, {1, 2}}}});
  };
  // elementwise.cc
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Min", "Max", "Sum", "Mean", "Equal", "Less",
                         "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    binary(op, 18);
  }
  out.push_back(
      {"Mod", 18, {kF}, {{0, {2}, {1, 2}}, {0, {2}, {1, 2}}}, fixed(intAttrs({{"fmod", 1}}))});
  out.push_back({"Pow", 18, {kF, kF}, {{0, {2}, {1, 2}}, {1, {2}, {1, 2}}}});
  for (const char* op : {"And", "Or", "Xor"}) binary(op, 18, kB);
  unary("Not", 18, kB);
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) binary(op, 18, DataType::kInt32);
  unary("BitwiseNot", 18, DataType::kInt32);
  for (const char* op :
       {"Neg", "Abs", "Sqrt", "Reciprocal", "Exp", "Log", "Floor", "Ceil", "Round", "Sign", "Sin",
        "Cos", "Tanh", "Sigmoid", "Relu", "Erf", "IsNaN", "IsInf"}) {
    unary(op, 18);
  }
  out.push_back({"Clip", 13, {kF}, {{0, {2}, {1, 2}}, {0, {}, {0}}, {0, {}, {3}}}});
  unary("Clip", 7);  // min/max attributes: floats only
  out.push_back({"Where",
                 18,
                 {kF, kB},
                 {{1, {2}, {1, 0}}, {0, {2}, {1, 2}}, {0, {2}, {3, 4}}},
                 fixed({}),
                 1,
                 {},
                 {1}});
  // shape_ops.cc
  for (const char* op : {"Shape", "Size", "Identity"}) unary(op, 18);
  out.push_back({"Flatten", 18, {kF}, {{0, {2, 1}, {1, 2}}}});
  out.push_back({"Transpose", 18, {kF}, {{0, {1, 2}, {1, 2}}}});
  auto with_index = [&](const std::string& op, int64_t opset, std::vector<In> inputs,
                        KernelAttrs attrs = {}, size_t outputs = 1) {
    out.push_back(
        {op, opset, {kF, kI64}, std::move(inputs), fixed(std::move(attrs)), outputs, {}, {1}});
  };
  with_index("Reshape", 18, {{0, {2}, {1, 2}}, {1, {1}, {2}}});
  with_index("Squeeze", 18, {{0, {1, 2}, {1, 2}}, {1, {1}, {0}}});
  with_index("Unsqueeze", 18, {{0, {2}, {1, 2}}, {1, {1}, {0}}});
  out.push_back(
      {"Concat", 18, {kF}, {{0, {2}, {1, 2}}, {0, {2}, {3, 4}}}, fixed(intAttrs({{"axis", 0}}))});
  with_index("Split", 18, {{0, {2}, {1, 2}}, {1, {2}, {1, 1}}}, intAttrs({{"axis", 0}}), 2);
  with_index("Slice", 18,
             {{0, {2}, {1, 2}}, {1, {1}, {0}}, {1, {1}, {1}}, {1, {1}, {0}}, {1, {1}, {1}}});
  with_index("Gather", 18, {{0, {2}, {1, 2}}, {1, {1}, {0}}});
  with_index("GatherElements", 18, {{0, {2}, {1, 2}}, {1, {1}, {0}}});
  with_index("Expand", 18, {{0, {1}, {1}}, {1, {1}, {2}}});
  with_index("Tile", 18, {{0, {1}, {1}}, {1, {1}, {2}}});
  with_index("Pad", 18, {{0, {1}, {1}}, {1, {2}, {1, 1}}, {0, {}, {0}}, {1, {1}, {0}}});
  {
    KernelAttrs pads;
    pads.int_lists["pads"] = {1, 1};
    out.push_back({"Pad", 7, {kF}, {{0, {1}, {1}}}, fixed(pads)});
  }
  // reduce.cc
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    with_index(op, 18, {{0, {2}, {1, 2}}, {1, {1}, {0}}});
  }
  unary("ArgMax", 18);
  unary("ArgMin", 18);
  // linalg.cc
  out.push_back({"MatMul", 18, {kF}, {{0, {1, 1}, {2}}, {0, {1, 1}, {3}}}});
  out.push_back({"Gemm", 18, {kF}, {{0, {1, 1}, {2}}, {0, {1, 1}, {3}}, {0, {1}, {1}}}});
  // misc.cc
  out.push_back({"Cast",
                 18,
                 {kF, kI64},
                 {{0, {2}, {1, 2}}},
                 [](const Roles& r) {
                   return intAttrs({{"to", static_cast<int64_t>(r[1])}});
                 },
                 1,
                 {1}});
  out.push_back({"CastLike", 18, {kF, kI64}, {{0, {2}, {1, 2}}, {1, {1}, {0}}}, fixed({}), 1, {1}});
  out.push_back({"Range", 18, {kF}, {{0, {}, {0}}, {0, {}, {2}}, {0, {}, {1}}}});
  out.push_back({"ConstantOfShape",
                 18,
                 {kF, kI64},
                 {{1, {1}, {2}}},
                 [](const Roles& r) {
                   KernelAttrs a;
                   a.tensors["value"] = tensorOf(r[0], {1}, {1});
                   return a;
                 },
                 1,
                 {0},
                 {1}});
  out.push_back({"NonZero", 18, {kF}, {{0, {2}, {1, 0}}}});
  out.push_back(
      {"CumSum", 18, {kF, kI64}, {{0, {2}, {1, 2}}, {1, {}, {0}}}, fixed({}), 1, {}, {1}});
  out.push_back({"OneHot", 18, {kF, kI64, kI64}, {{1, {1}, {0}}, {2, {}, {2}}, {0, {2}, {0, 1}}}});
  out.push_back({"DequantizeLinear",
                 19,
                 {kF, DataType::kInt8},
                 {{1, {2}, {1, 2}}, {0, {}, {0.5}}, {1, {}, {0}}},
                 fixed({}),
                 1,
                 {0}});
  out.push_back({"QuantizeLinear",
                 19,
                 {kF, DataType::kUint8, kF},
                 {{0, {2}, {1, 2}}, {2, {}, {0.5}}, {1, {}, {0}}},
                 fixed({}),
                 1,
                 {1}});
  // nn.cc
  for (const char* op : {"LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus",
                         "Softsign", "Mish", "ThresholdedRelu"}) {
    unary(op, 18);
  }
  unary("Gelu", 20);
  out.push_back({"PRelu", 18, {kF}, {{0, {2}, {-1, 2}}, {0, {1}, {0.5}}}});
  out.push_back({"Softmax", 18, {kF}, {{0, {1, 2}, {1, 2}}}});
  out.push_back({"LogSoftmax", 18, {kF}, {{0, {1, 2}, {1, 2}}}});
  out.push_back({"Dropout",
                 18,
                 {kF, kF, kB},
                 {{0, {2}, {1, 2}}, {1, {}, {0.5}}, {2, {}, {0}}},
                 fixed({}),
                 1,
                 {},
                 {2}});
  const Dims image = {1, 1, 2, 2};
  const std::vector<double> pixels = {1, 2, 3, 4};
  out.push_back({"Conv", 18, {kF}, {{0, image, pixels}, {0, {1, 1, 1, 1}, {2}}, {0, {1}, {1}}}});
  out.push_back(
      {"ConvTranspose", 18, {kF}, {{0, image, pixels}, {0, {1, 1, 1, 1}, {2}}, {0, {1}, {1}}}});
  KernelAttrs window;
  window.int_lists["kernel_shape"] = {1, 1};
  out.push_back({"MaxPool", 18, {kF}, {{0, image, pixels}}, fixed(window)});
  out.push_back({"AveragePool", 18, {kF}, {{0, image, pixels}}, fixed(window)});
  out.push_back({"GlobalAveragePool", 18, {kF}, {{0, image, pixels}}});
  out.push_back({"GlobalMaxPool", 18, {kF}, {{0, image, pixels}}});
  out.push_back(
      {"BatchNormalization",
       15,
       {kF, kF, kF},
       {{0, {1, 1, 2}, {1, 2}}, {1, {1}, {1}}, {1, {1}, {0}}, {2, {1}, {0}}, {2, {1}, {1}}}});
  // nn_norm.cc
  out.push_back({"LayerNormalization",
                 18,
                 {kF, kF},
                 {{0, {1, 2}, {1, 2}}, {1, {2}, {1, 1}}, {1, {2}, {0, 0}}}});
  out.push_back({"RMSNormalization", 23, {kF, kF}, {{0, {1, 2}, {1, 2}}, {1, {2}, {1, 1}}}});
  // target_ops.cc: our own ops, ai.onnxopt 1
  for (const char* op : {"MatMulBias", "MatMulBiasRelu", "MatMulBiasGelu"}) {
    out.push_back({std::string("ai.onnxopt.") + op,
                   1,
                   {kF},
                   {{0, {1, 2}, {1, 2}}, {0, {2, 1}, {1, 1}}, {0, {1}, {0.5}}}});
  }
  out.push_back({"ai.onnxopt.SkipLayerNormalization",
                 1,
                 {kF},
                 {{0, {1, 2}, {1, 2}}, {0, {1, 2}, {0, 1}}, {0, {2}, {1, 1}}, {0, {2}, {0, 0}}},
                 [](const Roles&) { return KernelAttrs{}; },
                 2});
  out.push_back({"ai.onnxopt.SkipRMSNormalization",
                 1,
                 {kF},
                 {{0, {1, 2}, {1, 2}}, {0, {1, 2}, {0, 1}}, {0, {2}, {1, 1}}},
                 [](const Roles&) { return KernelAttrs{}; },
                 2});
  // The gated activations: A [1, 4], its halves the gate and the up projection.
  for (const char* op : {"SwiGlu", "GeGlu"}) {
    out.push_back({std::string("ai.onnxopt.") + op, 1, {kF}, {{0, {1, 4}, {1, -2, 3, 0.5}}}});
  }
  auto one_head = [](const Roles&) {
    KernelAttrs a;
    a.ints["num_heads"] = 1;
    a.floats["scale"] = 1.0f;
    return a;
  };
  // SafeAttention: Q, K, V [1, 1, 2] (one head of 2), M [1, 1, 1, 1].
  out.push_back({"ai.onnxopt.SafeAttention",
                 1,
                 {kF},
                 {{0, {1, 1, 2}, {1, 2}},
                  {0, {1, 1, 2}, {0, 1}},
                  {0, {1, 1, 2}, {1, 1}},
                  {0, {1, 1, 1, 1}, {0}}},
                 one_head});
  // SafePackedAttention: QKV [1, 1, 6] (Q, K, V of one head of 2), M [1, 1, 1, 1].
  out.push_back({"ai.onnxopt.SafePackedAttention",
                 1,
                 {kF},
                 {{0, {1, 1, 6}, {1, 2, 0, 1, 1, 1}}, {0, {1, 1, 1, 1}, {0}}},
                 one_head});
  // SeqFirstPackedAttention, PackedAttention: QKV [1, 1, 6] (S = B = 1: Q, K, V of one head
  // of 2).
  for (const char* op : {"SeqFirstPackedAttention", "PackedAttention"}) {
    out.push_back(
        {std::string("ai.onnxopt.") + op, 1, {kF}, {{0, {1, 1, 6}, {1, 2, 0, 1, 1, 1}}}, one_head});
  }
  // The channels-last forms: X [1, 2, 2, 1] (NHWC), W [1, 1, 1, 1], B, Z.
  const Dims nhwc = {1, 2, 2, 1};
  for (const char* op : {"NhwcConv", "NhwcConvRelu"}) {
    out.push_back({std::string("ai.onnxopt.") + op,
                   1,
                   {kF},
                   {{0, nhwc, pixels}, {0, {1, 1, 1, 1}, {2}}, {0, {1}, {1}}}});
  }
  out.push_back({"ai.onnxopt.NhwcConvAddRelu",
                 1,
                 {kF},
                 {{0, nhwc, pixels}, {0, {1, 1, 1, 1}, {2}}, {0, {1}, {1}}, {0, nhwc, pixels}}});
  out.push_back({"ai.onnxopt.NhwcMaxPool", 1, {kF}, {{0, nhwc, pixels}}, fixed(window)});
  out.push_back({"ai.onnxopt.NhwcAveragePool", 1, {kF}, {{0, nhwc, pixels}}, fixed(window)});
  out.push_back({"InstanceNormalization",
                 18,
                 {kF, kF},
                 {{0, {1, 1, 2}, {1, 2}}, {1, {1}, {1}}, {1, {1}, {0}}}});
  out.push_back({"GroupNormalization",
                 18,
                 {kF, kF},
                 {{0, {1, 2, 1}, {1, 2}}, {1, {1}, {1}}, {1, {1}, {0}}},
                 fixed(intAttrs({{"num_groups", 1}}))});
  out.push_back({"Attention",
                 23,
                 {kF, kF},
                 {{0, {1, 1, 1, 2}, {1, 2}},
                  {0, {1, 1, 1, 2}, {1, 2}},
                  {0, {1, 1, 1, 2}, {1, 2}},
                  {1, {1, 1}, {0}}}});
  // attention_extra.cc
  out.push_back({"RotaryEmbedding",
                 23,
                 {kF, kI64},
                 {{0, {1, 1, 1, 2}, {1, 2}}, {0, {1, 1}, {1}}, {0, {1, 1}, {0}}, {1, {1, 1}, {0}}},
                 fixed({}),
                 1,
                 {},
                 {1}});
  out.push_back(
      {"ai.onnx.preview.FlexAttention",
       1,
       {kF},
       {{0, {1, 1, 1, 2}, {1, 2}}, {0, {1, 1, 1, 2}, {1, 2}}, {0, {1, 1, 1, 2}, {1, 2}}}});
  // quantized.cc
  {
    constexpr DataType kU8 = DataType::kUint8;
    out.push_back({"DynamicQuantizeLinear", 11, {kF}, {{0, {2}, {-1, 2}}}, fixed({}), 3});
    out.push_back({"MatMulInteger", 10, {kU8, kU8}, {{0, {1, 1}, {2}}, {1, {1, 1}, {3}}}});
    out.push_back(
        {"ConvInteger", 10, {kU8, kU8}, {{0, {1, 1, 1, 1}, {2}}, {1, {1, 1, 1, 1}, {3}}}});
    out.push_back({"QLinearMatMul",
                   10,
                   {kU8, kF, kU8, kU8},
                   {{0, {1, 1}, {2}},
                    {1, {}, {0.5}},
                    {0, {}, {0}},
                    {2, {1, 1}, {3}},
                    {1, {}, {0.5}},
                    {2, {}, {0}},
                    {1, {}, {1}},
                    {3, {}, {0}}}});
    out.push_back({"QLinearConv",
                   10,
                   {kU8, kF, kU8, kU8},
                   {{0, {1, 1, 1, 1}, {2}},
                    {1, {}, {0.5}},
                    {0, {}, {0}},
                    {2, {1, 1, 1, 1}, {3}},
                    {1, {}, {0.5}},
                    {2, {}, {0}},
                    {1, {}, {1}},
                    {3, {}, {0}}}});
  }
  // signal.cc
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    out.push_back({op,
                   17,
                   {kI64, kF},
                   {{0, {}, {4}}},
                   [](const Roles& r) {
                     return intAttrs({{"output_datatype", static_cast<int64_t>(r[1])}});
                   },
                   1,
                   {1},
                   {0}});
  }
  out.push_back({"DFT", 17, {kF}, {{0, {1, 2, 1}, {1, 2}}}});
  out.push_back({"STFT",
                 17,
                 {kF, kI64},
                 {{0, {1, 4, 1}, {1, 2, 3, 4}}, {1, {}, {2}}, {0, {2}, {1, 1}}},
                 fixed({}),
                 1,
                 {},
                 {1}});
  out.push_back({"MelWeightMatrix",
                 17,
                 {kI64, kF, kF},
                 {{0, {}, {1}}, {0, {}, {8}}, {0, {}, {8}}, {1, {}, {0}}, {1, {}, {3}}},
                 [](const Roles& r) {
                   return intAttrs({{"output_datatype", static_cast<int64_t>(r[2])}});
                 },
                 1,
                 {2},
                 {0}});
  // random.cc
  auto dtype_of = [](int role, bool shape) {
    return [role, shape](const Roles& r) {
      KernelAttrs a = intAttrs({{"dtype", static_cast<int64_t>(r[static_cast<size_t>(role)])}});
      if (shape) a.int_lists["shape"] = {2};
      return a;
    };
  };
  out.push_back({"RandomNormal", 1, {kF}, {}, dtype_of(0, true), 1, {0}});
  out.push_back({"RandomUniform", 1, {kF}, {}, dtype_of(0, true), 1, {0}});
  out.push_back({"RandomNormalLike", 1, {kF, kF}, {{0, {2}, {1, 2}}}, dtype_of(1, false), 1, {1}});
  out.push_back({"RandomUniformLike", 1, {kF, kF}, {{0, {2}, {1, 2}}}, dtype_of(1, false), 1, {1}});
  out.push_back({"Bernoulli", 15, {kF, kF}, {{0, {2}, {0.5, 1}}}, dtype_of(1, false), 1, {1}});
  out.push_back({"Multinomial",
                 7,
                 {kF, DataType::kInt32},
                 {{0, {1, 2}, {0, 0}}},
                 dtype_of(1, false),
                 1,
                 {1}});
  // nn_einsum.cc
  {
    KernelAttrs eq;
    eq.strings["equation"] = "i,i->i";
    out.push_back({"Einsum", 18, {kF}, {{0, {2}, {1, 2}}, {0, {2}, {3, 4}}}, fixed(eq)});
  }
  // rnn.cc: role 0 is T, role 1 sequence_lens (another type there breaks the contract)
  for (auto [op, gates] : {std::pair{"LSTM", 4}, {"GRU", 3}, {"RNN", 1}}) {
    std::vector<double> ones(static_cast<size_t>(2 * gates), 0.5);
    out.push_back({op,
                   14,
                   {kF, kI64},
                   {{0, {1, 1, 1}, {1}},
                    {0, {1, gates, 1}, ones},
                    {0, {1, gates, 1}, ones},
                    {0, {1, 2 * gates}, ones},
                    {1, {1}, {1}}},
                   fixed(intAttrs({{"hidden_size", 1}})),
                   2,
                   {},
                   {1}});
  }
  // string_ops.cc
  {
    constexpr DataType kS = DataType::kString;
    out.push_back({"StringConcat", 20, {kS}, {{0, {2}, {1, 2}}, {0, {2}, {3, 4}}}});
    out.push_back({"StringSplit", 20, {kS}, {{0, {2}, {1, 2}}}, fixed({}), 2});
    unary("StringNormalizer", 20, kS);
    KernelAttrs pattern;
    pattern.strings["pattern"] = "[0-9]";
    out.push_back({"RegexFullMatch", 20, {kS}, {{0, {2}, {1, 2}}}, fixed(pattern)});
  }
  // text.cc: the pool is strings for a string input, integers otherwise
  out.push_back(
      {"TfIdfVectorizer", 9, {kI64}, {{0, {2, 3}, {1, 2, 1, 2, 2, 1}}}, [](const Roles& r) {
         KernelAttrs a;
         a.strings["mode"] = "TF";
         a.ints = {{"min_gram_length", 1}, {"max_gram_length", 2}};
         a.int_lists["ngram_counts"] = {0, 2};
         a.int_lists["ngram_indexes"] = {0, 1, 2};
         if (r[0] == DataType::kString) {
           a.string_lists["pool_strings"] = {"1", "2", "1", "2"};
         } else {
           a.int_lists["pool_int64s"] = {1, 2, 1, 2};
         }
         return a;
       }});
  // ml.cc (ai.onnx.ml)
  {
    const std::string ml = "ai.onnx.ml.";
    out.push_back({ml + "Binarizer", 1, {kF}, {{0, {2}, {1, 2}}}});
    out.push_back(
        {ml + "ArrayFeatureExtractor", 1, {kF, kI64}, {{0, {2, 2}, {1, 2, 3, 4}}, {1, {1}, {1}}}});
    // The keys follow the input's type: attributes for string, int64 and float, else a tensor.
    auto label_attrs = [](const Roles& r) {
      KernelAttrs a;
      a.int_lists["values_int64s"] = {5, 6};
      if (r[0] == DataType::kString) {
        a.string_lists["keys_strings"] = {"1", "2"};
      } else if (r[0] == DataType::kFloat) {
        a.float_lists["keys_floats"] = {1, 2};
      } else if (r[0] == DataType::kInt64) {
        a.int_lists["keys_int64s"] = {1, 2};
      } else {
        a.tensors["keys_tensor"] = tensorOf(r[0], {2}, {1, 2});
      }
      return a;
    };
    out.push_back({ml + "LabelEncoder", 4, {kI64}, {{0, {2}, {1, 3}}}, label_attrs});
    out.push_back({ml + "LabelEncoder", 2, {kI64}, {{0, {2}, {1, 3}}}, label_attrs});
    KernelAttrs tree;
    tree.tensors["nodes_modes"] = tensorOf(DataType::kUint8, {1}, {0});
    tree.tensors["nodes_splits"] = tensorOf(kF, {1}, {1.5});
    tree.tensors["leaf_weights"] = tensorOf(kF, {2}, {3, 4});
    tree.int_lists = {{"nodes_featureids", {0}},   {"nodes_truenodeids", {0}},
                      {"nodes_falsenodeids", {1}}, {"nodes_trueleafs", {1}},
                      {"nodes_falseleafs", {1}},   {"leaf_targetids", {0, 0}},
                      {"tree_roots", {0}}};
    tree.ints["n_targets"] = 1;
    out.push_back({ml + "TreeEnsemble", 5, {kF}, {{0, {2, 1}, {1, 2}}}, fixed(tree)});
    KernelAttrs norm;
    norm.strings["norm"] = "L1";
    out.push_back({ml + "Normalizer", 1, {kF}, {{0, {1, 2}, {1, 2}}}, fixed(norm)});
    out.push_back({ml + "Scaler", 1, {kF}, {{0, {1, 2}, {1, 2}}}});
    // Float inputs impute from the float list, integer inputs from the int64 list.
    out.push_back({ml + "Imputer", 1, {kF}, {{0, {1, 2}, {0, 2}}}, [](const Roles&) {
                     KernelAttrs a;
                     a.float_lists["imputed_value_floats"] = {5};
                     a.int_lists["imputed_value_int64s"] = {5};
                     return a;
                   }});
    out.push_back({ml + "OneHotEncoder", 1, {kI64}, {{0, {2}, {1, 2}}}, [](const Roles&) {
                     KernelAttrs a;
                     a.int_lists["cats_int64s"] = {1, 2};
                     a.string_lists["cats_strings"] = {"1", "2"};
                     return a;
                   }});
    KernelAttrs dims;
    dims.int_lists["inputdimensions"] = {1, 2};
    out.push_back({ml + "FeatureVectorizer",
                   1,
                   {kF},
                   {{0, {2, 1}, {1, 2}}, {0, {2, 2}, {1, 2, 3, 4}}},
                   fixed(dims)});
    KernelAttrs lin;
    lin.float_lists["coefficients"] = {1, 2};
    out.push_back({ml + "LinearRegressor", 1, {kF}, {{0, {1, 2}, {1, 2}}}, fixed(lin)});
  }
  // resize.cc and sampling.cc
  {
    const In x = {0, {1, 1, 2, 2}, {1, 2, 3, 4}};
    const In roi = {1, {8}, {0, 0, 0, 0, 1, 1, 1, 1}};
    const In scales = {1, {4}, {1, 1, 2, 2}};
    out.push_back({"Resize", 19, {kF, kF}, {x, roi, scales}});
    out.push_back({"Resize",
                   19,
                   {kF, kF, kI64},
                   {x, roi, {1, {0}, {}}, {2, {4}, {1, 1, 3, 3}}},
                   fixed({}),
                   1,
                   {},
                   {2}});
    out.push_back({"Resize", 10, {kF, kF}, {x, scales}});
    out.push_back({"Upsample", 9, {kF, kF}, {x, scales}});
    KernelAttrs up;
    up.float_lists["scales"] = {1, 1, 2, 2};
    out.push_back({"Upsample", 7, {kF}, {x}, fixed(up)});
    KernelAttrs block;
    block.ints["blocksize"] = 2;
    out.push_back({"DepthToSpace", 13, {kF}, {{0, {1, 4, 1, 1}, {1, 2, 3, 4}}}, fixed(block)});
    out.push_back({"SpaceToDepth", 13, {kF}, {x}, fixed(block)});
    out.push_back({"CenterCropPad",
                   18,
                   {kF, kI64},
                   {{0, {2, 2}, {1, 2, 3, 4}}, {1, {2}, {1, 3}}},
                   fixed({}),
                   1,
                   {},
                   {1}});
    const In grid = {1, {1, 1, 1, 2}, {0, 0}};
    out.push_back({"GridSample", 20, {kF, kF}, {x, grid}});
    out.push_back({"GridSample", 16, {kF, kF}, {x, grid}});
    out.push_back({"AffineGrid",
                   20,
                   {kF, kI64},
                   {{0, {1, 2, 3}, {1, 0, 0, 0, 1, 0}}, {1, {4}, {1, 1, 2, 2}}},
                   fixed({}),
                   1,
                   {},
                   {1}});
    for (int64_t opset : {10, 16}) {
      out.push_back({"RoiAlign",
                     opset,
                     {kF, kI64},
                     {x, {0, {1, 4}, {0, 0, 1, 1}}, {1, {1}, {0}}},
                     fixed({}),
                     1,
                     {},
                     {1}});
    }
    out.push_back({"Col2Im",
                   18,
                   {kF, kI64},
                   {{0, {1, 1, 1}, {5}}, {1, {2}, {1, 1}}, {1, {2}, {1, 1}}},
                   fixed({}),
                   1,
                   {},
                   {1}});
    KernelAttrs unpool;
    unpool.int_lists["kernel_shape"] = {1, 1};
    out.push_back({"MaxUnpool",
                   11,
                   {kF, kI64},
                   {{0, {1, 1, 1, 1}, {5}}, {1, {1, 1, 1, 1}, {0}}},
                   fixed(unpool),
                   1,
                   {},
                   {1}});
  }
  // indexing.cc and math_extra.cc
  {
    const In x = {0, {2}, {1, 2}};
    with_index("TopK", 18, {{0, {2}, {2, 1}}, {1, {1}, {1}}}, {}, 2);
    out.push_back({"TopK", 1, {kF}, {{0, {2}, {2, 1}}}, fixed(intAttrs({{"k", 1}})), 2});
    with_index("ScatterND", 18, {{0, {2}, {1, 2}}, {1, {1, 1}, {0}}, {0, {1}, {5}}});
    with_index("ScatterElements", 18, {{0, {2}, {1, 2}}, {1, {1}, {1}}, {0, {1}, {5}}});
    with_index("Scatter", 9, {{0, {2}, {1, 2}}, {1, {1}, {1}}, {0, {1}, {5}}});
    with_index("GatherND", 18, {{0, {2}, {1, 2}}, {1, {1, 1}, {1}}});
    with_index("Trilu", 18, {{0, {2, 2}, {1, 2, 3, 4}}, {1, {}, {0}}});
    out.push_back({"Compress", 18, {kF, kB}, {x, {1, {2}, {1, 0}}}, fixed({}), 1, {}, {1}});
    out.push_back({"ReverseSequence",
                   18,
                   {kF, kI64},
                   {{0, {2, 1}, {1, 2}}, {1, {1}, {2}}},
                   fixed({}),
                   1,
                   {},
                   {1}});
    out.push_back({"Unique", 18, {kF}, {{0, {3}, {2, 1, 2}}}, fixed({}), 4});
    out.push_back({"EyeLike",
                   18,
                   {kF, kI64},
                   {{0, {2, 2}, {1, 2, 3, 4}}},
                   [](const Roles& r) {
                     return intAttrs({{"dtype", static_cast<int64_t>(r[1])}});
                   },
                   1,
                   {1}});
    out.push_back({"NonMaxSuppression",
                   18,
                   {kF, kI64},
                   {{0, {1, 1, 4}, {0, 0, 1, 1}}, {0, {1, 1, 1}, {0.5}}, {1, {1}, {1}}},
                   fixed({}),
                   1,
                   {},
                   {1}});
    for (const char* op : {"Acos", "Asin", "Atan", "Tan", "Acosh", "Asinh", "Atanh", "Cosh", "Sinh",
                           "Shrink", "Hardmax", "Det", "LpNormalization"}) {
      out.push_back({op, 22, {kF}, {{0, {1, 1}, {0.5}}}});
    }
    unary("Swish", 24);
    out.push_back(
        {"CumProd", 26, {kF, kI64}, {{0, {2}, {1, 2}}, {1, {}, {0}}}, fixed({}), 1, {}, {1}});
    out.push_back({"LRN", 18, {kF}, {{0, {1, 2, 1}, {1, 2}}}, fixed(intAttrs({{"size", 1}}))});
    with_index("TensorScatter", 24, {{0, {1, 2, 1}, {1, 2}}, {0, {1, 1, 1}, {5}}, {1, {1}, {1}}});
    for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"}) {
      out.push_back({op,
                     18,
                     {kF, kI64},
                     {{0, {1, 2}, {1, 2}}, {1, {1}, {1}}, {0, {2}, {1, 1}}},
                     fixed({}),
                     1,
                     {},
                     {1}});
    }
    {
      KernelAttrs lp;
      lp.int_lists["kernel_shape"] = {1};
      out.push_back({"LpPool", 18, {kF}, {{0, {1, 1, 2}, {1, 2}}}, fixed(lp)});
    }
    {
      KernelAttrs axes;
      axes.int_lists["axes"] = {0};
      out.push_back({"MeanVarianceNormalization", 18, {kF}, {x}, fixed(axes)});
    }
    out.push_back({"BitShift", 18, {DataType::kUint8}, {x, x}, [](const Roles&) {
                     KernelAttrs a;
                     a.strings["direction"] = "LEFT";
                     return a;
                   }});
    out.push_back({"BitCast",
                   26,
                   {kF},
                   {x},
                   [](const Roles& r) {
                     return intAttrs({{"to", static_cast<int64_t>(r[0])}});
                   },
                   1,
                   {0}});
  }
  // deform_conv.cc and stateful.cc
  out.push_back(
      {"DeformConv",
       22,
       {kF},
       {{0, {1, 1, 2, 2}, {1, 2, 3, 4}}, {0, {1, 1, 1, 1}, {2}}, {0, {1, 2, 2, 2}, {0}}}});
  out.push_back({"CausalConvWithState",
                 27,
                 {kF},
                 {{0, {1, 1, 2}, {1, 2}}, {0, {1, 1, 2}, {1, 1}}},
                 fixed({}),
                 2});
  {
    KernelAttrs la = intAttrs({{"q_num_heads", 1}, {"kv_num_heads", 1}});
    la.strings["update_rule"] = "linear";
    out.push_back({"LinearAttention",
                   27,
                   {kF, kF},
                   {{0, {1, 1, 2}, {1, 2}},
                    {0, {1, 1, 2}, {1, 2}},
                    {0, {1, 1, 2}, {1, 2}},
                    {1, {1, 1, 2, 2}, {0, 0, 0, 0}}},
                   fixed(la),
                   2});
  }
  // microsoft_ops.cc and microsoft_attention.cc: onnxruntime's contrib ops
  out.push_back({"SimplifiedLayerNormalization",
                 21,
                 {kF, kF},
                 {{0, {1, 2}, {1, 2}}, {1, {2}, {1, 1}}},
                 fixed({}),
                 2});
  out.push_back({"com.microsoft.SkipSimplifiedLayerNormalization",
                 1,
                 {kF},
                 {{0, {1, 2}, {1, 2}}, {0, {1, 2}, {0, 1}}, {0, {2}, {1, 1}}},
                 fixed({}),
                 4});
  // RotaryEmbedding: one head of 2 (the caches' width says so), position offset 0.
  out.push_back({"com.microsoft.RotaryEmbedding",
                 1,
                 {kF, kI64},
                 {{0, {1, 1, 2}, {1, 2}}, {1, {1}, {0}}, {0, {1, 1}, {1}}, {0, {1, 1}, {0}}},
                 fixed({}),
                 1,
                 {},
                 {1}});
  // MatMulNBits: K = block_size = 16, N = 1, 8 bits, no zero points.
  out.push_back({"com.microsoft.MatMulNBits",
                 1,
                 {kF, DataType::kUint8},
                 {{0, {1, 16}, std::vector<double>(16, 1)},
                  {1, {1, 1, 16}, std::vector<double>(16, 129)},
                  {0, {1}, {0.5}}},
                 fixed(intAttrs({{"K", 16}, {"N", 1}, {"bits", 8}, {"block_size", 16}})),
                 1,
                 {},
                 {1}});
  // GroupQueryAttention: a first prompt of one token, one head of 2, an empty past.
  out.push_back({"com.microsoft.GroupQueryAttention",
                 1,
                 {kF, DataType::kInt32},
                 {{0, {1, 1, 2}, {1, 2}},
                  {0, {1, 1, 2}, {0, 1}},
                  {0, {1, 1, 2}, {1, 1}},
                  {0, {1, 1, 0, 2}, {}},
                  {0, {1, 1, 0, 2}, {}},
                  {1, {1}, {0}},
                  {1, {}, {1}}},
                 fixed(intAttrs({{"num_heads", 1}, {"kv_num_heads", 1}})),
                 3,
                 {},
                 {1}});
  // training.cc: roles R, T, the optimized tensors
  {
    const std::string d = "ai.onnx.preview.training.";
    In r{0, {}, {0.1}}, t{1, {}, {1}}, v{2, {1}, {1}};
    out.push_back({d + "Adagrad", 1, {kF, kI64, kF}, {r, t, v, v, v}, fixed({}), 2});
    out.push_back({d + "Momentum",
                   1,
                   {kF, kI64, kF},
                   {r, t, v, v, v},
                   [](const Roles&) {
                     KernelAttrs a;
                     a.floats = {{"alpha", 0.9f}, {"beta", 0.1f}, {"norm_coefficient", 0.0f}};
                     a.strings["mode"] = "nesterov";
                     return a;
                   },
                   2});
    out.push_back({d + "Adam", 1, {kF, kI64, kF}, {r, t, v, v, v, v}, fixed({}), 3});
  }
  return out;
}

/// Every element type onnxopt knows.
std::vector<DataType> allTypes() {
  std::vector<DataType> types;
  for (int32_t c = 1; c <= kMaxKnownDataType; ++c) types.push_back(static_cast<DataType>(c));
  return types;
}

OpQuery queryFor(const Case& c, const Roles& roles) {
  OpQuery q;
  q.op = c.op;
  q.opset = c.opset;
  for (const In& in : c.inputs) q.inputs.push_back(roles[static_cast<size_t>(in.role)]);
  for (int r : c.output_roles) q.outputs.push_back(roles[static_cast<size_t>(r)]);
  return q;
}

StatusOr<std::vector<HostTensor>> runCase(const Case& c, const Roles& roles) {
  std::vector<HostTensor> tensors;
  for (const In& in : c.inputs) {
    tensors.push_back(tensorOf(roles[static_cast<size_t>(in.role)], in.dims, in.values));
  }
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : tensors) ptrs.push_back(&t);
  return runReferenceKernel(c.op, c.opset, ptrs, c.attrs(roles), c.num_outputs);
}

TEST(ReferenceCapabilities, EveryOpHasACase) {
  std::set<std::string> covered;
  for (const Case& c : cases()) covered.insert(c.op);
  for (const std::string& op : referenceKernelOps()) EXPECT_TRUE(covered.count(op)) << op;
}

TEST(ReferenceCapabilities, DefaultCasesRun) {
  for (const Case& c : cases()) {
    Support s = referenceCapabilities().supports(queryFor(c, c.defaults));
    EXPECT_TRUE(s.ok) << c.op << " opset " << c.opset << ": " << s.reason;
    auto result = runCase(c, c.defaults);
    EXPECT_TRUE(result.isOk()) << c.op << " opset " << c.opset << ": "
                               << result.status().toString();
  }
}

// The truth table: every op, every role, every element type. A claimed type runs; a refused one
// is refused by the kernel.
TEST(ReferenceCapabilities, AgreeWithTheKernelsOnEveryType) {
  int accepted = 0, refused = 0;
  for (const Case& c : cases()) {
    for (size_t role = 0; role < c.defaults.size(); ++role) {
      for (DataType t : allTypes()) {
        Roles roles = c.defaults;
        roles[role] = t;
        Support s = referenceCapabilities().supports(queryFor(c, roles));
        auto result = runCase(c, roles);
        std::string what = c.op + " opset " + std::to_string(c.opset) + ", role " +
                           std::to_string(role) + " = " + dataTypeName(t);
        if (s.ok) {
          ++accepted;
          EXPECT_TRUE(result.isOk()) << what << ": claimed, but " << result.status().toString();
        } else {
          ++refused;
          EXPECT_FALSE(s.reason.empty()) << what;
          if (result.isOk()) {
            ADD_FAILURE() << what << ": refused (" << s.reason << "), but it runs";
            continue;
          }
          StatusCode code = result.status().code();
          bool contract = c.contract_roles.count(static_cast<int>(role)) > 0;
          EXPECT_TRUE(code == StatusCode::kUnimplemented ||
                      (contract && code == StatusCode::kInvalidArgument))
              << what << ": refused (" << s.reason << "), the kernel says "
              << result.status().toString();
        }
      }
    }
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(refused, 1000);
}

TEST(ReferenceCapabilities, Supported) {
  const Capabilities& caps = referenceCapabilities();
  EXPECT_STREQ(caps.name(), "reference");
  Support ok = caps.supports({"", "Add", 17, {kF, kF}, {}, Layout::kAny});
  EXPECT_TRUE(ok.ok);
  EXPECT_TRUE(ok.reason.empty());
  EXPECT_TRUE(caps.supports({"ai.onnx", "Conv", 11, {kF, kF}, {}, Layout::kNCHW}));
  EXPECT_TRUE(caps.supports({"", "Relu", 17, {kF}, {}, Layout::kNHWC}));  // layout-blind
  EXPECT_TRUE(caps.supports({"", "Gather", 13, {DataType::kString, DataType::kInt32}, {}, {}}));
}

TEST(ReferenceCapabilities, RefusalsSayWhy) {
  struct Refusal {
    OpQuery query;
    std::string reason;
  };
  const std::vector<Refusal> refusals = {
      {{"", "NotAnOnnxOp", 17, {kF}, {}, {}}, "no reference kernel for NotAnOnnxOp"},
      {{"", "LayerNormalization", 16, {kF}, {}, {}},
       "no reference kernel for LayerNormalization at opset 16 (it covers opsets 17 to 28)"},
      {{"", "Add", 29, {kF, kF}, {}, {}},
       "no reference kernel for Add at opset 29 (it covers opsets 7 to 28)"},
      {{"", "Conv", 17, {DataType::kInt8, DataType::kInt8}, {}, {}},
       "Conv: input 0 is int8; the reference kernel takes float, float16, double, bfloat16"},
      {{"", "Gather", 13, {kF, kF}, {}, {}},
       "Gather: input 1 is float; the reference kernel takes int32, int64"},
      {{"com.microsoft", "FusedConv", 1, {kF}, {}, {}},
       "no reference kernel for com.microsoft.FusedConv"},
      {{"com.microsoft", "MatMulNBits", 1, {DataType::kDouble}, {}, {}},
       "MatMulNBits: input 0 is double; the reference kernel takes float, float16, bfloat16"},
      {{"ai.onnx.contrib", "Tokenizer", 1, {DataType::kString}, {}, {}},
       "domain 'ai.onnx.contrib' has no reference kernels"},
      {{"", "MaxPool", 17, {kF}, {}, Layout::kNHWC},
       "MaxPool: the reference kernel reads channels-first (NCHW) data, not NHWC"},
      {{"", "Cast", 17, {kF}, {DataType::kComplex64}, {}},
       "Cast: output 0 is complex64; the reference kernel produces float, uint8, int8, uint16, "
       "int16, "
       "int32, int64, string, bool, float16, double, uint32, uint64, bfloat16, float8e4m3fn, "
       "float8e4m3fnuz, float8e5m2, float8e5m2fnuz, uint4, int4, float4e2m1, float8e8m0, uint2, "
       "int2"},
  };
  for (const Refusal& r : refusals) {
    Support s = referenceCapabilities().supports(r.query);
    EXPECT_FALSE(s.ok) << r.query.op;
    EXPECT_EQ(s.reason, r.reason);
  }
}

TEST(ReferenceCapabilities, UnknownTypesAreNotChecked) {
  const Capabilities& caps = referenceCapabilities();
  // kUndefined: an omitted input or a type not known; the variadic inputs repeat the last list.
  EXPECT_TRUE(
      caps.supports({"", "Conv", 17, {kF, DataType::kUndefined, DataType::kUndefined}, {}, {}}));
  EXPECT_TRUE(caps.supports({"", "Sum", 17, {kF, kF, kF, kF}, {}, {}}));
  EXPECT_FALSE(caps.supports({"", "Sum", 17, {kF, kF, kF, DataType::kString}, {}, {}}));
  // Attention's nonpad_kv_seqlen (input 6) arrives in opset 24.
  EXPECT_TRUE(caps.supports({"", "Attention", 24, {kF, kF, kF, {}, {}, {}, kI64}, {}, {}}));
  Support seqlen = caps.supports({"", "Attention", 23, {kF, kF, kF, {}, {}, {}, kI64}, {}, {}});
  EXPECT_FALSE(seqlen);
  EXPECT_EQ(seqlen.reason, "Attention: the reference kernel does not take input 6");
}

TEST(ReferenceCapabilities, CastToItsOwnTypeCopiesAnyType) {
  const Capabilities& caps = referenceCapabilities();
  DataType f8 = DataType::kFloat6E2M3;  // a type the Cast kernel does not convert
  EXPECT_TRUE(caps.supports({"", "Cast", 19, {f8}, {f8}, {}}));
  EXPECT_TRUE(caps.supports({"", "Cast", 19, {f8}, {}, {}}));  // `to` not known: it may be f8
  EXPECT_FALSE(caps.supports({"", "Cast", 19, {f8}, {kF}, {}}));
  EXPECT_TRUE(caps.supports({"", "CastLike", 19, {f8, f8}, {}, {}}));
  EXPECT_FALSE(caps.supports({"", "CastLike", 19, {f8, kF}, {}, {}}));
  HostTensor x = HostTensor::zeros(f8, {2});
  auto same = runReferenceKernel("Cast", 19, {&x}, intAttrs({{"to", static_cast<int64_t>(f8)}}), 1);
  EXPECT_TRUE(same.isOk()) << same.status().toString();
  auto other = runReferenceKernel("Cast", 19, {&x}, intAttrs({{"to", 1}}), 1);
  ASSERT_FALSE(other.isOk());
  EXPECT_EQ(other.status().code(), StatusCode::kUnimplemented);
}

TEST(TypeSetTest, SetOperations) {
  TypeSet s = {DataType::kFloat, DataType::kInt64};
  EXPECT_TRUE(s.contains(DataType::kFloat));
  EXPECT_FALSE(s.contains(DataType::kInt32));
  EXPECT_FALSE(s.contains(DataType::kUndefined));
  EXPECT_FALSE(s.contains(static_cast<DataType>(1000)));
  EXPECT_EQ(s.toString(), "float, int64");
  EXPECT_EQ((s - TypeSet{DataType::kFloat}).types(), std::vector<DataType>{DataType::kInt64});
  EXPECT_EQ((kSignedIntTypes | kUnsignedIntTypes), kIntTypes);
  EXPECT_TRUE(TypeSet{}.empty());
  EXPECT_EQ(TypeSet{}.toString(), "no type");
  EXPECT_STREQ(layoutName(Layout::kNHWC), "NHWC");
  EXPECT_STREQ(layoutName(Layout::kAny), "any");
}

// --- tensor_view.h
// ---------------------------------------------------------------------------------

TEST(TensorViewTest, ViewOfAHostTensorIsContiguous) {
  HostTensor t = HostTensor::zeros(DataType::kFloat, {2, 3, 4});
  TensorView v = viewOf(t);
  EXPECT_EQ(v.dtype, DataType::kFloat);
  EXPECT_EQ(v.dims, (Dims{2, 3, 4}));
  EXPECT_EQ(v.strides, (Dims{12, 4, 1}));
  EXPECT_EQ(v.data, static_cast<void*>(t.bytes.data()));
  EXPECT_EQ(v.memory, MemoryKind::kHost);
  EXPECT_EQ(v.rank(), 3);
  EXPECT_EQ(v.numElements(), 24);
  EXPECT_TRUE(v.isContiguous());
  EXPECT_EQ(v.offsetOf({1, 2, 3}), 23);
  const HostTensor& ct = t;
  ConstTensorView cv = viewOf(ct);
  EXPECT_EQ(cv.data, static_cast<const void*>(t.bytes.data()));
  ConstTensorView converted = v;  // mutable -> const
  EXPECT_EQ(converted.strides, v.strides);
}

TEST(TensorViewTest, Strides) {
  EXPECT_EQ(contiguousStrides({}), Dims{});
  EXPECT_EQ(contiguousStrides({5}), Dims{1});
  EXPECT_EQ(contiguousStrides({2, 0, 3}), (Dims{0, 3, 1}));
  HostTensor t = HostTensor::zeros(DataType::kFloat, {2, 3});
  // Its transpose [3, 2] as a view: strides {1, 3}, not contiguous.
  TensorView tr(DataType::kFloat, {3, 2}, {1, 3}, t.bytes.data());
  EXPECT_FALSE(tr.isContiguous());
  EXPECT_EQ(tr.offsetOf({2, 1}), 5);
  // A broadcast dim (stride 0) is not contiguous; size-1 dims may have any stride.
  EXPECT_FALSE(TensorView(DataType::kFloat, {4, 3}, {0, 1}, nullptr).isContiguous());
  EXPECT_TRUE(TensorView(DataType::kFloat, {1, 3}, {99, 1}, nullptr).isContiguous());
  EXPECT_TRUE(TensorView(DataType::kFloat, {4, 0}, {7, 7}, nullptr).isContiguous());
  EXPECT_FALSE(TensorView(DataType::kFloat, {4}, {}, nullptr).isContiguous());  // strides missing
  TensorView device(DataType::kFloat16, {8}, {1}, nullptr, MemoryKind::kDevice);
  EXPECT_EQ(device.memory, MemoryKind::kDevice);
  EXPECT_EQ(TensorView().numElements(), 1);  // a scalar
}

TEST(TensorViewTest, StringTensorsPointAtTheirStrings) {
  HostTensor t = HostTensor::zeros(DataType::kString, {2});
  t.strings = {"a", "b"};
  TensorView v = viewOf(t);
  EXPECT_EQ(static_cast<std::string*>(v.data)[1], "b");
}

}  // namespace
}  // namespace onnxopt::kernels
