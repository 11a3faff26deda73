#include "onnxopt/runtime/reference_executor.h"

#include "reference_interpreter.h"

namespace onnxopt::runtime {
namespace detail {

Status Interpreter::runGraph(const ir::Graph& graph) {
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

Status Interpreter::runNode(const ir::Node& n) {
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

Status Interpreter::runKernel(const ir::Node& n, const std::string& name, int64_t opset) {
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

Status Interpreter::runOtherDomain(const ir::Node& n) {
  if (n.domain() == "ai.onnx.preview" && n.opType() == "FlexAttention" && !n.subgraphs().empty()) {
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

}  // namespace detail

using detail::densify;
using detail::Interpreter;
using detail::RtValue;

namespace {

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
