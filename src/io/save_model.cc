// Saving models and tensors: output paths checked before anything is written, the model and its
// external data staged and committed atomically as one transaction.
#include "io/exporter_internal.h"

namespace onnxopt::io {

namespace fs = std::filesystem;
using detail::DataSink;
using detail::Exporter;
using detail::fillTensorProto;
using detail::forEachTensor;

Status saveTensorFile(const ir::Tensor& tensor, const std::string& path) {
  onnx::TensorProto proto;
  RETURN_IF_ERROR(fillTensorProto(tensor, proto, nullptr).status());
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return makeError(StatusCode::kInternal, "{}: serializing the tensor", path);
  }
  return writeFileAtomically(path, bytes);
}

std::string externalDataPath(const std::string& path, const SaveOptions& options) {
  std::string location = options.external_file.empty()
                             ? fs::path(path).filename().string() + ".data"
                             : options.external_file;
  return (fs::path(path).parent_path() / location).string();
}

bool samePath(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return ca == cb;
}

namespace {

void collectDataFiles(const ir::Graph& graph, std::set<std::string>& files) {
  auto add = [&](const ir::Tensor& t) {
    if (t.externalSource()) files.insert(t.externalSource()->path);
  };
  for (const ir::Value* v : graph.initializers()) {
    if (v->initializer() != nullptr) add(*v->initializer());
    if (v->sparseInitializer() != nullptr) {
      add(v->sparseInitializer()->values);
      add(v->sparseInitializer()->indices);
    }
  }
  for (const ir::Node* n : graph) {
    for (const ir::Attribute& a : n->attributes()) {
      for (const ir::Tensor& t : a.tensors) add(t);
    }
    for (const ir::Graph* g : n->subgraphs()) collectDataFiles(*g, files);
  }
}

}  // namespace

std::set<std::string> externalDataFiles(const ir::Model& model) {
  std::set<std::string> files;
  collectDataFiles(*model.graph, files);
  for (const auto& f : model.functions) collectDataFiles(*f->body, files);
  return files;
}

namespace {

Status checkOnePath(const std::string& path, const char* what) {
  fs::path p(path);
  std::error_code ec;
  if (p.filename().empty() || p.filename() == "." || p.filename() == ".." ||
      fs::is_directory(p, ec)) {
    return invalidArgument("{}: the {} names a folder; give a file name", path, what);
  }
  fs::path parent = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(parent, ec)) {
    return makeError(StatusCode::kNotFound, "{}: the {}'s folder '{}' does not exist", path, what,
                     parent.string());
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    return makeError(StatusCode::kIoError, "{}: the {}'s folder '{}' is not writable: {}", path,
                     what, parent.string(), std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace

Status checkOutputPath(const std::string& path, const std::string& data_path) {
  RETURN_IF_ERROR(checkOnePath(path, "output"));
  if (data_path.empty()) return Status::ok();
  RETURN_IF_ERROR(checkOnePath(data_path, "external data file"));
  if (samePath(path, data_path)) {
    return invalidArgument(
        "{}: the external data file is the output model itself; give the data file another "
        "name",
        path);
  }
  return Status::ok();
}

struct OutputTransaction::Impl {
  struct Entry {
    std::string staged;
    std::string final_path;
    std::string dir;  ///< the staging folder holding `staged`
  };
  std::vector<std::unique_ptr<StagingDir>> dirs;
  std::vector<Entry> entries;
};

OutputTransaction::OutputTransaction() : impl_(std::make_unique<Impl>()) {}
OutputTransaction::~OutputTransaction() = default;

Status OutputTransaction::addFile(const std::string& path, std::string_view content) {
  RETURN_IF_ERROR(checkOutputPath(path));
  ASSIGN_OR_RETURN(auto dir, StagingDir::create(path));
  std::string staged = dir->path() + "/" + fs::path(path).filename().string();
  ASSIGN_OR_RETURN(auto file, OutFile::create(staged, path));
  RETURN_IF_ERROR(file->writeAll(content.data(), content.size()));
  RETURN_IF_ERROR(file->close());
  impl_->entries.push_back({staged, path, dir->path()});
  impl_->dirs.push_back(std::move(dir));
  return Status::ok();
}

StatusOr<std::string> OutputTransaction::addModel(const ir::Model& model, const std::string& path,
                                                  const SaveOptions& options) {
  RETURN_IF_ERROR(ir::verifyModel(model).withContext("refusing to write an invalid model"));
  bool external = options.external_data == SaveOptions::ExternalData::kAlways;
  if (options.external_data == SaveOptions::ExternalData::kAuto) {
    uint64_t total = 0;
    bool had_external = false;
    forEachTensor(model, [&](const ir::Tensor& t) {
      total += t.byteSize();
      had_external |= t.externalSource().has_value();
    });
    external = had_external || total > options.embed_limit_bytes;
  }

  fs::path rel;
  std::string data_path;
  if (external) {
    std::string location = options.external_file.empty()
                               ? fs::path(path).filename().string() + ".data"
                               : options.external_file;
    rel = fs::path(location).lexically_normal();
    if (rel.is_absolute() || rel.begin() == rel.end() || *rel.begin() == ".." ||
        rel.filename().empty()) {
      return invalidArgument(
          "external data file '{}' must be a relative path inside the output's "
          "folder",
          location);
    }
    data_path = externalDataPath(path, options);
  }
  RETURN_IF_ERROR(checkOutputPath(path, data_path));

  ASSIGN_OR_RETURN(auto dir, StagingDir::create(path));
  std::string staged_model = dir->path() + "/" + fs::path(path).filename().string();
  std::string staged_data;
  std::unique_ptr<OutFile> data_file;
  std::unique_ptr<DataSink> sink;
  if (external) {
    staged_data = (fs::path(dir->path()) / rel).string();
    std::error_code ec;
    fs::create_directories(fs::path(staged_data).parent_path(), ec);
    if (ec) {
      return makeError(StatusCode::kIoError, "cannot create a file for '{}': {}", data_path,
                       ec.message());
    }
    ASSIGN_OR_RETURN(data_file, OutFile::create(staged_data, data_path));
    sink = std::make_unique<DataSink>(data_file->fd(), rel.string(), options.external_min_bytes);
  }

  Exporter exporter(model, sink.get());
  RETURN_IF_ERROR(exporter.prepare());
  ASSIGN_OR_RETURN(auto model_file, OutFile::create(staged_model, path));
  {
    google::protobuf::io::FileOutputStream out(model_file->fd());
    if (!exporter.writeTo(out) || !out.Flush()) {
      return makeError(StatusCode::kIoError, "writing '{}': {}", path,
                       std::strerror(out.GetErrno()));
    }
  }
  RETURN_IF_ERROR(model_file->close());
  if (data_file) RETURN_IF_ERROR(data_file->close());
  // The data file is committed first, so that the model never refers to a missing one; a data file
  // nothing refers to is not written at all (the staging folder goes with it).
  if (data_file && sink->wroteAny())
    impl_->entries.push_back({staged_data, data_path, dir->path()});
  impl_->entries.push_back({staged_model, path, dir->path()});
  impl_->dirs.push_back(std::move(dir));
  return staged_model;
}

Status OutputTransaction::commit() {
  struct Done {
    std::string final_path;
    std::string backup;  ///< a second link to the file replaced, or empty
    bool existed = false;
  };
  std::vector<Done> done;
  auto rollback = [&] {
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      if (!it->backup.empty()) {
        ::rename(it->backup.c_str(), it->final_path.c_str());
      } else if (!it->existed) {
        ::unlink(it->final_path.c_str());
      }
    }
  };
  for (size_t i = 0; i < impl_->entries.size(); ++i) {
    const Impl::Entry& e = impl_->entries[i];
    Done d{e.final_path, "", false};
    struct stat st {};
    if (::lstat(e.final_path.c_str(), &st) == 0) {
      d.existed = true;
      std::string backup = e.dir + "/.old-" + std::to_string(i);
      if (::link(e.final_path.c_str(), backup.c_str()) == 0) d.backup = backup;
    }
    if (::rename(e.staged.c_str(), e.final_path.c_str()) != 0) {
      Status err = makeError(StatusCode::kIoError, "cannot rename into '{}': {}", e.final_path,
                             std::strerror(errno));
      rollback();
      return err;
    }
    done.push_back(std::move(d));
  }
  impl_->entries.clear();
  impl_->dirs.clear();
  return Status::ok();
}

Status saveModel(const ir::Model& model, const std::string& path, const SaveOptions& options) {
  OutputTransaction transaction;
  RETURN_IF_ERROR(transaction.addModel(model, path, options).status());
  return transaction.commit();
}

}  // namespace onnxopt::io

namespace onnxopt::io {

Status writeFileAtomically(const std::string& path, std::string_view content) {
  OutputTransaction transaction;
  RETURN_IF_ERROR(transaction.addFile(path, content));
  return transaction.commit();
}

}  // namespace onnxopt::io
