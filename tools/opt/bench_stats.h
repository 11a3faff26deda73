// The statistics of `opt bench` (bench_command.cc): latency percentiles over the timed runs, and
// the per-node profile table built from profiled runs. Plain functions of numbers and names, so
// that they are tested on the host (bench_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxopt::tools {

struct LatencyStats {
  int64_t runs = 0;
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, min = 0, max = 0;  ///< milliseconds
  double throughput = 0;                                         ///< runs per second (1000 / mean)
};

/// The p-th percentile (0 <= p <= 100) of `sorted` (ascending, not empty), interpolated linearly
/// between the closest ranks (numpy's default): p=0 is the minimum, p=100 the maximum.
double percentile(const std::vector<double>& sorted, double p);

/// The statistics of `ms` (one latency per run; empty: all zero).
LatencyStats latencyStats(std::vector<double> ms);

/// One timed step of one run (a node or a copy), as the profiler reports it.
struct ProfileSample {
  std::string name;
  std::string op;
  std::string placement;
  double ms = 0;
  std::string variant;  ///< the kernel's variant (Attention's table), or empty
  int64_t bytes = 0;    ///< runtime::StepCost: device memory it moves (0: unknown)
  double flops = 0;     ///< ... and its products' operations (0: not a product)
  bool half = false;    ///< the products' operands are 16-bit floats (which compute peak applies)
};

/// The device's measured peaks (bench_peaks.h), the roofs of the roofline table.
struct DevicePeaks {
  double bytes_per_s = 0;        ///< device memory: read + write of a large elementwise op
  double half_flops_per_s = 0;   ///< a large float16 matrix product
  double float_flops_per_s = 0;  ///< a large float32 matrix product (under the run's TF32 policy)
};

/// One row of the profile table: a step's mean time over the profiled runs.
struct ProfileRow {
  std::string name;
  std::string op;
  std::string placement;
  double mean_ms = 0;
  double percent = 0;  ///< of the sum of every row's mean
  std::string variant;
  int64_t bytes = 0;
  double flops = 0;
  bool half = false;
  /// With peaks, for a device step of known bytes: the roof that bounds it ("memory" or
  /// "compute": whichever takes longer at the peaks) and the share of that bound it reaches
  /// (the bound's time over the step's mean time, in %); empty and 0 otherwise.
  std::string bound;
  double roof_percent = 0;
};

/// The rows of `runs` (each run's samples, the same steps in the same order), sorted by mean time,
/// the costliest first (ties: step order).
/// With `peaks`, each device row gets its roofline bound.
std::vector<ProfileRow> profileRows(const std::vector<std::vector<ProfileSample>>& runs,
                                    const DevicePeaks* peaks = nullptr);

/// The roofline bound of `row` under `peaks` (sets bound and roof_percent).
void applyRoofline(ProfileRow& row, const DevicePeaks& peaks);

/// The table: the `top` costliest rows (node, op, placement, mean ms, %; with `peaks` also the
/// achieved GB/s and TFLOP/s, the bound and the share of it reached), then the per-op totals (op,
/// count, total mean ms, %), sorted by cost.
std::string formatProfile(const std::vector<ProfileRow>& rows, size_t top = 30,
                          const DevicePeaks* peaks = nullptr);

}  // namespace onnxopt::tools
