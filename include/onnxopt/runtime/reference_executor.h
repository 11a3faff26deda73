// The reference executor: runs a model's main graph on the CPU reference kernels, node by node. It
// is the numeric oracle inside onnxopt (`opt run`, `opt check`), not a fast runtime, and the
// built-in runner "reference" of the runner registry (executor.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

/// Runs the model with `inputs` (by graph input name; inputs with a default initializer may be
/// left out). If runs the taken branch; Loop, Scan and SequenceMap run their bodies, within
/// `options.limits` (iterations and memory; kResourceExhausted naming the node past them, and
/// before the loop starts where its trip count and static shapes already show it). A model whose
/// tensors lack their data (checkRunData: weights stripped) is refused before anything runs.
/// Errors name the node that failed, or the tensor.
StatusOr<ExecutionResult> runModel(const ir::Model& model, const Feeds& inputs,
                                   const ExecutionOptions& options = {});

/// A value of the reference interpreter: a tensor, a sequence of tensors (`seq_type` their element
/// type, known when empty) or an empty optional (kind kNone).
struct HostValue {
  OutputKind kind = OutputKind::kTensor;
  kernels::HostTensor tensor;
  std::vector<kernels::HostTensor> sequence;
  DataType seq_type = DataType::kUndefined;
};

/// Runs one node of `model`'s main graph as runModel does, on the host: the reference kernel, or
/// what runModel runs itself (If/Loop/Scan bodies, sequence and optional ops, SequenceMap,
/// FlexAttention, functions of other domains). `values` gives the node's inputs and every outer
/// value its subgraphs read (by IR value). Its outputs in order (an omitted one: an empty
/// tensor). For the CUDA executor's CPU side (a fallback node with subgraphs or non-tensor
/// values), within `limits` as runModel; errors name the node. The data of the tensors it reads
/// is not checked here (the CUDA executor checks the model's when it is created).
StatusOr<std::vector<HostValue>> runNodeOnHost(
    const ir::Model& model, const ir::Node& node,
    const std::vector<std::pair<const ir::Value*, HostValue>>& values,
    const RunLimits& limits = {});

/// The dense data of a sparse initializer, as runModel reads it (the CUDA executor's weights).
StatusOr<kernels::HostTensor> densifySparse(const ir::SparseTensor& sparse,
                                            const std::string& name);

/// runModel behind the Executor interface: the runner "reference". `model` must outlive it.
std::unique_ptr<Executor> createReferenceExecutor(const ir::Model& model);

}  // namespace onnxopt::runtime
