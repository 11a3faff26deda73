// `--report FILE.json`: what one opt run did, for CI systems to track (docs/check.md documents the
// format).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "onnxopt/ir/stats.h"
#include "onnxopt/pass/pass_manager.h"

namespace onnxopt::tools {

struct ReportData {
  std::string command;  ///< "optimize" or "check"
  std::string input;
  std::string output;
  std::string pipeline;  ///< empty for `opt check`
  const ir::ModelStats* before = nullptr;
  const ir::ModelStats* after = nullptr;
  const std::vector<pass::PassRecord>* passes = nullptr;
  std::vector<std::pair<std::string, int64_t>> statistics;
  double seconds = 0;  ///< wall time of the pipeline
  const CheckResult* check = nullptr;
};

/// The report as a JSON document (one object, keys in a fixed order).
std::string reportJson(const ReportData& data);

/// `s` as a JSON string literal (quoted, escaped); `v` as a JSON number (null for inf and NaN).
std::string jsonString(const std::string& s);
std::string jsonNumber(double v);

}  // namespace onnxopt::tools
