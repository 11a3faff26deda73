// Tensor element types (TensorProto.DataType numbering), shared by the IR and the kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace onnxopt {

/// Tensor element types. The numbering is TensorProto.DataType's, so unknown future codes survive a
/// round trip as plain integers.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUint2 = 25,
  kInt2 = 26,
  kFloat6E2M3 = 27,
  kFloat6E3M2 = 28,
};

/// The largest DataType code onnxopt knows.
inline constexpr int32_t kMaxKnownDataType = 28;

/// Bits per element; 0 for kUndefined, kString and unknown codes.
int dataTypeBits(DataType type);
/// Bytes that `count` elements occupy in raw_data (sub-byte types are packed, rounded up); nullopt
/// when that number does not fit in int64 (a tensor that cannot exist: callers refuse it rather
/// than let the size wrap). 0 for types without a fixed width (string, undefined, unknown).
/// Every byte size computed from an element count goes through here.
std::optional<uint64_t> dataTypeStorageBytes(DataType type, uint64_t count);
/// The name used in the text form ("float", "int64", "bfloat16", ...); "dtype<N>" when unknown.
std::string dataTypeName(DataType type);
/// Inverse of dataTypeName; nullopt when the name is not a known type.
std::optional<DataType> dataTypeFromName(const std::string& name);
bool isKnownDataType(int32_t code);

}  // namespace onnxopt
