#include "onnxopt/runtime/weight_data.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "describe_node.h"

namespace onnxopt::runtime {
namespace {

Status checkSparseData(const ir::SparseTensor& sparse, const std::string& what) {
  RETURN_IF_ERROR(checkTensorData(sparse.values, what + "'s values"));
  return checkTensorData(sparse.indices, what + "'s indices");
}

Status checkAttributeData(const ir::Node& n) {
  for (const ir::Attribute& a : n.attributes()) {
    std::string what = fmt::format("{}: attribute '{}'", describeNode(n), a.name);
    for (const ir::Tensor& t : a.tensors) RETURN_IF_ERROR(checkTensorData(t, what));
    for (const ir::SparseTensor& t : a.sparse_tensors) RETURN_IF_ERROR(checkSparseData(t, what));
  }
  return Status::ok();
}

/// `graph` and its subgraphs; `fed` applies to the inputs of the outermost one only.
Status checkGraphData(const ir::Graph& graph, const std::function<bool(const ir::Value&)>* fed) {
  for (const ir::Value* v : graph.initializers()) {
    if (!v->hasUses()) continue;  // no run reads it (a graph output is a use)
    if (fed != nullptr && v->isGraphInput() && (*fed)(*v)) continue;
    std::string what = fmt::format("initializer '{}'", v->name());
    if (const ir::Tensor* t = v->initializer()) RETURN_IF_ERROR(checkTensorData(*t, what));
    if (const ir::SparseTensor* t = v->sparseInitializer()) {
      RETURN_IF_ERROR(checkSparseData(*t, "sparse " + what));
    }
  }
  for (const ir::Node* n : graph) {
    RETURN_IF_ERROR(checkAttributeData(*n));
    for (const ir::Graph* sub : n->subgraphs()) RETURN_IF_ERROR(checkGraphData(*sub, nullptr));
  }
  return Status::ok();
}

}  // namespace

Status checkTensorData(const ir::Tensor& tensor, const std::string& what) {
  std::optional<int64_t> count = tensor.numElements();
  if (!count) return Status::ok();  // (the importer refuses such dims)
  std::string type =
      fmt::format("{}[{}]", dataTypeName(tensor.dtype()), fmt::join(tensor.dims(), ","));
  if (tensor.dtype() == DataType::kString) {
    size_t have = tensor.strings().size();
    if (have == static_cast<size_t>(*count)) return Status::ok();
    return invalidArgument("{} ({}) has no data: {} of its {} strings", what, type, have, *count);
  }
  std::optional<uint64_t> want = tensor.expectedByteSize();
  if (!want || *want == tensor.byteSize()) return Status::ok();
  if (tensor.byteSize() == 0) {
    return invalidArgument("{} ({}) has no data (a model whose weights were stripped cannot run)",
                           what, type);
  }
  return invalidArgument("{} ({}) has no data: {} of its {} bytes", what, type, tensor.byteSize(),
                         *want);
}

Status checkRunData(const ir::Graph& graph, const std::function<bool(const ir::Value&)>& fed) {
  return checkGraphData(graph, &fed);
}

}  // namespace onnxopt::runtime
