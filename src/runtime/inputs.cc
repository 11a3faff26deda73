#include "onnxopt/runtime/inputs.h"

#include <algorithm>
#include <cctype>
#include <new>
#include <optional>
#include <random>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnxopt/support/half.h"

namespace onnxopt::runtime {

StatusOr<uint64_t> checkedByteSize(const std::vector<int64_t>& dims, DataType dtype,
                                   const std::string& what) {
  int bits = dataTypeBits(dtype);
  uint64_t n = 1;
  bool overflow = false;
  for (int64_t d : dims) {
    if (d < 0)
      return invalidArgument("{}: negative dim {} in shape [{}]", what, d, fmt::join(dims, ","));
    overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n);
  }
  uint64_t bytes = 0;
  overflow |=
      __builtin_mul_overflow(n, static_cast<uint64_t>(bits > 0 ? (bits + 7) / 8 : 1), &bytes);
  if (overflow) {
    return makeError(StatusCode::kResourceExhausted,
                     "{}: shape [{}] has more elements than fit in 64 bits", what,
                     fmt::join(dims, ","));
  }
  if (bytes > kMaxInputBytes) {
    return makeError(StatusCode::kResourceExhausted,
                     "{}: shape [{}] of {} needs {} bytes, more than the limit of {} GiB per input",
                     what, fmt::join(dims, ","), dataTypeName(dtype), bytes, kMaxInputBytes >> 30);
  }
  return bytes;
}

StatusOr<kernels::HostTensor> randomInput(const ir::Value& input, const RandomInputOptions& options,
                                          std::vector<std::string>* chosen) {
  const auto& shapes = options.shapes;
  const ir::Type& type = input.type();
  if (!type.isTensor()) {
    return invalidArgument("input '{}' is not a tensor: give it with --input", input.name());
  }
  kernels::HostTensor t;
  t.dtype = type.elem_type;
  if (auto it = shapes.find(input.name()); it != shapes.end()) {
    t.dims = it->second;
  } else if (type.shape) {
    auto spatial = options.spatial.find(input.name());
    for (size_t axis = 0; axis < type.shape->size(); ++axis) {
      const ir::Dim& d = (*type.shape)[axis];
      if (d.isKnown()) {
        t.dims.push_back(d.value);
        continue;
      }
      int64_t size = d.kind == ir::Dim::Kind::kParam ? options.symbolic_dim : 1;
      if (auto sym = options.symbols.find(d.param);
          d.kind == ir::Dim::Kind::kParam && sym != options.symbols.end()) {
        size = sym->second;
      }
      if (spatial != options.spatial.end() && axis >= firstSpatialAxis(type.shape->size())) {
        size = spatial->second;
      }
      t.dims.push_back(size);
      if (chosen != nullptr) {
        std::string label = d.param.empty() ? fmt::format("dim {}", axis) : d.param;
        chosen->push_back(fmt::format("{}={}", label, size));
      }
    }
  }
  int bits = dataTypeBits(t.dtype);
  if (bits == 0 || bits % 8 != 0) {
    return invalidArgument("input '{}' of type {}: give it with --input", input.name(),
                           dataTypeName(t.dtype));
  }
  ASSIGN_OR_RETURN(uint64_t bytes,
                   checkedByteSize(t.dims, t.dtype, fmt::format("input '{}'", input.name())));
  std::mt19937_64 rng(options.seed ^ std::hash<std::string>()(input.name()));
  std::normal_distribution<float> normal;
  IntRange range;
  if (auto it = options.int_ranges.find(input.name()); it != options.int_ranges.end()) {
    range = it->second;
  }
  std::uniform_int_distribution<int64_t> small(range.lo, range.hi);
  int64_t n = static_cast<int64_t>(bytes / static_cast<uint64_t>(bits / 8));
  try {
    t.bytes.assign(static_cast<size_t>(bytes), '\0');
  } catch (const std::bad_alloc&) {
    return makeError(StatusCode::kResourceExhausted, "input '{}': cannot allocate {} bytes",
                     input.name(), bytes);
  }
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DataType::kFloat:
        t.set<float>(i, normal(rng));
        break;
      case DataType::kDouble:
        t.set<double>(i, normal(rng));
        break;
      case DataType::kFloat16:
        t.set<uint16_t>(i, floatToHalf(normal(rng)));
        break;
      case DataType::kBfloat16:
        t.set<uint16_t>(i, floatToBfloat16(normal(rng)));
        break;
      case DataType::kBool:
        t.set<uint8_t>(i, static_cast<uint8_t>(rng() & 1));
        break;
      case DataType::kInt8:
        t.set<int8_t>(i, static_cast<int8_t>(small(rng)));
        break;
      case DataType::kUint8:
        t.set<uint8_t>(i, static_cast<uint8_t>(small(rng)));
        break;
      case DataType::kInt16:
        t.set<int16_t>(i, static_cast<int16_t>(small(rng)));
        break;
      case DataType::kUint16:
        t.set<uint16_t>(i, static_cast<uint16_t>(small(rng)));
        break;
      case DataType::kInt32:
        t.set<int32_t>(i, static_cast<int32_t>(small(rng)));
        break;
      case DataType::kUint32:
        t.set<uint32_t>(i, static_cast<uint32_t>(small(rng)));
        break;
      case DataType::kInt64:
        t.set<int64_t>(i, small(rng));
        break;
      case DataType::kUint64:
        t.set<uint64_t>(i, static_cast<uint64_t>(small(rng)));
        break;
      default:
        return invalidArgument("input '{}' of type {}: give it with --input", input.name(),
                               dataTypeName(t.dtype));
    }
  }
  return t;
}

std::map<std::string, int64_t> symbolSizes(const ir::Graph& graph,
                                           const RandomInputOptions& options) {
  std::map<std::string, int64_t> sizes;
  for (const ir::Value* in : graph.inputs()) {
    if (in->initializer() != nullptr || !in->type().isTensor() || !in->type().shape) continue;
    const auto& dims = *in->type().shape;
    auto pinned = options.shapes.find(in->name());
    auto spatial = options.spatial.find(in->name());
    for (size_t axis = 0; axis < dims.size(); ++axis) {
      if (dims[axis].kind != ir::Dim::Kind::kParam || dims[axis].param.empty()) continue;
      int64_t size = options.symbolic_dim;
      if (pinned != options.shapes.end()) {
        if (axis >= pinned->second.size()) continue;
        size = pinned->second[axis];
      } else if (spatial != options.spatial.end() && axis >= firstSpatialAxis(dims.size())) {
        size = spatial->second;
      }
      sizes.emplace(dims[axis].param, size);
    }
  }
  return sizes;
}

namespace {

/// The size dim `axis` of `v` will have in the run: a known dim, or a graph input's symbol;
/// nullopt otherwise.
std::optional<int64_t> runSize(const ir::Value* v, int64_t axis,
                               const std::map<std::string, int64_t>& symbols) {
  if (v == nullptr || !v->type().isTensor() || !v->type().shape) return std::nullopt;
  const auto& dims = *v->type().shape;
  if (axis < 0) axis += static_cast<int64_t>(dims.size());
  if (axis < 0 || axis >= static_cast<int64_t>(dims.size())) return std::nullopt;
  const ir::Dim& d = dims[static_cast<size_t>(axis)];
  if (d.isKnown()) return d.value;
  if (d.kind == ir::Dim::Kind::kParam) {
    if (auto it = symbols.find(d.param); it != symbols.end()) return it->second;
  }
  return std::nullopt;
}

int64_t intAttr(const ir::Node& n, const char* name, int64_t fallback) {
  const ir::Attribute* a = n.findAttribute(name);
  return a != nullptr ? a->i : fallback;
}

/// What an integer input's consumer requires of its values.
enum class IntUse { kNone, kIndex, kLength, kShapeOfOnes };

}  // namespace

std::map<std::string, IntRange> inferIntRanges(const ir::Graph& graph) {
  return inferIntRanges(graph, RandomInputOptions{});
}

std::map<std::string, IntRange> inferIntRanges(const ir::Graph& graph,
                                               const RandomInputOptions& options) {
  std::map<std::string, int64_t> symbols = symbolSizes(graph, options);
  std::map<std::string, IntRange> ranges;
  struct Bound {
    IntUse use = IntUse::kNone;
    std::optional<int64_t> hi;  ///< an index's table size, or a length's time dim
  };
  // What consumers of `v` require, followed through value-preserving ops: Gather indices within
  // their table (and RoiAlign's batch indices within the batch), sequence lengths at most the time
  // dim of the sequence they describe, an Expand shape of ones (which broadcasts with any input).
  auto bound = [&](const ir::Value* v, auto& self, int depth) -> Bound {
    Bound out;
    if (depth > 4) return out;
    auto merge = [&](IntUse use, std::optional<int64_t> hi) {
      if (out.use == IntUse::kNone || use == out.use) {
        out.use = use;
        if (hi && *hi >= 0) out.hi = out.hi ? std::min(*out.hi, *hi) : *hi;
      }
    };
    for (const ir::Use& use : v->uses()) {
      const ir::Node& n = *use.user;
      const std::string& op = n.opType();
      if ((op == "Gather" || op == "GatherElements") && use.index == 1) {
        std::optional<int64_t> b = runSize(n.input(0), intAttr(n, "axis", 0), symbols);
        if (b && *b > 0) merge(IntUse::kIndex, b);
      } else if (op == "RoiAlign" && use.index == 2) {
        std::optional<int64_t> b = runSize(n.input(0), 0, symbols);
        merge(IntUse::kIndex, b && *b > 0 ? b : std::optional<int64_t>(1));
      } else if ((op == "LSTM" || op == "GRU" || op == "RNN") && use.index == 4) {
        merge(IntUse::kLength, runSize(n.input(0), intAttr(n, "layout", 0) == 0 ? 0 : 1, symbols));
      } else if (op == "ReverseSequence" && use.index == 1) {
        merge(IntUse::kLength, runSize(n.input(0), intAttr(n, "time_axis", 0), symbols));
      } else if (op == "Expand" && use.index == 1) {
        merge(IntUse::kShapeOfOnes, std::nullopt);
      } else if ((op == "Cast" || op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" ||
                  op == "Flatten") &&
                 use.index == 0 && n.output(0) != nullptr) {
        Bound b = self(n.output(0), self, depth + 1);
        if (b.use != IntUse::kNone) merge(b.use, b.hi);
      }
    }
    return out;
  };
  for (const ir::Value* in : graph.inputs()) {
    if (!in->type().isTensor()) continue;
    DataType t = in->type().elem_type;
    bool integer = t == DataType::kInt8 || t == DataType::kInt16 || t == DataType::kInt32 ||
                   t == DataType::kInt64 || t == DataType::kUint8 || t == DataType::kUint16 ||
                   t == DataType::kUint32 || t == DataType::kUint64;
    if (!integer) continue;
    std::string lower = in->name();
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    Bound b = bound(in, bound, 0);
    if (b.use == IntUse::kIndex && b.hi) {
      ranges[in->name()] = {0, *b.hi - 1};
    } else if (b.use == IntUse::kLength) {
      // A length of at least 1 and at most T; 1 when T is not known before the run.
      int64_t hi = b.hi ? std::max<int64_t>(*b.hi, 1) : 1;
      ranges[in->name()] = {1, hi};
    } else if (b.use == IntUse::kShapeOfOnes) {
      ranges[in->name()] = {1, 1};
    } else if (lower.find("mask") != std::string::npos) {
      ranges[in->name()] = {0, 1};
    } else if (lower.find("len") != std::string::npos) {
      ranges[in->name()] = {1, 4};
    }
  }
  return ranges;
}

size_t firstSpatialAxis(size_t rank) {
  return rank <= 2 ? 1 : 2;
}

int64_t maxSpatialSize(size_t rank) {
  return rank <= 3 ? 16384 : 224;
}

std::map<std::string, int64_t> spatialInputSizes(const ir::Graph& graph) {
  static const std::set<std::string> kWindowed = {
      "Conv", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool", "ConvTranspose"};
  // Every windowed op shrinks its input by at most stride * kernel; the product over the graph
  // bounds what a chain of them needs.
  uint64_t strides = 1;
  int64_t kernel = 1;
  // Windowed ops in If/Loop/Scan bodies count too: they see the outer inputs directly.
  for (const ir::Node* n : graph.allNodesRecursive()) {
    if (!kWindowed.count(n->opType()) || n->opType() == "ConvTranspose") continue;
    int64_t stride = 1;
    if (const ir::Attribute* a = n->findAttribute("strides")) {
      for (int64_t v : a->ints) stride = std::max(stride, v);
    }
    std::vector<int64_t> dilations(8, 1);
    if (const ir::Attribute* a = n->findAttribute("dilations")) {
      for (size_t i = 0; i < a->ints.size() && i < dilations.size(); ++i) dilations[i] = a->ints[i];
    }
    std::vector<int64_t> kernel_shape;
    if (const ir::Attribute* a = n->findAttribute("kernel_shape")) {
      kernel_shape = a->ints;
    } else if (n->numInputs() > 1 && n->input(1) != nullptr && n->input(1)->type().isTensor() &&
               n->input(1)->type().shape) {  // a Conv's kernel is its weight's spatial shape
      const auto& w = *n->input(1)->type().shape;
      for (size_t i = 2; i < w.size(); ++i) kernel_shape.push_back(w[i].isKnown() ? w[i].value : 1);
    }
    for (size_t i = 0; i < kernel_shape.size(); ++i) {
      int64_t dil = i < dilations.size() ? dilations[i] : 1;
      if (kernel_shape[i] > 0 && dil > 0 && kernel_shape[i] < 4096 && dil < 4096) {
        kernel = std::max(kernel, (kernel_shape[i] - 1) * dil + 1);
      }
    }
    if (stride > 0 && stride < 4096) strides = std::min<uint64_t>(strides * stride, 1u << 20);
  }
  std::map<std::string, int64_t> sizes;
  for (const ir::Value* in : graph.inputs()) {
    if (in->initializer() != nullptr || !in->type().isTensor() || !in->type().shape) continue;
    const auto& dims = *in->type().shape;
    if (dims.size() < 2 || dims.size() > 5) continue;
    bool dynamic = false;
    for (size_t axis = firstSpatialAxis(dims.size()); axis < dims.size(); ++axis) {
      dynamic |= !dims[axis].isKnown();
    }
    if (!dynamic) continue;
    // Forward from the input, through any ops, to a windowed one.
    std::vector<const ir::Value*> work{in};
    std::set<const ir::Node*> seen;
    bool reaches = false;
    while (!work.empty() && !reaches && seen.size() < 4096) {
      const ir::Value* v = work.back();
      work.pop_back();
      for (const ir::Use& use : v->uses()) {
        const ir::Node* user = use.user;
        if (user == nullptr || user == graph.returnNode() || !seen.insert(user).second) continue;
        if (kWindowed.count(user->opType())) {
          reaches = true;
          break;
        }
        for (const ir::Value* o : user->outputs()) {
          if (o != nullptr) work.push_back(o);
        }
      }
    }
    if (!reaches) continue;
    uint64_t need = strides * static_cast<uint64_t>(kernel);
    int64_t cap = maxSpatialSize(dims.size());
    sizes[in->name()] =
        static_cast<int64_t>(std::clamp<uint64_t>(need, 32, static_cast<uint64_t>(cap)));
  }
  return sizes;
}

Status checkGivenInput(const ir::Value& input, const kernels::HostTensor& t,
                       const std::string& source) {
  const ir::Type& type = input.type();
  if (!type.isTensor()) return Status::ok();
  if (type.elem_type != DataType::kUndefined && t.dtype != type.elem_type) {
    return invalidArgument("{}: holds {}, but input '{}' is {}", source, dataTypeName(t.dtype),
                           input.name(), dataTypeName(type.elem_type));
  }
  if (!type.shape) return Status::ok();
  const auto& dims = *type.shape;
  bool ok = dims.size() == t.dims.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) {
    ok = !dims[i].isKnown() || dims[i].value == t.dims[i];
  }
  if (!ok) {
    return invalidArgument("{}: has shape [{}], but input '{}' is declared {}", source,
                           fmt::join(t.dims, ","), input.name(), ir::typeToString(type));
  }
  return Status::ok();
}

Status checkPinnedShape(const ir::Value& input, const std::vector<int64_t>& dims,
                        const std::string& what) {
  const ir::Type& type = input.type();
  if (type.isTensor()) {
    RETURN_IF_ERROR(checkedByteSize(dims, type.elem_type, what).status());
  }
  if (!type.isTensor() || !type.shape) return Status::ok();
  const auto& declared = *type.shape;
  bool ok = declared.size() == dims.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) {
    ok = !declared[i].isKnown() || declared[i].value == dims[i];
  }
  if (!ok) {
    return invalidArgument("{}: shape [{}] does not fit the declared {}", what,
                           fmt::join(dims, ","), ir::typeToString(type));
  }
  return Status::ok();
}

StatusOr<std::vector<InputValue>> makeInputs(const ir::Graph& graph, const Feeds& given,
                                             const RandomInputOptions& options) {
  std::vector<InputValue> inputs;
  for (const ir::Value* in : graph.inputs()) {
    if (in->initializer() != nullptr) continue;
    InputValue v;
    v.name = in->name();
    if (auto it = given.find(in->name()); it != given.end()) {
      v.value = it->second;
    } else {
      ASSIGN_OR_RETURN(v.value, randomInput(*in, options, &v.dynamic_dims));
    }
    inputs.push_back(std::move(v));
  }
  return inputs;
}

RandomInputOptions randomInputOptions(const ir::Graph& graph, uint64_t seed,
                                      std::map<std::string, std::vector<int64_t>> shapes,
                                      int64_t symbolic_dim) {
  RandomInputOptions options;
  options.seed = seed;
  options.shapes = std::move(shapes);
  options.symbolic_dim = symbolic_dim;
  options.spatial = spatialInputSizes(graph);
  deriveInputSizes(graph, options);
  return options;
}

void deriveInputSizes(const ir::Graph& graph, RandomInputOptions& options) {
  options.symbols = symbolSizes(graph, options);
  options.int_ranges = inferIntRanges(graph, options);
}

}  // namespace onnxopt::runtime
