// Tensors across the boundary: numpy and DLPack arrays in, execution results out, and the
// seeded random inputs that complete what the caller gave.
#include "module_shared.h"

namespace onnxopt::python {

/// A tensor from the raw bytes of a C-contiguous host array: `dims` elements of `dtype` (its ONNX
/// name, e.g. "float16"). The package hands bfloat16 and float8 arrays over as same-sized integer
/// views and sub-byte types (int4, ...) packed as ONNX stores them, so the array's own shape and
/// type do not matter, only its byte count. One copy, into the HostTensor.
kernels::HostTensor tensorFromArray(const std::string& name, const std::string& dtype,
                                    const std::vector<int64_t>& dims, const HostArray& a) {
  std::optional<DataType> type = dataTypeFromName(dtype);
  if (!type || *type == DataType::kString) {
    throw StatusError(
        invalidArgument("input '{}': element type '{}' is not one onnxopt takes "
                        "from an array",
                        name, dtype));
  }
  kernels::HostTensor t;
  t.dtype = *type;
  uint64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 0) throw StatusError(invalidArgument("input '{}': dim {} is negative", name, d));
    elements *= static_cast<uint64_t>(d);
  }
  t.dims = dims;
  std::optional<uint64_t> want = dataTypeStorageBytes(*type, elements);
  if (!want || *want != a.nbytes()) {
    throw StatusError(invalidArgument("input '{}': {} bytes for {} elements of {}", name,
                                      a.nbytes(), elements, dtype));
  }
  t.bytes.assign(static_cast<const char*>(a.data()), a.nbytes());
  return t;
}

/// What crosses back for one tensor: (ONNX type name, dims, raw bytes as a uint8 array that owns
/// the HostTensor's memory; for string tensors a list of str instead).
nb::tuple tensorToPython(kernels::HostTensor t) {
  std::string dtype = dataTypeName(t.dtype);
  nb::list dims;
  for (int64_t d : t.dims) dims.append(d);
  if (t.dtype == DataType::kString) {
    nb::list strings;
    for (const std::string& s : t.strings) strings.append(nb::bytes(s.data(), s.size()));
    return nb::make_tuple(dtype, dims, strings);
  }
  auto* owned = new kernels::HostTensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<kernels::HostTensor*>(p); });
  size_t shape[1] = {owned->bytes.size()};
  nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>> raw(owned->bytes.data(), 1, shape, owner);
  return nb::make_tuple(dtype, dims, raw.cast());
}

runtime::Feeds feedsFrom(const ArrayFeeds& arrays, const StringFeeds& strings) {
  runtime::Feeds feeds;
  for (const auto& [name, typed] : arrays) {
    feeds[name] = tensorFromArray(name, std::get<0>(typed), std::get<1>(typed), std::get<2>(typed));
  }
  for (const auto& [name, value] : strings) {
    kernels::HostTensor t;
    t.dtype = DataType::kString;
    t.dims = value.first;
    for (const nb::bytes& b : value.second) t.strings.emplace_back(b.c_str(), b.size());
    if (t.numElements() != static_cast<int64_t>(t.strings.size())) {
      throw StatusError(invalidArgument("input '{}': {} strings for dims of {} elements", name,
                                        t.strings.size(), t.numElements()));
    }
    feeds[name] = std::move(t);
  }
  return feeds;
}

/// The ONNX element type of a DLPack dtype (single lanes; nullopt for the others).
std::optional<DataType> dataTypeOfDlpack(nb::dlpack::dtype t) {
  using Code = nb::dlpack::dtype_code;
  struct Known {
    Code code;
    uint8_t bits;
    DataType type;
  };
  static constexpr Known kKnown[] = {
      {Code::Int, 8, DataType::kInt8},       {Code::Int, 16, DataType::kInt16},
      {Code::Int, 32, DataType::kInt32},     {Code::Int, 64, DataType::kInt64},
      {Code::UInt, 8, DataType::kUint8},     {Code::UInt, 16, DataType::kUint16},
      {Code::UInt, 32, DataType::kUint32},   {Code::UInt, 64, DataType::kUint64},
      {Code::Float, 16, DataType::kFloat16}, {Code::Float, 32, DataType::kFloat},
      {Code::Float, 64, DataType::kDouble},  {Code::Bfloat, 16, DataType::kBfloat16},
      {Code::Bool, 8, DataType::kBool},
  };
  if (t.lanes != 1) return std::nullopt;
  for (const Known& k : kKnown) {
    if (static_cast<uint8_t>(k.code) == t.code && k.bits == t.bits) return k.type;
  }
  return std::nullopt;
}

/// Device inputs from {name: array on a CUDA device} (DLPack: torch or cupy tensors, or the
/// capsules their __dlpack__ made). No copy here: the run copies them on the device.
runtime::DeviceFeeds deviceFeedsFrom(const std::map<std::string, DeviceArray>& arrays, int device) {
  runtime::DeviceFeeds feeds;
  for (const auto& [name, a] : arrays) {
    std::optional<DataType> type = dataTypeOfDlpack(a.dtype());
    if (!type) {
      throw StatusError(invalidArgument(
          "input '{}': the DLPack element type (code {}, {} bits, {} lanes) is not an ONNX one",
          name, static_cast<int>(a.dtype().code), static_cast<int>(a.dtype().bits),
          static_cast<int>(a.dtype().lanes)));
    }
    if (a.device_id() != device) {
      throw StatusError(invalidArgument("input '{}' is on CUDA device {}, the session on device {}",
                                        name, a.device_id(), device));
    }
    runtime::DeviceInput in;
    in.dtype = *type;
    for (size_t d = 0; d < a.ndim(); ++d) in.dims.push_back(static_cast<int64_t>(a.shape(d)));
    in.data = a.data();
    feeds[name] = std::move(in);
  }
  return feeds;
}

/// Every given name must be an input of the graph (a typo is an error, not an ignored value).
void checkFeedNames(const ir::Model& model, const runtime::Feeds& feeds, const std::string& what) {
  std::vector<std::string> names;
  for (const ir::Value* in : model.graph->inputs()) names.push_back(in->name());
  for (const auto& [name, t] : feeds) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw StatusError(invalidArgument("{}: '{}' is not an input of the model (its inputs: {})",
                                        what, name, fmt::join(names, ", ")));
    }
  }
}

/// `feeds` completed with a seeded random value for every input without one or a default.
runtime::Feeds completeFeeds(const ir::Model& model, runtime::Feeds feeds, uint64_t seed,
                             const std::string& label) {
  auto made =
      runtime::makeInputs(*model.graph, feeds, runtime::randomInputOptions(*model.graph, seed));
  if (!made.isOk()) throw StatusError(made.status().withContext(label));
  for (runtime::InputValue& in : *made) feeds[in.name] = std::move(in.value);
  return feeds;
}

/// An execution result as [(name, kind, value)]: kind "tensor" (value a tensor tuple), "sequence"
/// (a list of them) or "none" (an empty optional).
nb::list resultToPython(runtime::ExecutionResult result) {
  nb::list out;
  for (size_t i = 0; i < result.names.size(); ++i) {
    runtime::OutputKind kind =
        i < result.kinds.size() ? result.kinds[i] : runtime::OutputKind::kTensor;
    if (kind == runtime::OutputKind::kNone) {
      out.append(nb::make_tuple(result.names[i], "none", nb::none()));
    } else if (kind == runtime::OutputKind::kSequence) {
      nb::list elems;
      for (kernels::HostTensor& t : result.sequences[i]) elems.append(tensorToPython(std::move(t)));
      out.append(nb::make_tuple(result.names[i], "sequence", elems));
    } else {
      out.append(
          nb::make_tuple(result.names[i], "tensor", tensorToPython(std::move(result.outputs[i]))));
    }
  }
  return out;
}

}  // namespace onnxopt::python
