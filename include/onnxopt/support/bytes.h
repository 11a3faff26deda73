// Reading little-endian values from possibly unaligned bytes (tensor data may be a view into a
// memory-mapped file at any offset).
#pragma once

#include <cstdint>
#include <cstring>

namespace onnxopt {

template <typename T>
T loadUnaligned(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace onnxopt
