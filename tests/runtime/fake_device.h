// A host-memory stand-in for the CUDA device (cuda_detail::DeviceApi): "device" buffers are heap
// blocks, copies are memcpy, and a launch runs the node's reference kernel on the views' memory.
// Every pointer a call passes is checked to lie inside a live allocation, every release to match
// one, so that the executor's offsets, views, in-place reuse and copies are checked on a machine
// without a GPU; the results must equal the reference executor's.
#pragma once

#include <cstring>
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
  int64_t launches = 0;
  int64_t allocations = 0;
  int64_t live = 0;  ///< allocations not released
  std::vector<std::string> errors;
};

class FakeDevice : public cuda_detail::DeviceApi {
 public:
  /// `refuse`: ops whose canImplement says no (the executor must run them on the CPU).
  explicit FakeDevice(std::shared_ptr<FakeDeviceLog> log, std::set<std::string> refuse = {})
      : log_(std::move(log)), refuse_(std::move(refuse)) {}

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
  Status copyToDevice(void* dst, const void* src, size_t bytes) override {
    RETURN_IF_ERROR(check(dst, bytes, "copyToDevice"));
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  Status copyToHost(void* dst, const void* src, size_t bytes) override {
    RETURN_IF_ERROR(check(src, bytes, "copyToHost"));
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  Status fill(void* dst, int value, size_t bytes) override {
    RETURN_IF_ERROR(check(dst, bytes, "fill"));
    if (bytes > 0) std::memset(dst, value, bytes);
    return Status::ok();
  }
  Status synchronize(const std::string&) override { return Status::ok(); }
  kernels::Support canImplement(const kernels::CudaKernelCall& call) override {
    if (refuse_.count(call.op)) return kernels::Support::no("fake device refuses " + call.op);
    return kernels::Support::yes();
  }
  StatusOr<size_t> workspaceBytes(const kernels::CudaKernelCall& call) override {
    return call.op == "MatMul" || call.op == "Gemm" ? 1024 : 0;
  }
  Status launch(const kernels::CudaKernelCall& call) override {
    if (refuse_.count(call.op)) return fail("launch of refused op " + call.op);
    if (workspaceBytes(call).value() > 0) {
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

 private:
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
};

}  // namespace onnxopt::runtime::test
