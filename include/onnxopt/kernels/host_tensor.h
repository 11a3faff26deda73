// HostTensor and KernelAttrs: what CPU reference kernels see. Kernels know tensor descriptors only,
// never IR types (STYLE.md layering: kernels depend on support alone).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels {

/// A dense tensor in host memory. Numeric data is little-endian raw bytes (as ONNX's raw_data; bool
/// is one byte per element, sub-byte types packed); string tensors use `strings` instead.
struct HostTensor {
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  std::string bytes;
  std::vector<std::string> strings;

  /// A zero-filled tensor of `dtype` and `dims` (empty strings for string tensors).
  static HostTensor zeros(DataType dtype, std::vector<int64_t> dims);

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }

  /// Typed access. T must match the element size of dtype; data may be unaligned, so copy values
  /// out with get/set (memcpy) rather than dereferencing pointers.
  template <typename T>
  T get(int64_t i) const {
    T v;
    std::memcpy(&v, bytes.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    return v;
  }
  template <typename T>
  void set(int64_t i, T v) {
    std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
  }
};

/// The attribute values a kernel reads, by name.
struct KernelAttrs {
  std::map<std::string, int64_t> ints;
  std::map<std::string, float> floats;
  std::map<std::string, std::string> strings;
  std::map<std::string, std::vector<int64_t>> int_lists;
  std::map<std::string, std::vector<float>> float_lists;
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::vector<std::string>> string_lists;

  int64_t getInt(const std::string& name, int64_t fallback) const {
    auto it = ints.find(name);
    return it == ints.end() ? fallback : it->second;
  }
  float getFloat(const std::string& name, float fallback) const {
    auto it = floats.find(name);
    return it == floats.end() ? fallback : it->second;
  }
  std::string getString(const std::string& name, const std::string& fallback) const {
    auto it = strings.find(name);
    return it == strings.end() ? fallback : it->second;
  }
  std::optional<std::vector<int64_t>> getInts(const std::string& name) const {
    auto it = int_lists.find(name);
    if (it == int_lists.end()) return std::nullopt;
    return it->second;
  }
  const HostTensor* getTensor(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
  bool has(const std::string& name) const {
    return ints.count(name) || floats.count(name) || strings.count(name) || int_lists.count(name) ||
           float_lists.count(name) || tensors.count(name) || string_lists.count(name);
  }
};

}  // namespace onnxopt::kernels
