// The CUDA executor: runs an optimized model on an NVIDIA GPU by joining the execution plan
// (plan.h: shapes, placements, copy steps, arena offsets) and the CUDA kernel library
// (kernels/cuda.h). It is the runner "cuda" of the runner registry (executor.h). Plain C++ with no
// CUDA headers: every device call goes through kernels/cuda.h, so this file pair builds (and fails
// cleanly at creation) without CUDA. docs/cuda_runtime.md explains the execution.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/ir/graph.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/runtime/plan.h"
#include "onnxopt/runtime/plan_cache.h"
#include "onnxopt/runtime/step_cost.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

namespace cuda_detail {
class DeviceApi;  // src/runtime/cuda/device_api.h
}

struct CudaOptions {
  int device_id = 0;
  /// CUDA graphs: a plan whose steps are all device kernel launches (and views) between the
  /// input uploads and the output downloads runs eagerly once, is captured into a CUDA graph at
  /// its second run, and replays that graph from then on. A plan with a host, CPU-fallback or
  /// copy step stays eager, and so does one whose capture fails (a kernel that allocates or
  /// synchronizes): never an error. Runs with record_intermediates are always eager.
  bool cuda_graphs = true;
  /// Which float32 products may use TF32 tensor cores: by default convolutions, as torch's
  /// defaults do (kernels::Tf32; `--no-tf32` / `--allow-tf32`, Session(tf32=...)).
  kernels::Tf32 tf32 = kernels::Tf32::kConvolutions;
  /// A tuning cache file (kernels/tuning_cache.h, `--tuning-cache FILE`): the timed choices of
  /// earlier processes on this device are reused and new ones appended. Empty: none.
  std::string tuning_cache;
  PlanOptions plan;
  size_t plan_cache_capacity = PlanCache::kDefaultCapacity;
  /// Debugging and tests: with a value in 0..255, every byte of a plan's device arena is set to it
  /// before each run, so that a kernel that leaves part of its output unwritten shows up as a
  /// mismatch rather than as the right answer left over from an earlier run. -1: off.
  int poison_byte = -1;
  /// Benchmarks: every run (but profiled and recording ones) records a CUDA event after its
  /// input uploads and one before its output downloads; lastComputeMs() is the device time
  /// between them: the node steps alone (a graph replay, or the eager launches with the gaps the
  /// host leaves between them), comparable with timing a framework's forward on device tensors.
  bool time_compute = false;
};

/// A graph input already in the executor's device memory (a torch or cupy tensor handed over
/// through DLPack): C-contiguous, `dims` elements of `dtype` at `data`. The run copies it into the
/// plan's input buffer on the device (no host round trip; the plan's buffer keeps a captured CUDA
/// graph's pointers valid). Whatever writes it must be ordered before the run: finished, or queued
/// on CudaExecutor::stream() (DLPack's `__dlpack__(stream=...)` arranges that).
struct DeviceInput {
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  const void* data = nullptr;
};
using DeviceFeeds = std::map<std::string, DeviceInput>;

/// Where CudaExecutor::runOnDevice leaves a graph output: written into device memory the caller
/// owns (`data`, at least `bytes`), or with `data` null, left where the run computed it (the
/// plan's memory: valid until the executor's next run).
struct DeviceOutput {
  void* data = nullptr;
  size_t bytes = 0;
};
using DeviceOutputs = std::map<std::string, DeviceOutput>;

/// What runOnDevice gives: the outputs on the host (`host`: every output not left on the device,
/// in graph order) and those left on the device (dtype, dims and where), ready to be fed to the
/// next run as DeviceFeeds.
struct DeviceRunResult {
  ExecutionResult host;
  DeviceFeeds device;
};

/// The concrete input shapes of a run, after checking `feeds` against the model's graph inputs:
/// every name is a graph input, every input without a default is given, each dtype and rank is
/// the declared one, static dims match, and each tensor's data has the size its dims say. Inputs
/// with a default initializer that are not given are left out (the plan reads the default).
/// Errors are kInvalidArgument naming the input. Host only: no device needed.
StatusOr<InputShapes> checkCudaFeeds(const ir::Model& model, const Feeds& feeds);
/// The same with some inputs in device memory (an input given both ways is an error).
StatusOr<InputShapes> checkCudaFeeds(const ir::Model& model, const Feeds& feeds,
                                     const DeviceFeeds& device);

/// Runs one model on one device. Creation probes the device (no device, no driver or a build
/// without CUDA: an error, never an abort) and creates the stream. Each run checks its inputs,
/// gets the plan for their shapes from a PlanCache (a new signature plans, a known one reuses the
/// plan and the arena allocated for it), uploads the inputs, runs the plan's steps, and copies the
/// graph outputs back to the host, all queued on one stream: the host synchronizes only where it
/// reads device data (before a host or CPU-fallback step that reads a copied value) and once at
/// the end. Inputs and outputs go through pinned staging buffers kept with the plan. Weights are
/// uploaded once per session, when a plan first needs them. run() is serialized by a mutex (safe
/// to call from several threads, one run at a time).
///
/// The model must carry inferred types (ir::inferShapes) and outlive the executor. Nodes shaped at
/// run time (the plan's dynamic nodes: NonZero, a Reshape to run-time data, ...) run on the CPU
/// reference kernels, whose result gives their dims; dynamic values are held on the host. CPU
/// nodes with subgraphs (If, Loop, Scan), sequence and optional ops and ops of other domains run
/// through the reference executor's interpreter (runNodeOnHost); sequence and empty-optional
/// values stay on the host and are returned with ExecutionOptions::non_tensor_outputs. A run the
/// plan cannot describe (its lowering fails with kUnimplemented/kInternal, or a host-run node
/// makes other dims than the plan's) runs on the reference executor, and lastSummary() says so.
/// With ExecutionOptions::record_intermediates, each named node output is copied to the host
/// right after its node ran (a synchronization per node: for debugging, `--per-layer`).
class CudaExecutor : public Executor {
 public:
  static StatusOr<std::unique_ptr<CudaExecutor>> create(const ir::Model& model,
                                                        const CudaOptions& options = {});
  /// The same on another device implementation (tests: a host-memory device that runs the
  /// reference kernels, so that the plan traversal is checked without a GPU).
  static StatusOr<std::unique_ptr<CudaExecutor>> createOn(
      const ir::Model& model, const CudaOptions& options,
      std::unique_ptr<cuda_detail::DeviceApi> device);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  std::string name() const override { return "cuda"; }
  StatusOr<ExecutionResult> run(const Feeds& inputs, const ExecutionOptions& options = {}) override;
  /// run() with some inputs (`device`) in this executor's device memory (DeviceInput). Where a
  /// node reads such an input on the host, or the run goes to the reference executor, it is
  /// copied to the host first.
  StatusOr<ExecutionResult> run(const Feeds& inputs, const DeviceFeeds& device,
                                const ExecutionOptions& options = {});
  /// A run whose device inputs and outputs stay in device memory (a decode loop's KV cache):
  /// nothing of them crosses to the host. Each input in `device` is read where it is (the plan's
  /// kernels are bound to its memory, no copy), so it must stay unchanged until the run returns
  /// and must not overlap an output's memory. Each output named in `outputs` is written at its
  /// DeviceOutput (computed there directly where its buffer is the plan's own, else copied on the
  /// device; one held on the host is uploaded), or left in the plan's memory. kInvalidArgument
  /// where a named output is not one of the model's or does not fit its memory. A plan is
  /// prepared for the pointers it runs with: a run at a known signature with other pointers
  /// prepares its kernels again (and drops its CUDA graph), so callers keep theirs stable.
  StatusOr<DeviceRunResult> runOnDevice(const Feeds& inputs, const DeviceFeeds& device,
                                        const DeviceOutputs& outputs,
                                        const ExecutionOptions& options = {});
  /// `bytes` of this executor's device memory, owned by the caller (a KV cache): released when
  /// the last copy of the pointer goes, which must be before the executor is destroyed.
  StatusOr<std::shared_ptr<void>> allocate(size_t bytes);
  /// Greedy decoding on the device: for `logits` [batch, seq, vocab] in this executor's device
  /// memory, the index of each row's first largest logit at the last position (the ArgMax kernel,
  /// which picks as the host's greedy Sampler does), of which only the ids are copied to the
  /// host. kUnimplemented
  /// where the kernel refuses the logits' type; kInvalidArgument for logits not of rank 3.
  StatusOr<std::vector<int64_t>> lastPositionArgMax(const DeviceInput& logits);
  /// A copy on the host of device memory (a DeviceInput of this executor's device).
  StatusOr<kernels::HostTensor> download(const DeviceInput& value);

  /// The CUDA stream (a cudaStream_t) the runs are queued on: a producer of device inputs orders
  /// its writes before a run by making this stream wait for them.
  void* stream() const;

  /// One step of a profiled run: the node (or copy), its op ("CopyToHost" / "CopyToDevice" for
  /// copies), its placement ("copy" for copies) and its time: device time between events around
  /// the step, which for a host or CPU-fallback step includes its host work and synchronization.
  struct StepTime {
    std::string name;
    std::string op;
    std::string placement;
    std::string variant;  ///< the kernel's variant where it has several (Attention), or empty
    double ms = 0;
    StepCost cost;  ///< its bytes and flops (step_cost.h), for the roofline table
  };
  /// A run with an event pair around each step that does work (views and folded nodes do none),
  /// always eager (never a CUDA graph, and it does not count toward capturing one); `times` gets
  /// one entry per timed step, in step order.
  StatusOr<ExecutionResult> runProfiled(const Feeds& inputs, std::vector<StepTime>* times);

  const kernels::CudaDeviceInfo& device() const;
  /// Plan cache counters: a run at a new input signature is a miss, at a known one a hit.
  int64_t planHits() const;
  int64_t planMisses() const;
  /// Bytes of weights uploaded so far in this session (each initializer once).
  int64_t uploadedWeightBytes() const;
  /// The plan of the last successful run (nullptr before one), and its report: Plan::summary()
  /// plus the nodes the device kernels refused at their concrete shapes, which ran on the CPU.
  std::shared_ptr<const Plan> lastPlan() const;
  std::string lastSummary() const;
  /// The last run's plan's CUDA graph: "off", "not captured yet (the first run is eager)",
  /// "captured, replayed N", "eager (reason)".
  std::string cudaGraphState() const;
  /// With CudaOptions::time_compute: the device time of the last run's node steps, in ms;
  /// nullopt without it, before a run, or when the last run went to the reference executor.
  std::optional<double> lastComputeMs() const;
  /// The last run's plan's kernel workspace (one region shared by its device nodes).
  int64_t workspaceBytes() const;

 private:
  struct Impl;
  struct DeviceBinding;
  StatusOr<ExecutionResult> runWith(const Feeds& inputs, const DeviceFeeds& device,
                                    const ExecutionOptions& options, std::vector<StepTime>* profile,
                                    const DeviceBinding* binding = nullptr);
  explicit CudaExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Whether the CUDA runtime runs `call` as its own kernel rather than as its function's body: a
/// call of one of our own ops (domain ai.onnxopt, written by -O3 --target cuda) or of a plugin's
/// that the CUDA kernel table (or a plugin's registered kernel) claims for its operands' types. The runners leave such calls when they inline a
/// model's functions for the CUDA runner (docs/target_ops.md).
bool cudaRunsTargetCall(const ir::Model& model, const ir::Node& call);

/// CudaExecutor::create behind the Executor interface (the runner "cuda").
StatusOr<std::unique_ptr<Executor>> createCudaExecutor(const ir::Model& model,
                                                       const CudaOptions& options = {});

}  // namespace onnxopt::runtime
