// --precision's range analysis as every front end runs it (`opt --precision`, the Python
// package's optimize(precision=...)): the float32 model on the reference kernels before any pass,
// its findings turned into convert-precision's keep-values and safe-values.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnxopt/api/optimize.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/runtime/inputs.h"
#include "onnxopt/runtime/precision_analysis.h"

namespace onnxopt {
namespace {

/// One note per finding kind: how many, what it means, the first five.
template <typename Item>
void note(DiagnosticSink* sink, const std::vector<runtime::PrecisionFinding>& list,
          const std::string& what, Item&& item) {
  if (list.empty()) return;
  std::vector<std::string> shown;
  for (size_t i = 0; i < list.size() && i < 5; ++i) shown.push_back(item(list[i]));
  report(sink, {Severity::kNote, "",
                fmt::format("precision analysis: {} {}: {}{}", list.size(), what,
                            fmt::join(shown, ", "), list.size() > shown.size() ? ", ..." : "")});
}

void noteFindings(DiagnosticSink* sink, const runtime::PrecisionAnalysis& found,
                  const std::string& type) {
  note(sink, found.past_range,
       "values outside " + type +
           "'s range (past half of its largest, or wholly under its smallest normal) stay "
           "float32 with their producers and readers",
       [](const runtime::PrecisionFinding& f) {
         return fmt::format("{} ({}, |x| up to {:.3g})", f.value, f.op, f.magnitude);
       });
  note(sink, found.safe,
       "nodes kept float32 by default were measured safe in " + type + " (they convert)",
       [](const runtime::PrecisionFinding& f) {
         return fmt::format("{} ({}, error {:.2g})", f.value, f.op, f.error);
       });
  note(sink, found.imprecise,
       "nodes lose more than 16 units of " + type +
           "'s rounding and stay float32 with their inputs' producers and outputs' readers",
       [](const runtime::PrecisionFinding& f) {
         return fmt::format("{} ({}, {})", f.value, f.op, f.reason);
       });
  note(sink, found.unsafe, "nodes kept float32 by default stay so",
       [](const runtime::PrecisionFinding& f) {
         return fmt::format("{} ({}: {})", f.value, f.op, f.reason);
       });
}

}  // namespace

void runPrecisionAnalysis(const ir::Model& model, OptimizeOptions& options) {
  DiagnosticSink* sink = options.context.diagnostics;
  runtime::PrecisionAnalysisOptions analysis;
  analysis.target = options.precision == "fp16" ? DataType::kFloat16 : DataType::kBfloat16;
  analysis.measurable = [](const ir::Node& n) { return passes::precisionMeasurable(n); };
  const std::string type = dataTypeName(analysis.target);
  auto skipped = [&](const std::string& why) {
    report(sink, {Severity::kWarning, "",
                  fmt::format("{}: precision analysis skipped ({}); values past {}'s range are "
                              "not detected and the accumulation-sensitive ops stay float32",
                              options.label, why, type)});
  };
  // An input no seeded value stands for (a string, an optional) is no reason to refuse the
  // conversion: it goes on without the analysis, as where the reference run fails.
  auto made = runtime::makeInputs(*model.graph, options.calibration_inputs,
                                  runtime::randomInputOptions(*model.graph, 0));
  if (!made.isOk()) return skipped(made.status().message());
  runtime::Feeds feeds;
  for (runtime::InputValue& in : *made) feeds[in.name] = std::move(in.value);
  auto found = runtime::analyzePrecision(model, options.label, feeds, analysis);
  if (!found.isOk()) {
    // A model the reference kernels cannot run (an op they lack, inputs the seeded ones do not
    // fit) is still converted, without the analysis: the warning says so.
    return skipped("the float32 run failed: " + found.status().message());
  }
  for (const auto& f : found->past_range) options.keep_values.push_back(f.value);
  for (const auto& f : found->safe) options.safe_values.push_back(f.value);
  for (const auto& f : found->imprecise) {
    options.keep_values.insert(options.keep_values.end(), f.values.begin(), f.values.end());
  }
  noteFindings(sink, *found, type);
}

}  // namespace onnxopt
