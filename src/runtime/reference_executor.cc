#include "onnxopt/runtime/reference_executor.h"

#include <unordered_map>

#include <fmt/format.h>

#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::runtime {

using bridge::toHost;
using bridge::toKernelAttrs;
namespace {

std::string describe(const ir::Node& n) {
  if (!n.name().empty()) return fmt::format("node '{}' ({})", n.name(), n.opType());
  if (n.numOutputs() > 0 && n.output(0) != nullptr) {
    return fmt::format("node {} producing '{}'", n.opType(), n.output(0)->name());
  }
  return "node " + n.opType();
}

/// The values of one run, computed node by node.
class Interpreter {
 public:
  explicit Interpreter(const ir::Model& model) : opset_(model.opsetVersion("").value_or(0)) {}

  Status runGraph(const ir::Graph& graph) {
    for (const ir::Value* v : graph.initializers()) {
      if (values_.count(v)) continue;  // an input default overridden by the caller
      if (const ir::Tensor* t = v->initializer()) values_[v] = toHost(*t);
    }
    for (const ir::Node* n : graph) RETURN_IF_ERROR(runNode(*n));
    return Status::ok();
  }

  std::unordered_map<const ir::Value*, kernels::HostTensor> values_;

 private:
  Status runNode(const ir::Node& n) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      return makeError(StatusCode::kUnimplemented, "{}: domain '{}' has no reference kernels",
                       describe(n), n.domain());
    }
    if (n.opType() == "Constant") {
      auto t = ir::constantNodeTensor(n);
      if (!t) return makeError(StatusCode::kUnimplemented, "{}: unsupported Constant", describe(n));
      values_[n.output(0)] = toHost(*t);
      return Status::ok();
    }
    if (n.opType() == "If") return runIf(n);
    std::vector<const kernels::HostTensor*> inputs;
    for (const ir::Value* v : n.inputs()) {
      if (v == nullptr) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = values_.find(v);
      if (it == values_.end()) {
        return makeError(StatusCode::kInvalidArgument, "{}: input '{}' has no value", describe(n),
                         v->name());
      }
      inputs.push_back(&it->second);
    }
    if (!n.subgraphs().empty()) {
      return makeError(StatusCode::kUnimplemented,
                       "{}: {} is not supported by the reference "
                       "executor yet",
                       describe(n), n.opType());
    }
    auto out =
        kernels::runReferenceKernel(n.opType(), opset_, inputs, toKernelAttrs(n), n.numOutputs());
    if (!out.isOk()) return out.status().withContext(describe(n));
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      if (n.output(i) != nullptr) values_[n.output(i)] = std::move((*out)[i]);
    }
    return Status::ok();
  }

  Status runIf(const ir::Node& n) {
    auto it = values_.find(n.input(0));
    if (it == values_.end() || it->second.bytes.empty()) {
      return makeError(StatusCode::kInvalidArgument, "{}: no condition value", describe(n));
    }
    bool cond = it->second.bytes[0] != 0;
    const ir::Attribute* a = n.findAttribute(cond ? "then_branch" : "else_branch");
    if (a == nullptr || a->graphs.size() != 1) {
      return makeError(StatusCode::kInvalidArgument, "{}: missing branch", describe(n));
    }
    const ir::Graph& branch = *a->graphs[0];
    RETURN_IF_ERROR(runGraph(branch));
    for (size_t i = 0; i < n.numOutputs() && i < branch.numOutputs(); ++i) {
      if (n.output(i) != nullptr) values_[n.output(i)] = values_.at(branch.output(i));
    }
    return Status::ok();
  }

  int64_t opset_;
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
  Interpreter exec(model);
  const ir::Graph& g = *model.graph;
  for (const ir::Value* in : g.inputs()) {
    auto it = inputs.find(in->name());
    if (it != inputs.end()) {
      RETURN_IF_ERROR(checkFeed(*in, it->second));
      exec.values_[in] = it->second;
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
    result.names.push_back(out->name());
    result.outputs.push_back(it->second);
  }
  if (options.record_intermediates) {
    for (const ir::Node* n : g) {
      for (const ir::Value* v : n->outputs()) {
        if (v == nullptr || v->name().empty()) continue;
        auto it = exec.values_.find(v);
        if (it != exec.values_.end())
          result.intermediates.push_back({v->name(), n->opType(), it->second});
      }
    }
  }
  return result;
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
