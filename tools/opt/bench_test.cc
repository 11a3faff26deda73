// opt bench on the host: its statistics (percentiles, the profile table) and its command line
// (defaults, flags, ranges, the usage errors it reports before loading anything).
#include <map>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench_stats.h"
#include "commands.h"

namespace onnxopt::tools {
namespace {

TEST(BenchPercentile, InterpolatesBetweenClosestRanks) {
  std::vector<double> v{1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 5);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 4.6);  // rank 3.6
  EXPECT_DOUBLE_EQ(percentile(v, 25), 2);    // rank 1
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);  // one sample is every percentile
  EXPECT_DOUBLE_EQ(percentile({1, 3}, 50), 2);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
}

TEST(BenchLatencyStats, SortsAndSummarizes) {
  // 100 runs of 1..100 ms, shuffled order: numpy gives p50 50.5, p90 90.1, p99 99.01.
  std::vector<double> ms;
  for (int i = 100; i >= 1; --i) ms.push_back(i);
  LatencyStats s = latencyStats(ms);
  EXPECT_EQ(s.runs, 100);
  EXPECT_DOUBLE_EQ(s.p50, 50.5);
  EXPECT_NEAR(s.p90, 90.1, 1e-9);
  EXPECT_NEAR(s.p99, 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_NEAR(s.throughput, 1000.0 / 50.5, 1e-9);
  LatencyStats none = latencyStats({});
  EXPECT_EQ(none.runs, 0);
  EXPECT_EQ(none.throughput, 0);
}

TEST(BenchProfile, RowsAreMeansSortedByCostWithPerOpTotals) {
  std::vector<std::vector<ProfileSample>> runs = {
      {{"a", "MatMul", "device", 2, ""},
       {"b", "Relu", "device", 1, ""},
       {"c", "MatMul", "device", 5, ""}},
      {{"a", "MatMul", "device", 4, ""},
       {"b", "Relu", "device", 1, ""},
       {"c", "MatMul", "device", 3, ""}},
  };
  std::vector<ProfileRow> rows = profileRows(runs);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "c");  // mean 4
  EXPECT_EQ(rows[1].name, "a");  // mean 3
  EXPECT_EQ(rows[2].name, "b");  // mean 1
  EXPECT_DOUBLE_EQ(rows[0].mean_ms, 4);
  EXPECT_DOUBLE_EQ(rows[0].percent, 50);
  EXPECT_DOUBLE_EQ(rows[2].percent, 12.5);
  std::string table = formatProfile(rows, 2);
  EXPECT_NE(table.find("profile: 3 steps, 8.000 ms per run"), std::string::npos) << table;
  EXPECT_NE(table.find("... 1 more steps"), std::string::npos) << table;
  EXPECT_EQ(table.find("  b\n"), std::string::npos) << table;  // not in the top 2
  // Per op: MatMul 7 ms (2 steps, 87.5%) before Relu 1 ms.
  size_t per_op = table.find("per op:");
  ASSERT_NE(per_op, std::string::npos) << table;
  size_t matmul = table.find("MatMul", per_op);
  size_t relu = table.find("Relu", per_op);
  ASSERT_NE(matmul, std::string::npos);
  ASSERT_NE(relu, std::string::npos);
  EXPECT_LT(matmul, relu);
  EXPECT_NE(table.find("7.0000   87.50      2  MatMul"), std::string::npos) << table;
}

// Roofs of 1 TB/s, 100 TFLOP/s (float16) and 10 TFLOP/s (float32): a step is bound by whichever
// takes longer at the peaks, and reaches that bound's time over its own.
TEST(BenchProfile, RooflineNamesTheBoundAndTheShareReached) {
  DevicePeaks peaks{1e12, 100e12, 10e12};
  auto sample = [](const char* name, const char* placement, int64_t bytes, double flops,
                   bool half) {
    ProfileSample s;
    s.name = name;
    s.op = "Op";
    s.placement = placement;
    s.ms = 1.0;  // each
    s.bytes = bytes;
    s.flops = flops;
    s.half = half;
    return s;
  };
  std::vector<std::vector<ProfileSample>> runs = {{
      sample("copyish", "device", 500'000'000, 0, false),       // 0.5 ms of memory: 50 %
      sample("gemm16", "device", 1'000'000, 80e9, true),        // 0.8 ms of compute: 80 %
      sample("gemm32", "device", 1'000'000, 8e9, false),        // the same flops at float32: 80 %
      sample("fallback", "cpu-fallback", 1'000'000, 0, false),  // not on the device: no roof
      sample("dynamic", "device", 0, 0, false),                 // bytes unknown: no roof
  }};
  std::vector<ProfileRow> rows = profileRows(runs, &peaks);
  std::map<std::string, const ProfileRow*> by;
  for (const ProfileRow& r : rows) by[r.name] = &r;
  EXPECT_EQ(by["copyish"]->bound, "memory");
  EXPECT_NEAR(by["copyish"]->roof_percent, 50, 1e-9);
  EXPECT_EQ(by["gemm16"]->bound, "compute");
  EXPECT_NEAR(by["gemm16"]->roof_percent, 80, 1e-9);
  EXPECT_EQ(by["gemm32"]->bound, "compute");
  EXPECT_NEAR(by["gemm32"]->roof_percent, 80, 1e-9);
  EXPECT_EQ(by["fallback"]->bound, "");
  EXPECT_EQ(by["dynamic"]->bound, "");
  std::string table = formatProfile(rows, 30, &peaks);
  EXPECT_NE(table.find("roofs (measured): memory 1000 GB/s, float16 products 100.0 TFLOP/s"),
            std::string::npos)
      << table;
  // gemm16: 1 MB in 1 ms is 1.0 GB/s; 80 GFLOP in 1 ms is 80 TFLOP/s.
  EXPECT_NE(table.find("1.0     80.00  compute     80.0"), std::string::npos) << table;
  EXPECT_NE(table.find("500.0         -  memory      50.0"), std::string::npos) << table;
  // Without peaks the table has no roofline columns.
  EXPECT_EQ(formatProfile(rows).find("TFLOP/s"), std::string::npos);
}

TEST(BenchProfile, RowsNameTheKernelVariant) {
  std::vector<std::vector<ProfileSample>> runs = {
      {{"attn", "Attention", "device", 3, "flash-mma"}, {"r", "Relu", "device", 1, ""}},
  };
  std::vector<ProfileRow> rows = profileRows(runs);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].variant, "flash-mma");
  std::string table = formatProfile(rows);
  EXPECT_NE(table.find("Attention [flash-mma]"), std::string::npos) << table;
  EXPECT_EQ(table.find("Relu ["), std::string::npos) << table;
  // The per-op totals stay per op.
  EXPECT_NE(table.find("1  Attention\n"), std::string::npos) << table;
}

/// Parses `args` (after "opt") as the bench subcommand; returns whether it parsed.
bool parseBench(std::vector<std::string> args, BenchCommandOptions& opts) {
  CLI::App app{"opt"};
  CLI::App* bench = addBenchCommand(app, opts);
  std::vector<std::string> argv{"opt"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> ptrs;
  for (std::string& a : argv) ptrs.push_back(a.data());
  try {
    app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  } catch (const CLI::ParseError&) {
    return false;
  }
  return bench->parsed();
}

TEST(BenchCommandLine, DefaultsAndFlags) {
  BenchCommandOptions opts;
  ASSERT_TRUE(parseBench({"bench", "m.onnx"}, opts));
  EXPECT_EQ(opts.model, "m.onnx");
  EXPECT_EQ(opts.device, "cuda");
  EXPECT_EQ(opts.warmup, 10);
  EXPECT_EQ(opts.iters, 100);
  EXPECT_FALSE(opts.no_cuda_graph);
  EXPECT_FALSE(opts.profile);

  BenchCommandOptions all;
  ASSERT_TRUE(parseBench({"bench", "m.onnx", "--device", "reference", "--input-shape", "x=2,3",
                          "--input-shape", "y=4", "--warmup", "0", "--iters", "7",
                          "--no-cuda-graph", "--profile", "--json", "b.json", "--seed", "5"},
                         all));
  EXPECT_EQ(all.device, "reference");
  EXPECT_EQ(all.shapes, (std::vector<std::string>{"x=2,3", "y=4"}));
  EXPECT_EQ(all.warmup, 0);
  EXPECT_EQ(all.iters, 7);
  EXPECT_TRUE(all.no_cuda_graph);
  EXPECT_TRUE(all.profile);
  EXPECT_EQ(all.json, "b.json");
  EXPECT_EQ(all.seed, 5u);
}

TEST(BenchCommandLine, BadArgumentsAreRefused) {
  BenchCommandOptions opts;
  EXPECT_FALSE(parseBench({"bench"}, opts));                              // no model
  EXPECT_FALSE(parseBench({"bench", "m.onnx", "--iters", "0"}, opts));    // at least one run
  EXPECT_FALSE(parseBench({"bench", "m.onnx", "--warmup", "-1"}, opts));  // not negative
  EXPECT_FALSE(parseBench({"bench", "m.onnx", "--device", "tpu"}, opts));
}

// Checked before the model is read: usage errors (exit 2) whatever the path.
TEST(BenchCommandLine, CudaOnlyFlagsNeedTheCudaDevice) {
  BenchCommandOptions opts;
  opts.model = "/nonexistent.onnx";
  opts.device = "reference";
  opts.profile = true;
  EXPECT_EQ(benchCommand(opts), kExitUsage);
  opts.profile = false;
  opts.no_cuda_graph = true;
  EXPECT_EQ(benchCommand(opts), kExitUsage);
  opts.no_cuda_graph = false;
  EXPECT_EQ(benchCommand(opts), kExitError);  // the missing file
}

}  // namespace
}  // namespace onnxopt::tools
