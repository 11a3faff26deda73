// The importer's parts shared by its files (src/io/import_*.cc, function_file.cc, importer.cc):
// the name scope of a graph, the Importer that turns protos into IR, and the model-level checks.
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <queue>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "io/proto_util.h"
#include "io/raw_data_split.h"
#include "onnxopt/io/model_io.h"

#include "onnxopt/ir/builder.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/verifier.h"
#include "onnxopt/support/name_map.h"
#include "support/big_blocks.h"

namespace onnxopt::io::detail {

using ir::DataType;

/// Names visible in one graph, chained to the enclosing graph's scope.
struct Scope {
  /// Graph inputs and initializers. Keys view the values' own names (a Value never moves and
  /// keeps its imported name for as long as the scope lives), so a name costs no copy.
  NameMap<ir::Value*> names;
  /// Node outputs: the proto node index and output position of each name (keys view the proto).
  /// A name resolves to its value through `imported`, so node outputs need no second table.
  struct OutputSlot {
    int node = 0;
    int output = 0;
  };
  NameMap<OutputSlot> producers;
  std::vector<ir::Node*> imported;  ///< by proto node index; nullptr until imported
  const Scope* parent = nullptr;
  int depth = 0;  ///< 0 for a main graph or function body, +1 per enclosing subgraph attribute

  void define(ir::Value* v) { names.set(v->name(), v); }
  /// The value `name` names in this graph alone, or nullptr.
  ir::Value* local(std::string_view name) const {
    if (ir::Value* const* v = names.find(name)) return *v;
    const OutputSlot* slot = producers.find(name);
    if (slot == nullptr || imported[slot->node] == nullptr) return nullptr;
    return imported[slot->node]->output(static_cast<size_t>(slot->output));
  }
  ir::Value* lookup(std::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      if (ir::Value* v = s->local(name)) return v;
    }
    return nullptr;
  }
};

/// The IR type of a TypeProto (tensor, sequence, optional, map; shape labels kept).
StatusOr<ir::Type> importType(const onnx::TypeProto& proto);

Status importOpsets(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& protos,
                    std::vector<ir::OpsetImport>& out, const std::string& where,
                    DiagnosticSink* diagnostics);

/// onnx.checker's model-level checks the IR alone cannot show (opsets, schemas, recursion).
Status checkModel(const ir::Model& model);

/// The checks on an imported model, which need the IR only (see importer.cc).
StatusOr<std::unique_ptr<ir::Model>> checkImported(StatusOr<std::unique_ptr<ir::Model>> model);

/// The folder holding `path` ("." for a bare file name), where external data is looked up.
std::string folderOf(const std::string& path);

/// Adds where an error happened, unless the message is long already: errors deep in nested
/// subgraphs keep their innermost context instead of growing a line per level.
inline Status boundedContext(const Status& st, const std::string& context) {
  return st.message().size() > 240 ? st : st.withContext(context);
}

class Importer {
 public:
  explicit Importer(std::string base_dir, LoadLimits limits = {})
      : base_dir_(std::move(base_dir)), limits_(limits) {}

  StatusOr<std::unique_ptr<ir::Model>> importModel(onnx::ModelProto& proto);
  /// The main graph's initializers take their raw_data from `split`'s cut spans, viewed in
  /// `owner` (whose bytes from `offset` on are the ones split).
  void viewRawData(const RawDataSplit& split, std::shared_ptr<const ir::Buffer> owner,
                   size_t offset) {
    split_ = &split;
    owner_ = std::move(owner);
    owner_offset_ = offset;
  }
  /// The main graph's initializers take their raw_data from `weights` where not null (one per
  /// initializer, in order), viewed there.
  void viewGivenWeights(std::vector<std::shared_ptr<const ir::Buffer>> weights) {
    given_ = std::move(weights);
  }
  StatusOr<ir::Tensor> importStandaloneTensor(onnx::TensorProto& proto) {
    return importTensor(proto);
  }
  /// An attribute outside any graph (a schema's default, a stashed extra attribute): no
  /// subgraphs.
  Status importPlainAttribute(onnx::AttributeProto proto, ir::Attribute& out) {
    Scope none;
    return importAttribute(proto, none, out);
  }

 private:
  Status importGraph(onnx::GraphProto& proto, ir::Graph& graph, const Scope* parent);
  Status checkGraphLimits(const onnx::GraphProto& proto, int depth);
  Status importGraphInputs(onnx::GraphProto& proto, ir::Graph& graph, Scope& scope);
  Status importNode(onnx::NodeProto& proto, ir::Graph& graph, Scope& scope);
  Status importAttribute(onnx::AttributeProto& proto, const Scope& scope, ir::Attribute& out);
  Status importSubgraphs(onnx::AttributeProto& proto, const Scope& scope, ir::Attribute& out);
  Status importFunction(onnx::FunctionProto& proto, ir::Function& fn);
  /// A tensor's raw_data that lies outside the parsed message (cut out by splitRawData, or given
  /// apart), viewed where it lies.
  struct ViewedBytes {
    std::shared_ptr<const ir::Buffer> owner;
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  /// `cut`: the tensor's raw_data, if it lies outside `proto`.
  StatusOr<ir::Tensor> importTensor(onnx::TensorProto& proto, const ViewedBytes* cut = nullptr);
  /// The k-th initializer's raw_data if it lies outside `proto` (split_ or given_), for the main
  /// graph; nullopt where it is in `proto`.
  StatusOr<std::optional<ViewedBytes>> viewedInitializer(const ir::Graph& graph,
                                                         const onnx::GraphProto& proto, int k);
  StatusOr<ir::SparseTensor> importSparse(onnx::SparseTensorProto& proto);
  Status readExternal(onnx::TensorProto& proto, ir::Tensor& tensor);
  StatusOr<std::string> resolveExternal(const std::string& tensor,
                                        const std::string& location) const;

  std::string base_dir_;
  LoadLimits limits_;
  int64_t nodes_ = 0;         ///< imported so far, against limits_.max_nodes
  int64_t initializers_ = 0;  ///< likewise
  int64_t ir_version_ = 0;
  std::map<std::string, std::shared_ptr<ir::MappedFile>> mapped_;
  /// The weights splitRawData cut out of the main graph's initializers (viewRawData).
  const RawDataSplit* split_ = nullptr;
  std::shared_ptr<const ir::Buffer> owner_;  ///< holds the bytes split_'s spans point into
  size_t owner_offset_ = 0;                  ///< where those bytes start in owner_
  /// The main graph's initializers' raw_data given apart (viewGivenWeights); empty if none.
  std::vector<std::shared_ptr<const ir::Buffer>> given_;
  const ir::Graph* main_graph_ = nullptr;
};

}  // namespace onnxopt::io::detail
