// ModelProto -> IR: the entry points (textual syntax, serialized bytes, files), the model's own
// fields and the checks after import. What cannot be represented faithfully is rejected with an
// error naming the node or value. The parts: import_graph.cc (graphs, nodes, attributes,
// functions), import_values.cc (types, tensors, external data), import_checks.cc (model-level
// checks), function_file.cc (rules and target libraries).
#include "io/importer_internal.h"

namespace onnxopt::io {
namespace detail {

namespace fs = std::filesystem;

StatusOr<std::unique_ptr<ir::Model>> Importer::importModel(onnx::ModelProto& proto) {
  if (!proto.has_ir_version() && !proto.has_graph()) {
    return invalidArgument("not an ONNX model (no ir_version and no graph)");
  }
  if (proto.ir_version() <= 0) return invalidArgument("missing or invalid ir_version");
  if (proto.ir_version() > kMaxIrVersion) {
    return invalidArgument("unknown IR version {} (onnxopt reads up to {})", proto.ir_version(),
                           kMaxIrVersion);
  }
  if (!proto.has_graph()) return invalidArgument("the model has no graph");
  auto model = std::make_unique<ir::Model>();
  model->ir_version = proto.ir_version();
  ir_version_ = proto.ir_version();
  RETURN_IF_ERROR(
      importOpsets(proto.opset_import(), model->opset_imports, "", limits_.diagnostics));
  model->producer_name = proto.producer_name();
  model->producer_version = proto.producer_version();
  model->domain = proto.domain();
  model->model_version = proto.model_version();
  model->doc_string = proto.doc_string();
  for (const auto& kv : proto.metadata_props())
    model->metadata_props.emplace_back(kv.key(), kv.value());
  for (const auto& ti : proto.training_info())
    model->training_info.push_back(ti.SerializeAsString());
  model->unknown_fields = unknownFieldsOf(proto);
  for (auto& fp : *proto.mutable_functions()) {
    auto fn = std::make_unique<ir::Function>();
    Status st = importFunction(fp, *fn);
    if (!st.isOk()) return st.withContext(fmt::format("function '{}'", fp.name()));
    model->functions.push_back(std::move(fn));
  }
  model->graph = std::make_unique<ir::Graph>();
  main_graph_ = model->graph.get();
  RETURN_IF_ERROR(importGraph(*proto.mutable_graph(), *model->graph, nullptr));
  return model;
}

/// The checks on an imported model, which need the IR only: callers run them after freeing the
/// parsed proto, so that a large model is not held twice while they run.
StatusOr<std::unique_ptr<ir::Model>> checkImported(StatusOr<std::unique_ptr<ir::Model>> model) {
  if (!model.isOk()) return model;
  // Names were found unique while resolving them (Scope::define, the producer table).
  RETURN_IF_ERROR(ir::verifyModel(**model, ir::VerifyOptions{.unique_names = false}));
  RETURN_IF_ERROR(checkModel(**model));
  return model;
}

std::string folderOf(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace detail

namespace {

namespace fs = std::filesystem;
using detail::checkImported;
using detail::folderOf;
using detail::Importer;

bool looksLikeText(const std::string& path, std::string_view head) {
  auto ext = fs::path(path).extension().string();
  if (ext == ".onnxtxt" || ext == ".txt") return true;
  size_t i = 0;
  while (i < head.size() &&
         (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
    ++i;
  return i < head.size() && head[i] == '<';
}

/// Arena blocks for parsed models: large enough that a big model takes few blocks.
google::protobuf::ArenaOptions parseArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 64 << 10;
  options.max_block_size = 8 << 20;
  options.block_alloc = support::allocateArenaBlock;
  options.block_dealloc = support::freeArenaBlock;
  return options;
}

}  // namespace

StatusOr<std::unique_ptr<ir::Model>> parseModelText(std::string_view text,
                                                    const std::string& base_dir,
                                                    const LoadLimits& limits) {
  onnx::ModelProto proto;
  std::string owned(text);
  onnx::OnnxParser parser(owned.c_str());
  onnx::Common::Status status;
  try {
    status = parser.Parse(proto);
  } catch (const std::exception& e) {
    // onnx's parser converts numbers with std::stof/stoll, which throw on bad or huge literals.
    return invalidArgument("textual syntax error: bad literal ({})", e.what());
  }
  if (!status.IsOK()) {
    std::string msg = status.ErrorMessage();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return invalidArgument("textual syntax error: {}", msg);
  }
  Importer importer(base_dir, limits);
  return checkImported(importer.importModel(proto));
}

StatusOr<std::unique_ptr<ir::Model>> parseModelBinary(
    std::string_view bytes, const std::string& base_dir, const LoadLimits& limits,
    std::shared_ptr<const ir::Buffer> owner,
    std::vector<std::shared_ptr<const ir::Buffer>> weights) {
  // With an owner, the weights are viewed in it: protobuf parses the rest only.
  std::optional<RawDataSplit> split;
  size_t offset = 0;
  if (owner != nullptr) {
    auto base = reinterpret_cast<uintptr_t>(owner->data());
    auto at = reinterpret_cast<uintptr_t>(bytes.data());
    if (at >= base && bytes.size() <= owner->size() && at - base <= owner->size() - bytes.size()) {
      offset = at - base;
      split = splitRawData(bytes, kMinViewedBytes);
    }
  }
  std::string_view parsed = split ? std::string_view(split->rest) : bytes;
  auto imported = [&]() -> StatusOr<std::unique_ptr<ir::Model>> {
    google::protobuf::Arena arena(parseArenaOptions());
    auto& proto = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
    google::protobuf::io::ArrayInputStream stream(parsed.data(), static_cast<int>(parsed.size()));
    google::protobuf::io::CodedInputStream coded(&stream);
    coded.SetTotalBytesLimit(INT_MAX);
    if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
      return invalidArgument("not a valid ONNX protobuf (truncated or not a model file)");
    }
    Importer importer(base_dir, limits);
    if (split) importer.viewRawData(*split, owner, offset);
    importer.viewGivenWeights(std::move(weights));
    return importer.importModel(proto);
  }();
  return checkImported(std::move(imported));
}

StatusOr<ir::Tensor> loadTensorFile(const std::string& path) {
  auto opened = ir::openRegularFile(path);
  if (!opened.isOk()) return opened.status().withContext(path);
  onnx::TensorProto proto;
  bool parsed;
  {
    google::protobuf::io::FileInputStream stream(*opened);
    stream.SetCloseOnDelete(true);
    parsed = proto.ParseFromZeroCopyStream(&stream);
  }
  if (!parsed) return invalidArgument("{}: not a TensorProto file", path);
  Importer importer(folderOf(path));
  auto t = importer.importStandaloneTensor(proto);
  if (!t.isOk()) return t.status().withContext(path);
  return t;
}

StatusOr<std::unique_ptr<ir::Model>> loadModel(const std::string& path, const LoadLimits& limits) {
  auto fail = [&](const Status& st) { return st.withContext(path); };
  // The file is mapped once, for both formats. A binary model views its weights there instead of
  // copying them out (the mapping lives as long as a tensor views it; writing the output over the
  // input replaces the file, leaving the mapped one as it was).
  auto mapped = ir::MappedFile::open(path);
  if (!mapped.isOk()) return fail(mapped.status());
  std::string_view bytes(reinterpret_cast<const char*>((*mapped)->data()), (*mapped)->size());
  if (bytes.empty()) return fail(invalidArgument("the file is empty"));
  if (bytes.size() >= (uint64_t{2} << 30)) {
    return fail(
        invalidArgument("a protobuf file of 2 GB or more cannot be read; keep the weights "
                        "in external data"));
  }
  std::string dir = folderOf(path);
  auto model =
      looksLikeText(path, bytes.substr(0, 64))
          ? parseModelText(bytes, dir, limits)
          : parseModelBinary(bytes, dir, limits,
                             limits.view_weights ? *mapped : std::shared_ptr<ir::MappedFile>());
  if (!model.isOk()) return fail(model.status());
  return model;
}

}  // namespace onnxopt::io
