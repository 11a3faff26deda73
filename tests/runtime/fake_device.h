// A host-memory stand-in for the CUDA device (cuda_detail::DeviceApi): "device" buffers are heap
// blocks, copies are memcpy, a prepared kernel keeps its node's call and a launch runs the node's
// reference kernel on the views' memory, and a capture records launches that a replay runs again
// (a copy or sync during a capture fails it).
// Work is queued as on a stream and runs at synchronize(): a host read of device data that the
// executor did not synchronize before sees stale bytes, and the results differ.
// Every pointer a call passes is checked to lie inside a live allocation, every release to match
// one, so that the executor's offsets, views, in-place reuse and copies are checked on a machine
// without a GPU; the results must equal the reference executor's.
#pragma once

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../../src/runtime/cuda/device_api.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::runtime::test {

/// What the fake saw; shared with the test, which reads it after the executor (and the fake) are
/// gone.
struct FakeDeviceLog {
  int64_t prepares = 0;  ///< kernels prepared (one per device node and plan)
  int64_t launches = 0;
  int64_t allocations = 0;
  int64_t live = 0;  ///< allocations not released
  int64_t synchronizations = 0;
  int64_t captures = 0;                 ///< graphs captured
  int64_t replays = 0;                  ///< graph launches
  int64_t device_copies = 0;            ///< copyOnDevice calls (inputs given in device memory)
  std::vector<size_t> allocated_bytes;  ///< the size of each device allocation, in order
  int64_t to_device_copies = 0;         ///< copyToDevice calls, and their bytes
  int64_t to_device_bytes = 0;
  int64_t to_host_copies = 0;  ///< copyToHost calls, and their bytes
  int64_t to_host_bytes = 0;
  /// Operands given with their host data to canImplement (prepare asks it too), and the
  /// largest's bytes.
  int64_t host_operands = 0;
  size_t largest_host_operand = 0;
  std::vector<std::string> errors;
};

/// What the fake device does with graph capture.
struct FakeCapture {
  bool capturable = true;  ///< false: endCapture fails ("fake device cannot capture")
  /// Ops whose launch fails during a capture (as a cudaMalloc inside a kernel would).
  std::set<std::string> uncapturable_ops;
};

class FakeDevice : public cuda_detail::DeviceApi {
 public:
  /// `refuse`: ops whose canImplement says no (the executor must run them on the CPU).
  explicit FakeDevice(std::shared_ptr<FakeDeviceLog> log, std::set<std::string> refuse = {},
                      FakeCapture capture = {})
      : log_(std::move(log)), refuse_(std::move(refuse)), capture_(std::move(capture)) {}

  StatusOr<kernels::CudaDeviceInfo> probe() override {
    kernels::CudaDeviceInfo info;
    info.name = "fake";
    info.major = 9;
    return info;
  }
  StatusOr<void*> allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    auto block = std::make_unique<char[]>(bytes);
    std::memset(block.get(), 0x5A, bytes);  // garbage, as cudaMalloc leaves it
    void* data = block.get();
    blocks_[static_cast<char*>(data)] = {std::move(block), bytes};
    ++log_->allocations;
    log_->allocated_bytes.push_back(bytes);
    ++log_->live;
    return data;
  }
  void release(void* data) override {
    if (blocks_.erase(static_cast<char*>(data)) == 0) {
      log_->errors.push_back("release of a pointer that is not an allocation");
      return;
    }
    --log_->live;
  }
  // Pinned host memory: heap blocks too (the executor must not hand them to a kernel, but the
  // fake cannot tell them apart; the copies check the device side only).
  StatusOr<void*> allocateHost(size_t bytes) override {
    if (bytes == 0) return nullptr;
    auto block = std::make_unique<char[]>(bytes);
    void* data = block.get();
    host_blocks_[static_cast<char*>(data)] = {std::move(block), bytes};
    ++log_->live;
    return data;
  }
  void releaseHost(void* data) override {
    if (host_blocks_.erase(static_cast<char*>(data)) == 0) {
      log_->errors.push_back("releaseHost of a pointer that is not a host allocation");
      return;
    }
    --log_->live;
  }
  // Copies, fills and synchronizations cannot be captured (pageable copies and syncs cannot be in
  // a CUDA graph, and the executor captures kernel launches only): each invalidates a capture.
  Status copyToDevice(void* dst, const void* src, size_t bytes) override {
    RETURN_IF_ERROR(notCapturing("copyToDevice"));
    RETURN_IF_ERROR(check(dst, bytes, "copyToDevice"));
    ++log_->to_device_copies;
    log_->to_device_bytes += static_cast<int64_t>(bytes);
    if (bytes > 0)
      enqueue([=] {
        std::memcpy(dst, src, bytes);
        return Status::ok();
      });
    return Status::ok();
  }
  Status copyToHost(void* dst, const void* src, size_t bytes) override {
    RETURN_IF_ERROR(notCapturing("copyToHost"));
    RETURN_IF_ERROR(check(src, bytes, "copyToHost"));
    ++log_->to_host_copies;
    log_->to_host_bytes += static_cast<int64_t>(bytes);
    if (bytes > 0)
      enqueue([=] {
        std::memcpy(dst, src, bytes);
        return Status::ok();
      });
    return Status::ok();
  }
  Status fill(void* dst, int value, size_t bytes) override {
    RETURN_IF_ERROR(notCapturing("fill"));
    RETURN_IF_ERROR(check(dst, bytes, "fill"));
    if (bytes > 0)
      enqueue([=] {
        std::memset(dst, value, bytes);
        return Status::ok();
      });
    return Status::ok();
  }
  // A device-to-device copy: both sides must lie in the fake's device memory.
  Status copyOnDevice(void* dst, const void* src, size_t bytes) override {
    RETURN_IF_ERROR(notCapturing("copyOnDevice"));
    RETURN_IF_ERROR(check(dst, bytes, "copyOnDevice"));
    RETURN_IF_ERROR(check(src, bytes, "copyOnDevice"));
    ++log_->device_copies;
    if (bytes > 0)
      enqueue([=] {
        std::memcpy(dst, src, bytes);
        return Status::ok();
      });
    return Status::ok();
  }
  void* nativeStream() override { return nullptr; }
  /// Runs the queued work in order; the first failure is the result (as an asynchronous fault).
  Status synchronize(const std::string& what) override {
    RETURN_IF_ERROR(notCapturing("synchronize"));
    ++log_->synchronizations;
    std::vector<std::function<Status()>> queue = std::move(queue_);
    queue_.clear();
    for (auto& work : queue) {
      Status st = work();
      if (!st.isOk()) return st.withContext(what);
    }
    return Status::ok();
  }
  kernels::Support canImplement(const kernels::CudaKernelCall& call) override {
    noteHostOperands(call);
    if (refuse_.count(call.op)) return kernels::Support::no("fake device refuses " + call.op);
    if (cuda_checks_) return kernels::cudaCanImplement(call);
    return kernels::Support::yes();
  }
  /// Answers canImplement as the CUDA kernels do (their host-only check, CUDA builds), so that
  /// nodes are placed where a GPU would run them; the launches still run the reference kernels.
  void checkAsTheCudaKernels() { cuda_checks_ = true; }
  StatusOr<std::unique_ptr<kernels::PreparedCudaKernel>> prepare(
      const kernels::CudaKernelCall& call) override {
    ++log_->prepares;
    size_t workspace = call.op == "MatMul" || call.op == "Gemm" ? 1024 : 0;
    return std::unique_ptr<kernels::PreparedCudaKernel>(
        std::make_unique<Kernel>(call, canImplement(call), workspace));
  }
  /// The call a kernel this device prepared was prepared from (nullptr for another's).
  static const kernels::CudaKernelCall* callOf(const kernels::PreparedCudaKernel& kernel);
  Status launch(const kernels::PreparedCudaKernel& kernel) override {
    const auto* prepared = dynamic_cast<const Kernel*>(&kernel);
    if (prepared == nullptr) return fail("launch of a kernel this device did not prepare");
    const kernels::CudaKernelCall& call = prepared->call;
    if (!prepared->support()) return fail("launch of refused op " + call.op);
    if (refuse_.count(call.op)) return fail("launch of refused op " + call.op);
    if (capturing_) {
      if (capture_.uncapturable_ops.count(call.op)) {
        invalidated_ = true;
        return Status(StatusCode::kInternal, "fake device: " + call.op + " cannot be captured");
      }
      captured_.emplace_back(call, prepared->workspaceBytes());
      return Status::ok();
    }
    enqueue([this, call, workspace = prepared->workspaceBytes()] { return run(call, workspace); });
    return Status::ok();
  }
  // Markers: the host clock when the queue reaches them.
  StatusOr<size_t> recordMarker() override {
    RETURN_IF_ERROR(notCapturing("recordMarker"));
    size_t index = markers_.size();
    markers_.push_back(std::make_shared<std::chrono::steady_clock::time_point>());
    auto slot = markers_.back();
    enqueue([slot] {
      *slot = std::chrono::steady_clock::now();
      return Status::ok();
    });
    return index;
  }
  StatusOr<double> elapsedMs(size_t from, size_t to) override {
    if (from >= markers_.size() || to >= markers_.size()) return fail("elapsedMs of no marker");
    return std::chrono::duration<double, std::milli>(*markers_[to] - *markers_[from]).count();
  }
  void clearMarkers() override { markers_.clear(); }
  Status beginCapture() override {
    if (capturing_) return fail("beginCapture during a capture");
    capturing_ = true;
    invalidated_ = false;
    captured_.clear();
    return Status::ok();
  }
  StatusOr<std::unique_ptr<cuda_detail::CapturedGraph>> endCapture() override {
    if (!capturing_) return fail("endCapture without beginCapture");
    capturing_ = false;
    if (!capture_.capturable) {
      return Status(StatusCode::kUnimplemented, "fake device cannot capture");
    }
    if (invalidated_) return Status(StatusCode::kInternal, "fake device: capture invalidated");
    auto graph = std::make_unique<Graph>();
    graph->calls = std::move(captured_);
    ++log_->captures;
    return std::unique_ptr<cuda_detail::CapturedGraph>(std::move(graph));
  }
  Status replay(const cuda_detail::CapturedGraph& graph) override {
    RETURN_IF_ERROR(notCapturing("replay"));
    for (const auto& [call, workspace] : static_cast<const Graph&>(graph).calls) {
      enqueue([this, call, workspace] { return run(call, workspace); });
    }
    ++log_->replays;
    return Status::ok();
  }

 private:
  void noteHostOperands(const kernels::CudaKernelCall& call) {
    for (const kernels::HostTensor* t : call.constant_inputs) {
      if (t == nullptr) continue;
      ++log_->host_operands;
      log_->largest_host_operand = std::max(log_->largest_host_operand, t->bytes.size());
    }
  }

  /// A prepared kernel: the call it was prepared from (its workspace set by setWorkspace).
  struct Kernel : kernels::PreparedCudaKernel {
    Kernel(kernels::CudaKernelCall c, kernels::Support s, size_t w)
        : call(std::move(c)), support_(std::move(s)), workspace_(w) {}
    const kernels::Support& support() const override { return support_; }
    size_t workspaceBytes() const override { return support_ ? workspace_ : 0; }
    void setWorkspace(void* workspace, size_t bytes) override {
      call.workspace = workspace;
      call.workspace_bytes = bytes;
    }
    const std::string& variant() const override { return variant_; }
    Status run(kernels::CudaDeviceContext&) const override {
      return Status(StatusCode::kInternal, "fake device: a kernel runs through launch()");
    }
    kernels::CudaKernelCall call;
    kernels::Support support_;
    size_t workspace_ = 0;
    std::string variant_;
  };

  struct Graph : cuda_detail::CapturedGraph {
    std::vector<std::pair<kernels::CudaKernelCall, size_t>> calls;
  };

  /// Runs a launch: the reference kernel on the views' memory.
  Status run(const kernels::CudaKernelCall& call, size_t workspace) {
    if (workspace > 0) {
      if (call.workspace_bytes < 1024) return fail(call.op + ": no workspace");
      RETURN_IF_ERROR(check(call.workspace, 1024, call.op + " workspace"));
    }
    // Inputs are read before any output is written (an in-place output shares an input).
    std::vector<kernels::HostTensor> inputs(call.inputs.size());
    std::vector<const kernels::HostTensor*> ptrs(call.inputs.size(), nullptr);
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const kernels::ConstTensorView& v = call.inputs[i];
      if (v.dtype == DataType::kUndefined) continue;
      inputs[i] = kernels::HostTensor::zeros(v.dtype, v.dims);
      RETURN_IF_ERROR(checkView(v, inputs[i].bytes.size(), fmt::format("{} input {}", call.op, i)));
      if (!inputs[i].bytes.empty())
        std::memcpy(inputs[i].bytes.data(), v.data, inputs[i].bytes.size());
      ptrs[i] = &inputs[i];
    }
    kernels::KernelAttrs none;
    auto outs =
        kernels::runReferenceKernel(kernels::referenceOpName(call.domain, call.op), call.opset,
                                    ptrs, call.attrs ? *call.attrs : none, call.outputs.size());
    if (!outs.isOk()) return outs.status();
    for (size_t i = 0; i < call.outputs.size(); ++i) {
      const kernels::TensorView& v = call.outputs[i];
      if (v.dtype == DataType::kUndefined) continue;
      const kernels::HostTensor& t = (*outs)[i];
      if (t.dtype != v.dtype || t.dims != v.dims) {
        return fail(fmt::format("{} output {}: the view is not what the kernel makes", call.op, i));
      }
      RETURN_IF_ERROR(checkView(v, t.bytes.size(), fmt::format("{} output {}", call.op, i)));
      if (!t.bytes.empty()) std::memcpy(v.data, t.bytes.data(), t.bytes.size());
    }
    ++log_->launches;
    return Status::ok();
  }

  void enqueue(std::function<Status()> work) { queue_.push_back(std::move(work)); }
  Status notCapturing(const std::string& what) {
    if (!capturing_) return Status::ok();
    invalidated_ = true;
    return fail(what + " during a capture");
  }
  struct Block {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };

  Status fail(const std::string& what) {
    log_->errors.push_back(what);
    return Status(StatusCode::kInternal, "fake device: " + what);
  }
  /// [p, p + bytes) lies in one live allocation.
  Status check(const void* p, size_t bytes, const std::string& what) {
    if (bytes == 0) return Status::ok();
    const char* c = static_cast<const char*>(p);
    auto it = blocks_.upper_bound(const_cast<char*>(c));
    if (it != blocks_.begin()) {
      --it;
      if (c >= it->first && c + bytes <= it->first + it->second.size) return Status::ok();
    }
    return fail(fmt::format("{}: {} bytes at {} are outside every allocation", what, bytes, p));
  }
  template <typename View>
  Status checkView(const View& v, size_t bytes, const std::string& what) {
    if (v.memory != kernels::MemoryKind::kDevice) return fail(what + ": not device memory");
    if (!v.isContiguous()) return fail(what + ": not contiguous");
    return check(v.data, bytes, what);
  }

  std::shared_ptr<FakeDeviceLog> log_;
  std::set<std::string> refuse_;
  std::map<char*, Block> blocks_;
  std::map<char*, Block> host_blocks_;
  FakeCapture capture_;
  bool cuda_checks_ = false;
  bool capturing_ = false;
  bool invalidated_ = false;
  std::vector<std::pair<kernels::CudaKernelCall, size_t>> captured_;
  /// The "stream": work runs at synchronize, so a host read without one sees stale data.
  std::vector<std::function<Status()>> queue_;
  std::vector<std::shared_ptr<std::chrono::steady_clock::time_point>> markers_;
};

inline const kernels::CudaKernelCall* FakeDevice::callOf(
    const kernels::PreparedCudaKernel& kernel) {
  const auto* prepared = dynamic_cast<const Kernel*>(&kernel);
  return prepared != nullptr ? &prepared->call : nullptr;
}

}  // namespace onnxopt::runtime::test
