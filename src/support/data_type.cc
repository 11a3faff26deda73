#include "onnxopt/support/data_type.h"

#include <array>
#include <cstdint>

#include <fmt/format.h>

namespace onnxopt {

namespace {

struct TypeInfo {
  const char* name;
  int bits;
};

// Indexed by the TensorProto.DataType code.
constexpr std::array<TypeInfo, kMaxKnownDataType + 1> kTypeInfo = {{
    {"undefined", 0},      {"float", 32},       {"uint8", 8},          {"int8", 8},
    {"uint16", 16},        {"int16", 16},       {"int32", 32},         {"int64", 64},
    {"string", 0},         {"bool", 8},         {"float16", 16},       {"double", 64},
    {"uint32", 32},        {"uint64", 64},      {"complex64", 64},     {"complex128", 128},
    {"bfloat16", 16},      {"float8e4m3fn", 8}, {"float8e4m3fnuz", 8}, {"float8e5m2", 8},
    {"float8e5m2fnuz", 8}, {"uint4", 4},        {"int4", 4},           {"float4e2m1", 4},
    {"float8e8m0", 8},     {"uint2", 2},        {"int2", 2},           {"float6e2m3", 6},
    {"float6e3m2", 6},
}};

}  // namespace

bool isKnownDataType(int32_t code) {
  return code >= 0 && code <= kMaxKnownDataType;
}

int dataTypeBits(DataType type) {
  auto code = static_cast<int32_t>(type);
  return isKnownDataType(code) ? kTypeInfo[code].bits : 0;
}

std::optional<uint64_t> dataTypeStorageBytes(DataType type, uint64_t count) {
  auto bits = static_cast<uint64_t>(dataTypeBits(type));
  uint64_t total_bits = 0;
  if (__builtin_mul_overflow(count, bits, &total_bits)) return std::nullopt;
  uint64_t bytes = total_bits / 8 + (total_bits % 8 != 0 ? 1 : 0);
  if (bytes > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return bytes;
}

std::string dataTypeName(DataType type) {
  auto code = static_cast<int32_t>(type);
  if (isKnownDataType(code)) return kTypeInfo[code].name;
  return fmt::format("dtype{}", code);
}

std::optional<DataType> dataTypeFromName(const std::string& name) {
  for (int32_t code = 0; code <= kMaxKnownDataType; ++code) {
    if (name == kTypeInfo[code].name) return static_cast<DataType>(code);
  }
  return std::nullopt;
}

}  // namespace onnxopt
