#include "onnxopt/runtime/reference_executor.h"

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

namespace onnxopt::runtime {

using bridge::toHost;
using bridge::toKernelAttrs;
namespace {

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
size_t byteWidth(DataType type) {
  int bits = dataTypeBits(type);
  return bits > 0 && bits % 8 == 0 ? static_cast<size_t>(bits / 8) : 0;
}

int64_t product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= dims[d];
  return p;
}

Status checkCopyable(DataType type) {
  if (type == DataType::kString || byteWidth(type) > 0) return Status::ok();
  return makeError(StatusCode::kUnimplemented, "{} elements cannot be sliced or stacked",
                   dataTypeName(type));
}

/// Copies `count` elements from src[si...] to dst[di...].
void copyRun(kernels::HostTensor& dst, int64_t di, const kernels::HostTensor& src, int64_t si,
             int64_t count) {
  if (count <= 0) return;
  if (src.dtype == DataType::kString) {
    for (int64_t k = 0; k < count; ++k) {
      dst.strings[static_cast<size_t>(di + k)] = src.strings[static_cast<size_t>(si + k)];
    }
    return;
  }
  size_t w = byteWidth(src.dtype);
  std::memcpy(dst.bytes.data() + static_cast<size_t>(di) * w,
              src.bytes.data() + static_cast<size_t>(si) * w, static_cast<size_t>(count) * w);
}

/// t[..., begin:begin+len, ...] along `axis`; with `drop_axis` (len 1) the axis is removed.
StatusOr<kernels::HostTensor> sliceAxis(const kernels::HostTensor& t, size_t axis, int64_t begin,
                                        int64_t len, bool drop_axis) {
  RETURN_IF_ERROR(checkCopyable(t.dtype));
  std::vector<int64_t> dims = t.dims;
  int64_t outer = product(dims, 0, axis), extent = dims[axis];
  int64_t inner = product(dims, axis + 1, dims.size());
  if (drop_axis) {
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  } else {
    dims[axis] = len;
  }
  kernels::HostTensor out = kernels::HostTensor::zeros(t.dtype, dims);
  for (int64_t o = 0; o < outer; ++o) {
    copyRun(out, o * len * inner, t, (o * extent + begin) * inner, len * inner);
  }
  return out;
}

/// Stacks equal-shaped tensors along a new axis `axis` (0..rank); `elem` is the element type and
/// `elem_dims` the shape of each part when there are none.
StatusOr<kernels::HostTensor> stackAxis(const std::vector<kernels::HostTensor>& parts, size_t axis,
                                        DataType elem, const std::vector<int64_t>& elem_dims) {
  const std::vector<int64_t>& dims = parts.empty() ? elem_dims : parts[0].dims;
  DataType type = parts.empty() ? elem : parts[0].dtype;
  RETURN_IF_ERROR(checkCopyable(type));
  if (axis > dims.size())
    return invalidArgument("stacking axis {} is beyond rank {}", axis, dims.size());
  for (size_t k = 1; k < parts.size(); ++k) {
    if (parts[k].dtype != type || parts[k].dims != dims) {
      return invalidArgument("part {} is {}[{}], but part 0 is {}[{}]", k,
                             dataTypeName(parts[k].dtype), fmt::join(parts[k].dims, ","),
                             dataTypeName(type), fmt::join(dims, ","));
    }
  }
  std::vector<int64_t> out_dims = dims;
  out_dims.insert(out_dims.begin() + static_cast<std::ptrdiff_t>(axis),
                  static_cast<int64_t>(parts.size()));
  uint64_t n = 1;
  for (int64_t d : out_dims) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) n = UINT64_MAX;
  }
  uint64_t w = type == DataType::kString ? sizeof(std::string) : byteWidth(type);
  if (n > kMaxStackedBytes / std::max<uint64_t>(w, 1)) {
    return makeError(StatusCode::kResourceExhausted, "stacked output [{}] exceeds {} bytes",
                     fmt::join(out_dims, ","), kMaxStackedBytes);
  }
  kernels::HostTensor out = kernels::HostTensor::zeros(type, out_dims);
  int64_t outer = product(dims, 0, axis), inner = product(dims, axis, dims.size());
  int64_t count = static_cast<int64_t>(parts.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      copyRun(out, (o * count + k) * inner, parts[static_cast<size_t>(k)], o * inner, inner);
    }
  }
  return out;
}

/// The static element type and dims of a body output, for stacking zero iterations.
std::pair<DataType, std::vector<int64_t>> staticTensorType(const ir::Value* v) {
  std::vector<int64_t> dims;
  const ir::Type& type = v->type();
  if (!type.isTensor()) return {DataType::kFloat, dims};
  if (type.shape) {
    for (const ir::Dim& d : *type.shape) dims.push_back(d.isKnown() ? d.value : 0);
  }
  return {type.elem_type == DataType::kUndefined ? DataType::kFloat : type.elem_type, dims};
}

kernels::HostTensor scalarTensor(DataType type, int64_t v) {
  kernels::HostTensor t = kernels::HostTensor::zeros(type, {});
  if (type == DataType::kBool) {
    t.bytes[0] = v != 0 ? 1 : 0;
  } else {
    t.set<int64_t>(0, v);
  }
  return t;
}

StatusOr<int64_t> readIndexScalar(const kernels::HostTensor& t, const char* what) {
  if (t.numElements() != 1 || (t.dtype != DataType::kInt64 && t.dtype != DataType::kInt32)) {
    return invalidArgument("{} must be one int32 or int64 value, got {}[{}]", what,
                           dataTypeName(t.dtype), fmt::join(t.dims, ","));
  }
  return t.dtype == DataType::kInt64 ? t.get<int64_t>(0) : int64_t{t.get<int32_t>(0)};
}

StatusOr<bool> readBoolScalar(const kernels::HostTensor& t, const char* what) {
  if (t.numElements() != 1 || t.dtype != DataType::kBool) {
    return invalidArgument("{} must be one bool value, got {}[{}]", what, dataTypeName(t.dtype),
                           fmt::join(t.dims, ","));
  }
  return t.bytes[0] != 0;
}

const ir::Graph* bodyOf(const ir::Node& n, const char* name) {
  const ir::Attribute* a = n.findAttribute(name);
  return a == nullptr || a->graphs.size() != 1 ? nullptr : a->graphs[0].get();
}

std::vector<int64_t> intsAttr(const ir::Node& n, const char* name) {
  const ir::Attribute* a = n.findAttribute(name);
  return a == nullptr ? std::vector<int64_t>{} : a->ints;
}

int64_t intAttr(const ir::Node& n, const char* name, int64_t fallback) {
  const ir::Attribute* a = n.findAttribute(name);
  return a == nullptr ? fallback : a->i;
}

/// Normalizes `axis` into [0, rank).
StatusOr<size_t> axisIn(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    return invalidArgument("{} {} is out of range for rank {}", what, axis, rank);
  }
  return static_cast<size_t>(axis < 0 ? axis + rank : axis);
}

/// The dense tensor of a sparse initializer: zeros, and the values at their indices (linear
/// [NNZ] or coordinates [NNZ, rank]; the importer checked those shapes, the values are checked
/// here).
StatusOr<kernels::HostTensor> densify(const ir::SparseTensor& sparse, const std::string& name) {
  kernels::HostTensor values = toHost(sparse.values);
  kernels::HostTensor indices = toHost(sparse.indices);
  kernels::HostTensor dense;
  dense.dtype = values.dtype;
  dense.dims = sparse.dims;
  int bits = dataTypeBits(values.dtype);
  if (bits <= 0 || bits % 8 != 0) {
    return invalidArgument("sparse initializer '{}': values of {} are not supported", name,
                           dataTypeName(values.dtype));
  }
  auto elem = static_cast<size_t>(bits / 8);
  ASSIGN_OR_RETURN(uint64_t bytes, checkedByteSize(dense.dims, dense.dtype,
                                                   fmt::format("sparse initializer '{}'", name)));
  dense.bytes.assign(static_cast<size_t>(bytes), '\0');
  int64_t total = static_cast<int64_t>(bytes / elem);
  int64_t nnz = values.numElements();
  size_t rank = dense.dims.size();
  bool coords = indices.dims.size() == 2;
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t at = 0;
    if (coords) {
      for (size_t a = 0; a < rank; ++a) {
        int64_t c = indices.get<int64_t>(k * static_cast<int64_t>(rank) + static_cast<int64_t>(a));
        if (c < 0 || c >= dense.dims[a]) {
          return invalidArgument("sparse initializer '{}': index {} out of range on axis {}", name,
                                 c, a);
        }
        at = at * dense.dims[a] + c;
      }
    } else {
      at = indices.get<int64_t>(k);
      if (at < 0 || at >= total) {
        return invalidArgument("sparse initializer '{}': index {} out of range for {} elements",
                               name, at, total);
      }
    }
    std::memcpy(dense.bytes.data() + static_cast<size_t>(at) * elem,
                values.bytes.data() + static_cast<size_t>(k) * elem, elem);
  }
  return dense;
}

/// The values of one run, computed node by node.
class Interpreter {
 public:
  Interpreter(const ir::Model& model, const RunLimits& limits)
      : model_(model), opset_(model.opsetVersion("").value_or(0)), budget_(limits) {}

  Status runGraph(const ir::Graph& graph) {
    for (const ir::Value* v : graph.initializers()) {
      if (values_.count(v)) continue;  // an input default overridden by the caller
      if (const ir::Tensor* t = v->initializer()) {
        values_[v] = RtValue::ofTensor(toHost(*t));
      } else if (const ir::SparseTensor* sp = v->sparseInitializer()) {
        auto dense = densify(*sp, v->name());
        if (!dense.isOk()) return dense.status();
        values_[v] = RtValue::ofTensor(std::move(dense).value());
      }
    }
    for (const ir::Node* n : graph) {
      RETURN_IF_ERROR(runNode(*n));
      RETURN_IF_ERROR(budget_.checkMemory(*n));
    }
    return Status::ok();
  }

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

  Status runNode(const ir::Node& n) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return runOtherDomain(n);
    const std::string& op = n.opType();
    if (op == "Constant") {
      auto t = ir::constantNodeTensor(n);
      if (!t)
        return makeError(StatusCode::kUnimplemented, "{}: unsupported Constant", describeNode(n));
      setOutput(n, 0, RtValue::ofTensor(toHost(*t)));
      return Status::ok();
    }
    if (op == "If") return runIf(n);
    if (op == "Loop") return runLoop(n);
    if (op == "Scan") return opset_ < 9 ? runScan8(n) : runScan(n);
    if (op == "SequenceMap") return runSequenceMap(n);
    if (op.rfind("Sequence", 0) == 0 || op == "SplitToSequence" || op == "ConcatFromSequence" ||
        op.rfind("Optional", 0) == 0) {
      Status st = runSequenceOp(n);
      return st.isOk() ? st : st.withContext(describeNode(n));
    }
    if (op == "Identity" && n.numInputs() == 1 && n.input(0) != nullptr) {
      auto v = valueOf(n, 0);
      if (v.isOk() && (*v)->kind != RtValue::Kind::kTensor) {
        setOutput(n, 0, **v);
        return Status::ok();
      }
    }
    return runKernel(n, op, opset_);
  }

  /// Runs the reference kernel `name` (referenceOpName) on the node's tensor inputs.
  Status runKernel(const ir::Node& n, const std::string& name, int64_t opset) {
    std::vector<const kernels::HostTensor*> inputs;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      if (n.input(i) == nullptr) {
        inputs.push_back(nullptr);
        continue;
      }
      auto t = tensorOf(n, i);
      if (!t.isOk()) return t.status();
      inputs.push_back(*t);
    }
    if (!n.subgraphs().empty()) {
      return makeError(StatusCode::kUnimplemented,
                       "{}: {} is not supported by the reference executor yet", describeNode(n),
                       name);
    }
    auto out = kernels::runReferenceKernel(name, opset, inputs, toKernelAttrs(n), n.numOutputs());
    if (!out.isOk()) return out.status().withContext(describeNode(n));
    for (size_t i = 0; i < n.numOutputs(); ++i) setOutput(n, i, RtValue::ofTensor((*out)[i]));
    return Status::ok();
  }

  Status runIf(const ir::Node& n) {
    auto c = tensorOf(n, 0);
    if (!c.isOk()) return c.status();
    if ((*c)->bytes.empty()) {
      return makeError(StatusCode::kInvalidArgument, "{}: no condition value", describeNode(n));
    }
    bool cond = (*c)->bytes[0] != 0;
    const ir::Graph* branch = bodyOf(n, cond ? "then_branch" : "else_branch");
    if (branch == nullptr) {
      return makeError(StatusCode::kInvalidArgument, "{}: missing branch", describeNode(n));
    }
    RETURN_IF_ERROR(runGraph(*branch));
    for (size_t i = 0; i < n.numOutputs() && i < branch->numOutputs(); ++i) {
      setOutput(n, i, values_.at(branch->output(i)));
    }
    return Status::ok();
  }

  /// Before loop `n` runs `trips` iterations for certain: they (with the iterations of the loops
  /// its body is certain to run) and its outputs from `first_scan` on (scan outputs, sized by the
  /// body's static shapes) must fit what is left of the run's budget.
  Status reserveLoop(const ir::Node& n, const ir::Graph& body, uint64_t trips, size_t first_scan) {
    uint64_t each = saturatingAdd(1, certainIterations(body, opset_));
    RETURN_IF_ERROR(budget_.reserveIterations(n, saturatingMul(trips, each)));
    uint64_t bytes = 0;
    for (size_t k = first_scan; k < body.numOutputs(); ++k) {
      bytes = saturatingAdd(bytes, saturatingMul(trips, staticBytes(*body.output(k))));
    }
    return budget_.reserveMemory(n, "its scan outputs", bytes);
  }
  /// After the first of the iterations of `n`, `more` of which are still certain to run: the
  /// slices `gathered` so far, as many times again, must fit the memory budget.
  Status reserveSlices(const ir::Node& n, uint64_t more,
                       const std::vector<std::vector<kernels::HostTensor>>& gathered) {
    uint64_t bytes = 0;
    for (const auto& slices : gathered) {
      if (!slices.empty()) bytes = saturatingAdd(bytes, saturatingMul(more, hostBytes(slices[0])));
    }
    return budget_.reserveMemory(n, "its scan outputs", bytes);
  }
  /// Keeps a slice of a scan output until the loop stacks them, counted against the budget.
  void gather(std::vector<kernels::HostTensor>& slices, kernels::HostTensor slice) {
    budget_.charge(hostBytes(slice));
    slices.push_back(std::move(slice));
  }

  /// Runs `body` once with its inputs bound to `args`; returns its outputs.
  StatusOr<std::vector<RtValue>> runBody(const ir::Node& n, const ir::Graph& body,
                                         std::vector<RtValue> args) {
    const auto& ins = body.inputs();
    if (ins.size() != args.size()) {
      return invalidArgument("{}: the body takes {} inputs, but {} are given", describeNode(n),
                             ins.size(), args.size());
    }
    for (size_t i = 0; i < ins.size(); ++i) store(ins[i], std::move(args[i]));
    Status st = runGraph(body);
    if (!st.isOk()) return st.withContext(describeNode(n));
    std::vector<RtValue> outs;
    for (size_t i = 0; i < body.numOutputs(); ++i) {
      auto it = values_.find(body.output(i));
      if (it == values_.end()) {
        return invalidArgument("{}: body output '{}' was not computed", describeNode(n),
                               body.output(i)->name());
      }
      outs.push_back(it->second);
    }
    return outs;
  }

  // Loop(M?, cond?, v_initial...) -> (v_final..., scan_outputs...); the body maps
  // (iteration_num, cond_in, v...) -> (cond_out, v..., scan_slices...).
  Status runLoop(const ir::Node& n) {
    const ir::Graph* body = bodyOf(n, "body");
    if (body == nullptr) return invalidArgument("{}: no body graph", describeNode(n));
    if (n.numInputs() < 2) return invalidArgument("{}: Loop takes M and cond", describeNode(n));
    size_t num_carried = n.numInputs() - 2;
    if (body->numOutputs() < num_carried + 1 || body->inputs().size() != num_carried + 2) {
      return invalidArgument("{}: the body has {} inputs and {} outputs for {} loop-carried values",
                             describeNode(n), body->inputs().size(), body->numOutputs(),
                             num_carried);
    }
    size_t num_scan = body->numOutputs() - 1 - num_carried;
    if (n.numOutputs() > num_carried + num_scan) {
      return invalidArgument("{}: {} outputs, but the body makes {}", describeNode(n),
                             n.numOutputs(), num_carried + num_scan);
    }
    std::optional<int64_t> trip;
    if (n.input(0) != nullptr) {
      auto t = tensorOf(n, 0);
      if (!t.isOk()) return t.status();
      auto m = readIndexScalar(**t, "trip count M");
      if (!m.isOk()) return m.status().withContext(describeNode(n));
      trip = *m;
    }
    bool cond = true;
    if (n.input(1) != nullptr) {
      auto t = tensorOf(n, 1);
      if (!t.isOk()) return t.status();
      auto c = readBoolScalar(**t, "condition");
      if (!c.isOk()) return c.status().withContext(describeNode(n));
      cond = *c;
    }
    std::vector<RtValue> carried;
    for (size_t i = 0; i < num_carried; ++i) {
      auto v = valueOf(n, i + 2);
      if (!v.isOk()) return v.status();
      carried.push_back(**v);
    }
    std::vector<std::vector<kernels::HostTensor>> scans(num_scan);
    // A trip count that the condition cannot cut short is what the loop will run: checked first.
    const bool exact = trip && cond && loopNeverStopsEarly(*body);
    const uint64_t trips = exact ? static_cast<uint64_t>(std::max<int64_t>(*trip, 0)) : 0;
    if (exact) RETURN_IF_ERROR(reserveLoop(n, *body, trips, 1 + num_carried));
    for (int64_t iter = 0; cond && (!trip || iter < *trip); ++iter) {
      RETURN_IF_ERROR(budget_.iterate(n));
      std::vector<RtValue> args;
      args.push_back(RtValue::ofTensor(scalarTensor(DataType::kInt64, iter)));
      args.push_back(RtValue::ofTensor(scalarTensor(DataType::kBool, 1)));
      for (auto& v : carried) args.push_back(std::move(v));
      auto outs = runBody(n, *body, std::move(args));
      if (!outs.isOk()) return outs.status();
      if ((*outs)[0].kind != RtValue::Kind::kTensor) {
        return invalidArgument("{}: the body's condition output is not a tensor", describeNode(n));
      }
      auto c = readBoolScalar((*outs)[0].tensor, "the body's condition output");
      if (!c.isOk()) return c.status().withContext(describeNode(n));
      cond = *c;
      carried.assign(outs->begin() + 1,
                     outs->begin() + 1 + static_cast<std::ptrdiff_t>(num_carried));
      for (size_t k = 0; k < num_scan; ++k) {
        RtValue& s = (*outs)[1 + num_carried + k];
        if (s.kind != RtValue::Kind::kTensor) {
          return invalidArgument("{}: scan output {} is {}, not a tensor", describeNode(n), k,
                                 s.kindName());
        }
        gather(scans[k], std::move(s.tensor));
      }
      if (exact && iter == 0) RETURN_IF_ERROR(reserveSlices(n, trips - 1, scans));
    }
    for (size_t i = 0; i < num_carried; ++i) setOutput(n, i, std::move(carried[i]));
    for (size_t k = 0; k < num_scan; ++k) {
      auto [type, dims] = staticTensorType(body->output(1 + num_carried + k));
      auto stacked = stackAxis(scans[k], 0, type, dims);
      for (const kernels::HostTensor& t : scans[k]) budget_.release(hostBytes(t));
      if (!stacked.isOk()) {
        return stacked.status().withContext(fmt::format("{}: scan output {}", describeNode(n), k));
      }
      setOutput(n, num_carried + k, RtValue::ofTensor(std::move(stacked).value()));
    }
    return Status::ok();
  }

  /// Scan 9+: (state..., scan_inputs...) -> (state_final..., scan_outputs...).
  Status runScan(const ir::Node& n) {
    auto st = scanOnce(n, 0, n.numInputs());
    if (!st.isOk()) return st.status();
    for (size_t i = 0; i < st->size(); ++i) setOutput(n, i, RtValue::ofTensor((*st)[i]));
    return Status::ok();
  }

  /// The outputs of Scan over the tensor inputs [first, end) of n (state values, then scan inputs).
  StatusOr<std::vector<kernels::HostTensor>> scanOnce(
      const ir::Node& n, size_t first, size_t end,
      const std::vector<kernels::HostTensor>* given = nullptr) {
    const ir::Graph* body = bodyOf(n, "body");
    if (body == nullptr) return invalidArgument("{}: no body graph", describeNode(n));
    std::vector<kernels::HostTensor> ins;
    if (given != nullptr) {
      ins = *given;
    } else {
      for (size_t i = first; i < end; ++i) {
        auto t = tensorOf(n, i);
        if (!t.isOk()) return t.status();
        ins.push_back(**t);
      }
    }
    int64_t num_scan_in = intAttr(n, "num_scan_inputs", -1);
    if (num_scan_in < 1 || static_cast<size_t>(num_scan_in) > ins.size()) {
      return invalidArgument("{}: num_scan_inputs {} does not fit {} inputs", describeNode(n),
                             num_scan_in, ins.size());
    }
    size_t m = static_cast<size_t>(num_scan_in);
    size_t num_state = ins.size() - m;
    if (body->inputs().size() != ins.size() || body->numOutputs() < num_state) {
      return invalidArgument("{}: the body has {} inputs and {} outputs for {} inputs",
                             describeNode(n), body->inputs().size(), body->numOutputs(),
                             ins.size());
    }
    size_t k_out = body->numOutputs() - num_state;
    bool batch8 = given != nullptr;  // opset 8: axes are fixed (0 once the batch is sliced)
    std::vector<int64_t> in_axes = batch8 ? std::vector<int64_t>{} : intsAttr(n, "scan_input_axes");
    std::vector<int64_t> in_dirs = intsAttr(n, batch8 ? "directions" : "scan_input_directions");
    std::vector<int64_t> out_axes =
        batch8 ? std::vector<int64_t>{} : intsAttr(n, "scan_output_axes");
    std::vector<int64_t> out_dirs =
        batch8 ? std::vector<int64_t>{} : intsAttr(n, "scan_output_directions");
    auto checkLen = [&](const std::vector<int64_t>& v, size_t want, const char* what) -> Status {
      if (!v.empty() && v.size() != want) {
        return invalidArgument("{}: {} has {} entries for {} values", describeNode(n), what,
                               v.size(), want);
      }
      return Status::ok();
    };
    RETURN_IF_ERROR(checkLen(in_axes, m, "scan_input_axes"));
    RETURN_IF_ERROR(checkLen(in_dirs, m, "scan_input_directions"));
    RETURN_IF_ERROR(checkLen(out_axes, k_out, "scan_output_axes"));
    RETURN_IF_ERROR(checkLen(out_dirs, k_out, "scan_output_directions"));
    int64_t len = -1;
    std::vector<size_t> axes(m);
    for (size_t j = 0; j < m; ++j) {
      const kernels::HostTensor& t = ins[num_state + j];
      auto axis = axisIn(in_axes.empty() ? 0 : in_axes[j], t.rank(), "scan input axis");
      if (!axis.isOk()) return axis.status().withContext(describeNode(n));
      axes[j] = *axis;
      int64_t l = t.dims[*axis];
      if (len >= 0 && l != len) {
        return invalidArgument("{}: scan inputs have lengths {} and {}", describeNode(n), len, l);
      }
      len = l;
    }
    RETURN_IF_ERROR(
        reserveLoop(n, *body, static_cast<uint64_t>(std::max<int64_t>(len, 0)), num_state));
    std::vector<kernels::HostTensor> state(ins.begin(),
                                           ins.begin() + static_cast<std::ptrdiff_t>(num_state));
    std::vector<std::vector<kernels::HostTensor>> slices(k_out);
    for (int64_t it = 0; it < len; ++it) {
      RETURN_IF_ERROR(budget_.iterate(n));
      std::vector<RtValue> args;
      for (auto& s : state) args.push_back(RtValue::ofTensor(std::move(s)));
      for (size_t j = 0; j < m; ++j) {
        int64_t idx = !in_dirs.empty() && in_dirs[j] == 1 ? len - 1 - it : it;
        auto slice = sliceAxis(ins[num_state + j], axes[j], idx, 1, true);
        if (!slice.isOk()) return slice.status().withContext(describeNode(n));
        args.push_back(RtValue::ofTensor(std::move(slice).value()));
      }
      auto outs = runBody(n, *body, std::move(args));
      if (!outs.isOk()) return outs.status();
      state.clear();
      for (size_t i = 0; i < outs->size(); ++i) {
        if ((*outs)[i].kind != RtValue::Kind::kTensor) {
          return invalidArgument("{}: body output {} is {}, not a tensor", describeNode(n), i,
                                 (*outs)[i].kindName());
        }
        if (i < num_state) {
          state.push_back(std::move((*outs)[i].tensor));
        } else {
          gather(slices[i - num_state], std::move((*outs)[i].tensor));
        }
      }
      if (it == 0) RETURN_IF_ERROR(reserveSlices(n, static_cast<uint64_t>(len - 1), slices));
    }
    std::vector<kernels::HostTensor> result = std::move(state);
    for (size_t k = 0; k < k_out; ++k) {
      auto [type, dims] = staticTensorType(body->output(num_state + k));
      if (!slices[k].empty()) dims = slices[k][0].dims;
      if (!out_dirs.empty() && out_dirs[k] == 1) std::reverse(slices[k].begin(), slices[k].end());
      int64_t rank = static_cast<int64_t>(dims.size()) + 1;
      auto axis = axisIn(out_axes.empty() ? 0 : out_axes[k], rank, "scan output axis");
      if (!axis.isOk()) return axis.status().withContext(describeNode(n));
      auto stacked = stackAxis(slices[k], *axis, type, dims);
      for (const kernels::HostTensor& t : slices[k]) budget_.release(hostBytes(t));
      if (!stacked.isOk()) {
        return stacked.status().withContext(fmt::format("{}: scan output {}", describeNode(n), k));
      }
      result.push_back(std::move(stacked).value());
    }
    return result;
  }

  /// Scan 8: (sequence_lens?, state..., scan_inputs...), every input with a leading batch axis and
  /// the scan inputs scanned along axis 1; each batch entry is a Scan 9 over its slices.
  Status runScan8(const ir::Node& n) {
    if (n.numInputs() < 1) return invalidArgument("{}: no inputs", describeNode(n));
    std::vector<kernels::HostTensor> ins;
    for (size_t i = 1; i < n.numInputs(); ++i) {
      auto t = tensorOf(n, i);
      if (!t.isOk()) return t.status();
      ins.push_back(**t);
    }
    if (ins.empty() || ins[0].rank() < 1) {
      return invalidArgument("{}: inputs need a batch axis", describeNode(n));
    }
    int64_t batch = ins[0].dims[0];
    for (const auto& t : ins) {
      if (t.rank() < 1 || t.dims[0] != batch) {
        return invalidArgument("{}: inputs disagree on the batch size {}", describeNode(n), batch);
      }
    }
    int64_t num_scan_in = intAttr(n, "num_scan_inputs", -1);
    if (n.input(0) != nullptr) {
      auto lens = tensorOf(n, 0);
      if (!lens.isOk()) return lens.status();
      size_t first_scan = ins.size() - static_cast<size_t>(std::max<int64_t>(num_scan_in, 0));
      int64_t full =
          first_scan < ins.size() && ins[first_scan].rank() > 1 ? ins[first_scan].dims[1] : -1;
      if ((*lens)->dtype != DataType::kInt32 || (*lens)->numElements() != batch) {
        return invalidArgument("{}: sequence_lens must be int32[{}]", describeNode(n), batch);
      }
      for (int64_t b = 0; b < batch; ++b) {
        if ((*lens)->get<int32_t>(b) != full) {
          return makeError(StatusCode::kUnimplemented,
                           "{}: sequence_lens shorter than the scan length (the padding of the "
                           "outputs is left to the runtime)",
                           describeNode(n));
        }
      }
    }
    std::vector<std::vector<kernels::HostTensor>> per_batch;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<kernels::HostTensor> slice;
      for (const auto& t : ins) {
        auto s = sliceAxis(t, 0, b, 1, true);
        if (!s.isOk()) return s.status().withContext(describeNode(n));
        slice.push_back(std::move(s).value());
      }
      auto outs = scanOnce(n, 0, 0, &slice);
      if (!outs.isOk()) return outs.status();
      per_batch.push_back(std::move(outs).value());
    }
    size_t num_out = per_batch.empty() ? 0 : per_batch[0].size();
    if (batch == 0) return invalidArgument("{}: an empty batch", describeNode(n));
    for (size_t i = 0; i < num_out; ++i) {
      std::vector<kernels::HostTensor> parts;
      for (auto& p : per_batch) parts.push_back(std::move(p[i]));
      auto stacked = stackAxis(parts, 0, parts[0].dtype, parts[0].dims);
      if (!stacked.isOk()) return stacked.status().withContext(describeNode(n));
      setOutput(n, i, RtValue::ofTensor(std::move(stacked).value()));
    }
    return Status::ok();
  }

  // SequenceMap(input_sequence, additional_inputs...) -> sequences: the body runs once per
  // element of the first sequence, taking element i of every sequence input and tensors whole.
  Status runSequenceMap(const ir::Node& n) {
    const ir::Graph* body = bodyOf(n, "body");
    if (body == nullptr) return invalidArgument("{}: no body graph", describeNode(n));
    auto first = sequenceOf(n, 0);
    if (!first.isOk()) return first.status();
    size_t len = (*first)->sequence.size();
    std::vector<const RtValue*> ins;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      auto v = valueOf(n, i);
      if (!v.isOk()) return v.status();
      if ((*v)->kind == RtValue::Kind::kSequence && (*v)->sequence.size() != len) {
        return invalidArgument("{}: sequence inputs have lengths {} and {}", describeNode(n), len,
                               (*v)->sequence.size());
      }
      if ((*v)->kind == RtValue::Kind::kNone) {
        return invalidArgument("{}: input {} is an empty optional", describeNode(n), i);
      }
      ins.push_back(*v);
    }
    std::vector<std::vector<kernels::HostTensor>> outs(body->numOutputs());
    RETURN_IF_ERROR(reserveLoop(n, *body, len, 0));
    for (size_t it = 0; it < len; ++it) {
      RETURN_IF_ERROR(budget_.iterate(n));
      std::vector<RtValue> args;
      for (const RtValue* v : ins) {
        args.push_back(v->kind == RtValue::Kind::kSequence ? RtValue::ofTensor(v->sequence[it])
                                                           : *v);
      }
      auto res = runBody(n, *body, std::move(args));
      if (!res.isOk()) return res.status();
      for (size_t k = 0; k < res->size(); ++k) {
        if ((*res)[k].kind != RtValue::Kind::kTensor) {
          return invalidArgument("{}: body output {} is {}, not a tensor", describeNode(n), k,
                                 (*res)[k].kindName());
        }
        gather(outs[k], std::move((*res)[k].tensor));
      }
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      DataType type = staticTensorType(body->output(k)).first;
      if (!outs[k].empty()) type = outs[k][0].dtype;
      for (const kernels::HostTensor& t : outs[k]) budget_.release(hostBytes(t));
      setOutput(n, k, RtValue::ofSequence(std::move(outs[k]), type));
    }
    return Status::ok();
  }

  /// A position input of the sequence ops: in [-size, size + extra), normalized.
  StatusOr<size_t> position(const ir::Node& n, size_t input, int64_t fallback, size_t size,
                            int64_t extra) {
    int64_t pos = fallback;
    if (input < n.numInputs() && n.input(input) != nullptr) {
      auto t = tensorOf(n, input);
      if (!t.isOk()) return t.status();
      auto p = readIndexScalar(**t, "position");
      if (!p.isOk()) return p.status();
      pos = *p;
    }
    int64_t s = static_cast<int64_t>(size);
    if (pos < -s || pos >= s + extra) {
      return invalidArgument("position {} is out of range for a sequence of {}", pos, s);
    }
    return static_cast<size_t>(pos < 0 ? pos + s : pos);
  }

  Status runSequenceOp(const ir::Node& n) {
    const std::string& op = n.opType();
    if (op == "SequenceEmpty") {
      DataType type =
          static_cast<DataType>(intAttr(n, "dtype", static_cast<int64_t>(DataType::kFloat)));
      setOutput(n, 0, RtValue::ofSequence({}, type));
      return Status::ok();
    }
    if (op == "SequenceConstruct") {
      std::vector<kernels::HostTensor> ts;
      for (size_t i = 0; i < n.numInputs(); ++i) {
        auto t = tensorOf(n, i);
        if (!t.isOk()) return t.status();
        if (!ts.empty() && (*t)->dtype != ts[0].dtype) {
          return invalidArgument("inputs are {} and {}", dataTypeName(ts[0].dtype),
                                 dataTypeName((*t)->dtype));
        }
        ts.push_back(**t);
      }
      if (ts.empty()) return invalidArgument("SequenceConstruct takes at least one tensor");
      DataType type = ts[0].dtype;
      setOutput(n, 0, RtValue::ofSequence(std::move(ts), type));
      return Status::ok();
    }
    if (op == "Optional") {
      if (n.numInputs() > 0 && n.input(0) != nullptr) {
        auto v = valueOf(n, 0);
        if (!v.isOk()) return v.status();
        setOutput(n, 0, **v);
      } else {
        setOutput(n, 0, RtValue::none());
      }
      return Status::ok();
    }
    if (op == "OptionalHasElement") {
      bool has = false;
      if (n.numInputs() > 0 && n.input(0) != nullptr) {
        auto v = valueOf(n, 0);
        if (!v.isOk()) return v.status();
        has = (*v)->kind != RtValue::Kind::kNone;
      }
      setOutput(n, 0, RtValue::ofTensor(scalarTensor(DataType::kBool, has ? 1 : 0)));
      return Status::ok();
    }
    if (op == "OptionalGetElement") {
      auto v = valueOf(n, 0);
      if (!v.isOk()) return v.status();
      if ((*v)->kind == RtValue::Kind::kNone) return invalidArgument("the optional is empty");
      setOutput(n, 0, **v);
      return Status::ok();
    }
    if (op == "SplitToSequence") return splitToSequence(n);
    if (op == "ConcatFromSequence") return concatFromSequence(n);
    auto seq = sequenceOf(n, 0);
    if (!seq.isOk()) return seq.status();
    const RtValue& s = **seq;
    if (op == "SequenceLength") {
      setOutput(n, 0,
                RtValue::ofTensor(
                    scalarTensor(DataType::kInt64, static_cast<int64_t>(s.sequence.size()))));
      return Status::ok();
    }
    if (op == "SequenceAt") {
      auto pos = position(n, 1, 0, s.sequence.size(), 0);
      if (!pos.isOk()) return pos.status();
      setOutput(n, 0, RtValue::ofTensor(s.sequence[*pos]));
      return Status::ok();
    }
    if (op == "SequenceErase") {
      auto pos = position(n, 1, -1, s.sequence.size(), 0);
      if (!pos.isOk()) return pos.status();
      RtValue out = s;
      out.sequence.erase(out.sequence.begin() + static_cast<std::ptrdiff_t>(*pos));
      setOutput(n, 0, std::move(out));
      return Status::ok();
    }
    if (op == "SequenceInsert") {
      auto t = tensorOf(n, 1);
      if (!t.isOk()) return t.status();
      if (s.seq_type != DataType::kUndefined && (*t)->dtype != s.seq_type) {
        return invalidArgument("inserting {} into a sequence of {}", dataTypeName((*t)->dtype),
                               dataTypeName(s.seq_type));
      }
      auto pos = position(n, 2, static_cast<int64_t>(s.sequence.size()), s.sequence.size(), 1);
      if (!pos.isOk()) return pos.status();
      RtValue out = s;
      out.seq_type = (*t)->dtype;
      out.sequence.insert(out.sequence.begin() + static_cast<std::ptrdiff_t>(*pos), **t);
      setOutput(n, 0, std::move(out));
      return Status::ok();
    }
    return makeError(StatusCode::kUnimplemented, "no reference implementation of {}", op);
  }

  Status splitToSequence(const ir::Node& n) {
    auto in = tensorOf(n, 0);
    if (!in.isOk()) return in.status();
    const kernels::HostTensor& t = **in;
    auto axis = axisIn(intAttr(n, "axis", 0), t.rank(), "axis");
    if (!axis.isOk()) return axis.status();
    int64_t dim = t.dims[*axis];
    std::vector<int64_t> sizes;
    bool keep = intAttr(n, "keepdims", 1) != 0;
    bool split_given = n.numInputs() > 1 && n.input(1) != nullptr;
    if (!split_given) {
      sizes.assign(static_cast<size_t>(dim), 1);
    } else {
      auto sp = tensorOf(n, 1);
      if (!sp.isOk()) return sp.status();
      const kernels::HostTensor& st = **sp;
      if (st.dtype != DataType::kInt64 && st.dtype != DataType::kInt32) {
        return invalidArgument("split must be int32 or int64, got {}", dataTypeName(st.dtype));
      }
      auto at = [&](int64_t i) {
        return st.dtype == DataType::kInt64 ? st.get<int64_t>(i) : int64_t{st.get<int32_t>(i)};
      };
      if (st.rank() == 0) {
        int64_t chunk = at(0);
        if (chunk <= 0) return invalidArgument("split size {} is not positive", chunk);
        for (int64_t b = 0; b < dim; b += chunk) sizes.push_back(std::min(chunk, dim - b));
      } else if (st.rank() == 1) {
        int64_t sum = 0;
        for (int64_t i = 0; i < st.numElements(); ++i) {
          if (at(i) < 0) return invalidArgument("split size {} is negative", at(i));
          sizes.push_back(at(i));
          sum += at(i);
        }
        if (sum != dim) {
          return invalidArgument("split sizes sum to {}, but the axis has {}", sum, dim);
        }
      } else {
        return invalidArgument("split must be a scalar or 1-D, got rank {}", st.rank());
      }
    }
    if (static_cast<int64_t>(sizes.size()) > kMaxParts) {
      return makeError(StatusCode::kResourceExhausted, "more than {} parts", kMaxParts);
    }
    std::vector<kernels::HostTensor> parts;
    int64_t begin = 0;
    for (int64_t sz : sizes) {
      auto p = sliceAxis(t, *axis, begin, sz, !split_given && !keep);
      if (!p.isOk()) return p.status();
      parts.push_back(std::move(p).value());
      begin += sz;
    }
    setOutput(n, 0, RtValue::ofSequence(std::move(parts), t.dtype));
    return Status::ok();
  }

  Status concatFromSequence(const ir::Node& n) {
    auto seq = sequenceOf(n, 0);
    if (!seq.isOk()) return seq.status();
    const auto& parts = (*seq)->sequence;
    if (parts.empty()) return invalidArgument("the sequence is empty");
    int64_t axis = intAttr(n, "axis", 0);
    if (intAttr(n, "new_axis", 0) == 1) {
      auto a = axisIn(axis, parts[0].rank() + 1, "axis");
      if (!a.isOk()) return a.status();
      auto out = stackAxis(parts, *a, parts[0].dtype, parts[0].dims);
      if (!out.isOk()) return out.status();
      setOutput(n, 0, RtValue::ofTensor(std::move(out).value()));
      return Status::ok();
    }
    std::vector<const kernels::HostTensor*> ins;
    for (const auto& p : parts) ins.push_back(&p);
    kernels::KernelAttrs attrs;
    attrs.ints["axis"] = axis;
    auto out = kernels::runReferenceKernel("Concat", opset_, ins, attrs, 1);
    if (!out.isOk()) return out.status();
    setOutput(n, 0, RtValue::ofTensor(std::move((*out)[0])));
    return Status::ok();
  }

  /// A node of another domain: its reference kernel (ai.onnx.ml, ...), at that domain's opset.
  Status runOtherDomain(const ir::Node& n) {
    if (n.domain() == "ai.onnx.preview" && n.opType() == "FlexAttention" &&
        !n.subgraphs().empty()) {
      return runFlexAttention(n);
    }
    const std::string name = kernels::referenceOpName(n.domain(), n.opType());
    const int64_t opset = model_.opsetVersion(n.domain()).value_or(0);
    if (!kernels::hasReferenceKernel(name, opset)) {
      auto why = kernels::referenceCapabilities().supports(bridge::opQuery(n, opset));
      return makeError(
          StatusCode::kUnimplemented, "{}: {}", describeNode(n),
          why ? fmt::format("no reference kernel for {} at opset {}", name, opset) : why.reason);
    }
    return runKernel(n, name, opset);
  }

  // --- FlexAttention (ai.onnx.preview 1) with score_mod / prob_mod. Its kernel (attention_extra.cc)
  // computes the op without them; with them the op is composed here from reference kernels, and
  // each subgraph maps the whole [B, Hq, L, S] tensor, in the softmax precision:
  //   P = prob_mod(Softmax(score_mod(Q K^T * scale))), Y = P V; K/V head h / (Hq / Hkv) serves
  //   query head h (GQA), done as a [B, Hkv, G, L, E] x [B, Hkv, 1, E, S] broadcast MatMul.

  StatusOr<kernels::HostTensor> flexCall(const ir::Node& n, const std::string& op, int64_t opset,
                                         const std::vector<const kernels::HostTensor*>& ins,
                                         const kernels::KernelAttrs& attrs = {}) {
    auto out = kernels::runReferenceKernel(op, opset, ins, attrs, 1);
    if (!out.isOk()) return out.status().withContext(describeNode(n));
    return std::move((*out)[0]);
  }

  StatusOr<kernels::HostTensor> flexReshape(const ir::Node& n, const kernels::HostTensor& t,
                                            const std::vector<int64_t>& dims) {
    kernels::HostTensor shape =
        kernels::HostTensor::zeros(DataType::kInt64, {static_cast<int64_t>(dims.size())});
    for (size_t i = 0; i < dims.size(); ++i) shape.set<int64_t>(static_cast<int64_t>(i), dims[i]);
    return flexCall(n, "Reshape", 21, {&t, &shape});
  }

  StatusOr<kernels::HostTensor> flexCast(const ir::Node& n, const kernels::HostTensor& t,
                                         DataType to) {
    kernels::KernelAttrs attrs;
    attrs.ints["to"] = static_cast<int64_t>(to);
    return flexCall(n, "Cast", 21, {&t}, attrs);
  }

  /// Runs a modifier subgraph on `t`; it must give back one tensor of t's type and shape.
  StatusOr<kernels::HostTensor> flexModifier(const ir::Node& n, const char* attr,
                                             kernels::HostTensor t) {
    const ir::Graph* g = bodyOf(n, attr);
    if (g == nullptr) return t;
    DataType type = t.dtype;
    std::vector<int64_t> dims = t.dims;
    std::vector<RtValue> args;
    args.push_back(RtValue::ofTensor(std::move(t)));
    ASSIGN_OR_RETURN(std::vector<RtValue> outs, runBody(n, *g, std::move(args)));
    if (outs.size() != 1 || outs[0].kind != RtValue::Kind::kTensor ||
        outs[0].tensor.dtype != type || outs[0].tensor.dims != dims) {
      return invalidArgument("{}: {} must give one {}[{}] tensor", describeNode(n), attr,
                             dataTypeName(type), fmt::join(dims, ","));
    }
    return std::move(outs[0].tensor);
  }

  Status runFlexAttention(const ir::Node& n) {
    if (n.numInputs() != 3 || n.numOutputs() != 1) {
      return invalidArgument("{}: FlexAttention takes Q, K, V and gives Y", describeNode(n));
    }
    std::vector<const kernels::HostTensor*> qkv;
    for (size_t i = 0; i < 3; ++i) {
      ASSIGN_OR_RETURN(const kernels::HostTensor* t, tensorOf(n, i));
      if (t->rank() != 4) return invalidArgument("{}: Q, K and V must be 4-D", describeNode(n));
      qkv.push_back(t);
    }
    const auto &qd = qkv[0]->dims, &kd = qkv[1]->dims, &vd = qkv[2]->dims;
    int64_t batch = qd[0], hq = qd[1], len = qd[2], e = qd[3], hkv = kd[1], s = kd[2];
    if (kd[0] != batch || vd[0] != batch || vd[1] != hkv || vd[2] != s || kd[3] != e || hkv < 1 ||
        hq % hkv != 0 || qkv[1]->dtype != qkv[0]->dtype || qkv[2]->dtype != qkv[0]->dtype) {
      return invalidArgument("{}: Q, K and V shapes or types do not match", describeNode(n));
    }
    int64_t group = hq / hkv, ev = vd[3];
    DataType in_type = qkv[0]->dtype;
    auto compute = static_cast<DataType>(intAttr(
        n, "softmax_precision",
        static_cast<int64_t>(in_type == DataType::kDouble ? DataType::kDouble : DataType::kFloat)));
    if (compute != DataType::kFloat && compute != DataType::kDouble &&
        compute != DataType::kFloat16 && compute != DataType::kBfloat16) {
      return invalidArgument("{}: softmax_precision must be a float type", describeNode(n));
    }
    const ir::Attribute* scale_attr = n.findAttribute("scale");
    double scale = scale_attr != nullptr ? scale_attr->f : 1.0 / std::sqrt(static_cast<double>(e));

    ASSIGN_OR_RETURN(kernels::HostTensor q, flexCast(n, *qkv[0], compute));
    ASSIGN_OR_RETURN(kernels::HostTensor k, flexCast(n, *qkv[1], compute));
    ASSIGN_OR_RETURN(kernels::HostTensor v, flexCast(n, *qkv[2], compute));
    ASSIGN_OR_RETURN(q, flexReshape(n, q, {batch, hkv, group, len, e}));
    ASSIGN_OR_RETURN(k, flexReshape(n, k, {batch, hkv, 1, s, e}));
    ASSIGN_OR_RETURN(v, flexReshape(n, v, {batch, hkv, 1, s, ev}));
    kernels::KernelAttrs perm;
    perm.int_lists["perm"] = {0, 1, 2, 4, 3};
    ASSIGN_OR_RETURN(kernels::HostTensor kt, flexCall(n, "Transpose", 21, {&k}, perm));
    ASSIGN_OR_RETURN(kernels::HostTensor scores, flexCall(n, "MatMul", 13, {&q, &kt}));
    kernels::HostTensor scale_t = kernels::HostTensor::zeros(DataType::kDouble, {});
    scale_t.set<double>(0, scale);
    ASSIGN_OR_RETURN(scale_t, flexCast(n, scale_t, compute));
    ASSIGN_OR_RETURN(scores, flexCall(n, "Mul", 14, {&scores, &scale_t}));
    ASSIGN_OR_RETURN(scores, flexReshape(n, scores, {batch, hq, len, s}));
    ASSIGN_OR_RETURN(scores, flexModifier(n, "score_mod", std::move(scores)));
    kernels::KernelAttrs last_axis;
    last_axis.ints["axis"] = -1;
    ASSIGN_OR_RETURN(kernels::HostTensor probs, flexCall(n, "Softmax", 13, {&scores}, last_axis));
    ASSIGN_OR_RETURN(probs, flexModifier(n, "prob_mod", std::move(probs)));
    ASSIGN_OR_RETURN(probs, flexReshape(n, probs, {batch, hkv, group, len, s}));
    ASSIGN_OR_RETURN(kernels::HostTensor y, flexCall(n, "MatMul", 13, {&probs, &v}));
    ASSIGN_OR_RETURN(y, flexReshape(n, y, {batch, hq, len, ev}));
    ASSIGN_OR_RETURN(y, flexCast(n, y, in_type));
    setOutput(n, 0, RtValue::ofTensor(std::move(y)));
    return Status::ok();
  }

  const ir::Model& model_;
  int64_t opset_;
  RunBudget budget_;
};

/// A value given for graph input `in` must have the declared element type, and as many bytes as its
/// dims say (computed without overflow): the kernels trust both.
Status checkFeed(const ir::Value& in, const kernels::HostTensor& t) {
  const ir::Type& type = in.type();
  if (type.isTensor() && type.elem_type != DataType::kUndefined && t.dtype != type.elem_type) {
    return invalidArgument("input '{}' is {}, but the value given is {}", in.name(),
                           dataTypeName(type.elem_type), dataTypeName(t.dtype));
  }
  uint64_t n = 1;
  for (int64_t d : t.dims) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) {
      return invalidArgument("input '{}': the value's shape [{}] is not a valid size", in.name(),
                             fmt::join(t.dims, ","));
    }
  }
  if (t.dtype == DataType::kString) {
    if (t.strings.size() != n) {
      return invalidArgument("input '{}': {} strings for shape [{}]", in.name(), t.strings.size(),
                             fmt::join(t.dims, ","));
    }
    return Status::ok();
  }
  int bits = dataTypeBits(t.dtype);
  uint64_t bytes = 0;
  if (bits <= 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(bits), &bytes) ||
      (bytes + 7) / 8 != t.bytes.size()) {
    return invalidArgument("input '{}': the value has {} bytes, which does not fit {}[{}]",
                           in.name(), t.bytes.size(), dataTypeName(t.dtype),
                           fmt::join(t.dims, ","));
  }
  return Status::ok();
}

}  // namespace

StatusOr<ExecutionResult> runModel(const ir::Model& model, const Feeds& inputs,
                                   const ExecutionOptions& options) {
  const ir::Graph& g = *model.graph;
  RETURN_IF_ERROR(
      checkRunData(g, [&](const ir::Value& in) { return inputs.count(in.name()) > 0; }));
  Interpreter exec(model, options.limits);
  for (const ir::Value* in : g.inputs()) {
    auto it = inputs.find(in->name());
    if (it != inputs.end()) {
      RETURN_IF_ERROR(checkFeed(*in, it->second));
      exec.values_[in] = RtValue::ofTensor(it->second);
    } else if (in->initializer() == nullptr) {
      return invalidArgument("no value given for graph input '{}'", in->name());
    }
  }
  for (const auto& [name, value] : inputs) {
    bool known = false;
    for (const ir::Value* in : g.inputs()) known |= in->name() == name;
    if (!known) return invalidArgument("'{}' is not a graph input", name);
  }
  RETURN_IF_ERROR(exec.runGraph(g));
  ExecutionResult result;
  for (const ir::Value* out : g.outputs()) {
    auto it = exec.values_.find(out);
    if (it == exec.values_.end())
      return invalidArgument("output '{}' was not computed", out->name());
    const RtValue& v = it->second;
    if (v.kind != RtValue::Kind::kTensor && !options.non_tensor_outputs) {
      return makeError(StatusCode::kUnimplemented,
                       "output '{}' is {}: the executor returns tensor outputs only", out->name(),
                       v.kindName());
    }
    result.names.push_back(out->name());
    if (options.non_tensor_outputs) {
      kernels::HostTensor empty;
      empty.dtype = v.kind == RtValue::Kind::kSequence ? v.seq_type : DataType::kUndefined;
      result.kinds.push_back(v.kind == RtValue::Kind::kTensor     ? OutputKind::kTensor
                             : v.kind == RtValue::Kind::kSequence ? OutputKind::kSequence
                                                                  : OutputKind::kNone);
      result.sequences.push_back(
          v.kind == RtValue::Kind::kSequence ? v.sequence : std::vector<kernels::HostTensor>{});
      result.outputs.push_back(v.kind == RtValue::Kind::kTensor ? v.tensor : empty);
    } else {
      result.outputs.push_back(v.tensor);
    }
  }
  if (options.record_intermediates) {
    for (const ir::Node* n : g) {
      for (const ir::Value* v : n->outputs()) {
        if (v == nullptr || v->name().empty()) continue;
        auto it = exec.values_.find(v);
        if (it != exec.values_.end() && it->second.kind == RtValue::Kind::kTensor)
          result.intermediates.push_back({v->name(), n->opType(), it->second.tensor});
      }
    }
  }
  return result;
}

StatusOr<kernels::HostTensor> densifySparse(const ir::SparseTensor& sparse,
                                            const std::string& name) {
  return densify(sparse, name);
}

StatusOr<std::vector<HostValue>> runNodeOnHost(
    const ir::Model& model, const ir::Node& node,
    const std::vector<std::pair<const ir::Value*, HostValue>>& values, const RunLimits& limits) {
  Interpreter exec(model, limits);
  for (const auto& [v, hv] : values) {
    RtValue rt;
    rt.kind = hv.kind == OutputKind::kTensor     ? RtValue::Kind::kTensor
              : hv.kind == OutputKind::kSequence ? RtValue::Kind::kSequence
                                                 : RtValue::Kind::kNone;
    rt.tensor = hv.tensor;
    rt.sequence = hv.sequence;
    rt.seq_type = hv.seq_type;
    exec.values_[v] = std::move(rt);
  }
  RETURN_IF_ERROR(exec.runOne(node));
  std::vector<HostValue> outs(node.numOutputs());
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    const ir::Value* v = node.output(i);
    if (v == nullptr) continue;
    auto it = exec.values_.find(v);
    if (it == exec.values_.end()) continue;
    RtValue& rt = it->second;
    outs[i].kind = rt.kind == RtValue::Kind::kTensor     ? OutputKind::kTensor
                   : rt.kind == RtValue::Kind::kSequence ? OutputKind::kSequence
                                                         : OutputKind::kNone;
    outs[i].tensor = std::move(rt.tensor);
    outs[i].sequence = std::move(rt.sequence);
    outs[i].seq_type = rt.seq_type;
  }
  return outs;
}

namespace {

class ReferenceExecutor final : public Executor {
 public:
  explicit ReferenceExecutor(const ir::Model& model) : model_(model) {}
  std::string name() const override { return "reference"; }
  StatusOr<ExecutionResult> run(const Feeds& inputs, const ExecutionOptions& options) override {
    return runModel(model_, inputs, options);
  }

 private:
  const ir::Model& model_;
};

}  // namespace

std::unique_ptr<Executor> createReferenceExecutor(const ir::Model& model) {
  return std::make_unique<ReferenceExecutor>(model);
}

}  // namespace onnxopt::runtime
