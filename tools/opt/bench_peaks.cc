// The roofs of the roofline table (bench_peaks.h).
#include "bench_peaks.h"

#include <algorithm>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "onnxopt/api/run.h"
#include "onnxopt/io/model_io.h"

namespace onnxopt::tools {
namespace {

constexpr int64_t kStreamElements = int64_t{1} << 25;
constexpr int64_t kGemmSize = 4096;
constexpr int kWarmup = 3;
constexpr int kRuns = 10;

/// The least device time of `kRuns` runs of `text`'s one node (after `kWarmup`), in seconds.
StatusOr<double> bestNodeSeconds(const std::string& text, const runtime::Feeds& feeds,
                                 runtime::CudaOptions options) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> model, io::parseModelText(text));
  RETURN_IF_ERROR(prepareForRunner(*model, "cuda"));
  options.time_compute = true;
  ASSIGN_OR_RETURN(std::unique_ptr<runtime::CudaExecutor> executor,
                   runtime::CudaExecutor::create(*model, options));
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kWarmup + kRuns; ++i) {
    RETURN_IF_ERROR(executor->run(feeds).status());
    std::optional<double> ms = executor->lastComputeMs();
    if (!ms)
      return makeError(StatusCode::kInternal,
                       "peaks: a run has no device time (it ran on the host)");
    if (i >= kWarmup) best = std::min(best, *ms / 1e3);
  }
  return best;
}

StatusOr<double> gemmFlopsPerSecond(const char* type, DataType dtype,
                                    const runtime::CudaOptions& options) {
  std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "peak ({0}[{1}, {1}] a, {0}[{1}, {1}] b) => ({0}[{1}, {1}] y) {{ y = MatMul(a, b) }}\n",
      type, kGemmSize);
  runtime::Feeds feeds;
  feeds["a"] = kernels::HostTensor::zeros(dtype, {kGemmSize, kGemmSize});
  feeds["b"] = kernels::HostTensor::zeros(dtype, {kGemmSize, kGemmSize});
  ASSIGN_OR_RETURN(double s, bestNodeSeconds(text, feeds, options));
  return 2.0 * static_cast<double>(kGemmSize * kGemmSize * kGemmSize) / s;
}

}  // namespace

StatusOr<DevicePeaks> measurePeaks(const runtime::CudaOptions& options) {
  DevicePeaks peaks;
  std::string stream = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "peak (float[{0}] x) => (float[{0}] y) {{ y = Neg(x) }}\n",
      kStreamElements);
  runtime::Feeds feeds;
  feeds["x"] = kernels::HostTensor::zeros(DataType::kFloat, {kStreamElements});
  ASSIGN_OR_RETURN(double s, bestNodeSeconds(stream, feeds, options));
  peaks.bytes_per_s = 2.0 * 4.0 * static_cast<double>(kStreamElements) / s;
  ASSIGN_OR_RETURN(peaks.half_flops_per_s,
                   gemmFlopsPerSecond("float16", DataType::kFloat16, options));
  ASSIGN_OR_RETURN(peaks.float_flops_per_s, gemmFlopsPerSecond("float", DataType::kFloat, options));
  return peaks;
}

}  // namespace onnxopt::tools
