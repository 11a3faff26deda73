// The reference executor's interpreter, shared by its files: reference_executor.cc (the run and
// a node's dispatch), reference_values.cc (host-tensor helpers), reference_control_flow.cc
// (If, Loop, Scan, SequenceMap), reference_sequences.cc and reference_flex_attention.cc.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "describe_node.h"
#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/runtime/inputs.h"  // checkedByteSize
#include "onnxopt/runtime/weight_data.h"
#include "run_budget.h"

namespace onnxopt::runtime::detail {

using bridge::toHost;
using bridge::toKernelAttrs;

/// A run's value: a tensor, a sequence of tensors, or an optional that holds nothing. An optional
/// that holds a tensor or a sequence is that tensor or sequence (Optional wraps nothing more).
struct RtValue {
  enum class Kind { kTensor, kSequence, kNone };
  Kind kind = Kind::kTensor;
  kernels::HostTensor tensor;
  std::vector<kernels::HostTensor> sequence;
  DataType seq_type = DataType::kUndefined;  ///< element type of a sequence (known when empty)
  uint64_t charged = 0;  ///< the bytes the run's budget counts for it while it is stored

  uint64_t bytes() const {
    uint64_t total = hostBytes(tensor);
    for (const kernels::HostTensor& t : sequence) total = saturatingAdd(total, hostBytes(t));
    return total;
  }
  static RtValue ofTensor(kernels::HostTensor t) {
    RtValue v;
    v.tensor = std::move(t);
    return v;
  }
  static RtValue ofSequence(std::vector<kernels::HostTensor> ts, DataType type) {
    RtValue v;
    v.kind = Kind::kSequence;
    v.sequence = std::move(ts);
    v.seq_type = type;
    return v;
  }
  static RtValue none() {
    RtValue v;
    v.kind = Kind::kNone;
    return v;
  }
  const char* kindName() const {
    return kind == Kind::kTensor ? "a tensor" : kind == Kind::kSequence ? "a sequence" : "empty";
  }
};

/// Parts SplitToSequence may make, and bytes a stacked output may hold (the kernels' output cap).
/// How many iterations loops may run is the run's budget (RunLimits).
constexpr int64_t kMaxParts = int64_t{1} << 24;
constexpr uint64_t kMaxStackedBytes = uint64_t{1} << 31;

/// Byte width of one element, for the element-wise copies of slicing and stacking; 0 when the
/// type is not byte-addressable (strings are copied by value, sub-byte types are not supported).
size_t byteWidth(DataType type);

int64_t product(const std::vector<int64_t>& dims, size_t from, size_t to);

Status checkCopyable(DataType type);

/// Copies `count` elements from src[si...] to dst[di...].
void copyRun(kernels::HostTensor& dst, int64_t di, const kernels::HostTensor& src, int64_t si,
             int64_t count);

/// t[..., begin:begin+len, ...] along `axis`; with `drop_axis` (len 1) the axis is removed.
StatusOr<kernels::HostTensor> sliceAxis(const kernels::HostTensor& t, size_t axis, int64_t begin,
                                        int64_t len, bool drop_axis);

/// Stacks equal-shaped tensors along a new axis `axis` (0..rank); `elem` is the element type and
/// `elem_dims` the shape of each part when there are none.
StatusOr<kernels::HostTensor> stackAxis(const std::vector<kernels::HostTensor>& parts, size_t axis,
                                        DataType elem, const std::vector<int64_t>& elem_dims);

/// The static element type and dims of a body output, for stacking zero iterations.
std::pair<DataType, std::vector<int64_t>> staticTensorType(const ir::Value* v);

kernels::HostTensor scalarTensor(DataType type, int64_t v);

StatusOr<int64_t> readIndexScalar(const kernels::HostTensor& t, const char* what);

StatusOr<bool> readBoolScalar(const kernels::HostTensor& t, const char* what);

const ir::Graph* bodyOf(const ir::Node& n, const char* name);

std::vector<int64_t> intsAttr(const ir::Node& n, const char* name);

int64_t intAttr(const ir::Node& n, const char* name, int64_t fallback);

/// Normalizes `axis` into [0, rank).
StatusOr<size_t> axisIn(int64_t axis, int64_t rank, const char* what);

/// The dense tensor of a sparse initializer: zeros, and the values at their indices (linear
/// [NNZ] or coordinates [NNZ, rank]; the importer checked those shapes, the values are checked
/// here).
StatusOr<kernels::HostTensor> densify(const ir::SparseTensor& sparse, const std::string& name);

/// The values of one run, computed node by node.
class Interpreter {
 public:
  Interpreter(const ir::Model& model, const RunLimits& limits)
      : model_(model), opset_(model.opsetVersion("").value_or(0)), budget_(limits) {}

  Status runGraph(const ir::Graph& graph);

  std::unordered_map<const ir::Value*, RtValue> values_;

  /// One node, with its inputs (and its subgraphs' outer values) in values_ (runNodeOnHost).
  Status runOne(const ir::Node& n) { return runNode(n); }

 private:
  StatusOr<const RtValue*> valueOf(const ir::Node& n, size_t i) {
    const ir::Value* v = i < n.numInputs() ? n.input(i) : nullptr;
    if (v == nullptr) return invalidArgument("{}: input {} is required", describeNode(n), i);
    auto it = values_.find(v);
    if (it == values_.end()) {
      return invalidArgument("{}: input '{}' has no value", describeNode(n), v->name());
    }
    return &it->second;
  }
  StatusOr<const kernels::HostTensor*> tensorOf(const ir::Node& n, size_t i) {
    auto v = valueOf(n, i);
    if (!v.isOk()) return v.status();
    if ((*v)->kind != RtValue::Kind::kTensor) {
      return invalidArgument("{}: input '{}' is {}, not a tensor", describeNode(n),
                             n.input(i)->name(), (*v)->kindName());
    }
    return &(*v)->tensor;
  }
  StatusOr<const RtValue*> sequenceOf(const ir::Node& n, size_t i) {
    auto v = valueOf(n, i);
    if (!v.isOk()) return v.status();
    if ((*v)->kind != RtValue::Kind::kSequence) {
      return invalidArgument("{}: input '{}' is {}, not a sequence", describeNode(n),
                             n.input(i)->name(), (*v)->kindName());
    }
    return *v;
  }
  void setOutput(const ir::Node& n, size_t i, RtValue v) {
    if (i < n.numOutputs() && n.output(i) != nullptr) store(n.output(i), std::move(v));
  }
  /// Stores a value the run computed, counted against its memory budget (checked after the node).
  void store(const ir::Value* key, RtValue v) {
    RtValue& slot = values_[key];
    budget_.release(slot.charged);
    v.charged = v.bytes();
    budget_.charge(v.charged);
    slot = std::move(v);
  }

  Status runNode(const ir::Node& n);

  /// Runs the reference kernel `name` (referenceOpName) on the node's tensor inputs.
  Status runKernel(const ir::Node& n, const std::string& name, int64_t opset);

  Status runIf(const ir::Node& n);

  /// Before loop `n` runs `trips` iterations for certain: they (with the iterations of the loops
  /// its body is certain to run) and its outputs from `first_scan` on (scan outputs, sized by the
  /// body's static shapes) must fit what is left of the run's budget.
  Status reserveLoop(const ir::Node& n, const ir::Graph& body, uint64_t trips, size_t first_scan);
  /// After the first of the iterations of `n`, `more` of which are still certain to run: the
  /// slices `gathered` so far, as many times again, must fit the memory budget.
  Status reserveSlices(const ir::Node& n, uint64_t more,
                       const std::vector<std::vector<kernels::HostTensor>>& gathered);
  /// Keeps a slice of a scan output until the loop stacks them, counted against the budget.
  void gather(std::vector<kernels::HostTensor>& slices, kernels::HostTensor slice) {
    budget_.charge(hostBytes(slice));
    slices.push_back(std::move(slice));
  }

  /// Runs `body` once with its inputs bound to `args`; returns its outputs.
  StatusOr<std::vector<RtValue>> runBody(const ir::Node& n, const ir::Graph& body,
                                         std::vector<RtValue> args);

  // Loop(M?, cond?, v_initial...) -> (v_final..., scan_outputs...); the body maps
  // (iteration_num, cond_in, v...) -> (cond_out, v..., scan_slices...).
  Status runLoop(const ir::Node& n);

  /// Scan 9+: (state..., scan_inputs...) -> (state_final..., scan_outputs...).
  Status runScan(const ir::Node& n);

  /// The outputs of Scan over the tensor inputs [first, end) of n (state values, then scan inputs).
  StatusOr<std::vector<kernels::HostTensor>> scanOnce(
      const ir::Node& n, size_t first, size_t end,
      const std::vector<kernels::HostTensor>* given = nullptr);

  /// Scan 8: (sequence_lens?, state..., scan_inputs...), every input with a leading batch axis and
  /// the scan inputs scanned along axis 1; each batch entry is a Scan 9 over its slices.
  Status runScan8(const ir::Node& n);

  // SequenceMap(input_sequence, additional_inputs...) -> sequences: the body runs once per
  // element of the first sequence, taking element i of every sequence input and tensors whole.
  Status runSequenceMap(const ir::Node& n);

  /// A position input of the sequence ops: in [-size, size + extra), normalized.
  StatusOr<size_t> position(const ir::Node& n, size_t input, int64_t fallback, size_t size,
                            int64_t extra);

  Status runSequenceOp(const ir::Node& n);

  Status splitToSequence(const ir::Node& n);

  Status concatFromSequence(const ir::Node& n);

  /// A node of another domain: its reference kernel (ai.onnx.ml, ...), at that domain's opset.
  Status runOtherDomain(const ir::Node& n);

  // --- FlexAttention (ai.onnx.preview 1) with score_mod / prob_mod. Its kernel (attention_extra.cc)
  // computes the op without them; with them the op is composed here from reference kernels, and
  // each subgraph maps the whole [B, Hq, L, S] tensor, in the softmax precision:
  //   P = prob_mod(Softmax(score_mod(Q K^T * scale))), Y = P V; K/V head h / (Hq / Hkv) serves
  //   query head h (GQA), done as a [B, Hkv, G, L, E] x [B, Hkv, 1, E, S] broadcast MatMul.

  StatusOr<kernels::HostTensor> flexCall(const ir::Node& n, const std::string& op, int64_t opset,
                                         const std::vector<const kernels::HostTensor*>& ins,
                                         const kernels::KernelAttrs& attrs = {});

  StatusOr<kernels::HostTensor> flexReshape(const ir::Node& n, const kernels::HostTensor& t,
                                            const std::vector<int64_t>& dims);

  StatusOr<kernels::HostTensor> flexCast(const ir::Node& n, const kernels::HostTensor& t,
                                         DataType to);

  /// Runs a modifier subgraph on `t`; it must give back one tensor of t's type and shape.
  StatusOr<kernels::HostTensor> flexModifier(const ir::Node& n, const char* attr,
                                             kernels::HostTensor t);

  Status runFlexAttention(const ir::Node& n);

  const ir::Model& model_;
  int64_t opset_;
  RunBudget budget_;
};

}  // namespace onnxopt::runtime::detail
