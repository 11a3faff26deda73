// Shared machinery of the CPU reference kernels: the kernel context and signature, element traits
// and the dtype-dispatch helper, safe numeric conversions, output allocation with the size guard,
// numpy-style broadcasting, and helpers for axes and int64 list inputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/kernels/tensor_view.h"  // contiguousStrides
#include "onnxopt/support/data_type.h"
#include "onnxopt/support/half.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels::ref {

using Dims = std::vector<int64_t>;
using Outputs = std::vector<HostTensor>;

/// What one kernel invocation sees. Inputs have been validated (dims non-negative, byte counts
/// matching) before any kernel runs.
struct KernelContext {
  const std::string& op;
  int64_t opset;
  const std::vector<const HostTensor*>& inputs;
  const KernelAttrs& attrs;
  size_t num_outputs;

  size_t numInputs() const { return inputs.size(); }
  /// Input i, or nullptr when omitted or past the end.
  const HostTensor* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
};

using KernelFn = StatusOr<Outputs> (*)(const KernelContext&);

/// Largest output a kernel may produce, in bytes.
inline constexpr uint64_t kMaxOutputBytes = uint64_t{1} << 31;

/// The product of dims[from, to) (1 for an empty range): the outer/inner extents around an axis.
inline int64_t dimProduct(const std::vector<int64_t>& dims, int64_t from, int64_t to) {
  int64_t p = 1;
  for (int64_t d = from; d < to; ++d) p *= dims[static_cast<size_t>(d)];
  return p;
}

Status unimplemented(const KernelContext& ctx, const std::string& what);
Status unsupportedType(const KernelContext& ctx, DataType type);

// --- element traits
// -------------------------------------------------------------------------------

struct Float16 {};
struct BFloat16 {};
template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
struct Elem {
  using Storage = T;
  using Compute = T;
};
template <>
struct Elem<Float16> {
  using Storage = uint16_t;
  using Compute = float;
};
template <>
struct Elem<BFloat16> {
  using Storage = uint16_t;
  using Compute = float;
};
template <>
struct Elem<bool> {
  using Storage = uint8_t;
  using Compute = bool;
};

template <typename T>
using Compute = typename Elem<T>::Compute;

template <typename T>
inline constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                 std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
template <typename T>
inline constexpr bool kIsBool = std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !kIsBool<T>;
template <typename T>
inline constexpr bool kIsSignedInt = kIsInt<T>&& std::is_signed_v<T>;
template <typename T>
inline constexpr bool kIsNumeric = kIsFloat<T> || kIsInt<T>;

template <typename T>
typename Elem<T>::Compute load(const HostTensor& t, int64_t i) {
  auto s = t.get<typename Elem<T>::Storage>(i);
  if constexpr (std::is_same_v<T, Float16>) {
    return halfToFloat(s);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bfloat16ToFloat(s);
  } else if constexpr (kIsBool<T>) {
    return s != 0;
  } else {
    return s;
  }
}

template <typename T>
void store(HostTensor& t, int64_t i, typename Elem<T>::Compute v) {
  if constexpr (std::is_same_v<T, Float16>) {
    t.set<uint16_t>(i, floatToHalf(v));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    t.set<uint16_t>(i, floatToBfloat16(v));
  } else if constexpr (kIsBool<T>) {
    t.set<uint8_t>(i, v ? 1 : 0);
  } else {
    t.set<T>(i, v);
  }
}

/// Calls f(TypeTag<T>{}) for the C++ type of `type`; f returns Status and rejects the types it does
/// not support itself (with `if constexpr`). Other element types are kUnimplemented.
template <typename F>
Status visitType(const KernelContext& ctx, DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat:
      return f(TypeTag<float>{});
    case DataType::kDouble:
      return f(TypeTag<double>{});
    case DataType::kFloat16:
      return f(TypeTag<Float16>{});
    case DataType::kBfloat16:
      return f(TypeTag<BFloat16>{});
    case DataType::kInt8:
      return f(TypeTag<int8_t>{});
    case DataType::kInt16:
      return f(TypeTag<int16_t>{});
    case DataType::kInt32:
      return f(TypeTag<int32_t>{});
    case DataType::kInt64:
      return f(TypeTag<int64_t>{});
    case DataType::kUint8:
      return f(TypeTag<uint8_t>{});
    case DataType::kUint16:
      return f(TypeTag<uint16_t>{});
    case DataType::kUint32:
      return f(TypeTag<uint32_t>{});
    case DataType::kUint64:
      return f(TypeTag<uint64_t>{});
    case DataType::kBool:
      return f(TypeTag<bool>{});
    default:
      return unsupportedType(ctx, type);
  }
}

/// The wrapping (two's complement) unsigned type used for integer arithmetic on T.
template <typename T>
using WrapType = std::make_unsigned_t<std::common_type_t<T, unsigned>>;

template <typename T>
T wrapAdd(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <typename T>
T wrapSub(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
}
template <typename T>
T wrapMul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
}

/// Converts between compute types without UB: float -> integer truncates toward zero, NaN becomes
/// 0 and out-of-range values saturate to int64 and then wrap to narrower types.
template <typename To, typename From>
To convertNumber(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(v ? 1 : 0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return 0;
    double d = std::trunc(static_cast<double>(v));
    if constexpr (std::is_same_v<To, uint64_t>) {
      if (d >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
      if (d >= 0) return static_cast<uint64_t>(d);
    }
    int64_t i;
    if (d >= 9223372036854775808.0) {
      i = std::numeric_limits<int64_t>::max();
    } else if (d < -9223372036854775808.0) {
      i = std::numeric_limits<int64_t>::min();
    } else {
      i = static_cast<int64_t>(d);
    }
    return static_cast<To>(i);
  } else {
    return static_cast<To>(v);
  }
}

// --- shapes and allocation
// --------------------------------------------------------------------------

/// Number of elements of dims, or an error when negative or beyond int64.
StatusOr<int64_t> checkedNumElements(const Dims& dims);
/// A zero-filled output, or kResourceExhausted when it would exceed kMaxOutputBytes.
StatusOr<HostTensor> makeOutput(DataType type, Dims dims);
/// Bytes per element for byte-addressable numeric types; 0 for strings, sub-byte and unknown types.
size_t elementBytes(DataType type);
/// Whether `type` can be moved element by element (byte-sized numeric types and strings).
bool isMovable(DataType type);
Status checkMovable(const KernelContext& ctx, DataType type);
/// Copies element si of src to element di of dst (same dtype; strings or raw bytes).
inline void copyElement(HostTensor& dst, int64_t di, const HostTensor& src, int64_t si,
                        size_t elem_bytes) {
  if (src.dtype == DataType::kString) {
    dst.strings[static_cast<size_t>(di)] = src.strings[static_cast<size_t>(si)];
  } else {
    std::memcpy(dst.bytes.data() + static_cast<size_t>(di) * elem_bytes,
                src.bytes.data() + static_cast<size_t>(si) * elem_bytes, elem_bytes);
  }
}

/// Copies count consecutive elements of src (from si) to dst (from di).
inline void copyElements(HostTensor& dst, int64_t di, const HostTensor& src, int64_t si,
                         int64_t count, size_t elem_bytes) {
  if (count <= 0) return;
  if (src.dtype == DataType::kString) {
    for (int64_t k = 0; k < count; ++k) {
      dst.strings[static_cast<size_t>(di + k)] = src.strings[static_cast<size_t>(si + k)];
    }
  } else {
    std::memcpy(dst.bytes.data() + static_cast<size_t>(di) * elem_bytes,
                src.bytes.data() + static_cast<size_t>(si) * elem_bytes,
                static_cast<size_t>(count) * elem_bytes);
  }
}

/// A one-output result.
inline Outputs single(HostTensor t) {
  Outputs out;
  out.push_back(std::move(t));
  return out;
}

/// Multidirectional (numpy) broadcasting of several shapes.
StatusOr<Dims> broadcastShapes(const std::vector<const Dims*>& shapes);
/// Strides of an input of shape `in` read as the broadcast shape `out` (0 along broadcast dims).
Dims broadcastStrides(const Dims& in, const Dims& out);

/// Calls f(out_index, offsets) for every element of out_dims, where offsets[k] is the element
/// offset into input k given its broadcast strides.
template <typename F>
void forEachBroadcast(const Dims& out_dims, const std::vector<Dims>& strides, F&& f) {
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  if (n == 0) return;
  size_t rank = out_dims.size();
  size_t k = strides.size();
  std::vector<int64_t> offsets(k, 0);
  std::vector<int64_t> counter(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, static_cast<const int64_t*>(offsets.data()));
    for (size_t d = rank; d-- > 0;) {
      ++counter[d];
      for (size_t j = 0; j < k; ++j) offsets[j] += strides[j][d];
      if (counter[d] < out_dims[d]) break;
      for (size_t j = 0; j < k; ++j) offsets[j] -= strides[j][d] * out_dims[d];
      counter[d] = 0;
    }
  }
}

/// Calls f(out_index, offsets) over the broadcast of `ins` to out_dims (offsets[k] indexes ins[k]).
template <typename F>
void mapBroadcast(const std::vector<const HostTensor*>& ins, const Dims& out_dims, F&& f) {
  bool same = true;
  for (const HostTensor* t : ins) same = same && t->dims == out_dims;
  if (same) {
    int64_t n = 1;
    for (int64_t d : out_dims) n *= d;
    std::vector<int64_t> offsets(ins.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      for (auto& o : offsets) o = i;
      f(i, static_cast<const int64_t*>(offsets.data()));
    }
    return;
  }
  std::vector<Dims> strides;
  for (const HostTensor* t : ins) strides.push_back(broadcastStrides(t->dims, out_dims));
  forEachBroadcast(out_dims, strides, [&](int64_t i, const int64_t* offsets) { f(i, offsets); });
}

// --- attributes and list inputs
// ---------------------------------------------------------------------

/// Normalizes axis into [0, rank), or kInvalidArgument.
StatusOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, const char* what = "axis");
/// Normalizes a list of axes; rejects duplicates.
StatusOr<Dims> normalizeAxes(const Dims& axes, int64_t rank);
/// The values of an int32/int64 tensor as int64.
StatusOr<Dims> readInts(const HostTensor& t, const char* what);
/// A scalar (or one-element) int32/int64 tensor as int64.
StatusOr<int64_t> readIntScalar(const HostTensor& t, const char* what);
/// A required input, or kInvalidArgument naming it.
StatusOr<const HostTensor*> requireInput(const KernelContext& ctx, size_t i);
/// Fails unless all the given inputs have the same dtype.
Status checkSameType(const KernelContext& ctx, const std::vector<const HostTensor*>& ts);

}  // namespace onnxopt::kernels::ref
