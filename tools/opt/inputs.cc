#include "inputs.h"

#include <cmath>
#include <fstream>
#include <random>
#include <regex>

#include <fmt/format.h>

#include "onnxopt/io/model_io.h"
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

StatusOr<kernels::HostTensor> randomInput(
    const ir::Value& input, uint64_t seed,
    const std::map<std::string, std::vector<int64_t>>& shapes) {
  const ir::Type& type = input.type();
  if (!type.isTensor()) {
    return invalidArgument("input '{}' is not a tensor: give it with --input", input.name());
  }
  kernels::HostTensor t;
  t.dtype = type.elem_type;
  if (auto it = shapes.find(input.name()); it != shapes.end()) {
    t.dims = it->second;
  } else if (type.shape) {
    for (const ir::Dim& d : *type.shape) t.dims.push_back(d.isKnown() ? d.value : 1);
  }
  int bits = dataTypeBits(t.dtype);
  if (bits == 0 || bits % 8 != 0) {
    return invalidArgument("input '{}' of type {}: give it with --input", input.name(),
                           dataTypeName(t.dtype));
  }
  std::mt19937_64 rng(seed ^ std::hash<std::string>()(input.name()));
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> small(0, 3);
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
        t.set<uint8_t>(i, static_cast<uint8_t>(small(rng) & 1));
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
        t.set<int32_t>(i, small(rng));
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

std::string summarize(const std::string& name, const kernels::HostTensor& t) {
  std::string head = fmt::format("{}: {}[{}]", name, dataTypeName(t.dtype), fmt::join(t.dims, ","));
  int64_t n = t.numElements();
  auto at = [&](int64_t i) -> std::optional<double> {
    switch (t.dtype) {
      case DataType::kFloat:
        return t.get<float>(i);
      case DataType::kDouble:
        return t.get<double>(i);
      case DataType::kFloat16:
        return halfToFloat(t.get<uint16_t>(i));
      case DataType::kBfloat16:
        return bfloat16ToFloat(t.get<uint16_t>(i));
      case DataType::kBool:
      case DataType::kUint8:
        return t.get<uint8_t>(i);
      case DataType::kInt8:
        return t.get<int8_t>(i);
      case DataType::kInt16:
        return t.get<int16_t>(i);
      case DataType::kUint16:
        return t.get<uint16_t>(i);
      case DataType::kInt32:
        return t.get<int32_t>(i);
      case DataType::kUint32:
        return t.get<uint32_t>(i);
      case DataType::kInt64:
        return static_cast<double>(t.get<int64_t>(i));
      case DataType::kUint64:
        return static_cast<double>(t.get<uint64_t>(i));
      default:
        return std::nullopt;
    }
  };
  if (n == 0 || !at(0)) return head;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  std::vector<std::string> first;
  for (int64_t i = 0; i < n; ++i) {
    double v = *at(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    if (i < 6) first.push_back(fmt::format("{:.6g}", v));
  }
  return fmt::format("{}  min={:.6g} max={:.6g} mean={:.6g}  [{}{}]", head, lo, hi, sum / n,
                     fmt::join(first, ", "), n > 6 ? ", ..." : "");
}

}  // namespace onnxopt::tools
