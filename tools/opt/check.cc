#include "check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "inputs.h"

namespace onnxopt::tools {

namespace {

/// Whether `policy` lets the cuda runner use TF32 on node `n`'s product: a float32 convolution
/// (or, with kAll, a float32 matrix product).
bool tf32Product(const ir::Node& n, kernels::Tf32 policy) {
  if (policy == kernels::Tf32::kNone || n.numInputs() == 0 || n.input(0) == nullptr ||
      n.input(0)->type().elem_type != DataType::kFloat) {
    return false;
  }
  const std::string& op = n.opType();
  if (op == "Conv" || op == "ConvTranspose" || op == "FusedConv") return true;
  return policy == kernels::Tf32::kAll &&
         (op == "MatMul" || op == "Gemm" || op == "FusedMatMul" || op == "Attention" ||
          op == "LSTM" || op == "GRU" || op == "RNN");
}

/// Whether tf32Product holds for a node of `graph`, subgraphs included.
bool tf32Touches(const ir::Graph& graph, kernels::Tf32 policy) {
  for (const ir::Node* n : graph) {
    if (tf32Product(*n, policy)) return true;
    for (const ir::Graph* sub : n->subgraphs()) {
      if (tf32Touches(*sub, policy)) return true;
    }
  }
  return false;
}

bool isCudaRunner(const std::string& runner) {
  return runner.rfind("cuda", 0) == 0;
}

}  // namespace

StatusOr<CheckResult> checkModels(const std::string& original_path, const ir::Model& original,
                                  const std::string& optimized_path, const ir::Model& optimized,
                                  const CheckOptions& options) {
  runtime::CheckOptions check;
  check.runner = options.runner;
  check.against = options.against;
  check.seed = options.seed;
  check.compare.atol = options.atol;
  check.compare.rtol = options.rtol;
  check.compare.per_layer = options.per_layer;
  check.limits = options.limits;
  if ((isCudaRunner(options.runner) || isCudaRunner(options.against)) &&
      runtime::narrowestFloatType(optimized) == DataType::kFloat &&
      tf32Touches(*optimized.graph, options.cuda_tf32)) {
    check.compare.compute_type = DataType::kFloat16;
  }
  check.original_path = original_path;
  check.optimized_path = optimized_path;
  if (options.runner == "reference" && runtime::hasRunner("onnxruntime")) {
    check.failure_note = "(the reference runner; try --runner onnxruntime)";
  }
  // What the files and flags hold is checked here, so that errors name them: an input file's
  // error names that file, an --input-shape error the model whose input it shapes.
  RETURN_IF_ERROR(runtime::checkSameInputs(original, optimized, check));
  RETURN_IF_ERROR(checkInputNames(*original.graph, options.inputs, "--input"));
  RETURN_IF_ERROR(
      checkInputNames(*original.graph, options.shapes, "--input-shape").withContext(original_path));
  ASSIGN_OR_RETURN(check.inputs, readInputSpecs(options.inputs));
  auto shapes = parseShapeSpecs(options.shapes);
  if (!shapes.isOk()) return shapes.status().withContext(original_path);
  check.shapes = std::move(shapes).value();
  for (const ir::Value* in : original.graph->inputs()) {
    if (auto it = check.inputs.find(in->name()); it != check.inputs.end()) {
      RETURN_IF_ERROR(checkGivenInput(*in, it->second, inputFileOf(options.inputs, in->name())));
    }
    if (auto it = check.shapes.find(in->name()); it != check.shapes.end()) {
      RETURN_IF_ERROR(checkPinnedShape(*in, it->second).withContext(original_path));
    }
  }
  return runtime::checkModels(original, optimized, check);
}

std::string formatCheck(const CheckResult& r) {
  std::string out = fmt::format("check: runner {}, seed {}\n", r.runner, r.seed);
  for (const runtime::InputValue& in : r.inputs) {
    out += fmt::format("input  {}\n", summarize(in.name, in.value));
  }
  for (const runtime::InputValue& in : r.inputs) {
    if (!in.dynamic_dims.empty()) {
      out += fmt::format("dims   {}: {} (dynamic; pin with --input-shape)\n", in.name,
                         fmt::join(in.dynamic_dims, ", "));
    }
  }
  auto row = [](const runtime::TensorComparison& c) {
    std::string verdict = c.passed ? "pass" : "FAIL";
    if (!c.problem.empty()) {
      return fmt::format("  {:<40} {}: {}\n", c.name, verdict, c.problem);
    }
    return fmt::format(
        "  {:<40} {:<8} {:>10.3g} {:>10.3g} {:>10.3g} {:>10.6f} {:>9.0e}/{:<7.0e} {}\n", c.name,
        dataTypeName(c.dtype), c.max_abs, c.max_rel, c.mean_abs, c.cosine, c.tolerance.atol,
        c.tolerance.rtol, verdict);
  };
  std::string header =
      fmt::format("  {:<40} {:<8} {:>10} {:>10} {:>10} {:>10} {:>17} {}\n", "value", "type",
                  "max abs", "max rel", "mean abs", "cosine", "atol/rtol", "result");
  out += "outputs:\n" + header;
  for (const auto& c : r.outputs) out += row(c);
  if (!r.layers.empty()) {
    out += fmt::format("per layer ({} values in both models, in the optimized model's order):\n",
                       r.layers.size());
    out += header;
    for (const auto& c : r.layers) out += row(c);
    if (!r.first_failing_layer.empty()) {
      out +=
          fmt::format("first value past tolerance: '{}'{}\n", r.first_failing_layer,
                      r.first_failing_op.empty() ? "" : fmt::format(" ({})", r.first_failing_op));
    } else {
      out += "every shared value is within tolerance\n";
    }
  }
  if (!r.unpaired.empty()) {
    out += fmt::format("not compared ({} named alike in both models, but not the same value):\n",
                       r.unpaired.size());
    for (const auto& c : r.unpaired) out += fmt::format("  {:<40} {}\n", c.name, c.problem);
  }
  std::vector<std::string> failed;
  for (const auto& c : r.outputs) {
    if (!c.passed) failed.push_back("'" + c.name + "'");
  }
  out += failed.empty() ? fmt::format("check: passed ({} outputs)\n", r.outputs.size())
                        : fmt::format("check: FAILED: output{} {} past tolerance\n",
                                      failed.size() > 1 ? "s" : "", fmt::join(failed, ", "));
  return out;
}

}  // namespace onnxopt::tools
