// The executor seam: something that runs a model on given inputs (the reference executor today, the
// CUDA executor next, onnxruntime in a subprocess for opt), and the runner registry that creates
// one by name. `opt run`, `opt check --runner` and runtime::checkModels select through it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

/// Input values by graph input name.
using Feeds = std::map<std::string, kernels::HostTensor>;

/// A value a run recorded besides the outputs (ExecutionOptions::record_intermediates).
struct RecordedValue {
  std::string name;
  std::string op;  ///< the op type of the node that produced it, for reports ("" if not known)
  kernels::HostTensor value;
};

/// What a graph output holds (ExecutionOptions::non_tensor_outputs).
enum class OutputKind : uint8_t {
  kTensor,    ///< outputs[i]; also an optional that holds a tensor
  kSequence,  ///< sequences[i] (outputs[i] is empty, of the element type); also such an optional
  kNone,      ///< an optional that holds nothing (outputs[i] is empty)
};

struct ExecutionResult {
  std::vector<std::string> names;  ///< graph output names, in order
  std::vector<kernels::HostTensor> outputs;
  /// With ExecutionOptions::non_tensor_outputs: the kind of each output, and the elements of each
  /// sequence output (empty for the others). Without, both stay empty: every output is a tensor.
  std::vector<OutputKind> kinds;
  std::vector<std::vector<kernels::HostTensor>> sequences;
  /// With ExecutionOptions::record_intermediates: every named node output of the main graph, in
  /// execution (topological) order, graph outputs included.
  std::vector<RecordedValue> intermediates;
};

/// What one run may spend on the host, so that a model whose loops never end, or whose values
/// would not fit, fails with a clear error (kResourceExhausted naming the node) instead of running
/// until killed. The reference executor keeps them, and the CUDA executor for the nodes it runs on
/// the host; `opt run`, `opt check` and `opt bench` set them with --max-iterations and
/// --max-memory.
struct RunLimits {
  /// Body runs of Loop, Scan and SequenceMap nodes in one run, a nested loop's counted each time
  /// (so a loop of M iterations around one of N counts M * (N + 1)). A loop whose trip count (and
  /// the nested trip counts the model fixes) already shows it would pass this is refused before
  /// it starts.
  int64_t max_iterations = int64_t{1} << 24;
  /// Bytes of the values a run computes and holds at once (node outputs, loop-carried values, the
  /// slices of scan outputs being gathered); the model's weights and the inputs are not counted.
  /// A scan output whose size the trip count and its shape already show would pass this is
  /// refused before the loop starts. 0: three quarters of the memory the process may use
  /// (runtime::defaultMaxRunMemory).
  uint64_t max_memory = 0;
};

struct ExecutionOptions {
  bool record_intermediates = false;  ///< keep every main-graph value (`opt check --per-layer`)
  /// Return sequence and empty-optional graph outputs (ExecutionResult::kinds) instead of failing
  /// on them (`opt run`); comparisons (`opt check`) take tensors only.
  bool non_tensor_outputs = false;
  RunLimits limits;
};

/// What an executor is created from. Today a model; the CUDA executor will be created from a
/// lowered plan (a field added here), which is why factories take this struct and not a model.
struct ExecutorSource {
  const ir::Model* model = nullptr;  ///< must outlive the executor
  /// The file the model was read from, if any: a runner in another process may read it instead
  /// of a copy written for it; messages name it.
  std::string model_path;
};

/// Runs one model, created once (parsing, planning, loading happen there) and run any number of
/// times. run() never reads inputs it was not given by name and says which node failed.
class Executor {
 public:
  virtual ~Executor() = default;
  /// The runner it was created as ("reference", "onnxruntime").
  virtual std::string name() const = 0;
  /// Runs on `inputs` (by graph input name; inputs with a default may be left out).
  virtual StatusOr<ExecutionResult> run(const Feeds& inputs,
                                        const ExecutionOptions& options = {}) = 0;
};

using ExecutorFactory =
    std::function<StatusOr<std::unique_ptr<Executor>>(const ExecutorSource& source)>;

/// Adds a runner for this process, beyond the built-in ones (an explicit table in
/// src/runtime/executor.cc: "reference"; no static self-registration). opt registers
/// "onnxruntime" so (tools/opt/ort_executor.cc), the Python package and tests will register
/// theirs. Registering a name again replaces its factory; a built-in name or an empty one is
/// kInvalidArgument.
Status registerRunner(const std::string& name, ExecutorFactory factory);

/// Every runner name: the built-in ones in table order, then the registered ones in the order
/// they were first registered.
std::vector<std::string> runnerNames();

bool hasRunner(const std::string& name);

/// Creates the executor of runner `name` for `source`. An unknown name is kInvalidArgument, and
/// the message lists the runners there are.
StatusOr<std::unique_ptr<Executor>> createExecutor(const std::string& name,
                                                   const ExecutorSource& source);
StatusOr<std::unique_ptr<Executor>> createExecutor(const std::string& name, const ir::Model& model);

}  // namespace onnxopt::runtime
