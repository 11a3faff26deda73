// Runs whose inputs and outputs stay in device memory (executor_impl.h), for a decode loop whose
// KV cache never crosses to the host: the caller's device inputs are bound into the plan's
// kernels (read in place), outputs are computed into the caller's memory where the plan's buffer
// allows it, and greedy tokens are chosen on the device so that only their ids are copied down.
//
//   step t:   past = cache[t % 2] (bound input)  ->  plan  ->  present = cache[(t + 1) % 2]
//             logits (left in the plan's memory) -> ArgMax(last position) -> ids [batch] to host
#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "executor_impl.h"

namespace onnxopt::runtime {

using cuda_detail::DeviceMemory;
using cuda_detail::rootOf;
using kernels::HostTensor;

namespace {

Status doesNotFit(const std::string& name, DataType dtype, const std::vector<int64_t>& dims,
                  size_t bytes, size_t given) {
  return invalidArgument("output '{}' is {}[{}] ({} bytes): the device memory given has {}", name,
                         dataTypeName(dtype), fmt::join(dims, ","), bytes, given);
}

}  // namespace

std::map<int, void*> CudaExecutor::Impl::bindingFor(const Plan& plan, const DeviceFeeds& device,
                                                    const DeviceBinding* binding) const {
  std::map<int, void*> bound;
  if (binding == nullptr) return bound;
  // Inputs are never written (the planner reuses arena buffers in place, never an input's), so
  // the kernels may read the caller's memory.
  for (int id : plan.inputs) {
    const PlannedValue& v = value(plan, id);
    if (v.location != Location::kInput || v.dynamic || v.bytes <= 0) continue;
    auto dev = device.find(v.name);
    if (dev == device.end() || dev->second.data == nullptr) continue;
    bound[id] = const_cast<void*>(dev->second.data);
  }
  // An output's whole buffer (its root, shared by its views and in-place users only) moves into
  // the caller's memory: the planner never computes in place into a buffer holding an output.
  for (int id : plan.outputs) {
    const PlannedValue& v = value(plan, id);
    auto out = binding->outputs->find(v.name);
    if (out == binding->outputs->end() || out->second.data == nullptr || v.dynamic) continue;
    int root = rootOf(plan, id);
    const PlannedValue& r = value(plan, root);
    if (r.location != Location::kArena || r.dynamic || r.bytes <= 0 ||
        static_cast<size_t>(r.bytes) > out->second.bytes || bound.count(root)) {
      continue;
    }
    bound[root] = out->second.data;
  }
  return bound;
}

Status CudaExecutor::Impl::keepOnDevice(RunState& run, int id, const DeviceOutput& out) {
  const PlannedValue& v = value(*run.state.plan, id);
  ASSIGN_OR_RETURN(void* ptr, devicePtr(run.state, id));
  void* where = ptr;
  if (out.data != nullptr) {
    if (static_cast<size_t>(v.bytes) > out.bytes) {
      return doesNotFit(v.name, v.dtype, v.dims, static_cast<size_t>(v.bytes), out.bytes);
    }
    if (ptr != out.data && v.bytes > 0) {
      RETURN_IF_ERROR(api->copyOnDevice(out.data, ptr, static_cast<size_t>(v.bytes))
                          .withContext(fmt::format("copying output '{}' on the device", v.name)));
    }
    where = out.data;
  }
  (*run.binding->kept)[v.name] = DeviceInput{v.dtype, v.dims, where};
  return Status::ok();
}

Status CudaExecutor::Impl::placeHostOutputs(ExecutionResult& result, const DeviceBinding& binding) {
  ExecutionResult host;
  bool copied = false;
  for (size_t i = 0; i < result.names.size(); ++i) {
    const std::string& name = result.names[i];
    if (binding.kept->count(name)) continue;
    auto out = binding.outputs->find(name);
    if (out == binding.outputs->end() || out->second.data == nullptr) {
      host.names.push_back(name);
      host.outputs.push_back(std::move(result.outputs[i]));
      continue;
    }
    const HostTensor& t = result.outputs[i];
    if (t.bytes.size() > out->second.bytes) {
      return doesNotFit(name, t.dtype, t.dims, t.bytes.size(), out->second.bytes);
    }
    if (!t.bytes.empty()) {
      RETURN_IF_ERROR(api->copyToDevice(out->second.data, t.bytes.data(), t.bytes.size())
                          .withContext(fmt::format("copying output '{}' to the device", name)));
      copied = true;
    }
    (*binding.kept)[name] = DeviceInput{t.dtype, t.dims, out->second.data};
  }
  // The host tensors are the copies' sources: they live until the stream has read them.
  if (copied) RETURN_IF_ERROR(api->synchronize("copying outputs to the device"));
  for (const auto& [name, out] : *binding.outputs) {
    if (binding.kept->count(name) == 0 &&
        std::find(host.names.begin(), host.names.end(), name) == host.names.end()) {
      return invalidArgument("'{}' is not an output of the model", name);
    }
  }
  result = std::move(host);
  return Status::ok();
}

StatusOr<DeviceRunResult> CudaExecutor::runOnDevice(const Feeds& inputs, const DeviceFeeds& device,
                                                    const DeviceOutputs& outputs,
                                                    const ExecutionOptions& options) {
  DeviceRunResult ran;
  DeviceBinding binding{&outputs, &ran.device};
  ASSIGN_OR_RETURN(ran.host, runWith(inputs, device, options, nullptr, &binding));
  return ran;
}

StatusOr<std::shared_ptr<void>> CudaExecutor::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  ASSIGN_OR_RETURN(void* data, impl_->device_memory->allocate(bytes));
  // Released under the mutex too: the device's table of allocations is not safe to change
  // while a run on another thread allocates.
  return std::shared_ptr<void>(data, [impl = impl_.get()](void* p) {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> released(impl->mu);
    impl->device_memory->release(p);
  });
}

StatusOr<HostTensor> CudaExecutor::download(const DeviceInput& value) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->downloadDeviceInput("device value", value);
}

StatusOr<std::vector<int64_t>> CudaExecutor::lastPositionArgMax(const DeviceInput& logits) {
  if (logits.dims.size() != 3 || logits.dims[0] < 1 || logits.dims[1] < 1 || logits.dims[2] < 1) {
    return invalidArgument("logits are [{}], not [batch, seq, vocab]", fmt::join(logits.dims, ","));
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl::ArgMaxState& am = impl_->argmax;
  const int64_t batch = logits.dims[0], seq = logits.dims[1];
  const size_t bytes = static_cast<size_t>(batch * seq) * sizeof(int64_t);
  if (am.ids.size() < bytes) {
    am.kernel.reset();
    am.ids = DeviceMemory();
    ASSIGN_OR_RETURN(am.ids, DeviceMemory::allocate(*impl_->api, bytes));
  }
  if (am.kernel == nullptr || am.dtype != logits.dtype || am.dims != logits.dims ||
      am.data != logits.data) {
    // ArgMax along the vocabulary of every position (the last one's are read back): one launch,
    // and no strided view for the kernel to take.
    am.kernel.reset();
    am.attrs.ints = {{"axis", 2}, {"keepdims", 0}, {"select_last_index", 0}};
    kernels::CudaKernelCall call;
    call.op = "ArgMax";
    call.opset = 13;
    call.attrs = &am.attrs;
    call.inputs.emplace_back(logits.dtype, logits.dims, kernels::contiguousStrides(logits.dims),
                             logits.data, kernels::MemoryKind::kDevice);
    std::vector<int64_t> ids_dims{batch, seq};
    call.outputs.emplace_back(DataType::kInt64, ids_dims, kernels::contiguousStrides(ids_dims),
                              am.ids.data(), kernels::MemoryKind::kDevice);
    ASSIGN_OR_RETURN(std::unique_ptr<kernels::PreparedCudaKernel> kernel,
                     impl_->api->prepare(call));
    if (!kernel->support()) {
      return makeError(StatusCode::kUnimplemented, "greedy tokens on the device: {}",
                       kernel->support().reason);
    }
    if (kernel->workspaceBytes() > am.workspace.size()) {
      am.workspace = DeviceMemory();
      ASSIGN_OR_RETURN(am.workspace, DeviceMemory::allocate(*impl_->api, kernel->workspaceBytes()));
    }
    kernel->setWorkspace(am.workspace.data(), am.workspace.size());
    am.kernel = std::move(kernel);
    am.dtype = logits.dtype;
    am.dims = logits.dims;
    am.data = logits.data;
  }
  RETURN_IF_ERROR(impl_->api->launch(*am.kernel));
  std::vector<int64_t> ids(static_cast<size_t>(batch));
  const auto* all = static_cast<const int64_t*>(am.ids.data());
  if (seq == 1) {
    RETURN_IF_ERROR(impl_->api->copyToHost(ids.data(), all, bytes));
  } else {
    for (int64_t r = 0; r < batch; ++r) {
      RETURN_IF_ERROR(
          impl_->api->copyToHost(&ids[static_cast<size_t>(r)], all + r * seq + seq - 1, 8));
    }
  }
  RETURN_IF_ERROR(impl_->api->synchronize("greedy tokens on the device"));
  return ids;
}

}  // namespace onnxopt::runtime
