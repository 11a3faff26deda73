// The parts of onnxopt._core its files share (module.cc, tensors.cc, run.cc): errors as
// exceptions, where a model comes from, and the conversions and calls module.cc binds.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnxopt/api/generate.h"
#include "onnxopt/api/optimize.h"
#include "onnxopt/api/run.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/ir/stats.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/runtime/check.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/runtime/inputs.h"
#include "onnxopt/support/diagnostics.h"
#include "ort_executor.h"  // tools/opt: the runner "onnxruntime", as opt registers it

namespace nb = nanobind;

namespace onnxopt::python {

/// A failed Status on its way out of a call (made without the GIL); the translator registered in
/// the module raises it as the onnxopt.Error subclass of its code.
struct StatusError : std::exception {
  explicit StatusError(Status s) : status(std::move(s)) {}
  const char* what() const noexcept override { return status.message().c_str(); }
  Status status;
};

inline void throwIfError(const Status& s) {
  if (!s.isOk()) throw StatusError(s);
}

template <typename T>
T valueOrThrow(StatusOr<T> v) {
  if (!v.isOk()) throw StatusError(v.status());
  return std::move(v).value();
}

/// Where a model comes from: a file, or serialized ModelProto bytes (whose external data, if any,
/// is read relative to base_dir). `name` stands for it in messages.
struct Source {
  std::optional<std::string> path;
  std::optional<nb::bytes> data;
  /// With `data`: the main graph's initializers' raw_data that `data` leaves out, one entry per
  /// initializer (None where it holds its own), or empty (io::parseModelBinary).
  std::vector<std::optional<nb::bytes>> weights;
  /// With `data`, instead of a weight: the caller's TensorProto whose raw_data `data` leaves out
  /// and its byte size from dims and type, read only when a pass reads the bytes (optimize).
  std::vector<std::optional<std::pair<nb::object, uint64_t>>> placeholders;
  std::string base_dir = ".";
  std::string name = "(in-memory model)";

  std::string label() const { return path ? *path : name; }
};

/// Whether the model read from a Source may view its bytes (the Python object) or must copy them.
enum class Lifetime {
  kCall,  ///< the model is freed before the call returns, while the caller holds the bytes
  kOwn,   ///< the model outlives the call (a CUDA session): it copies what it keeps
};

/// Reads the model (without the GIL: the caller released it; `data` stays referenced by the
/// caller's arguments). Warnings about accepted input go to `sink`.
class Placeholder;
/// `placeholders`, where given, receives src.placeholders' buffers (one per initializer, null
/// where none); without it (or with kOwn) they are read at once.
std::unique_ptr<ir::Model> loadSource(
    const Source& src, DiagnosticSink* sink, Lifetime lifetime = Lifetime::kCall,
    std::vector<std::shared_ptr<const Placeholder>>* placeholders = nullptr);

using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using DeviceArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cuda>;
/// Numeric inputs as {name: (dtype, dims, raw array)}, string ones as {name: (dims, [bytes])}.
using ArrayFeeds = std::map<std::string, std::tuple<std::string, std::vector<int64_t>, HostArray>>;
using StringFeeds = std::map<std::string, std::pair<std::vector<int64_t>, std::vector<nb::bytes>>>;

// Tensors across the boundary (tensors.cc).
nb::tuple tensorToPython(kernels::HostTensor t);
runtime::Feeds feedsFrom(const ArrayFeeds& arrays, const StringFeeds& strings);
runtime::DeviceFeeds deviceFeedsFrom(const std::map<std::string, DeviceArray>& arrays, int device);
void checkFeedNames(const ir::Model& model, const runtime::Feeds& feeds, const std::string& what);
runtime::Feeds completeFeeds(const ir::Model& model, runtime::Feeds feeds, uint64_t seed,
                             const std::string& label);
nb::list resultToPython(runtime::ExecutionResult result);

// check and run (run.cc).
runtime::RunLimits runLimits(std::optional<int64_t> max_iterations,
                             std::optional<uint64_t> max_memory);
nb::dict checkModels(const Source& original_src, const Source& optimized_src,
                     const runtime::Feeds& given, const std::string& runner, bool per_layer,
                     std::optional<double> atol, std::optional<double> rtol, uint64_t seed,
                     const runtime::RunLimits& limits);
nb::list runModel(const Source& src, const runtime::Feeds& given, const std::string& runner,
                  uint64_t seed, const runtime::RunLimits& limits);
/// generate's options (see onnxopt.generate): the Generator's, and the runner.
struct GenerateArgs {
  runtime::GenerationOptions options;
  std::string runner = "reference";
};
/// Token generation (onnxopt::generate) without the GIL; `callback` (None or a callable taking
/// the step and the row tokens; False stops) runs with it. Returns (sequences, stats dict).
nb::tuple generateIds(const Source& src, std::vector<std::vector<int64_t>> input_ids,
                      std::vector<std::vector<int64_t>> attention_mask, const GenerateArgs& args,
                      nb::object callback);

/// Step-wise generation (onnxopt.Generator): a model read once, its Generator, and a lock so
/// that steps from several threads take turns. Steps run without the GIL.
class GeneratorSession {
 public:
  GeneratorSession(const Source& src, const GenerateArgs& args);
  void start(std::vector<std::vector<int64_t>> input_ids,
             std::vector<std::vector<int64_t>> attention_mask);
  std::vector<int64_t> step();
  bool done();
  std::vector<std::vector<int64_t>> sequences();
  nb::dict stats();

 private:
  std::string label_;
  std::mutex mu_;
  std::unique_ptr<ir::Model> model_;
  std::unique_ptr<runtime::Generator> generator_;
};

}  // namespace onnxopt::python
