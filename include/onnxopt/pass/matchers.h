// Small queries patterns share: constants, attributes, static shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/tensor_compare.h"
#include "onnxopt/rewrite/rewriter.h"
#include "onnxopt/support/axis.h"

namespace onnxopt::pass {

using ir::constantNodeTensor;
using ir::constantTensor;
using ir::tensorHash;
using ir::tensorInts;
using ir::tensorsEqual;

/// An int64/int32 constant as integers.
std::optional<std::vector<int64_t>> constantInts(const ir::Value* value);
/// True when every element of a numeric tensor equals `x` (float types compare by value, so -0 ==
/// 0).
bool allElementsEqual(const ir::Tensor& tensor, double x);
/// True when every element of a float tensor is zero with the given sign bit.
bool allSignedZeros(const ir::Tensor& tensor, bool negative);
/// Element `i` of a numeric tensor as double; nullopt for non-numeric types.
std::optional<double> elementAsDouble(const ir::Tensor& tensor, size_t i);

/// Structural equality of attributes; graph attributes never compare equal.
bool attributesEqual(const ir::Attribute& a, const ir::Attribute& b);

/// The fully known shape of a tensor value, from its type.
std::optional<std::vector<int64_t>> staticShape(const ir::Value* value);
/// The rank, when known.
std::optional<int64_t> rankOf(const ir::Value* value);
/// Whether `a` and `b` are known to have one shape: the same rank, each dim the same known value
/// or the same symbol (a batch or sequence dim of a dynamic export).
bool sameKnownShape(const ir::Value* a, const ir::Value* b);
/// The element type, when the value is a tensor of known type.
std::optional<ir::DataType> elemTypeOf(const ir::Value* value);

int64_t attrInt(const ir::Node& node, const std::string& name, int64_t fallback);
std::optional<std::vector<int64_t>> attrInts(const ir::Node& node, const std::string& name);
float attrFloat(const ir::Node& node, const std::string& name, float fallback);

/// The producer of `value` when it is an `op` of the default domain whose output only one node
/// reads (and is no graph output); nullptr otherwise.
ir::Node* singleUseProducer(const ir::Value* value, const char* op);
/// The value of a one-element numeric constant.
std::optional<double> scalarConstant(const ir::Value* value);
/// Ops whose outputs are random: never merged or folded.
bool isNondeterministicOp(const std::string& op);
/// isNondeterministicOp, or a node whose outputs are random for its attributes and inputs: Dropout
/// whose training_mode input is not a constant false and whose ratio is not 0. A `seed` does not
/// make it foldable: the generator is the runtime's (ours follows numpy's legacy RandomState, as
/// ONNX's reference implementation does; onnxruntime's differs), as for the Random* ops.
bool isNondeterministicNode(const ir::Node& node);

/// True when the value has exactly one use and is not a graph output.
bool hasSingleUse(const ir::Value* value);
/// True when the value is used by nothing but `user` (any number of operands) and is no output.
bool onlyUsedBy(const ir::Value* value, const ir::Node* user);

/// Normalizes a possibly negative axis against `rank`; nullopt when out of range.
using ::onnxopt::normalizeAxis;

/// All elements of a float-typed tensor (float, double, float16, bfloat16) as doubles.
std::optional<std::vector<double>> floatValues(const ir::Tensor& tensor);
/// A tensor of `dtype` (float, double, float16 or bfloat16) holding `values`, rounded to nearest
/// even.
ir::Tensor makeFloatTensor(ir::DataType dtype, std::vector<int64_t> dims,
                           const std::vector<double>& values);
bool isFloatType(ir::DataType dtype);

/// Of a binary node, the operand that is not `known` (nullptr when neither is).
ir::Value* otherOperand(const ir::Node& node, const ir::Value* known);
/// Whether a Reduce* node takes its axes as input 1 (opset 18; ReduceSum from 13) rather than as
/// the `axes` attribute.
bool reduceAxesFromInput(const ir::Node& node, int64_t opset);
/// The axes of a keepdims=1 ReduceMean/ReduceSum (attribute before opset 18, constant input from
/// 18), normalized against `rank` and sorted; nullopt when not constant or empty, or when keepdims
/// is 0 unless `any_keepdims`.
std::optional<std::vector<int64_t>> reduceAxes(const ir::Node& node, int64_t opset, int64_t rank,
                                               bool any_keepdims = false);
/// The dims of `value` from `axis` on, when all of them are known integers.
std::optional<std::vector<int64_t>> staticDimsFrom(const ir::Value* value, int64_t axis);
/// A float tensor of `dtype` shaped `dims`: `source` (nullptr: `fill` everywhere) broadcast to
/// `dims` with numpy's trailing alignment; nullopt when it does not broadcast.
std::optional<ir::Tensor> broadcastFloatConstant(const ir::Tensor* source, double fill,
                                                 ir::DataType dtype,
                                                 const std::vector<int64_t>& dims);

/// Attributes for new nodes.
ir::Attribute intAttr(const std::string& name, int64_t v);
ir::Attribute floatAttr(const std::string& name, float v);
ir::Attribute intsAttr(const std::string& name, std::vector<int64_t> v);
/// `type` with its dims reordered: result dim i is dim perm[i] (what Transpose<perm> makes); a
/// shape of another rank, or none, stays.
ir::Type permutedType(const ir::Type& type, const std::vector<int64_t>& perm);
/// Transpose<perm>(v), created at the rewriter's insertion point, typed from v's type.
ir::Value* createTranspose(rewrite::Rewriter& rw, ir::Value* v, const std::vector<int64_t>& perm);

/// Builds tensors for new constants.
ir::Tensor makeInt64Tensor(const std::vector<int64_t>& values, std::vector<int64_t> dims);

}  // namespace onnxopt::pass
