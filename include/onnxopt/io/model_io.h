// Reading and writing models. This layer is the only code that touches protobuf: the rest of
// onnxopt sees the IR only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "onnxopt/ir/function_file.h"
#include "onnxopt/ir/graph.h"
#include "onnxopt/ir/limits.h"
#include "onnxopt/support/diagnostics.h"
#include "onnxopt/support/status.h"

namespace onnxopt::io {

/// The newest IR version onnxopt reads. Newer files are rejected rather than half understood.
inline constexpr int64_t kMaxIrVersion = 14;

/// Limits on what a model file may ask for, so that a hostile file fails with a clear error
/// instead of exhausting memory or the stack (`opt --max-nodes`, `--max-initializers`).
struct LoadLimits {
  int64_t max_nodes = ir::kDefaultMaxNodes;     ///< nodes of every graph, subgraphs and functions
  int64_t max_initializers = int64_t{1} << 22;  ///< initializers of every graph
  int max_subgraph_depth = 32;                  ///< If/Loop/Scan bodies nested in each other
  /// Where warnings about accepted but dubious input go (e.g. a domain imported twice with
  /// different versions); nullptr drops them.
  DiagnosticSink* diagnostics = nullptr;
  /// loadModel: the model views its embedded weights in a mapping of the file (as it does external
  /// data) instead of copying them. The file must then not be truncated or rewritten in place
  /// while the model lives (replacing it, as saveModel does, is fine); false copies them, for a
  /// model that outlives such changes.
  bool view_weights = true;
};

/// Reads a model from `path`: the binary protobuf format, or ONNX's textual syntax when the file
/// name ends in .onnxtxt / .txt or the content starts with '<'. The file and its external data
/// (read relative to the model's folder) are memory-mapped and the weights viewed there, not
/// copied (LoadLimits::view_weights). Every error names the file and, where it
/// applies, the node or value, and says why.
StatusOr<std::unique_ptr<ir::Model>> loadModel(const std::string& path,
                                               const LoadLimits& limits = {});

/// Parses a model in ONNX's textual syntax. `base_dir` resolves external-data locations.
StatusOr<std::unique_ptr<ir::Model>> parseModelText(std::string_view text,
                                                    const std::string& base_dir = ".",
                                                    const LoadLimits& limits = {});

/// Parses a file of model-local functions in ONNX's textual syntax (one after another, each with
/// its `<domain: ..., opset_import: [...]>` header), as a rewrite-rules file holds them. The
/// functions are checked as the importer checks a model's (schemas, imported domains); errors
/// name `path` and the line. `extra_attributes` lists "Op.attr" names accepted on nodes beyond
/// their schema (a rule's `Constant <rtol = ...>`); they are kept on the nodes.
StatusOr<ir::FunctionFile> parseFunctionFile(std::string_view text, const std::string& path,
                                             const std::vector<std::string>& extra_attributes = {});
/// Reads `path` and parses it with parseFunctionFile.
StatusOr<ir::FunctionFile> loadFunctionFile(const std::string& path,
                                            const std::vector<std::string>& extra_attributes = {});

/// Parses a binary ModelProto held in memory. Given the `owner` of `bytes` (they lie inside its
/// data), the model views its weights (the main graph's raw_data of kMinViewedBytes or more)
/// where they lie instead of copying them, and keeps `owner` alive. `weights`, where given (one
/// entry per initializer of the main graph), holds the raw_data that `bytes` leaves out: entry k,
/// where not null, is the k-th initializer's, viewed there, and that initializer holds no data in
/// `bytes`. (The Python package hands a ModelProto over so: serializing its weights in Python
/// costs several copies of them; reading each tensor's raw_data costs one.)
StatusOr<std::unique_ptr<ir::Model>> parseModelBinary(
    std::string_view bytes, const std::string& base_dir = ".", const LoadLimits& limits = {},
    std::shared_ptr<const ir::Buffer> owner = nullptr,
    std::vector<std::shared_ptr<const ir::Buffer>> weights = {});

/// The smallest raw_data that parseModelBinary views in the owner's bytes rather than copies.
inline constexpr uint64_t kMinViewedBytes = 64;

/// How tensor data is laid out on export.
struct SaveOptions {
  enum class ExternalData {
    kAuto,    ///< external when the input used external data or the model would exceed 2 GB
    kAlways,  ///< every tensor of at least `external_min_bytes` goes to the data file
    kNever,   ///< everything embedded (fails past protobuf's 2 GB limit)
  };
  ExternalData external_data = ExternalData::kAuto;
  /// Data file name, relative to the output's folder; empty means "<output file name>.data".
  std::string external_file;
  /// Tensors smaller than this stay embedded even in external mode.
  uint64_t external_min_bytes = 1024;
  /// Serialized size above which kAuto switches to external data (protobuf's limit, less a margin).
  uint64_t embed_limit_bytes = (uint64_t{2} << 30) - (uint64_t{64} << 20);
};

/// Writes `model` to `path` atomically: data file and model are written to temporary files in the
/// same folder and renamed into place only when complete, so a failure leaves no partial output.
Status saveModel(const ir::Model& model, const std::string& path, const SaveOptions& options = {});

/// Serializes a model with all data embedded (for tests and tools).
StatusOr<std::string> serializeModel(const ir::Model& model);
/// Picks, by index and tensor, the main graph's initializers whose raw_data serializeModelInto
/// leaves out.
using LeaveOut = std::function<bool(size_t, const ir::Tensor&)>;
/// The same bytes, written into the buffer `allocate(size)` returns for the exact serialized size
/// (a caller's own object, e.g. the Python module's bytes, with no copy after); returns the size.
/// A null buffer is an error. The raw_data of the main graph's initializers that `leave_out`
/// picks (the k-th initializer, its tensor; a tensor with no bytes is never asked) is left out:
/// the caller hands it over apart (the Python package: parseModelBinary's `weights`, the other
/// way round).
StatusOr<size_t> serializeModelInto(const ir::Model& model,
                                    const std::function<char*(size_t)>& allocate,
                                    const LeaveOut& leave_out = nullptr);

}  // namespace onnxopt::io

namespace onnxopt::io {

/// Reads a TensorProto file (.pb, as in ONNX's test data sets).
StatusOr<ir::Tensor> loadTensorFile(const std::string& path);
/// Writes a TensorProto file (.pb) holding `tensor` with its data embedded: every element type,
/// bfloat16, float8 and strings included.
Status saveTensorFile(const ir::Tensor& tensor, const std::string& path);

/// Writes `content` to `path` through a temporary file and a rename: readers never see a partial
/// file.
Status writeFileAtomically(const std::string& path, std::string_view content);

/// The path of the external data file that saving to `path` with `options` writes (when it writes
/// one): `options.external_file` or "<file name>.data", in `path`'s folder.
std::string externalDataPath(const std::string& path, const SaveOptions& options);

/// Whether two paths name the same file, existing or not (compared as canonical absolute paths
/// when one does not exist).
bool samePath(const std::string& a, const std::string& b);

/// The external data files the tensors of `model` (every graph, subgraph and function) are read
/// from: a tool writing an output must not overwrite them while it still reads them.
std::set<std::string> externalDataFiles(const ir::Model& model);

/// Checks, before anything is written, that `path` can receive an output: it is not a folder, its
/// folder exists and is writable; with `data_path` (non-empty), likewise for the data file, which
/// must also differ from `path`.
Status checkOutputPath(const std::string& path, const std::string& data_path = "");

/// Output files that become visible together or not at all. Each is written under a temporary
/// name in a hidden folder beside its target (so a tool can read and check it first), and commit()
/// renames them into place in the order staged, a model's data file before the model. A commit
/// that fails part-way puts back the files it had replaced (or removes the ones it had created);
/// an uncommitted transaction removes everything it staged.
class OutputTransaction {
 public:
  OutputTransaction();
  ~OutputTransaction();
  OutputTransaction(const OutputTransaction&) = delete;
  OutputTransaction& operator=(const OutputTransaction&) = delete;

  /// Stages `content` for `path`.
  Status addFile(const std::string& path, std::string_view content);
  /// Stages `model` for `path` (and its external data file, if options or the model call for one;
  /// see saveModel). Returns the staged model's path: a complete model, its data file beside it
  /// under its final name.
  StatusOr<std::string> addModel(const ir::Model& model, const std::string& path,
                                 const SaveOptions& options = {});
  /// Renames every staged file into place; on failure restores what was there before.
  Status commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onnxopt::io
