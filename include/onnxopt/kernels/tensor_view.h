// TensorView: a non-owning descriptor of a tensor's memory (element type, dims, strides, pointer,
// host or device), beside the owning HostTensor. It is what a kernel's arguments hold (the CUDA
// kernels' Args structs, a plan's tensor slots in an arena), so that a kernel reads a slice or a
// transposed tensor without a copy and the same descriptor describes host and device memory.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/support/data_type.h"

namespace onnxopt::kernels {

/// Where the memory a view points at lives.
enum class MemoryKind { kHost, kDevice };

/// Row-major (C order) strides in elements of a tensor of `dims`: the last dim's stride is 1.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& dims);

/// A view of `dims` elements of `dtype` at `data`, element (i0, i1, ...) at element offset
/// i0 * strides[0] + i1 * strides[1] + .... Strides count elements, not bytes (a broadcast dim has
/// stride 0); sub-byte types (int4, float4) are packed and only their contiguous views are
/// meaningful. A view of a string tensor points at its std::string elements (host memory only).
/// `Pointer` is void* (TensorView) or const void* (ConstTensorView); a TensorView converts to a
/// ConstTensorView.
template <typename Pointer>
struct BasicTensorView {
  static_assert(std::is_same_v<Pointer, void*> || std::is_same_v<Pointer, const void*>);

  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;  ///< in elements, one per dim
  Pointer data = nullptr;
  MemoryKind memory = MemoryKind::kHost;

  BasicTensorView() = default;
  BasicTensorView(DataType dtype_, std::vector<int64_t> dims_, std::vector<int64_t> strides_,
                  Pointer data_, MemoryKind memory_ = MemoryKind::kHost)
      : dtype(dtype_),
        dims(std::move(dims_)),
        strides(std::move(strides_)),
        data(data_),
        memory(memory_) {}
  /// A mutable view reads as a const one.
  template <typename Other>
  requires(std::is_same_v<Pointer, const void*>&& std::is_same_v<Other, void*>)
      BasicTensorView(const BasicTensorView<Other>& other)  // NOLINT(google-explicit-constructor)
      : BasicTensorView(other.dtype, other.dims, other.strides, other.data, other.memory) {}

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }

  /// Whether the elements lie in row-major order without gaps (strides of size-1 dims do not
  /// matter; an empty tensor is contiguous).
  bool isContiguous() const {
    if (strides.size() != dims.size()) return false;
    int64_t expected = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      if (dims[i] == 0) return true;
      if (dims[i] != 1 && strides[i] != expected) return false;
      expected *= dims[i];
    }
    return true;
  }

  /// The element offset of `index` (one coordinate per dim, not checked).
  int64_t offsetOf(const std::vector<int64_t>& index) const {
    int64_t offset = 0;
    for (size_t i = 0; i < index.size() && i < strides.size(); ++i) offset += index[i] * strides[i];
    return offset;
  }
};

using TensorView = BasicTensorView<void*>;
using ConstTensorView = BasicTensorView<const void*>;

/// A contiguous host view of `tensor`'s data (its bytes, or its strings for a string tensor).
/// Valid while the tensor lives and its storage is not resized.
TensorView viewOf(HostTensor& tensor);
ConstTensorView viewOf(const HostTensor& tensor);

}  // namespace onnxopt::kernels
