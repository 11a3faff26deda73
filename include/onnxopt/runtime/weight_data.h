// Whether the tensors a run reads hold their data. A model may come without it: its weights stripped
// (raw_data emptied, as TensorRT's "weightless" export does, or no data field at all), which the
// importer keeps as it came so that optimizing such a model works. Running one cannot: the runners
// refuse it before anything runs, naming the tensor, rather than compute on missing bytes.
#pragma once

#include <functional>
#include <string>

#include "onnxopt/ir/graph.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime {

/// OK when `tensor` holds the data its element type and dims say (every byte, or every string);
/// kInvalidArgument otherwise, naming it as `what` ("initializer 'w'") and saying what it lacks.
Status checkTensorData(const ir::Tensor& tensor, const std::string& what);

/// Every tensor a run of `graph` reads, checked with checkTensorData: the initializers of the graph
/// and of its subgraphs that something reads or that are graph outputs, but a main-graph input's
/// default for which `fed` is true (the caller gives that input); both tensors of each sparse
/// initializer; tensor attributes (a Constant's value). Errors name the initializer, or the node
/// and attribute.
Status checkRunData(const ir::Graph& graph, const std::function<bool(const ir::Value&)>& fed);

}  // namespace onnxopt::runtime
