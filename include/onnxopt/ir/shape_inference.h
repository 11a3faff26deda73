// Symbolic shape and type inference.
//
// Per-op functions, registered by (domain, op type, since-version), run over each graph in
// topological order and into subgraphs. Dims are integers or symbolic expressions (symbols from
// graph inputs' dim_param, fresh symbols for data-dependent sizes). Small integer tensors (shapes)
// carry their values element by element, so Reshape/Expand/ConstantOfShape targets built from Shape
// chains get symbolic shapes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/symbolic.h"
#include "onnxopt/support/diagnostics.h"
#include "onnxopt/support/status.h"

namespace onnxopt::ir {

/// The known content of a small integer tensor (rank 0 or 1), element by element.
using ShapeValue = std::vector<std::optional<SymExpr>>;

class ShapeInferenceEngine;

/// What an op's inference function sees and sets.
class InferenceContext {
 public:
  InferenceContext(ShapeInferenceEngine& engine, Node& node, int64_t opset)
      : engine_(engine), node_(node), opset_(opset) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t numInputs() const { return node_.numInputs(); }
  size_t numOutputs() const { return node_.numOutputs(); }
  bool hasInput(size_t i) const { return node_.input(i) != nullptr; }
  bool hasOutput(size_t i) const { return node_.output(i) != nullptr; }

  /// The input's type, or nullptr when absent or unknown.
  const Type* inputType(size_t i) const;
  std::optional<DataType> inputElemType(size_t i) const;
  /// The input's dims when its rank is known.
  std::optional<std::vector<Dim>> inputShape(size_t i) const;
  std::optional<int64_t> inputRank(size_t i) const;
  /// The input's integer content, when known (constants and propagated shape values).
  const ShapeValue* inputValue(size_t i) const;
  /// inputValue as plain integers when every element is a known constant.
  std::optional<std::vector<int64_t>> inputInts(size_t i) const;
  /// Constant data of the input (initializer or Constant), or nullptr.
  const Tensor* inputConstant(size_t i) const;

  int64_t attrInt(const std::string& name, int64_t fallback) const;
  std::optional<std::vector<int64_t>> attrInts(const std::string& name) const;
  float attrFloat(const std::string& name, float fallback) const;
  std::string attrString(const std::string& name, const std::string& fallback) const;
  const Attribute* attr(const std::string& name) const { return node_.findAttribute(name); }

  /// Sets output `i` to a tensor of `elem` with `shape` (nullopt: unknown rank).
  void setOutput(size_t i, DataType elem, std::optional<std::vector<Dim>> shape);
  void setOutputType(size_t i, Type type);
  /// Sets output `i` where its unknown dims are disputed (onnx's inference and onnxruntime
  /// compute different sizes there): a declared type is no evidence for them either, so it is
  /// replaced whole, as a contradicted one is.
  void setOutputDisputed(size_t i, DataType elem, std::vector<Dim> shape);
  /// Records the integer content of output `i` (for shape computations downstream).
  void setOutputValue(size_t i, ShapeValue value);
  /// A fresh symbol for a size known only at run time (NonZero, Unique, TopK with a run-time k).
  Dim freshDim();
  /// Reports a problem with the model (e.g. incompatible broadcast) as a warning naming the node.
  void warn(const std::string& message);

  /// Infers a subgraph given its input types; its outputs' types come back. `feedback` pairs a
  /// loop body's carried inputs with the outputs that feed them back (body input index, body
  /// output index): a declared carried input type that the body shows wrong is widened to what
  /// both have in common, and the body is inferred again.
  std::vector<Type> inferSubgraph(Graph& graph, const std::vector<Type>& input_types,
                                  const std::vector<std::pair<size_t, size_t>>& feedback = {});

 private:
  ShapeInferenceEngine& engine_;
  Node& node_;
  int64_t opset_;
};

/// An op's inference function.
using InferFn = void (*)(InferenceContext&);

struct ShapeInferenceOptions {
  /// Mark every inferred value for export as value_info (`opt --infer-shapes`).
  bool write_value_info = false;
  /// Where contradictions between declared and inferred types are reported (as warnings about
  /// the node); nullptr drops them.
  DiagnosticSink* diagnostics = nullptr;
  /// Where the integer contents inferred for small integer tensors (shapes, dims and indices
  /// computed from Shape chains: Shape(x) of x : T[B, 12] is {B, 12}) are stored, by value;
  /// nullptr drops them. They hold until the graph changes.
  std::unordered_map<const Value*, ShapeValue>* values = nullptr;
};

struct ShapeInferenceStats {
  int64_t values = 0;        ///< node outputs visited
  int64_t typed = 0;         ///< with a known element type
  int64_t ranked = 0;        ///< with a known rank
  int64_t static_shape = 0;  ///< with every dim a known integer
  int64_t symbolic = 0;      ///< ranked, with at least one symbolic dim
  /// Values whose type (or value_info mark) this run set to something other than what it was:
  /// zero when the model already held everything inference knows (the pass manager counts a
  /// refinement as a change when it decides whether a pass may be skipped).
  int64_t refined = 0;
  std::vector<std::string> warnings;      ///< the messages also reported to options.diagnostics
  std::set<std::string> unsupported_ops;  ///< ops of the default domain with no function
};

/// Runs inference over the model's main graph and subgraphs, storing types on values. Inferred
/// information wins over declared types (value_info, graph outputs): a declared dim, rank or
/// element type that differs from the inferred one is replaced, and a provable contradiction
/// (two different known values) is reported as a warning. Declared information is kept only
/// where inference has nothing to say (an unknown dim or element type), so Shape folding never
/// rests on a declared dim that inference contradicts.
StatusOr<ShapeInferenceStats> inferShapes(Model& model, const ShapeInferenceOptions& options = {});

/// One input of inferNodeAlone: its type, and its content where known (a shape target, a scale).
struct NodeInput {
  Type type;
  std::optional<Tensor> data;
};

/// The output types inference gives `node` alone (a copy of it in a one-node model of `model`'s
/// opsets), when its inputs have these types and data (nullopt: an omitted input). For callers
/// that know more of the inputs than the model's types say (the runtime's plan, which knows
/// concrete dims and folded shape values). nullopt for a node with subgraphs.
std::optional<std::vector<Type>> inferNodeAlone(
    const Model& model, const Node& node, const std::vector<std::optional<NodeInput>>& inputs);

/// Adds the inference function of an op of a plugin's own domain (include/onnxopt/plugin/
/// plugin.h) for this process: every later inferShapes runs it for that op from `since` on. A
/// domain of ONNX, or an op and version already registered, is kInvalidArgument.
Status registerOpInference(const std::string& domain, const std::string& op, int since, InferFn fn);

/// Multidirectional (numpy) broadcast of two shapes; nullopt when they cannot broadcast.
std::optional<std::vector<Dim>> broadcastShapes(const std::vector<Dim>& a,
                                                const std::vector<Dim>& b);

namespace detail {
/// Registration of op families (src/ir/shape_inference/*.cc).
struct OpInference {
  const char* domain;
  const char* op;
  int since;
  InferFn fn;
};
void registerElementwiseOps(std::vector<OpInference>& table);
void registerShapeOps(std::vector<OpInference>& table);
void registerDataMovementOps(std::vector<OpInference>& table);
void registerNnOps(std::vector<OpInference>& table);
void registerMiscOps(std::vector<OpInference>& table);
void registerMicrosoftOps(std::vector<OpInference>& table);
}  // namespace detail

}  // namespace onnxopt::ir
