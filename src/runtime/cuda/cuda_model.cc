// The CUDA runner's questions to the IR outside an executor (cuda_executor.h): checkCudaFeeds, a
// run's feeds, host and device, against the model's inputs before any plan is looked up (the
// executor binds it when it is created), and cudaRunsTargetCall, for the runners that inline a
// model's functions.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/weight_data.h"

namespace onnxopt::runtime {

using kernels::HostTensor;

StatusOr<InputShapes> checkCudaFeeds(const ir::Model& model, const Feeds& feeds) {
  return checkCudaFeeds(model, feeds, {});
}

StatusOr<InputShapes> checkCudaFeeds(const ir::Model& model, const Feeds& feeds,
                                     const DeviceFeeds& device) {
  if (model.graph == nullptr) return invalidArgument("the model has no graph");
  const ir::Graph& g = *model.graph;
  std::vector<std::string> names;
  for (const ir::Value* in : g.inputs()) names.push_back(in->name());
  auto known = [&](const std::string& name) -> Status {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return invalidArgument("'{}' is not an input of the model (its inputs: {})", name,
                             fmt::join(names, ", "));
    }
    return Status::ok();
  };
  for (const auto& [name, t] : feeds) RETURN_IF_ERROR(known(name));
  for (const auto& [name, t] : device) {
    RETURN_IF_ERROR(known(name));
    if (feeds.count(name) != 0) {
      return invalidArgument("input '{}' is given twice (on the host and on the device)", name);
    }
    if (t.dtype == DataType::kString) {
      return invalidArgument("input '{}': string tensors cannot be given in device memory", name);
    }
  }
  InputShapes shapes;
  for (const ir::Value* in : g.inputs()) {
    auto host = feeds.find(in->name());
    auto dev = device.find(in->name());
    if (host == feeds.end() && dev == device.end()) {
      if (const ir::Tensor* t = in->initializer()) {
        // The default is what the run reads: the create-time check left it to the run.
        RETURN_IF_ERROR(checkTensorData(*t, fmt::format("initializer '{}'", in->name())));
        continue;
      }
      return invalidArgument("input '{}' is missing", in->name());
    }
    DataType dtype = host != feeds.end() ? host->second.dtype : dev->second.dtype;
    const std::vector<int64_t>& dims = host != feeds.end() ? host->second.dims : dev->second.dims;
    const ir::Type& type = in->type();
    if (type.isTensor() && type.elem_type != DataType::kUndefined && dtype != type.elem_type) {
      return invalidArgument("input '{}' is {}, but a {} tensor was given", in->name(),
                             dataTypeName(type.elem_type), dataTypeName(dtype));
    }
    for (int64_t d : dims) {
      if (d < 0) {
        return invalidArgument("input '{}': dims [{}] are not sizes", in->name(),
                               fmt::join(dims, ","));
      }
    }
    if (type.isTensor() && type.shape) {
      const auto& declared = *type.shape;
      if (declared.size() != dims.size()) {
        return invalidArgument("input '{}' has rank {}, but a tensor of dims [{}] was given",
                               in->name(), declared.size(), fmt::join(dims, ","));
      }
      for (size_t d = 0; d < declared.size(); ++d) {
        if (declared[d].isKnown() && declared[d].value != dims[d]) {
          return invalidArgument("input '{}': dim {} is {}, but {} was given", in->name(), d,
                                 declared[d].value, dims[d]);
        }
      }
    }
    if (host != feeds.end()) {
      const HostTensor& t = host->second;
      if (t.dtype == DataType::kString) {
        if (static_cast<int64_t>(t.strings.size()) != t.numElements()) {
          return invalidArgument("input '{}': {} strings for dims [{}]", in->name(),
                                 t.strings.size(), fmt::join(t.dims, ","));
        }
      } else {
        auto bytes = dataTypeStorageBytes(t.dtype, static_cast<uint64_t>(t.numElements()));
        if (!bytes || *bytes != t.bytes.size()) {
          return invalidArgument("input '{}': {} bytes of data for {}[{}]", in->name(),
                                 t.bytes.size(), dataTypeName(t.dtype), fmt::join(t.dims, ","));
        }
      }
    } else {
      uint64_t elements = 1;
      bool overflow = false;
      for (int64_t d : dims) {
        overflow |= __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements);
      }
      auto bytes = overflow ? std::nullopt : dataTypeStorageBytes(dtype, elements);
      if (!bytes) {
        return invalidArgument("input '{}': {}[{}] has no size in bytes", in->name(),
                               dataTypeName(dtype), fmt::join(dims, ","));
      }
      if (*bytes > 0 && dev->second.data == nullptr) {
        return invalidArgument("input '{}': no device memory for {}[{}]", in->name(),
                               dataTypeName(dtype), fmt::join(dims, ","));
      }
    }
    shapes[in->name()] = {dtype, dims};
  }
  return shapes;
}

bool cudaRunsTargetCall(const ir::Model& model, const ir::Node& call) {
  // Ours (ai.onnxopt) and plugins' ops: a standard op's call is always its body.
  if (call.domain().empty() || call.domain() == "ai.onnx") return false;
  int64_t opset = model.opsetVersion(call.domain()).value_or(0);
  return static_cast<bool>(kernels::cudaCapabilities().supports(bridge::opQuery(call, opset)));
}

}  // namespace onnxopt::runtime
