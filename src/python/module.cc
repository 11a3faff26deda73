// onnxopt._core: the native module of the Python package (src/python/onnxopt wraps it; the
// package's typed API and docstrings are there, docs/python.md lists it).
//
//   Python                          _core                         the library
//   ModelProto / bytes / path  -->  loadSource (bytes or path) --> io::parseModelBinary / loadModel
//   numpy / DLPack arrays      -->  tensorFromArray            --> kernels::HostTensor
//   onnxopt.Error subclasses   <--  StatusError (a Status)     <-- Status / StatusOr
//
// Models cross the boundary as serialized ModelProto bytes (or a path), never as protobuf
// objects, so the module shares no protobuf ABI with the onnx package. Every call that reads,
// optimizes or runs a model does so without the GIL; Python objects are made after it is taken
// back. A failed Status becomes the onnxopt.Error subclass of its code, with the message `opt`
// prints after "opt: error: ".
#include "module_shared.h"

#include <atomic>
#include <mutex>

using namespace nb::literals;

namespace onnxopt::python {
namespace {

/// The Python exception class of each StatusCode (indexed by its value), made at import.
std::array<PyObject*, 7> g_errors{};

void defineErrors(nb::module_& m) {
  PyObject* base = PyErr_NewExceptionWithDoc(
      "onnxopt.Error",
      "An error from onnxopt: bad input (a malformed model, a bad option), a missing file, a "
      "limit exceeded, an unsupported model. str(e) is the message the opt tool prints after "
      "'opt: error: '.",
      PyExc_Exception, nullptr);
  m.attr("Error") = nb::handle(base);
  struct Kind {
    StatusCode code;
    const char* name;
    PyObject* also;
    const char* doc;
  };
  const Kind kinds[] = {
      {StatusCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError,
       "Bad input: a malformed model, an option or value that does not fit."},
      {StatusCode::kNotFound, "NotFoundError", PyExc_FileNotFoundError,
       "A file or a named entity (a pass, an input) does not exist."},
      {StatusCode::kIoError, "IoError", PyExc_OSError, "Reading or writing a file failed."},
      {StatusCode::kUnimplemented, "UnimplementedError", PyExc_NotImplementedError,
       "Valid input that onnxopt does not support (yet)."},
      {StatusCode::kResourceExhausted, "ResourceExhaustedError", nullptr,
       "A configured limit (nodes, initializers, nesting, memory) was exceeded."},
      {StatusCode::kInternal, "InternalError", PyExc_RuntimeError,
       "A bug in onnxopt: an invariant of its own does not hold. Please report it."},
  };
  for (const Kind& k : kinds) {
    PyObject* bases = k.also != nullptr ? PyTuple_Pack(2, base, k.also) : PyTuple_Pack(1, base);
    std::string qualified = std::string("onnxopt.") + k.name;
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), k.doc, bases, nullptr);
    Py_DECREF(bases);
    if (cls == nullptr) throw nb::python_error();
    m.attr(k.name) = nb::handle(cls);
    g_errors[static_cast<size_t>(k.code)] = cls;
  }
  g_errors[0] = base;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      auto code = static_cast<size_t>(e.status.code());
      PyObject* cls =
          code < g_errors.size() && g_errors[code] != nullptr ? g_errors[code] : g_errors[0];
      PyErr_SetString(cls, e.status.message().c_str());
    }
  });
}

// --- models ---------------------------------------------------------------------------------------

/// Bytes that the caller keeps alive for as long as the model viewing them lives (not owned).
class BorrowedBytes final : public ir::Buffer {
 public:
  explicit BorrowedBytes(std::string_view bytes) : bytes_(bytes) {}
  const uint8_t* data() const override { return reinterpret_cast<const uint8_t*>(bytes_.data()); }
  size_t size() const override { return bytes_.size(); }

 private:
  std::string_view bytes_;
};

}  // namespace

/// A weight left in the caller's TensorProto: its raw_data is read (one copy, with the GIL) only
/// when a pass reads the bytes. The caller's model outlives the call, and with it the TensorProto
/// (borrowed, not referenced: loadSource runs without the GIL). Weights no pass reads never cross
/// into the library; the result copies them from the caller's message (onnxopt._proto).
class Placeholder final : public ir::Buffer {
 public:
  Placeholder(PyObject* tensor, uint64_t size, size_t index)
      : tensor_(tensor), size_(size), index_(index) {}
  Placeholder(const Placeholder&) = delete;
  Placeholder& operator=(const Placeholder&) = delete;
  ~Placeholder() override {
    if (raw_ != nullptr) {
      nb::gil_scoped_acquire locked;
      Py_DECREF(raw_);
    }
  }

  const uint8_t* data() const override {
    std::call_once(fetched_, [this] { fetch(); });
    return data_;
  }
  size_t size() const override { return size_; }
  bool lazy() const override { return true; }
  /// The caller's initializer index.
  size_t index() const { return index_; }
  /// Whether a read found raw_data of another size than dims and type give (or none): the
  /// caller then takes the path that reads every weight, whose import names the tensor.
  bool misread() const { return misread_.load(); }

 private:
  void fetch() const {
    nb::gil_scoped_acquire locked;
    PyObject* raw = PyObject_GetAttrString(tensor_, "raw_data");
    if (raw != nullptr && PyBytes_Check(raw) &&
        static_cast<uint64_t>(PyBytes_GET_SIZE(raw)) == size_) {
      raw_ = raw;
      data_ = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(raw));
      return;
    }
    PyErr_Clear();
    Py_XDECREF(raw);
    // The passes still see size_ bytes; their result is dropped (misread()).
    misread_.store(true);
    zeros_.assign(size_, '\0');
    data_ = reinterpret_cast<const uint8_t*>(zeros_.data());
  }

  PyObject* tensor_;
  uint64_t size_;
  size_t index_;
  mutable std::once_flag fetched_;
  mutable PyObject* raw_ = nullptr;
  mutable const uint8_t* data_ = nullptr;
  mutable std::string zeros_;
  mutable std::atomic<bool> misread_{false};
};

/// Reads the model (without the GIL: the caller released it; `data` stays referenced by the
/// caller's arguments). Warnings about accepted input go to `sink`.
std::unique_ptr<ir::Model> loadSource(
    const Source& src, DiagnosticSink* sink, Lifetime lifetime,
    std::vector<std::shared_ptr<const Placeholder>>* placeholders) {
  io::LoadLimits limits;
  limits.diagnostics = sink;
  // A session's model outlives the call: it must not depend on the file staying as it is.
  limits.view_weights = lifetime == Lifetime::kCall;
  if (src.path) return valueOrThrow(io::loadModel(*src.path, limits));
  if (!src.data) throw StatusError(invalidArgument("no model given"));
  if (!src.placeholders.empty() && (placeholders == nullptr || lifetime != Lifetime::kCall)) {
    throw StatusError(makeError(StatusCode::kInternal, "weight placeholders outside optimize"));
  }
  std::string_view bytes(src.data->c_str(), src.data->size());
  // A call's model views the weights in the caller's bytes object (no copy of them on import).
  std::shared_ptr<const ir::Buffer> owner;
  if (lifetime == Lifetime::kCall) owner = std::make_shared<BorrowedBytes>(bytes);
  StatusOr<std::unique_ptr<ir::Model>> model = [&] {
    std::vector<std::shared_ptr<const ir::Buffer>> weights;
    for (size_t k = 0; k < src.weights.size() || k < src.placeholders.size(); ++k) {
      const auto* w = k < src.weights.size() && src.weights[k] ? &*src.weights[k] : nullptr;
      const auto* p =
          k < src.placeholders.size() && src.placeholders[k] ? &*src.placeholders[k] : nullptr;
      if (p != nullptr) {  // (no reference taken: no GIL)
        auto placeholder = std::make_shared<Placeholder>(p->first.ptr(), p->second, k);
        placeholders->resize(k + 1);
        (*placeholders)[k] = placeholder;
        weights.push_back(std::move(placeholder));
      } else if (w == nullptr) {
        weights.emplace_back();
      } else if (lifetime == Lifetime::kCall) {
        weights.push_back(std::make_shared<BorrowedBytes>(std::string_view(w->c_str(), w->size())));
      } else {
        weights.push_back(std::make_shared<ir::OwnedBuffer>(std::string(w->c_str(), w->size())));
      }
    }
    return io::parseModelBinary(bytes, src.base_dir, limits, owner, std::move(weights));
  }();
  if (!model.isOk()) throw StatusError(model.status().withContext(src.name));
  return std::move(model).value();
}

namespace {

/// A model serialized straight into a new Python bytes object: no copy after the exporter's
/// (a 2 MB model's bytes used to be written into a std::string, then copied). serialize() runs
/// without the GIL and takes it only to make the object; take() hands it over with the GIL held.
class PendingBytes {
 public:
  PendingBytes() = default;
  PendingBytes(const PendingBytes&) = delete;
  PendingBytes& operator=(const PendingBytes&) = delete;
  ~PendingBytes() {
    if (object_ != nullptr) {
      nb::gil_scoped_acquire locked;  // an exception unwinding a GIL-free scope
      Py_DECREF(object_);
    }
  }

  void serialize(const ir::Model& model, const std::string& label,
                 const io::LeaveOut& leave_out = nullptr) {
    auto written = io::serializeModelInto(
        model,
        [&](size_t size) -> char* {
          nb::gil_scoped_acquire locked;
          object_ = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
          if (object_ == nullptr) {
            PyErr_Clear();
            return nullptr;
          }
          return PyBytes_AS_STRING(object_);
        },
        leave_out);
    if (!written.isOk()) throw StatusError(written.status().withContext(label));
  }

  /// serialize, leaving out the raw_data of the main graph's initializers of kApartMinBytes or
  /// more where they add up to kApartMinTotal (onnxopt._proto's thresholds): takeWeights() hands
  /// them over. Where such a tensor still views a whole weight that `src` gave apart (unchanged),
  /// that bytes object itself goes back, with no copy.
  void serializeApart(const ir::Model& model, const std::string& label, const Source& src,
                      const std::vector<std::shared_ptr<const Placeholder>>& placeholders = {}) {
    uint64_t total = 0;
    for (const ir::Value* v : model.graph->initializers()) {
      const ir::Tensor* t = v->initializer();
      if (t != nullptr && t->dtype() != DataType::kString && t->byteSize() >= kApartMinBytes) {
        total += t->byteSize();
      }
    }
    std::vector<std::pair<size_t, const ir::Tensor*>> apart;
    io::LeaveOut leave_out = [&](size_t k, const ir::Tensor& t) {
      if (t.byteSize() < kApartMinBytes) return false;
      apart.emplace_back(k, &t);
      return true;
    };
    serialize(model, label, total >= kApartMinTotal ? leave_out : nullptr);
    std::unordered_map<const void*, const nb::bytes*> given;
    for (const std::optional<nb::bytes>& w : src.weights) {
      if (w) given.emplace(w->c_str(), &*w);
    }
    nb::gil_scoped_acquire locked;
    weights_ = nb::list();
    for (const auto& [k, t] : apart) {
      // A weight still all of a placeholder's goes back as the caller's initializer index: the
      // result copies that TensorProto (its bytes unread here).
      auto held = std::find_if(placeholders.begin(), placeholders.end(),
                               [&](const auto& p) { return t->viewsAllOf(p.get()); });
      if (held != placeholders.end()) {
        nb::borrow<nb::list>(weights_).append(nb::make_tuple(k, (*held)->index()));
        continue;
      }
      auto it = given.find(t->data());
      nb::bytes raw = it != given.end() && it->second->size() == t->byteSize()
                          ? *it->second
                          : nb::bytes(reinterpret_cast<const char*>(t->data()), t->byteSize());
      nb::borrow<nb::list>(weights_).append(nb::make_tuple(k, raw));
    }
  }

  nb::bytes take() { return nb::steal<nb::bytes>(std::exchange(object_, nullptr)); }
  /// serializeApart's weights: [(initializer index, raw_data bytes or the caller's initializer
  /// index)]. With the GIL.
  nb::list takeWeights() {
    return weights_.is_valid() ? nb::steal<nb::list>(weights_.release()) : nb::list();
  }

  /// onnxopt._proto's APART_MIN_BYTES and APART_MIN_TOTAL.
  static constexpr uint64_t kApartMinBytes = uint64_t{1} << 16;
  static constexpr uint64_t kApartMinTotal = uint64_t{1} << 20;

 private:
  PyObject* object_ = nullptr;
  nb::object weights_;  ///< a list once serializeApart made it (null until then: no GIL needed)
};

/// The messages of one severity (warnings become OnnxoptWarning; notes go to the summary).
std::vector<std::string> messages(const CollectingDiagnosticSink& sink, Severity severity) {
  std::vector<std::string> out;
  for (const Diagnostic& d : sink.diagnostics()) {
    if (d.severity == severity) out.push_back(d.message);
  }
  return out;
}

// --- optimize -------------------------------------------------------------------------------------

struct OptimizeArgs {
  int level = 2;
  std::optional<std::string> passes;
  int target_opset = 0;
  std::string precision;
  bool range_analysis = true;
  std::optional<int64_t> fold_size_limit;
  bool keep_initializer_inputs = false;
  std::string target;
  std::vector<std::string> disabled_passes;
  std::string quantize;  ///< "int4", "int8" or "" (the other fields apply with it)
  int64_t quantize_block_size = passes::WeightQuantization{}.block_size;
  bool quantize_symmetric = passes::WeightQuantization{}.symmetric;
  std::vector<std::string> quantize_exclude;
  bool quantize_lm_head = passes::WeightQuantization{}.lm_head;
  bool quantize_embeddings = passes::WeightQuantization{}.embeddings;
};

OptimizeOptions optimizeOptions(const OptimizeArgs& args, const std::string& label,
                                DiagnosticSink& sink) {
  if (args.level < 0 || args.level > 3) {
    throw StatusError(invalidArgument("level {} is not one of 0, 1, 2, 3", args.level));
  }
  OptimizeOptions options;
  options.level = args.level;
  if (args.passes) {
    options.pipeline = *args.passes;
    // An empty pipeline runs nothing, as -O0 does (`opt --passes=''`).
    if (args.passes->empty()) options.level = 0;
  }
  // opt's --target-opset takes 7..23 (tools/opt/main.cc); the same range, the same refusal.
  if (args.target_opset != 0 && (args.target_opset < 7 || args.target_opset > 23)) {
    throw StatusError(invalidArgument("target_opset {} is not in 7..23", args.target_opset));
  }
  options.target_opset = args.target_opset;
  options.precision = args.precision;
  options.target = args.target;
  options.disabled_passes = args.disabled_passes;
  options.quantize = {args.quantize,         args.quantize_block_size, args.quantize_symmetric,
                      args.quantize_exclude, args.quantize_lm_head,    args.quantize_embeddings};
  if (args.fold_size_limit && *args.fold_size_limit < 0) {
    throw StatusError(invalidArgument("fold_size_limit {} is negative", *args.fold_size_limit));
  }
  options.fold_size_limit = args.fold_size_limit;
  options.keep_initializer_inputs = args.keep_initializer_inputs;
  options.range_analysis = args.range_analysis;
  options.label = label;
  options.context.diagnostics = &sink;
  return options;
}

nb::dict summaryToPython(const OptimizeResult& result, const ir::ModelStats& before,
                         const ir::ModelStats& after, const CollectingDiagnosticSink& sink) {
  nb::dict summary;
  summary["pipeline"] = result.pipeline;
  summary["seconds"] = result.seconds;
  summary["nodes_before"] = before.nodes;
  summary["nodes_after"] = after.nodes;
  summary["initializers_before"] = before.initializers;
  summary["initializers_after"] = after.initializers;
  nb::dict stats;
  for (const auto& [name, value] : result.statistics) stats[nb::str(name.c_str())] = value;
  summary["statistics"] = stats;
  summary["warnings"] = messages(sink, Severity::kWarning);
  summary["notes"] = messages(sink, Severity::kNote);
  return summary;
}

/// What optimize and optimize_file share: read, analyse (precision), optimize. Without the GIL.
struct Optimized {
  std::unique_ptr<ir::Model> model;
  OptimizeResult result;
  ir::ModelStats before, after;
  CollectingDiagnosticSink sink;
};

/// Optimizes `out.model` (read from `src`, with its warnings in `out.sink`).
void optimizeLoaded(const Source& src, const OptimizeArgs& args, Optimized& out) {
  OptimizeOptions options = optimizeOptions(args, src.label(), out.sink);
  out.before = ir::computeStats(*out.model);
  Status ran = optimize(*out.model, options, &out.result);
  if (!ran.isOk()) {
    // A pipeline that does not parse is the caller's mistake, not the model's: no context.
    if (out.result.pipeline.empty()) throw StatusError(ran);
    throw StatusError(ran.withContext(src.label()));
  }
  out.after = ir::computeStats(*out.model);
}

/// optimize(ModelProto): (bytes, summary, weights), or None where a placeholder's raw_data was
/// not what its dims and type say (the caller retries with every weight read, whose import names
/// the tensor).
nb::object optimizeToBytes(const Source& src, const OptimizeArgs& args) {
  Optimized out;
  PendingBytes bytes;
  std::vector<std::shared_ptr<const Placeholder>> placeholders;
  auto misread = [&] {
    return std::any_of(placeholders.begin(), placeholders.end(),
                       [](const auto& p) { return p != nullptr && p->misread(); });
  };
  {
    nb::gil_scoped_release unlocked;
    try {
      out.model = loadSource(src, &out.sink, Lifetime::kCall, &placeholders);
      optimizeLoaded(src, args, out);
      if (!misread()) bytes.serializeApart(*out.model, src.label(), src, placeholders);
    } catch (const StatusError&) {
      if (!misread()) throw;
    }
    out.model.reset();
  }
  if (misread()) return nb::none();
  return nb::make_tuple(bytes.take(), summaryToPython(out.result, out.before, out.after, out.sink),
                        bytes.takeWeights());
}

/// optimize_file: the output (and its data file) must not be a file the input still reads.
void checkOutputAgainstInput(const Source& src, const ir::Model& model, const std::string& output,
                             const io::SaveOptions& save) {
  std::string data_path = io::externalDataPath(output, save);
  std::vector<std::string> inputs(1, src.path.value_or(""));
  for (const std::string& f : io::externalDataFiles(model)) inputs.push_back(f);
  for (const std::string& f : inputs) {
    if (f.empty()) continue;
    if (io::samePath(output, f) || io::samePath(data_path, f)) {
      throw StatusError(
          invalidArgument("{}: would overwrite '{}', which the input model reads; "
                          "write the output to another file",
                          output, f));
    }
  }
}

nb::dict optimizeToFile(const Source& src, const OptimizeArgs& args, const std::string& output,
                        std::optional<std::string> external_data) {
  Optimized out;
  {
    nb::gil_scoped_release unlocked;
    io::SaveOptions save;
    if (external_data) {
      save.external_data = io::SaveOptions::ExternalData::kAlways;
      save.external_file = *external_data;
    }
    throwIfError(io::checkOutputPath(output));
    // Checked before the passes run, against the model as read: its data files are known then.
    out.model = loadSource(src, &out.sink);
    checkOutputAgainstInput(src, *out.model, output, save);
    optimizeLoaded(src, args, out);
    Status saved = io::saveModel(*out.model, output, save);
    if (!saved.isOk()) throw StatusError(saved.withContext(output));
    out.model.reset();
  }
  return summaryToPython(out.result, out.before, out.after, out.sink);
}

// --- infer_shapes, list_passes -------------------------------------------------------------------

nb::tuple inferShapes(const Source& src) {
  PendingBytes bytes;
  CollectingDiagnosticSink sink;
  {
    nb::gil_scoped_release unlocked;
    auto model = loadSource(src, &sink);
    ir::ShapeInferenceOptions options;
    options.write_value_info = true;
    options.diagnostics = &sink;
    auto inferred = ir::inferShapes(*model, options);
    if (!inferred.isOk()) throw StatusError(inferred.status().withContext(src.label()));
    bytes.serialize(*model, src.label());
  }
  return nb::make_tuple(bytes.take(), messages(sink, Severity::kWarning));
}

nb::list listPasses() {
  nb::list out;
  for (const auto& p : passes::allPasses()) {
    nb::list options;
    for (const pass::PassOption& o : p->options()) {
      nb::dict d;
      d["name"] = o.name;
      d["type"] = o.type;
      d["default"] = o.default_value;
      d["help"] = o.help;
      options.append(d);
    }
    nb::dict d;
    d["id"] = p->id();
    d["summary"] = p->summary();
    d["options"] = options;
    out.append(d);
  }
  return out;
}

// --- the CUDA session -----------------------------------------------------------------------------

/// One model on one GPU: read and prepared once, planned per input signature, run many times.
class CudaSession {
 public:
  CudaSession(const Source& src, int device, bool cuda_graphs, const std::string& tf32,
              const std::string& tuning_cache)
      : label_(src.label()) {
    kernels::Tf32 policy = kernels::Tf32::kConvolutions;
    if (tf32 == "none") {
      policy = kernels::Tf32::kNone;
    } else if (tf32 == "all") {
      policy = kernels::Tf32::kAll;
    } else if (tf32 != "convolutions") {
      throw StatusError(
          invalidArgument("tf32 must be 'convolutions', 'none' or 'all', not '{}'", tf32));
    }
    nb::gil_scoped_release unlocked;
    model_ = loadSource(src, nullptr, Lifetime::kOwn);
    throwIfError(prepareForRunner(*model_, "cuda").withContext(label_));
    runtime::CudaOptions options;
    options.device_id = device;
    options.cuda_graphs = cuda_graphs;
    options.tf32 = policy;
    options.tuning_cache = tuning_cache;
    options.time_compute = true;
    auto created = runtime::CudaExecutor::create(*model_, options);
    if (!created.isOk()) throw StatusError(created.status().withContext(label_));
    executor_ = std::move(created).value();
  }

  nb::list run(const runtime::Feeds& feeds, const runtime::DeviceFeeds& device) {
    runtime::ExecutionResult result;
    {
      nb::gil_scoped_release unlocked;
      runtime::ExecutionOptions exec;
      exec.non_tensor_outputs = true;
      auto ran = executor_->run(feeds, device, exec);
      if (!ran.isOk()) throw StatusError(ran.status().withContext(label_));
      result = std::move(ran).value();
    }
    return resultToPython(std::move(result));
  }

  std::vector<std::string> inputNames() const {
    std::vector<std::string> names;
    for (const ir::Value* in : model_->graph->inputs()) names.push_back(in->name());
    return names;
  }
  std::vector<std::string> outputNames() const {
    std::vector<std::string> names;
    for (const ir::Value* out : model_->graph->outputs()) names.push_back(out->name());
    return names;
  }
  int deviceId() const { return executor_->device().id; }
  uintptr_t stream() const { return reinterpret_cast<uintptr_t>(executor_->stream()); }
  std::string deviceName() const { return executor_->device().name; }
  std::string summary() const { return executor_->lastSummary(); }
  std::string cudaGraphState() const { return executor_->cudaGraphState(); }
  std::optional<double> lastComputeMs() const { return executor_->lastComputeMs(); }

 private:
  std::string label_;
  std::unique_ptr<ir::Model> model_;
  std::unique_ptr<runtime::CudaExecutor> executor_;
};

}  // namespace
}  // namespace onnxopt::python

NB_MODULE(_core, m) {
  using namespace onnxopt::python;
  m.doc() = "The native module of onnxopt (use the onnxopt package, which wraps it).";
  defineErrors(m);
  m.attr("__version__") = ONNXOPT_VERSION;
  m.attr("has_cuda") = ONNXOPT_HAVE_CUDA != 0;
  m.attr("APART_MIN_BYTES") = PendingBytes::kApartMinBytes;
  m.attr("APART_MIN_TOTAL") = PendingBytes::kApartMinTotal;
  onnxopt::tools::registerOnnxruntimeRunner();
  m.def("set_ort_runner", &onnxopt::tools::setOnnxruntimeRunnerDefaults, "script"_a, "python"_a,
        "Where the runner 'onnxruntime' finds ort_runner.py and Python (unless "
        "ONNXOPT_ORT_RUNNER / ONNXOPT_PYTHON say).");

  nb::class_<Source>(m, "Source", "A model to read: a path, or serialized ModelProto bytes.")
      .def(nb::init<>())
      .def_rw("path", &Source::path)
      .def_rw("data", &Source::data)
      .def_rw("weights", &Source::weights)
      .def_rw("placeholders", &Source::placeholders)
      .def_rw("base_dir", &Source::base_dir)
      .def_rw("name", &Source::name);
  nb::class_<OptimizeArgs>(m, "OptimizeArgs", "The options of optimize (see onnxopt.optimize).")
      .def(nb::init<>())
      .def_rw("level", &OptimizeArgs::level)
      .def_rw("passes", &OptimizeArgs::passes)
      .def_rw("target_opset", &OptimizeArgs::target_opset)
      .def_rw("precision", &OptimizeArgs::precision)
      .def_rw("range_analysis", &OptimizeArgs::range_analysis)
      .def_rw("fold_size_limit", &OptimizeArgs::fold_size_limit)
      .def_rw("keep_initializer_inputs", &OptimizeArgs::keep_initializer_inputs)
      .def_rw("target", &OptimizeArgs::target)
      .def_rw("disabled_passes", &OptimizeArgs::disabled_passes)
      .def_rw("quantize", &OptimizeArgs::quantize)
      .def_rw("quantize_block_size", &OptimizeArgs::quantize_block_size)
      .def_rw("quantize_symmetric", &OptimizeArgs::quantize_symmetric)
      .def_rw("quantize_exclude", &OptimizeArgs::quantize_exclude)
      .def_rw("quantize_lm_head", &OptimizeArgs::quantize_lm_head)
      .def_rw("quantize_embeddings", &OptimizeArgs::quantize_embeddings);

  m.def("optimize", &optimizeToBytes, "source"_a, "args"_a,
        "Optimizes a model; returns (ModelProto bytes, summary dict, weights handed back apart), "
        "or None where a placeholder's raw_data does not fit its dims and type.");
  m.def("optimize_file", &optimizeToFile, "source"_a, "args"_a, "output"_a,
        "external_data"_a = nb::none(),
        "Optimizes a model and writes it to `output` atomically; returns the summary dict.");
  m.def(
      "check",
      [](const Source& original, const Source& optimized, const ArrayFeeds& arrays,
         const StringFeeds& strings, const std::string& runner, bool per_layer,
         std::optional<double> atol, std::optional<double> rtol, uint64_t seed,
         std::optional<int64_t> max_iterations, std::optional<uint64_t> max_memory) {
        return checkModels(original, optimized, feedsFrom(arrays, strings), runner, per_layer, atol,
                           rtol, seed, runLimits(max_iterations, max_memory));
      },
      "original"_a, "optimized"_a, "arrays"_a, "strings"_a, "runner"_a, "per_layer"_a, "atol"_a,
      "rtol"_a, "seed"_a, "max_iterations"_a, "max_memory"_a,
      "Runs both models on the same inputs and compares them.");
  m.def(
      "run",
      [](const Source& src, const ArrayFeeds& arrays, const StringFeeds& strings,
         const std::string& runner, uint64_t seed, std::optional<int64_t> max_iterations,
         std::optional<uint64_t> max_memory) {
        return runModel(src, feedsFrom(arrays, strings), runner, seed,
                        runLimits(max_iterations, max_memory));
      },
      "source"_a, "arrays"_a, "strings"_a, "runner"_a, "seed"_a, "max_iterations"_a, "max_memory"_a,
      "Runs a model; returns [(name, kind, value)].");
  nb::class_<GenerateArgs>(m, "GenerateArgs", "The options of generate (see onnxopt.generate).")
      .def(nb::init<>())
      .def_rw("runner", &GenerateArgs::runner)
      .def_prop_rw(
          "max_new_tokens", [](const GenerateArgs& a) { return a.options.max_new_tokens; },
          [](GenerateArgs& a, int64_t v) { a.options.max_new_tokens = v; })
      .def_prop_rw(
          "max_length", [](const GenerateArgs& a) { return a.options.max_length; },
          [](GenerateArgs& a, int64_t v) { a.options.max_length = v; })
      .def_prop_rw(
          "eos_token_id", [](const GenerateArgs& a) { return a.options.eos_token_id; },
          [](GenerateArgs& a, int64_t v) { a.options.eos_token_id = v; })
      .def_prop_rw(
          "temperature", [](const GenerateArgs& a) { return a.options.sampling.temperature; },
          [](GenerateArgs& a, double v) { a.options.sampling.temperature = v; })
      .def_prop_rw(
          "top_k", [](const GenerateArgs& a) { return a.options.sampling.top_k; },
          [](GenerateArgs& a, int64_t v) { a.options.sampling.top_k = v; })
      .def_prop_rw(
          "top_p", [](const GenerateArgs& a) { return a.options.sampling.top_p; },
          [](GenerateArgs& a, double v) { a.options.sampling.top_p = v; })
      .def_prop_rw(
          "seed", [](const GenerateArgs& a) { return a.options.sampling.seed; },
          [](GenerateArgs& a, uint64_t v) { a.options.sampling.seed = v; });
  m.def("generate", &generateIds, "source"_a, "input_ids"_a, "attention_mask"_a, "args"_a,
        "callback"_a = nb::none(),
        "Generates tokens with a decoder that has a KV cache; returns (sequences, stats).");
  nb::class_<GeneratorSession>(m, "Generator", "Step-wise generation (see onnxopt.Generator).")
      .def(nb::init<const Source&, const GenerateArgs&>(), "source"_a, "args"_a)
      .def("start", &GeneratorSession::start, "input_ids"_a, "attention_mask"_a)
      .def("step", &GeneratorSession::step)
      .def_prop_ro("done", &GeneratorSession::done)
      .def_prop_ro("sequences", &GeneratorSession::sequences)
      .def_prop_ro("stats", &GeneratorSession::stats);
  m.def("infer_shapes", &inferShapes, "source"_a,
        "Infers types and shapes; returns (ModelProto bytes with value_info, warnings).");
  m.def("list_passes", &listPasses, "Every registered pass: id, summary, options.");
  m.def("runners", &onnxopt::runtime::runnerNames, "The runner names (reference, cuda, ...).");

  nb::class_<CudaSession>(m, "CudaSession", "A model on one GPU (see onnxopt.cuda.Session).")
      .def(nb::init<const Source&, int, bool, const std::string&, const std::string&>(), "source"_a,
           "device"_a, "cuda_graphs"_a, "tf32"_a, "tuning_cache"_a)
      .def(
          "run",
          [](CudaSession& s, const ArrayFeeds& arrays, const StringFeeds& strings,
             const std::map<std::string, DeviceArray>& device) {
            return s.run(feedsFrom(arrays, strings), deviceFeedsFrom(device, s.deviceId()));
          },
          "arrays"_a, "strings"_a, "device"_a,
          "Runs the model: host arrays as (dtype, array), strings as (dims, [bytes]), device "
          "arrays (CUDA DLPack) by name; returns [(name, kind, value)] on the host.")
      .def_prop_ro("device_id", &CudaSession::deviceId)
      .def_prop_ro("stream", &CudaSession::stream,
                   "The session's CUDA stream (cudaStream_t as an int), for __dlpack__(stream=).")
      .def_prop_ro("input_names", &CudaSession::inputNames)
      .def_prop_ro("output_names", &CudaSession::outputNames)
      .def_prop_ro("device_name", &CudaSession::deviceName)
      .def_prop_ro("summary", &CudaSession::summary)
      .def_prop_ro("cuda_graph_state", &CudaSession::cudaGraphState)
      .def_prop_ro("last_compute_ms", &CudaSession::lastComputeMs);
}
