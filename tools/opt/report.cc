#include "report.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "inputs.h"

namespace onnxopt::tools {
namespace {

std::string str(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

/// JSON has no infinity or NaN: those become null.
std::string num(double v) {
  return std::isfinite(v) ? fmt::format("{}", v) : "null";
}

std::string stats(const ir::ModelStats& s) {
  return fmt::format(
      "{{\"nodes\": {}, \"top_level_nodes\": {}, \"initializers\": {}, \"initializer_bytes\": {}}}",
      s.nodes, s.top_level_nodes, s.initializers, s.initializer_bytes);
}

std::string comparison(const runtime::TensorComparison& c) {
  return fmt::format(
      "{{\"name\": {}, \"dtype\": {}, \"shape\": [{}], \"max_abs_error\": {}, "
      "\"max_rel_error\": {}, \"mean_abs_error\": {}, \"cosine_similarity\": {}, \"atol\": {}, "
      "\"rtol\": {}, \"mismatches\": {}, \"passed\": {}{}}}",
      str(c.name), str(dataTypeName(c.dtype)), fmt::join(c.dims, ", "), num(c.max_abs),
      num(c.max_rel), num(c.mean_abs), num(c.cosine), num(c.tolerance.atol), num(c.tolerance.rtol),
      c.mismatches, c.passed ? "true" : "false",
      c.problem.empty() ? "" : ", \"problem\": " + str(c.problem));
}

std::string list(const std::vector<std::string>& items, const char* indent) {
  if (items.empty()) return "[]";
  std::string out = "[\n";
  for (size_t i = 0; i < items.size(); ++i) {
    out += indent + items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  }
  return out + std::string(indent).substr(2) + "]";
}

}  // namespace

std::string reportJson(const ReportData& d) {
  std::vector<std::string> fields;
  fields.push_back("\"onnxopt_version\": " + str(ONNXOPT_VERSION));
  fields.push_back("\"command\": " + str(d.command));
  fields.push_back("\"input\": " + str(d.input));
  fields.push_back("\"output\": " + str(d.output));
  if (!d.pipeline.empty()) fields.push_back("\"pipeline\": " + str(d.pipeline));
  if (d.before != nullptr) fields.push_back("\"before\": " + stats(*d.before));
  if (d.after != nullptr) fields.push_back("\"after\": " + stats(*d.after));
  if (d.passes != nullptr) {
    std::vector<std::string> passes;
    for (const pass::PassRecord& r : *d.passes) {
      passes.push_back(
          fmt::format("{{\"id\": {}, \"runs\": {}, \"changed_runs\": {}, \"skipped_runs\": {}, "
                      "\"seconds\": {}, \"nodes_before\": {}, \"nodes_after\": {}}}",
                      str(r.id), r.runs, r.changed_runs, r.skipped_runs, num(r.seconds),
                      r.nodes_before, r.nodes_after));
    }
    fields.push_back("\"passes\": " + list(passes, "    "));
    fields.push_back("\"seconds\": " + num(d.seconds));
  }
  if (!d.statistics.empty()) {
    std::vector<std::string> items;
    for (const auto& [k, v] : d.statistics) items.push_back(fmt::format("{}: {}", str(k), v));
    fields.push_back("\"statistics\": {" + fmt::format("{}", fmt::join(items, ", ")) + "}");
  }
  if (d.check != nullptr) {
    const CheckResult& c = *d.check;
    std::vector<std::string> inputs, outputs, layers, unpaired;
    for (const runtime::InputValue& in : c.inputs) {
      std::string dims = fmt::format("{}", fmt::join(in.dynamic_dims, ", "));
      inputs.push_back(fmt::format(
          "{{\"name\": {}, \"summary\": {}{}}}", str(in.name), str(summarize(in.name, in.value)),
          dims.empty() ? std::string() : ", \"dynamic_dims\": " + str(dims)));
    }
    for (const auto& o : c.outputs) outputs.push_back(comparison(o));
    for (const auto& l : c.layers) layers.push_back(comparison(l));
    for (const auto& l : c.unpaired) unpaired.push_back(comparison(l));
    std::string check = fmt::format(
        "{{\n    \"runner\": {},\n    \"seed\": {},\n    \"passed\": {},\n    \"inputs\": {},\n"
        "    \"outputs\": {}",
        str(c.runner), c.seed, c.passed ? "true" : "false", list(inputs, "      "),
        list(outputs, "      "));
    if (!c.layers.empty()) {
      check += ",\n    \"per_layer\": " + list(layers, "      ");
      check += ",\n    \"first_failing_value\": " +
               (c.first_failing_layer.empty() ? std::string("null") : str(c.first_failing_layer));
    }
    if (!c.unpaired.empty()) check += ",\n    \"per_layer_unpaired\": " + list(unpaired, "      ");
    fields.push_back("\"check\": " + check + "\n  }");
  }
  std::string out = "{\n";
  for (size_t i = 0; i < fields.size(); ++i) {
    out += "  " + fields[i] + (i + 1 < fields.size() ? ",\n" : "\n");
  }
  return out + "}\n";
}

std::string jsonString(const std::string& s) {
  return str(s);
}
std::string jsonNumber(double v) {
  return num(v);
}

}  // namespace onnxopt::tools
