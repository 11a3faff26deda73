#include "inputs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/runtime/compare.h"

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

Status writeTensorPb(const std::string& path, const kernels::HostTensor& t) {
  kernels::HostTensor copy = t;
  return io::saveTensorFile(bridge::fromHost(std::move(copy)), path);
}

StatusOr<kernels::HostTensor> readTensorFile(const std::string& path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0) return readNpy(path);
  ASSIGN_OR_RETURN(ir::Tensor t, io::loadTensorFile(path));
  kernels::HostTensor h = bridge::toHost(t);
  if (h.dtype != DataType::kString) {
    ASSIGN_OR_RETURN(uint64_t bytes, checkedByteSize(h.dims, h.dtype, path));
    // Sub-byte types (int4, uint4, int2, float4e2m1) are packed, as in raw_data: checkedByteSize
    // counts one byte per element for them.
    if (int bits = dataTypeBits(h.dtype); bits > 0 && bits < 8) bytes = (bytes * bits + 7) / 8;
    if (bytes != h.bytes.size()) {
      return invalidArgument("{}: the tensor has {} bytes, its shape [{}] needs {}", path,
                             h.bytes.size(), fmt::join(h.dims, ","), bytes);
    }
  }
  return h;
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

Status checkPinnedShape(const ir::Value& input, const std::vector<int64_t>& dims) {
  return runtime::checkPinnedShape(input, dims, fmt::format("--input-shape {}", input.name()));
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
