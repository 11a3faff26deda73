// Building host tensors in kernel tests.
#pragma once

#include <cstdint>
#include <vector>

#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/support/half.h"

namespace onnxopt::kernels::test {

/// A tensor of `type` and `dims` holding `values`, converted the way a user would write them, for
/// the numeric types and bool; other types stay zero-filled (empty strings).
inline HostTensor tensorOf(DataType type, std::vector<int64_t> dims,
                           const std::vector<double>& values) {
  HostTensor t = HostTensor::zeros(type, std::move(dims));
  for (size_t j = 0; j < values.size() && static_cast<int64_t>(j) < t.numElements(); ++j) {
    auto i = static_cast<int64_t>(j);
    double v = values[j];
    switch (type) {
      case DataType::kFloat:
        t.set<float>(i, static_cast<float>(v));
        break;
      case DataType::kDouble:
        t.set<double>(i, v);
        break;
      case DataType::kFloat16:
        t.set<uint16_t>(i, floatToHalf(static_cast<float>(v)));
        break;
      case DataType::kBfloat16:
        t.set<uint16_t>(i, floatToBfloat16(static_cast<float>(v)));
        break;
      case DataType::kInt8:
        t.set<int8_t>(i, static_cast<int8_t>(v));
        break;
      case DataType::kInt16:
        t.set<int16_t>(i, static_cast<int16_t>(v));
        break;
      case DataType::kInt32:
        t.set<int32_t>(i, static_cast<int32_t>(v));
        break;
      case DataType::kInt64:
        t.set<int64_t>(i, static_cast<int64_t>(v));
        break;
      case DataType::kUint8:
        t.set<uint8_t>(i, static_cast<uint8_t>(v));
        break;
      case DataType::kUint16:
        t.set<uint16_t>(i, static_cast<uint16_t>(v));
        break;
      case DataType::kUint32:
        t.set<uint32_t>(i, static_cast<uint32_t>(v));
        break;
      case DataType::kUint64:
        t.set<uint64_t>(i, static_cast<uint64_t>(v));
        break;
      case DataType::kBool:
        t.set<uint8_t>(i, v != 0 ? 1 : 0);
        break;
      default:
        break;
    }
  }
  return t;
}

}  // namespace onnxopt::kernels::test
