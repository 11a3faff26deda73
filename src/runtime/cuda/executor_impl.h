// The CUDA executor's internal state, shared by the files that implement it (cuda_executor.h is
// the public interface). One concern per file:
//   cuda_executor.cc       the public CudaExecutor: creation, a run, re-planning, the summary
//   cuda_model.cc          checkCudaFeeds (the feeds against the model's inputs), cudaRunsTargetCall
//   cuda_weights.cc        constants' host data and their upload (session weights, plan values)
//   cuda_prepare.cc        a plan's device state: arena, inputs, prepared calls, workspace, staging
//   cuda_steps.cc          a run: input uploads, the steps, output downloads
//   cuda_host_fallback.cc  nodes run on the host, and the copies between host and device
//   cuda_graph.cc          CUDA graph capture and replay
//   cuda_profile.cc        per-step profiles
//   cuda_device_io.cc      runs bound to the caller's device memory, greedy tokens on the device
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "device_api.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/reference_executor.h"

namespace onnxopt::runtime {

namespace cuda_detail {

/// The id of the value whose buffer `id` shares (itself when it has its own).
inline int rootOf(const Plan& plan, int id) {
  while (plan.values[static_cast<size_t>(id)].base >= 0) {
    id = plan.values[static_cast<size_t>(id)].base;
  }
  return id;
}

/// A copy of `t` with other dims (a view's data is its base's, in the same order).
inline kernels::HostTensor withDims(kernels::HostTensor t, const std::vector<int64_t>& dims) {
  t.dims = dims;
  return t;
}

/// A device node, prepared once per plan: its kernel (arguments parsed, workspace asked) on the
/// plan's buffers, which a run launches without looking at the node again.
struct PreparedNode {
  kernels::CudaKernelCall call;
  /// Host data of the node's constant inputs (call.constant_inputs points here, and so may the
  /// kernel's arguments).
  std::vector<std::optional<kernels::HostTensor>> constants;
  /// Null where the node was demoted.
  std::unique_ptr<kernels::PreparedCudaKernel> kernel;
  /// The kernel refused the node at its concrete shapes: it runs on the CPU reference kernels,
  /// with its inputs copied down and outputs copied up (`demoted` holds the kernel's reason).
  std::string demoted;
};

/// A plan's CUDA graph: off (CudaOptions::cuda_graphs false), warming up (the first run is
/// eager: lazy initializations such as a library handle cannot be captured), to be captured at
/// the next run, captured and replayed, or eager for good (`graph_reason` says why).
enum class GraphMode { kOff, kWarmUp, kCapture, kReplay, kEager };

/// What a plan needs on the device, kept with the plan.
struct PlanState {
  std::shared_ptr<const Plan> plan;
  DeviceMemory arena;
  DeviceMemory workspace;
  /// Graph inputs, uploaded at each run (by value id of the input); none for a bound input.
  std::map<int, DeviceMemory> input_buffers;
  /// Buffers that are the caller's device memory (CudaExecutor::runOnDevice), by root value id:
  /// device inputs read in place and outputs computed into the caller's memory. The prepared
  /// calls (and the CUDA graph) point there; a run with other pointers prepares them again.
  std::map<int, void*> bound;
  /// Constants read on the device that are not initializers (folded values): by root value id.
  std::map<int, DeviceMemory> plan_constants;
  /// Device pointers of constants (session weights or plan_constants), by root value id.
  std::map<int, void*> constant_ptrs;
  std::map<int, PreparedNode> prepared;  ///< by node index
  std::vector<std::string> demoted;      ///< "node X: reason", for the summary
  size_t workspace_bytes = 0;            ///< the one workspace region all device nodes share
  /// Pinned host staging of the graph inputs and of the device-side graph outputs, by value id
  /// (empty where pinned memory could not be had: the copies then use the caller's memory).
  std::map<int, DeviceMemory> input_staging;
  std::map<int, DeviceMemory> output_staging;
  GraphMode graph_mode = GraphMode::kOff;
  std::string graph_reason;  ///< kEager: why
  std::unique_ptr<CapturedGraph> graph;
  int64_t replays = 0;
  /// Set when a run of this plan found a host-run node contradicting the planned dims: later runs
  /// at this signature go to the reference executor directly (the reason).
  std::string reference_only;
  uint64_t last_used = 0;
};

/// Why the plan's steps cannot be one CUDA graph ("" when they can): every step between the input
/// uploads and the output downloads must be a device kernel launch or a view.
std::string graphCaptureBlocker(const PlanState& state);

/// "captured, replayed N" / "eager (reason)" / ... for summaries.
std::string graphStateText(const PlanState& state);

}  // namespace cuda_detail

/// A run of CudaExecutor::runOnDevice: the outputs to leave on the device, and where the run left
/// them (filled by the run).
struct CudaExecutor::DeviceBinding {
  const DeviceOutputs* outputs = nullptr;
  DeviceFeeds* kept = nullptr;
};

struct CudaExecutor::Impl {
  using DeviceMemory = cuda_detail::DeviceMemory;
  using HostTensor = kernels::HostTensor;
  using PlanState = cuda_detail::PlanState;

  /// First: every buffer below is released through it. The device behind a cache of the memory
  /// plans take and give back (caching_device_api.h).
  std::unique_ptr<cuda_detail::DeviceApi> api;
  /// The device itself, without that cache: memory the session keeps (weights, the caller's
  /// buffers) is allocated here, at its exact size.
  cuda_detail::DeviceApi* device_memory = nullptr;
  /// What the executor asks of the model, bound when it is created (the one place it reads the
  /// IR; plans bring the rest through Plan::host): the feeds checked against the model's inputs,
  /// and a whole run on the reference executor where no plan fits.
  std::function<StatusOr<InputShapes>(const Feeds&, const DeviceFeeds&)> check_feeds;
  std::function<StatusOr<ExecutionResult>(const Feeds&, const ExecutionOptions&)> run_reference;
  CudaOptions options;
  kernels::CudaDeviceInfo device;
  std::unique_ptr<PlanCache> cache;
  /// The session's weights: initializers uploaded once, by weight handle (PlannedValue::weight).
  std::unordered_map<int, DeviceMemory> weights;
  int64_t weight_bytes = 0;
  std::map<std::string, PlanState> states;  ///< by input signature
  uint64_t clock = 0;
  std::shared_ptr<const Plan> last_plan;
  std::string last_summary;
  std::string last_graph;
  int64_t last_workspace = 0;
  std::optional<double> last_compute_ms;  ///< CudaOptions::time_compute
  /// Set when the current run failed because a host-run node made other dims or another type
  /// than the plan's (a declared shape the data contradicts): that value's name; nullopt otherwise.
  std::optional<std::string> mismatched_value;
  /// Values whose declared dims a run contradicted, by name: every plan is built with them shaped
  /// at run time (PlanOptions::shaped_at_run_time), and the summary lists them.
  std::set<std::string> shaped_at_run_time;
  std::thread::id last_thread;
  std::mutex mu;
  /// The limits of the run in progress, for the nodes it runs on the host (runNodeOnHost).
  RunLimits run_limits;
  /// lastPositionArgMax's kernel, prepared for the last logits it read, and its ids buffer.
  struct ArgMaxState {
    kernels::KernelAttrs attrs;
    DeviceMemory ids;
    DeviceMemory workspace;
    std::unique_ptr<kernels::PreparedCudaKernel> kernel;
    DataType dtype = DataType::kUndefined;
    std::vector<int64_t> dims;
    const void* data = nullptr;
  };
  ArgMaxState argmax;

  const PlannedValue& value(const Plan& plan, int id) const {
    return plan.values[static_cast<size_t>(id)];
  }

  /// One run of a plan: host values by value id, the host buffers the stream still reads, and
  /// whether a copy to the host is in flight (the host synchronizes before it reads one).
  struct RunState {
    PlanState& state;
    const Feeds& feeds;
    const DeviceFeeds& device;  ///< inputs in device memory (CudaExecutor::run with DeviceFeeds)
    /// Host tensors are held by pointer: a queued copy writes or reads their bytes later, and a
    /// moved HostTensor may not keep its bytes where they were (small strings live inline).
    std::vector<std::shared_ptr<HostTensor>> host;
    /// Host sources of copies to the device: alive until the run's final synchronization.
    std::vector<std::shared_ptr<const HostTensor>> keep;
    /// Sequence and empty-optional values (held on the host), by value id.
    std::map<int, HostValue> others;
    bool pending = false;  ///< a copy to the host was queued since the last synchronization
    /// Profiling: markers around each timed step, read after the final synchronization.
    std::vector<CudaExecutor::StepTime>* profile = nullptr;
    struct Timed {
      int step;
      size_t start, end;
    };
    std::vector<Timed> timed;
    const DeviceBinding* binding = nullptr;  ///< runOnDevice: the outputs left on the device
  };

  // cuda_executor.cc
  /// A run after its feeds were checked (`shapes`), under the mutex: the plan's, or the reference
  /// executor's where no plan fits.
  StatusOr<ExecutionResult> runLocked(const Feeds& inputs, const DeviceFeeds& device,
                                      const InputShapes& shapes, const ExecutionOptions& options,
                                      std::vector<CudaExecutor::StepTime>* profile,
                                      const DeviceBinding* binding);
  /// A device input's data on the host (a synchronous copy on the stream).
  StatusOr<HostTensor> downloadDeviceInput(const std::string& name, const DeviceInput& in);

  /// `feeds` with every device input copied to the host (for the reference executor).
  StatusOr<Feeds> withHostCopies(const Feeds& feeds, const DeviceFeeds& device);

  /// The whole run on the reference executor, where the plan cannot describe it (`why`); the
  /// summary says so. The reference executor's errors are the run's.
  StatusOr<ExecutionResult> runOnReference(const Feeds& feeds, const ExecutionOptions& options,
                                           const Status& why);

  // cuda_weights.cc
  /// The host data of a constant value (a view of a constant reads its root's data).
  StatusOr<HostTensor> constantData(const Plan& plan, int id) const;
  /// An operand's host data for a kernel's check and preparation: that of a value known when
  /// planning (a constant, a value input) up to kMaxHostOperandBytes, or one kept on the host
  /// anyway; nullopt otherwise. Kernels read only small operands on the host (indices, shapes,
  /// axes, positions); a weight is read on the device, and a copy of every weight at each plan
  /// and each binding made a large model's every new shape pay for copying all of its weights.
  std::optional<HostTensor> hostOperand(const Plan& plan, int id) const;
  static constexpr int64_t kMaxHostOperandBytes = int64_t{1} << 20;
  /// The kernel's check of a node at its planned dims and constant inputs, asked while planning
  /// (PlanOptions::check_node) so that the plan's placement is what runs. No memory exists yet:
  /// the views carry no pointer (the arena's, where the node runs, are aligned).
  kernels::Support checkWhilePlanning(const Plan& plan, const PlannedNode& pn) const;

  /// Uploads the constants the plan's device side reads: initializers once per session, folded
  /// values once per plan.
  Status uploadConstants(PlanState& state);

  // cuda_prepare.cc
  /// The device pointer of value `id` in `state`'s buffers.
  StatusOr<void*> devicePtr(const PlanState& state, int id) const;

  /// Allocates the plan's device memory, uploads its constants and prepares every device node's
  /// call.
  Status prepare(PlanState& state);

  /// prepare's steps: the arena, the input buffers, one device node's call (demoted where the
  /// kernel refuses it; `workspace` grows to the most it needs), the one workspace region all
  /// device nodes share, and the pinned staging of inputs and outputs.
  Status allocateArena(PlanState& state);
  Status allocateInputs(PlanState& state);
  Status prepareNode(PlanState& state, int index, size_t* workspace);
  Status allocateWorkspace(PlanState& state, size_t workspace);
  void allocateStaging(PlanState& state);

  /// The plan state for `shapes`, its kernels bound to `bound` (bindingFor's).
  StatusOr<PlanState*> stateFor(const InputShapes& shapes, const DeviceFeeds& device,
                                const DeviceBinding* binding);
  /// The device inputs' buffers, not yet allocated or bound, and every device node's call bound
  /// to the plan's buffers (state.bound included); drops a captured graph.
  Status bindNodes(PlanState& state);

  // cuda_device_io.cc
  /// The buffers of `plan` that a runOnDevice run takes from the caller, by root value id: each
  /// device input's, and each output's buffer given in the caller's memory where the buffer is
  /// the plan's own (in the arena, static, large enough), so its node writes there directly.
  std::map<int, void*> bindingFor(const Plan& plan, const DeviceFeeds& device,
                                  const DeviceBinding* binding) const;
  /// A device output that runOnDevice leaves on the device (`out`): where the plan computed it
  /// (queued copy into the caller's memory where that is not it). Recorded in binding->kept.
  Status keepOnDevice(RunState& run, int id, const DeviceOutput& out);
  /// After a runOnDevice run: outputs asked for in the caller's memory that came back on the host
  /// (host-held values, a run on the reference executor) are uploaded there, then left out of
  /// `result`, as are the kept ones.
  Status placeHostOutputs(ExecutionResult& result, const DeviceBinding& binding);

  // cuda_host_fallback.cc
  /// Synchronizes once where the host is about to read data a queued copy writes.
  Status syncHost(RunState& run, const std::string& what);

  /// The host data of value `id` (host values, constants, views of them, or a graph input).
  StatusOr<std::shared_ptr<HostTensor>> hostData(RunState& run, int id);

  /// Queues the copy of device value `id` to the host (inputs and constants: their host data).
  /// The tensor's bytes are written when the stream gets there: syncHost before reading them.
  StatusOr<std::shared_ptr<HostTensor>> download(RunState& run, int id);

  /// Queues the copy of `t` into device value `id`; `t` is kept until the run ends.
  Status upload(RunState& run, int id, std::shared_ptr<const HostTensor> t);

  /// Runs node `pn` on the host: the reference kernel, or for a node the reference executor
  /// runs itself (subgraphs, sequences, optionals, other domains) the plan's PlanHost::runNode.
  /// Inputs are read from wherever they are (device values copied down, one synchronization for
  /// all).
  StatusOr<std::vector<HostValue>> runOnHost(RunState& run, const PlannedNode& pn);

  /// Puts a host-run node's outputs where the plan wants them: non-tensor values and tensors
  /// held on the host (host values, dynamic values) in the run, arena values uploaded.
  Status storeOutputs(RunState& run, const PlannedNode& pn, std::vector<HostValue> outs);

  // cuda_steps.cc
  /// Uploads the graph inputs (through the plan's pinned staging buffers where it has them).
  Status uploadInputs(RunState& run);

  /// Runs one step eagerly.
  Status runStep(RunState& run, const Step& step);

  Status runNode(RunState& run, const PlannedNode& pn, int index);

  /// The node steps of a plan that is about to run: replayed from its graph, captured (the
  /// second run of a capturable plan: the first one warms up lazy initializations, which
  /// cannot be captured), or run eagerly.
  Status runSteps(RunState& run, bool record, std::vector<RecordedValue>* recorded);

  /// Runs the plan with `feeds`: uploads, steps, downloads, all queued on the stream with a
  /// synchronization only where the host reads device data, and one at the end.
  StatusOr<ExecutionResult> execute(PlanState& state, const Feeds& feeds, const DeviceFeeds& device,
                                    bool record, std::vector<CudaExecutor::StepTime>* profile,
                                    const DeviceBinding* binding);

  StatusOr<ExecutionResult> executeQueued(RunState& run, bool record);

  // cuda_graph.cc
  /// Captures the plan's steps (device launches and views only: graphCaptureBlocker said so)
  /// into a graph. A failure leaves the device out of capture mode and nothing captured run.
  StatusOr<std::unique_ptr<cuda_detail::CapturedGraph>> capture(RunState& run);

  /// Runs the steps as the plan's CUDA graph where it has one (a replay) or is due to capture one
  /// (capture, then replay): true. False where the steps run eagerly (a failed capture makes the
  /// plan eager for good).
  StatusOr<bool> runAsGraph(RunState& run);

  // cuda_profile.cc
  /// What a step is, for the profile: its node, op, placement and kernel variant, or the copy.
  CudaExecutor::StepTime describeStep(const PlanState& state, const Step& step) const;

  /// Appends each timed step's device time to the run's profile (after the final synchronization).
  Status collectProfile(RunState& run);
};

}  // namespace onnxopt::runtime
