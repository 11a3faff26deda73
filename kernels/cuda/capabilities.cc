// The CUDA kernels' capability table: kernels/cuda/ops.def expanded into host data and the
// Capabilities that answers from it. Plain C++, built with or without nvcc (planning and the
// CUDA target's passes run on machines without a GPU).
#include <deque>
#include <mutex>

#include <fmt/format.h>

#include "onnxopt/kernels/cuda.h"

namespace onnxopt::kernels {

namespace {

constexpr TypeSet kCudaFloat = {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16};
constexpr TypeSet kCudaSigned = {DataType::kInt8, DataType::kInt32, DataType::kInt64};
constexpr TypeSet kCudaInt = kCudaSigned | TypeSet{DataType::kUint8};
constexpr TypeSet kCudaNumeric = kCudaFloat | kCudaInt;
constexpr TypeSet kCudaBool = {DataType::kBool};
constexpr TypeSet kCudaAll = kCudaNumeric | kCudaBool;
constexpr TypeSet kCudaByte = {DataType::kInt8, DataType::kUint8};
constexpr TypeSet kCudaInt32 = {DataType::kInt32};
constexpr TypeSet kCudaQuantInt = kCudaByte | TypeSet{DataType::kInt16, DataType::kUint16};
// The low-precision types (kernels/cuda/quant/low_precision.cuh), grouped by the opset that
// brought them: Cast's rows take kCudaLowNN from opset NN.
constexpr TypeSet kCudaFloat8 = {DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ,
                                 DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ};
constexpr TypeSet kCudaInt4 = {DataType::kInt4, DataType::kUint4};
constexpr TypeSet kCudaFloat4 = {DataType::kFloat4E2M1};
constexpr TypeSet kCudaInt2 = {DataType::kInt2, DataType::kUint2};
constexpr TypeSet kCudaLow19 = kCudaFloat8;
constexpr TypeSet kCudaLow21 = kCudaLow19 | kCudaInt4;
constexpr TypeSet kCudaLow23 = kCudaLow21 | kCudaFloat4;
constexpr TypeSet kCudaLow24 = kCudaLow23 | TypeSet{DataType::kFloat8E8M0};
constexpr TypeSet kCudaLow25 = kCudaLow24 | kCudaInt2;

constexpr int64_t kOpen = kCudaOpenOpset;
constexpr Layout kAny = Layout::kAny;

bool isDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

TypeSet typesAt(const std::vector<TypeSet>& sets, size_t i) {
  if (sets.empty()) return {};
  return i < sets.size() ? sets[i] : sets.back();
}

std::string opsetRange(const CudaKernelInfo& row) {
  if (row.until == kCudaOpenOpset) return fmt::format("{}+", row.since);
  return row.since == row.until ? fmt::format("{}", row.since)
                                : fmt::format("{}-{}", row.since, row.until);
}

class CudaCapabilities final : public Capabilities {
 public:
  const char* name() const override { return "cuda"; }

  Support supports(const OpQuery& q) const override {
    bool known_op = false;
    std::string opsets;
    for (const CudaKernelInfo& row : cudaKernelTable()) {
      if (row.op != q.op || isDefaultDomain(row.domain) != isDefaultDomain(q.domain) ||
          (!isDefaultDomain(row.domain) && row.domain != q.domain)) {
        continue;
      }
      known_op = true;
      if (q.opset < row.since || q.opset > row.until) {
        opsets += (opsets.empty() ? "" : ", ") + opsetRange(row);
        continue;
      }
      return check(row, q);
    }
    if (const CudaPluginKernel* plugin = findCudaPluginKernel(q.domain, q.op, q.opset)) {
      CudaKernelInfo row{plugin->domain.c_str(),
                         plugin->op.c_str(),
                         plugin->since,
                         plugin->until,
                         "plugin",
                         plugin->min_inputs,
                         plugin->max_inputs,
                         -1,
                         plugin->inputs,
                         plugin->outputs,
                         Layout::kAny};
      return check(row, q);
    }
    if (!known_op) return Support::no(fmt::format("no CUDA kernel for {}", q.op));
    return Support::no(fmt::format("{}: no CUDA kernel at opset {} (kernels for opsets {})", q.op,
                                   q.opset, opsets));
  }

  std::vector<size_t> valueInputs(const std::string& domain, const std::string& op,
                                  int64_t opset) const override {
    for (const CudaValueInputs& row : cudaValueInputTable()) {
      if (row.op == op && isDefaultDomain(row.domain) == isDefaultDomain(domain) &&
          (isDefaultDomain(domain) || row.domain == domain) && opset >= row.since &&
          opset <= row.until) {
        return row.inputs;
      }
    }
    return {};
  }

 private:
  static Support check(const CudaKernelInfo& row, const OpQuery& q) {
    if (row.layout != Layout::kAny && q.layout != Layout::kAny && q.layout != row.layout) {
      return Support::no(fmt::format("{}: the CUDA kernel reads {} data, not {}", q.op,
                                     layoutName(row.layout), layoutName(q.layout)));
    }
    auto n = static_cast<int>(q.inputs.size());
    if (n > row.max_inputs || n < row.min_inputs) {
      return Support::no(fmt::format("{}: the CUDA kernel takes {} to {} inputs, not {}", q.op,
                                     row.min_inputs, row.max_inputs, n));
    }
    DataType shared = DataType::kUndefined;
    for (size_t i = 0; i < q.inputs.size(); ++i) {
      DataType t = q.inputs[i];
      if (t == DataType::kUndefined) continue;
      TypeSet allowed = typesAt(row.inputs, i);
      if (!allowed.contains(t)) {
        return Support::no(fmt::format("{}: input {} is {}; the CUDA kernel takes {}", q.op, i,
                                       dataTypeName(t), allowed.toString()));
      }
      if (row.same_from >= 0 && static_cast<int>(i) >= row.same_from) {
        if (shared != DataType::kUndefined && shared != t) {
          return Support::no(
              fmt::format("{}: input {} is {}, input {} {}; the CUDA kernel takes "
                          "one type",
                          q.op, row.same_from, dataTypeName(shared), i, dataTypeName(t)));
        }
        shared = t;
      }
    }
    for (size_t i = 0; i < q.outputs.size() && i < row.outputs.size(); ++i) {
      DataType t = q.outputs[i];
      if (t == DataType::kUndefined || row.outputs[i].contains(t)) continue;
      return Support::no(fmt::format("{}: output {} is {}; the CUDA kernel produces {}", q.op, i,
                                     dataTypeName(t), row.outputs[i].toString()));
    }
    return Support::yes();
  }
};

}  // namespace

const std::vector<CudaKernelInfo>& cudaKernelTable() {
// Parenthesised: ops.def's kind macros (CUDA_UNARY, ...) pass a row's TYPES on to CUDA_KERNEL
// after expanding it, where a bare comma would split the argument.
#define TYPES(...) (std::vector<TypeSet>{__VA_ARGS__})
#define NONE \
  std::vector<TypeSet> {}
#define CUDA_KERNEL(domain, op, since, until, family, min_in, max_in, same_from, inputs, outputs, \
                    layout)                                                                       \
  CudaKernelInfo{domain, #op,       since,  until,   #family, min_in,                             \
                 max_in, same_from, inputs, outputs, layout},
  static const std::vector<CudaKernelInfo> table = {
#include "ops.def"
  };
#undef CUDA_KERNEL
#undef NONE
#undef TYPES
  return table;
}

const std::vector<CudaValueInputs>& cudaValueInputTable() {
#define INPUTS(...) (std::vector<size_t>{__VA_ARGS__})
#define CUDA_VALUE_INPUTS(domain, op, since, until, inputs) \
  CudaValueInputs{domain, #op, since, until, inputs},
  static const std::vector<CudaValueInputs> table = {
#include "ops.def"
  };
#undef CUDA_VALUE_INPUTS
#undef INPUTS
  return table;
}

namespace {

std::mutex& pluginMutex() {
  static std::mutex mu;
  return mu;
}
/// Registered plugin kernels; a deque so that the pointers handed out stay valid.
std::deque<CudaPluginKernel>& pluginKernels() {
  static std::deque<CudaPluginKernel> kernels;
  return kernels;
}

}  // namespace

Status registerCudaKernel(CudaPluginKernel kernel) {
  if (isDefaultDomain(kernel.domain) || kernel.domain == "ai.onnxopt") {
    return invalidArgument("CUDA kernel {}.{}: a plugin registers ops of its own domain, not '{}'",
                           kernel.domain, kernel.op, kernel.domain);
  }
  if (kernel.op.empty() || !kernel.launch || kernel.min_inputs < 0 ||
      kernel.max_inputs < kernel.min_inputs || kernel.until < kernel.since) {
    return invalidArgument(
        "CUDA kernel {}.{}: needs an op name, a launch function and consistent input counts and "
        "opsets",
        kernel.domain, kernel.op);
  }
  std::lock_guard<std::mutex> lock(pluginMutex());
  for (const CudaPluginKernel& k : pluginKernels()) {
    if (k.domain == kernel.domain && k.op == kernel.op && k.since <= kernel.until &&
        kernel.since <= k.until) {
      return invalidArgument("CUDA kernel {}.{}: registered twice", kernel.domain, kernel.op);
    }
  }
  pluginKernels().push_back(std::move(kernel));
  return Status::ok();
}

const CudaPluginKernel* findCudaPluginKernel(const std::string& domain, const std::string& op,
                                             int64_t opset) {
  std::lock_guard<std::mutex> lock(pluginMutex());
  for (const CudaPluginKernel& k : pluginKernels()) {
    if (k.domain == domain && k.op == op && opset >= k.since && opset <= k.until) return &k;
  }
  return nullptr;
}

const Capabilities& cudaCapabilities() {
  static const CudaCapabilities caps;
  return caps;
}

}  // namespace onnxopt::kernels
