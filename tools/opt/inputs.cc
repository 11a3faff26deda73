#include "inputs.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <regex>

#include <fmt/format.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/runtime/kernel_bridge.h"
#include "onnxopt/support/half.h"

namespace onnxopt::tools {
namespace {

const std::map<std::string, DataType>& npyTypes();

StatusOr<kernels::HostTensor> readNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(StatusCode::kNotFound, "{}: cannot open", path);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) {
    return invalidArgument("{}: not a .npy file", path);
  }
  uint8_t major = static_cast<uint8_t>(data[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len =
        static_cast<uint8_t>(data[8]) | (static_cast<size_t>(static_cast<uint8_t>(data[9])) << 8);
    offset = 10;
  } else if (data.size() >= 12) {
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<uint8_t>(data[8 + i])) << (8 * i);
    offset = 12;
  }
  if (offset == 0 || offset + header_len > data.size())
    return invalidArgument("{}: bad .npy header", path);
  std::string header = data.substr(offset, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'"))) {
    return invalidArgument("{}: .npy header has no descr", path);
  }
  std::string descr = m[1];
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True"))) {
    return invalidArgument("{}: Fortran-ordered .npy files are not supported", path);
  }
  const auto& kTypes = npyTypes();
  auto type = kTypes.find(descr);
  if (type == kTypes.end()) return invalidArgument("{}: unsupported .npy dtype '{}'", path, descr);
  kernels::HostTensor t;
  t.dtype = type->second;
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) {
    return invalidArgument("{}: .npy header has no shape", path);
  }
  std::string dims = m[1];
  static const std::regex kNumber("\\d+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), kNumber), end; it != end; ++it) {
    t.dims.push_back(std::stoll(it->str()));
  }
  size_t bytes =
      static_cast<size_t>(t.numElements()) * static_cast<size_t>(dataTypeBits(t.dtype) / 8);
  if (offset + header_len + bytes != data.size()) {
    return invalidArgument("{}: .npy data has {} bytes, its shape needs {}", path,
                           data.size() - offset - header_len, bytes);
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
  return runtime::toHost(t);
}

StatusOr<kernels::HostTensor> randomInput(const ir::Value& input,
                                          const RandomInputOptions& options) {
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
    for (const ir::Dim& d : *type.shape) {
      t.dims.push_back(d.isKnown() ? d.value
                                   : (d.kind == ir::Dim::Kind::kParam ? options.symbolic_dim : 1));
    }
  }
  int bits = dataTypeBits(t.dtype);
  if (bits == 0 || bits % 8 != 0) {
    return invalidArgument("input '{}' of type {}: give it with --input", input.name(),
                           dataTypeName(t.dtype));
  }
  std::mt19937_64 rng(options.seed ^ std::hash<std::string>()(input.name()));
  std::normal_distribution<float> normal;
  IntRange range;
  if (auto it = options.int_ranges.find(input.name()); it != options.int_ranges.end()) {
    range = it->second;
  }
  std::uniform_int_distribution<int64_t> small(range.lo, range.hi);
  int64_t n = t.numElements();
  t.bytes.assign(static_cast<size_t>(n) * static_cast<size_t>(bits / 8), '\0');
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
        long long d = std::strtoll(item.c_str(), &end, 10);
        if (*end != '\0' || d < 0)
          return invalidArgument("--input-shape '{}': bad dim '{}'", spec, item);
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
    if (eq == std::string::npos || eq == 0)
      return invalidArgument("--input '{}': expected NAME=FILE", spec);
    ASSIGN_OR_RETURN(kernels::HostTensor t, readTensorFile(spec.substr(eq + 1)));
    feeds[spec.substr(0, eq)] = std::move(t);
  }
  return feeds;
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
