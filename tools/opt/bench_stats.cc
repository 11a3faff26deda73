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

std::vector<ProfileRow> profileRows(const std::vector<std::vector<ProfileSample>>& runs) {
  std::vector<ProfileRow> rows;
  if (runs.empty()) return rows;
  for (const ProfileSample& s : runs.front())
    rows.push_back({s.name, s.op, s.placement, 0, 0, s.variant});
  for (const auto& run : runs) {
    for (size_t i = 0; i < run.size() && i < rows.size(); ++i) rows[i].mean_ms += run[i].ms;
  }
  double total = 0;
  for (ProfileRow& r : rows) {
    r.mean_ms /= static_cast<double>(runs.size());
    total += r.mean_ms;
  }
  for (ProfileRow& r : rows) r.percent = total > 0 ? 100.0 * r.mean_ms / total : 0;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.mean_ms > b.mean_ms; });
  return rows;
}

std::string formatProfile(const std::vector<ProfileRow>& rows, size_t top) {
  double total = 0;
  for (const ProfileRow& r : rows) total += r.mean_ms;
  std::string out = fmt::format(
      "profile: {} steps, {:.3f} ms per run (event pairs around each step, "
      "eager)\n",
      rows.size(), total);
  out += fmt::format("  {:>10}  {:>6}  {:<12}  {:<20}  {}\n", "mean ms", "%", "placement", "op",
                     "node");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const ProfileRow& r = rows[i];
    // The op with its kernel's variant where it has several: "Attention [flash-mma]".
    std::string op = r.variant.empty() ? r.op : fmt::format("{} [{}]", r.op, r.variant);
    out += fmt::format("  {:>10.4f}  {:>6.2f}  {:<12}  {:<20}  {}\n", r.mean_ms, r.percent,
                       r.placement, op, r.name);
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
