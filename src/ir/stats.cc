#include "onnxopt/ir/stats.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace onnxopt::ir {
namespace {

void visit(const Graph& graph, ModelStats& stats) {
  for (const Value* v : graph.initializers()) {
    ++stats.initializers;
    if (const Tensor* t = v->initializer()) {
      stats.initializer_bytes += t->byteSize();
      if (t->externalSource()) stats.external_bytes += t->byteSize();
    } else if (const SparseTensor* s = v->sparseInitializer()) {
      stats.initializer_bytes += s->values.byteSize() + s->indices.byteSize();
    }
  }
  for (const Node* n : graph) {
    ++stats.nodes;
    ++stats.op_histogram[n->domain().empty() ? n->opType() : n->domain() + "." + n->opType()];
    for (const Graph* g : n->subgraphs()) {
      ++stats.subgraphs;
      visit(*g, stats);
    }
  }
}

std::string humanBytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / double(uint64_t{1} << 30));
  if (b >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / double(uint64_t{1} << 20));
  if (b >= 1024) return fmt::format("{:.2f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

}  // namespace

ModelStats computeStats(const Model& model) {
  ModelStats stats;
  visit(*model.graph, stats);
  stats.top_level_nodes = model.graph->numNodes();
  stats.functions = model.functions.size();
  for (const auto& f : model.functions) visit(*f->body, stats);
  return stats;
}

std::string formatStats(const Model& model, const ModelStats& stats) {
  std::string out;
  std::vector<std::string> opsets;
  for (const auto& op : model.opset_imports) {
    opsets.push_back(fmt::format("{}:{}", op.domain.empty() ? "ai.onnx" : op.domain, op.version));
  }
  out += fmt::format("ir_version        {}\n", model.ir_version);
  out += fmt::format("opsets            {}\n", fmt::join(opsets, ", "));
  if (!model.producer_name.empty()) {
    out += fmt::format("producer          {} {}\n", model.producer_name, model.producer_version);
  }
  out += fmt::format("nodes             {} ({} in the main graph, {} subgraphs)\n", stats.nodes,
                     stats.top_level_nodes, stats.subgraphs);
  out += fmt::format("initializers      {} ({}, {} external)\n", stats.initializers,
                     humanBytes(stats.initializer_bytes), humanBytes(stats.external_bytes));
  out += fmt::format("functions         {}\n", stats.functions);
  out += "op histogram:\n";
  std::vector<std::pair<std::string, uint64_t>> ops(stats.op_histogram.begin(),
                                                    stats.op_histogram.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [op, count] : ops) out += fmt::format("  {:<28} {:>7}\n", op, count);
  return out;
}

}  // namespace onnxopt::ir
