// `opt run --batch FILE`: the cases of FILE (one per line) through runCommand in one process, so
// that a GPU test suite pays for the process start, the CUDA context and the loading of cuBLASLt
// and cuDNN once rather than per case (tools/gpu/conformance_cuda.py uses it).
#include "run_batch.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

namespace onnxopt::tools {

StatusOr<RunCommandOptions> parseBatchLine(const std::string& line,
                                           const RunCommandOptions& defaults) {
  std::vector<std::string> fields;
  for (size_t start = 0;;) {
    size_t tab = line.find('\t', start);
    fields.push_back(
        line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  RunCommandOptions opts = defaults;
  opts.batch.clear();
  opts.model = fields[0];
  if (opts.model.empty()) return invalidArgument("batch line '{}': no model", line);
  for (size_t i = 1; i < fields.size(); i += 2) {
    const std::string& flag = fields[i];
    if (i + 1 >= fields.size()) {
      return invalidArgument("batch line '{}': {} has no value", line, flag);
    }
    const std::string& value = fields[i + 1];
    if (flag == "--input") {
      opts.inputs.push_back(value);
    } else if (flag == "--input-shape") {
      opts.shapes.push_back(value);
    } else if (flag == "--save-outputs") {
      opts.save_outputs = value;
    } else if (flag == "--seed") {
      char* end = nullptr;
      opts.seed = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0') {
        return invalidArgument("batch line '{}': bad --seed '{}'", line, value);
      }
    } else {
      return invalidArgument(
          "batch line '{}': {} is not a case option (--input, --input-shape, --seed, "
          "--save-outputs)",
          line, flag);
    }
  }
  return opts;
}

int runBatchCommand(const RunCommandOptions& opts) {
  std::ifstream file(opts.batch);
  if (!file)
    return fail(makeError(StatusCode::kIoError, "{}: cannot read the batch file", opts.batch));
  std::string line;
  for (int n = 0; std::getline(file, line);) {
    if (line.empty()) continue;
    fmt::print("== case {}\n", n);
    fmt::print(stderr, "== case {}\n", n);
    std::fflush(stdout);
    auto one = parseBatchLine(line, opts);
    int rc = one.isOk() ? guarded(one->model, [&] { return runCommand(*one); })
                        : usage(one.status().withContext(opts.batch));
    std::fflush(stdout);
    std::fflush(stderr);
    fmt::print("== case {}: exit {}\n", n, rc);
    fmt::print(stderr, "== case {}: exit {}\n", n, rc);
    std::fflush(stdout);
    std::fflush(stderr);
    ++n;
  }
  return 0;
}

}  // namespace onnxopt::tools
