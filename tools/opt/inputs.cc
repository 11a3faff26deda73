#include "inputs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <set>

#include <fmt/format.h>

#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/support/half.h"

namespace onnxopt::tools {
namespace {

const std::map<std::string, DataType>& npyTypes();

/// The value of `key` in a .npy header dict (`{'descr': '<f4', 'fortran_order': False,
/// 'shape': (2, 3), }`): the text after the colon up to the end of the value (a quoted string, a
/// parenthesized tuple or a word). nullopt when the key is missing or the value malformed.
std::optional<std::string> npyField(const std::string& header, const std::string& key) {
  size_t k = std::string::npos;
  for (const char* q : {"'", "\""}) {
    k = header.find(q + key + q);
    if (k != std::string::npos) break;
  }
  if (k == std::string::npos) return std::nullopt;
  size_t i = header.find(':', k + key.size() + 2);
  if (i == std::string::npos) return std::nullopt;
  ++i;
  while (i < header.size() && std::isspace(static_cast<unsigned char>(header[i]))) ++i;
  if (i >= header.size()) return std::nullopt;
  char open = header[i];
  if (open == '\'' || open == '"') {
    size_t close = header.find(open, i + 1);
    if (close == std::string::npos) return std::nullopt;
    return header.substr(i + 1, close - i - 1);
  }
  if (open == '(') {
    size_t close = header.find(')', i + 1);
    if (close == std::string::npos) return std::nullopt;
    return header.substr(i + 1, close - i - 1);
  }
  size_t end = i;
  while (end < header.size() && std::isalnum(static_cast<unsigned char>(header[end]))) ++end;
  return header.substr(i, end - i);
}

StatusOr<kernels::HostTensor> readNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(StatusCode::kNotFound, "{}: cannot open", path);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) {
    return invalidArgument("{}: not a .npy file", path);
  }
  uint8_t major = static_cast<uint8_t>(data[6]);
  uint64_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len =
        static_cast<uint8_t>(data[8]) | (static_cast<uint64_t>(static_cast<uint8_t>(data[9])) << 8);
    offset = 10;
  } else if ((major == 2 || major == 3) && data.size() >= 12) {
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<uint64_t>(static_cast<uint8_t>(data[8 + i])) << (8 * i);
    offset = 12;
  } else if (major != 2 && major != 3) {
    return invalidArgument("{}: unsupported .npy format version {}", path, major);
  }
  if (offset == 0 || offset + header_len > data.size()) {
    return invalidArgument("{}: bad .npy header: its length runs past the end of the file", path);
  }
  std::string header = data.substr(offset, header_len);
  auto descr = npyField(header, "descr");
  if (!descr) return invalidArgument("{}: bad .npy header: no 'descr'", path);
  if (auto order = npyField(header, "fortran_order"); order && *order == "True") {
    return invalidArgument("{}: Fortran-ordered .npy files are not supported", path);
  }
  const auto& kTypes = npyTypes();
  auto type = kTypes.find(*descr);
  if (type == kTypes.end()) return invalidArgument("{}: unsupported .npy dtype '{}'", path, *descr);
  kernels::HostTensor t;
  t.dtype = type->second;
  auto shape = npyField(header, "shape");
  if (!shape) return invalidArgument("{}: bad .npy header: no 'shape' tuple", path);
  for (size_t start = 0; start < shape->size();) {
    size_t comma = shape->find(',', start);
    if (comma == std::string::npos) comma = shape->size();
    std::string item = shape->substr(start, comma - start);
    start = comma + 1;
    size_t b = item.find_first_not_of(" \t\n"), e = item.find_last_not_of(" \t\nL");
    if (b == std::string::npos) continue;  // the empty item after a trailing comma
    item = item.substr(b, e - b + 1);
    int64_t d = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (ec == std::errc::result_out_of_range) {
      return invalidArgument("{}: bad .npy header: shape dim '{}' is too large", path, item);
    }
    if (ec != std::errc() || ptr != item.data() + item.size() || d < 0) {
      return invalidArgument("{}: bad .npy header: shape dim '{}' is not a size", path, item);
    }
    t.dims.push_back(d);
  }
  ASSIGN_OR_RETURN(uint64_t bytes, checkedByteSize(t.dims, t.dtype, path));
  if (offset + header_len + bytes != data.size()) {
    return invalidArgument("{}: .npy data has {} bytes, its shape [{}] needs {}", path,
                           data.size() - offset - header_len, fmt::join(t.dims, ","), bytes);
  }
  t.bytes = data.substr(offset + header_len);
  return t;
}

}  // namespace

namespace {
const std::map<std::string, DataType>& npyTypes() {
  static const std::map<std::string, DataType> kTypes = {
      {"<f4", DataType::kFloat},  {"<f8", DataType::kDouble}, {"<f2", DataType::kFloat16},
      {"|i1", DataType::kInt8},   {"<i2", DataType::kInt16},  {"<i4", DataType::kInt32},
      {"<i8", DataType::kInt64},  {"|u1", DataType::kUint8},  {"<u2", DataType::kUint16},
      {"<u4", DataType::kUint32}, {"<u8", DataType::kUint64}, {"|b1", DataType::kBool}};
  return kTypes;
}
}  // namespace

Status writeNpy(const std::string& path, const kernels::HostTensor& t) {
  std::string descr;
  for (const auto& [d, type] : npyTypes()) {
    if (type == t.dtype) descr = d;
  }
  if (descr.empty())
    return invalidArgument("{}: cannot write {} as .npy", path, dataTypeName(t.dtype));
  std::string shape;
  for (int64_t d : t.dims) shape += std::to_string(d) + ",";
  if (t.dims.size() > 1) shape.pop_back();
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  header.append(63 - (10 + header.size()) % 64, ' ');  // pad so that the data starts 64-aligned
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out += t.bytes;
  return io::writeFileAtomically(path, out);
}

StatusOr<kernels::HostTensor> readTensorFile(const std::string& path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0) return readNpy(path);
  ASSIGN_OR_RETURN(ir::Tensor t, io::loadTensorFile(path));
  kernels::HostTensor h = bridge::toHost(t);
  if (h.dtype != DataType::kString) {
    ASSIGN_OR_RETURN(uint64_t bytes, checkedByteSize(h.dims, h.dtype, path));
    if (bytes != h.bytes.size()) {
      return invalidArgument("{}: the tensor has {} bytes, its shape [{}] needs {}", path,
                             h.bytes.size(), fmt::join(h.dims, ","), bytes);
    }
  }
  return h;
}

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

std::map<std::string, IntRange> inferIntRanges(const ir::Graph& graph) {
  std::map<std::string, IntRange> ranges;
  // Follows `v` through value-preserving ops to a Gather that uses it as indices.
  auto gatherBound = [](const ir::Value* v, auto& self, int depth) -> std::optional<int64_t> {
    if (depth > 4) return std::nullopt;
    std::optional<int64_t> bound;
    for (const ir::Use& use : v->uses()) {
      const ir::Node& n = *use.user;
      const std::string& op = n.opType();
      std::optional<int64_t> b;
      if ((op == "Gather" || op == "GatherElements") && use.index == 1) {
        const ir::Value* data = n.input(0);
        int64_t axis = 0;
        if (const ir::Attribute* a = n.findAttribute("axis")) axis = a->i;
        if (data != nullptr && data->type().isTensor() && data->type().shape) {
          const auto& dims = *data->type().shape;
          if (axis < 0) axis += static_cast<int64_t>(dims.size());
          if (axis >= 0 && axis < static_cast<int64_t>(dims.size()) &&
              dims[static_cast<size_t>(axis)].isKnown()) {
            b = dims[static_cast<size_t>(axis)].value;
          }
        }
      } else if ((op == "Cast" || op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" ||
                  op == "Flatten") &&
                 use.index == 0 && n.output(0) != nullptr) {
        b = self(n.output(0), self, depth + 1);
      }
      if (b && *b > 0) bound = bound ? std::min(*bound, *b) : *b;
    }
    return bound;
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
    if (auto bound = gatherBound(in, gatherBound, 0)) {
      ranges[in->name()] = {0, *bound - 1};
    } else if (lower.find("mask") != std::string::npos) {
      ranges[in->name()] = {0, 1};
    } else if (lower.find("len") != std::string::npos) {
      ranges[in->name()] = {1, 4};
    }
  }
  return ranges;
}

StatusOr<std::map<std::string, std::vector<int64_t>>> parseShapeSpecs(
    const std::vector<std::string>& specs) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalidArgument("--input-shape '{}': expected NAME=d0,d1,...", spec);
    std::vector<int64_t> dims;
    std::string list = spec.substr(eq + 1);
    for (size_t start = 0; start <= list.size();) {
      size_t comma = list.find(',', start);
      std::string item =
          list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!item.empty()) {
        char* end = nullptr;
        errno = 0;
        long long d = std::strtoll(item.c_str(), &end, 10);
        if (*end != '\0' || d < 0 || !std::isdigit(static_cast<unsigned char>(item[0])))
          return invalidArgument("--input-shape '{}': bad dim '{}'", spec, item);
        if (errno == ERANGE)
          return invalidArgument("--input-shape '{}': dim '{}' is too large", spec, item);
        dims.push_back(d);
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    shapes[spec.substr(0, eq)] = dims;
  }
  return shapes;
}

StatusOr<std::map<std::string, kernels::HostTensor>> readInputSpecs(
    const std::vector<std::string>& specs) {
  std::map<std::string, kernels::HostTensor> feeds;
  for (const std::string& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return invalidArgument("--input '{}': expected NAME=FILE", spec);
    ASSIGN_OR_RETURN(kernels::HostTensor t, readTensorFile(spec.substr(eq + 1)));
    feeds[spec.substr(0, eq)] = std::move(t);
  }
  return feeds;
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
  for (const ir::Node* n : graph) {
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

Status checkInputNames(const ir::Graph& graph, const std::vector<std::string>& specs,
                       const char* flag) {
  for (const std::string& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) continue;  // the parsers say what is wrong
    std::string name = spec.substr(0, eq);
    bool known = false;
    std::vector<std::string> names;
    for (const ir::Value* in : graph.inputs()) {
      known |= in->name() == name;
      names.push_back("'" + in->name() + "'");
    }
    if (!known) {
      return invalidArgument(
          "{} {}: the model has no input '{}' (its inputs: {})", flag, spec, name,
          names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
    }
  }
  return Status::ok();
}

Status checkGivenInput(const ir::Value& input, const kernels::HostTensor& t,
                       const std::string& file) {
  const ir::Type& type = input.type();
  if (!type.isTensor()) return Status::ok();
  if (type.elem_type != DataType::kUndefined && t.dtype != type.elem_type) {
    return invalidArgument("{}: holds {}, but input '{}' is {}", file, dataTypeName(t.dtype),
                           input.name(), dataTypeName(type.elem_type));
  }
  if (!type.shape) return Status::ok();
  const auto& dims = *type.shape;
  bool ok = dims.size() == t.dims.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) {
    ok = !dims[i].isKnown() || dims[i].value == t.dims[i];
  }
  if (!ok) {
    return invalidArgument("{}: has shape [{}], but input '{}' is declared {}", file,
                           fmt::join(t.dims, ","), input.name(), ir::typeToString(type));
  }
  return Status::ok();
}

Status checkPinnedShape(const ir::Value& input, const std::vector<int64_t>& dims) {
  const ir::Type& type = input.type();
  std::string what = fmt::format("--input-shape {}", input.name());
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

std::string inputFileOf(const std::vector<std::string>& specs, const std::string& name) {
  for (const std::string& spec : specs) {
    if (spec.size() > name.size() && spec.compare(0, name.size(), name) == 0 &&
        spec[name.size()] == '=') {
      return spec.substr(name.size() + 1);
    }
  }
  return "";
}

std::string summarize(const std::string& name, const kernels::HostTensor& t) {
  std::string head = fmt::format("{}: {}[{}]", name, dataTypeName(t.dtype), fmt::join(t.dims, ","));
  int64_t n = t.numElements();
  auto values = runtime::tensorAsDoubles(t);
  if (n == 0 || !values) return head;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  std::vector<std::string> first;
  for (int64_t i = 0; i < n; ++i) {
    double v = (*values)[static_cast<size_t>(i)];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    if (i < 6) first.push_back(fmt::format("{:.6g}", v));
  }
  return fmt::format("{}  min={:.6g} max={:.6g} mean={:.6g}  [{}{}]", head, lo, hi, sum / n,
                     fmt::join(first, ", "), n > 6 ? ", ..." : "");
}

}  // namespace onnxopt::tools
