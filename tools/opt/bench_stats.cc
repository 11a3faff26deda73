// opt bench's statistics (bench_stats.h).
#include "bench_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>

namespace onnxopt::tools {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

LatencyStats latencyStats(std::vector<double> ms) {
  LatencyStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.runs = static_cast<int64_t>(ms.size());
  s.p50 = percentile(ms, 50);
  s.p90 = percentile(ms, 90);
  s.p99 = percentile(ms, 99);
  s.min = ms.front();
  s.max = ms.back();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  s.throughput = s.mean > 0 ? 1000.0 / s.mean : 0;
  return s;
}

void applyRoofline(ProfileRow& row, const DevicePeaks& peaks) {
  double compute = row.half ? peaks.half_flops_per_s : peaks.float_flops_per_s;
  if (row.placement != "device" || row.bytes <= 0 || row.mean_ms <= 0 || peaks.bytes_per_s <= 0) {
    return;
  }
  double memory_s = static_cast<double>(row.bytes) / peaks.bytes_per_s;
  double compute_s = row.flops > 0 && compute > 0 ? row.flops / compute : 0;
  row.bound = compute_s > memory_s ? "compute" : "memory";
  row.roof_percent = 100.0 * std::max(memory_s, compute_s) / (row.mean_ms / 1e3);
}

std::vector<ProfileRow> profileRows(const std::vector<std::vector<ProfileSample>>& runs,
                                    const DevicePeaks* peaks) {
  std::vector<ProfileRow> rows;
  if (runs.empty()) return rows;
  for (const ProfileSample& s : runs.front()) {
    ProfileRow row;
    row.name = s.name;
    row.op = s.op;
    row.placement = s.placement;
    row.variant = s.variant;
    row.bytes = s.bytes;
    row.flops = s.flops;
    row.half = s.half;
    rows.push_back(std::move(row));
  }
  for (const auto& run : runs) {
    for (size_t i = 0; i < run.size() && i < rows.size(); ++i) rows[i].mean_ms += run[i].ms;
  }
  double total = 0;
  for (ProfileRow& r : rows) {
    r.mean_ms /= static_cast<double>(runs.size());
    total += r.mean_ms;
  }
  for (ProfileRow& r : rows) {
    r.percent = total > 0 ? 100.0 * r.mean_ms / total : 0;
    if (peaks != nullptr) applyRoofline(r, *peaks);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.mean_ms > b.mean_ms; });
  return rows;
}

namespace {

std::string formatPeaks(const DevicePeaks& peaks) {
  return fmt::format(
      "roofs (measured): memory {:.0f} GB/s, float16 products {:.1f} TFLOP/s, float32 products "
      "{:.1f} TFLOP/s\n",
      peaks.bytes_per_s / 1e9, peaks.half_flops_per_s / 1e12, peaks.float_flops_per_s / 1e12);
}

/// "GB/s  TFLOP/s  bound  % of it" cells of a row ("-" where not measured).
std::string rooflineCells(const ProfileRow& r) {
  if (r.bound.empty()) return fmt::format("  {:>8}  {:>8}  {:<8}  {:>6}", "-", "-", "-", "-");
  double s = r.mean_ms / 1e3;
  std::string tflops = r.flops > 0 ? fmt::format("{:.2f}", r.flops / s / 1e12) : "-";
  return fmt::format("  {:>8.1f}  {:>8}  {:<8}  {:>6.1f}", static_cast<double>(r.bytes) / s / 1e9,
                     tflops, r.bound, r.roof_percent);
}

}  // namespace

std::string formatProfile(const std::vector<ProfileRow>& rows, size_t top,
                          const DevicePeaks* peaks) {
  double total = 0;
  for (const ProfileRow& r : rows) total += r.mean_ms;
  std::string out = fmt::format(
      "profile: {} steps, {:.3f} ms per run (event pairs around each step, "
      "eager)\n",
      rows.size(), total);
  if (peaks != nullptr) out += formatPeaks(*peaks);
  std::string roof_head = peaks == nullptr ? ""
                                           : fmt::format("  {:>8}  {:>8}  {:<8}  {:>6}", "GB/s",
                                                         "TFLOP/s", "bound", "% roof");
  out += fmt::format("  {:>10}  {:>6}{}  {:<12}  {:<20}  {}\n", "mean ms", "%", roof_head,
                     "placement", "op", "node");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const ProfileRow& r = rows[i];
    // The op with its kernel's variant where it has several: "Attention [flash-mma]".
    std::string op = r.variant.empty() ? r.op : fmt::format("{} [{}]", r.op, r.variant);
    out += fmt::format("  {:>10.4f}  {:>6.2f}{}  {:<12}  {:<20}  {}\n", r.mean_ms, r.percent,
                       peaks == nullptr ? "" : rooflineCells(r), r.placement, op, r.name);
  }
  if (rows.size() > top) out += fmt::format("  ... {} more steps\n", rows.size() - top);
  struct OpTotal {
    int64_t count = 0;
    double ms = 0;
  };
  std::map<std::string, OpTotal> by_op;
  for (const ProfileRow& r : rows) {
    OpTotal& t = by_op[r.op];
    ++t.count;
    t.ms += r.mean_ms;
  }
  std::vector<std::pair<std::string, OpTotal>> ops(by_op.begin(), by_op.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  out += "per op:\n";
  out += fmt::format("  {:>10}  {:>6}  {:>5}  {}\n", "mean ms", "%", "count", "op");
  for (const auto& [op, t] : ops) {
    out += fmt::format("  {:>10.4f}  {:>6.2f}  {:>5}  {}\n", t.ms,
                       total > 0 ? 100.0 * t.ms / total : 0, t.count, op);
  }
  return out;
}

}  // namespace onnxopt::tools
