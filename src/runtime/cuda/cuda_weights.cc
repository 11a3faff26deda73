// Constants for the executor's device side (executor_impl.h): their host data (initializers,
// sparse ones densified, folded values), and their upload: initializers once per session (the
// session's weights), folded values once per plan.
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "executor_impl.h"

namespace onnxopt::runtime {

using cuda_detail::DeviceMemory;
using cuda_detail::PlanState;
using cuda_detail::rootOf;
using cuda_detail::withDims;
using kernels::HostTensor;

StatusOr<HostTensor> CudaExecutor::Impl::constantData(const Plan& plan, int id) const {
  const PlannedValue& v = value(plan, id);
  const PlannedValue& root = value(plan, rootOf(plan, id));
  if (root.host_value) return withDims(*root.host_value, v.dims);
  if (root.weight >= 0 && plan.host != nullptr) {
    ASSIGN_OR_RETURN(HostTensor data, plan.host->weightData(root.weight));
    return withDims(std::move(data), v.dims);
  }
  return makeError(StatusCode::kInternal, "constant '{}' has no data", v.name);
}

std::optional<HostTensor> CudaExecutor::Impl::hostOperand(const Plan& plan, int id) const {
  const PlannedValue& root = value(plan, rootOf(plan, id));
  if (!root.knownWhenPlanning()) return std::nullopt;
  if (!root.host_value && root.bytes > kMaxHostOperandBytes) return std::nullopt;
  auto data = constantData(plan, id);
  if (!data.isOk()) return std::nullopt;
  return std::move(data).value();
}

Status CudaExecutor::Impl::uploadConstants(PlanState& state) {
  const Plan& plan = *state.plan;
  // The host data of the queued uploads, alive until they are done.
  std::vector<std::shared_ptr<const HostTensor>> sources;
  for (size_t id = 0; id < plan.values.size(); ++id) {
    const PlannedValue& v = plan.values[id];
    if (v.location != Location::kConstant || !v.upload || v.base >= 0) continue;
    const bool initializer = v.weight >= 0;
    if (initializer) {
      if (auto it = weights.find(v.weight); it != weights.end()) {
        state.constant_ptrs[static_cast<int>(id)] = it->second.data();
        continue;
      }
    }
    ASSIGN_OR_RETURN(HostTensor constant, constantData(plan, static_cast<int>(id)));
    auto source = std::make_shared<const HostTensor>(std::move(constant));
    const HostTensor& data = *source;
    sources.push_back(source);
    if (data.dtype == DataType::kString) {
      return makeError(StatusCode::kUnimplemented,
                       "constant '{}' is a string tensor, which the device cannot read", v.name);
    }
    auto buffer = DeviceMemory::allocate(initializer ? *device_memory : *api, data.bytes.size());
    if (!buffer.isOk()) {
      return buffer.status().withContext(fmt::format("uploading weight '{}'", v.name));
    }
    if (!data.bytes.empty()) {
      RETURN_IF_ERROR(api->copyToDevice(buffer->data(), data.bytes.data(), data.bytes.size())
                          .withContext(fmt::format("uploading weight '{}'", v.name)));
    }
    state.constant_ptrs[static_cast<int>(id)] = buffer->data();
    if (initializer) {
      weight_bytes += static_cast<int64_t>(data.bytes.size());
      weights.emplace(v.weight, std::move(buffer).value());
    } else {
      state.plan_constants.emplace(static_cast<int>(id), std::move(buffer).value());
    }
  }
  // The uploads read host memory that goes away with `sources`: finish them here.
  return api->synchronize("uploading weights");
}

}  // namespace onnxopt::runtime
