// Device code of the binary elementwise family (binary.h): arithmetic, Pow, comparisons, logical
// and bitwise ops with multidirectional broadcasting, one kernel per element type and output kind
// (same type or bool), and one per (base, exponent) type pair for Pow with a mixed-type exponent.
// Integer arithmetic wraps, as in the reference kernels.
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/elementwise/elementwise_device.h"

namespace onnxopt::kernels::cuda {

namespace {

template <typename C>
using Unsigned = std::make_unsigned_t<C>;

template <typename C>
__device__ __forceinline__ C wrapAdd(C x, C y) {
  return static_cast<C>(static_cast<Unsigned<C>>(x) + static_cast<Unsigned<C>>(y));
}
template <typename C>
__device__ __forceinline__ C wrapSub(C x, C y) {
  return static_cast<C>(static_cast<Unsigned<C>>(x) - static_cast<Unsigned<C>>(y));
}
template <typename C>
__device__ __forceinline__ C wrapMul(C x, C y) {
  // Unsigned multiplication of narrow types promotes to int; go through uint64 instead.
  return static_cast<C>(static_cast<uint64_t>(static_cast<Unsigned<C>>(x)) *
                        static_cast<uint64_t>(static_cast<Unsigned<C>>(y)));
}

/// Division by zero (undefined in ONNX) writes 0; INT_MIN / -1 wraps.
template <typename C>
__device__ __forceinline__ C intDiv(C x, C y) {
  if (y == 0) return 0;
  if constexpr (std::is_signed_v<C>) {
    if (y == -1) return wrapSub<C>(0, x);
  }
  return static_cast<C>(x / y);
}

/// C's remainder (the dividend's sign); 0 for a zero divisor (undefined), as intDiv.
template <typename C>
__device__ __forceinline__ C intRem(C x, C y) {
  if (y == 0) return 0;
  if constexpr (std::is_signed_v<C>) {
    if (y == -1) return 0;
  }
  return static_cast<C>(x % y);
}

/// Python's remainder (the divisor's sign), the reference kernels' Mod with fmod = 0.
template <typename C>
__device__ __forceinline__ C intMod(C x, C y) {
  C r = intRem(x, y);
  if constexpr (std::is_signed_v<C>) {
    if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);
  }
  return r;
}

/// The reference kernels' integer power: negative exponents truncate toward zero.
template <typename C>
__device__ __forceinline__ C intPow(C base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<C>) {
      if (base == -1) return (exp % 2 == 0) ? C(1) : static_cast<C>(-1);
    }
    return 0;
  }
  C result = 1;
  while (exp > 0) {
    if (exp & 1) result = wrapMul(result, base);
    base = wrapMul(base, base);
    exp >>= 1;
  }
  return result;
}

template <typename C>
__device__ __forceinline__ bool compare(BinaryOp op, C x, C y) {
  switch (op) {
    case BinaryOp::kEqual:
      return x == y;
    case BinaryOp::kLess:
      return x < y;
    case BinaryOp::kGreater:
      return x > y;
    case BinaryOp::kLessOrEqual:
      return x <= y;
    case BinaryOp::kGreaterOrEqual:
      return x >= y;
    default:
      break;
  }
  return false;
}

template <typename C>
__device__ __forceinline__ C arithmetic(BinaryOp op, C x, C y) {
  if constexpr (std::is_same_v<C, bool>) {
    switch (op) {
      case BinaryOp::kAnd:
        return x && y;
      case BinaryOp::kOr:
        return x || y;
      case BinaryOp::kXor:
        return x != y;
      default:
        break;
    }
    return false;
  } else if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case BinaryOp::kAdd:
        return x + y;
      case BinaryOp::kSub:
        return x - y;
      case BinaryOp::kMul:
        return x * y;
      case BinaryOp::kDiv:
        return x / y;
      case BinaryOp::kPow:
        return powf(x, y);
      case BinaryOp::kFmod:
        return fmodf(x, y);
      case BinaryOp::kPRelu:
        return x < 0 ? y * x : x;
      default:
        break;
    }
    return x;
  } else {
    switch (op) {
      case BinaryOp::kAdd:
        return wrapAdd(x, y);
      case BinaryOp::kSub:
        return wrapSub(x, y);
      case BinaryOp::kMul:
        return wrapMul(x, y);
      case BinaryOp::kDiv:
        return intDiv(x, y);
      case BinaryOp::kPow:
        return intPow(x, static_cast<int64_t>(y));
      case BinaryOp::kMod:
        return intMod(x, y);
      case BinaryOp::kFmod:
        return intRem(x, y);
      case BinaryOp::kBitwiseAnd:
        return static_cast<C>(x & y);
      case BinaryOp::kBitwiseOr:
        return static_cast<C>(x | y);
      case BinaryOp::kBitwiseXor:
        return static_cast<C>(x ^ y);
      default:
        break;
    }
    return x;
  }
}

/// Pow with an exponent of another type, the reference kernels' rule (kernels/reference/
/// elementwise.cc powKernel): a float base takes the exponent in its compute type, an integer base
/// an integer exponent as intPow, and a float exponent through pow in double, truncated back.
template <typename C, typename CE>
__device__ __forceinline__ C mixedPow(C x, CE e) {
  if constexpr (std::is_floating_point_v<C>) {
    return powf(x, static_cast<float>(e));
  } else if constexpr (std::is_integral_v<CE>) {
    return intPow(x, static_cast<int64_t>(e));
  } else {
    double ed = static_cast<double>(e);
    double r = pow(static_cast<double>(x), ed);
    // CUDA's double pow is within 2 ulp, not exact: an integer base to a whole non-negative
    // exponent is an integer, and 3^1 as 2.9999999999999996 would truncate to 2. Below 2^52 the
    // nearest integer is the exact power (glibc's pow, the reference's, gets it exactly).
    if (ed >= 0 && ed == trunc(ed) && fabs(r) < 4503599627370496.0) r = rint(r);
    return convertNumber<C>(r);
  }
}

template <typename T, typename E>
__global__ void mixedPowKernel(BinaryDeviceArgs args) {
  const T* a = static_cast<const T*>(args.a);
  const E* b = static_cast<const E*>(args.b);
  ONNXOPT_GRID_STRIDE(i, args.plan.count) {
    int64_t off[2];
    broadcastOffsets<2>(args.plan, i, off);
    store(static_cast<T*>(args.y), i, mixedPow(load(a, off[0]), load(b, off[1])));
  }
}

template <typename T>
constexpr bool kPowExponent = !std::is_same_v<T, bool>;
template <typename T>
constexpr bool kPowBase = kPowExponent<T> && !std::is_same_v<T, uint8_t>;

template <typename T, bool kBoolOut>
__global__ void binaryKernel(BinaryDeviceArgs args) {
  const T* a = static_cast<const T*>(args.a);
  const T* b = static_cast<const T*>(args.b);
  ONNXOPT_GRID_STRIDE(i, args.plan.count) {
    int64_t off[2];
    broadcastOffsets<2>(args.plan, i, off);
    Compute<T> x = load(a, off[0]);
    Compute<T> y = load(b, off[1]);
    if constexpr (kBoolOut) {
      static_cast<bool*>(args.y)[i] = compare(args.op, x, y);
    } else {
      store(static_cast<T*>(args.y), i, arithmetic(args.op, x, y));
    }
  }
}

/// Both inputs contiguous with the output (no broadcast), float types, an arithmetic op, every
/// pointer 16-byte aligned: 16 bytes of each per thread and step, the tail (count %
/// kVecElements) by the first block's first threads.
template <typename T>
__global__ void binaryVecKernel(BinaryDeviceArgs args) {
  constexpr int kV = kVecElements<T>;
  const auto* a = static_cast<const Vec16<T>*>(args.a);
  const auto* b = static_cast<const Vec16<T>*>(args.b);
  auto* y = static_cast<Vec16<T>*>(args.y);
  int64_t vectors = args.plan.count / kV;
  ONNXOPT_GRID_STRIDE(i, vectors) {
    Vec16<T> va = a[i];
    Vec16<T> vb = b[i];
#pragma unroll
    for (int k = 0; k < kV; ++k) store(va.v, k, arithmetic(args.op, load(va.v, k), load(vb.v, k)));
    y[i] = va;
  }
  int64_t tail = vectors * kV + threadIdx.x;
  if (blockIdx.x == 0 && tail < args.plan.count) {
    store(static_cast<T*>(args.y), tail,
          arithmetic(args.op, load(static_cast<const T*>(args.a), tail),
                     load(static_cast<const T*>(args.b), tail)));
  }
}

/// The innermost dim of the plan is a whole number of 16-byte vectors, each operand steps through
/// it with stride 1 or 0 (a row broadcast, a per-channel or scalar operand), and the strides and
/// pointers of the stride-1 operands and the output keep the vectors 16-byte aligned: one index computation per vector, and
/// each operand is a 16-byte load or one element splat across the vector. Float types,
/// arithmetic ops, 32-bit indexing.
template <typename T>
bool broadcastVectorizable(const BinaryDeviceArgs& args) {
  constexpr int kV = kVecElements<T>;
  const BroadcastPlan& p = args.plan;
  if (p.linear || !p.index32 || p.rank < 1 || p.dims[p.rank - 1] % kV != 0) return false;
  if (!aligned16(args.y)) return false;
  const void* data[2] = {args.a, args.b};
  for (int k = 0; k < 2; ++k) {
    int64_t inner = p.strides[k][p.rank - 1];
    if (inner == 0) continue;  // one element per vector: any address
    if (inner != 1 || !aligned16(data[k])) return false;
    for (int d = 0; d + 1 < p.rank; ++d) {
      if (p.strides[k][d] % kV != 0) return false;
    }
  }
  return true;
}

/// `kV` elements of `x` from `offset`: a 16-byte load where `contiguous`, else one element splat.
template <typename T>
__device__ __forceinline__ Vec16<T> loadOrSplat(const T* x, int64_t offset, bool contiguous) {
  if (contiguous) return *reinterpret_cast<const Vec16<T>*>(x + offset);
  Vec16<T> v;
  T e = x[offset];
#pragma unroll
  for (int k = 0; k < kVecElements<T>; ++k) v.v[k] = e;
  return v;
}

template <typename T>
__global__ void binaryBroadcastVecKernel(BinaryDeviceArgs args) {
  constexpr int kV = kVecElements<T>;
  const T* a = static_cast<const T*>(args.a);
  const T* b = static_cast<const T*>(args.b);
  auto* y = static_cast<Vec16<T>*>(args.y);
  const int inner = args.plan.rank - 1;
  const bool a_rows = args.plan.strides[0][inner] == 1;
  const bool b_rows = args.plan.strides[1][inner] == 1;
  int64_t vectors = args.plan.count / kV;
  ONNXOPT_GRID_STRIDE(i, vectors) {
    int64_t off[2];
    broadcastOffsets<2>(args.plan, i * kV, off);
    Vec16<T> va = loadOrSplat(a, off[0], a_rows);
    Vec16<T> vb = loadOrSplat(b, off[1], b_rows);
#pragma unroll
    for (int k = 0; k < kV; ++k) store(va.v, k, arithmetic(args.op, load(va.v, k), load(vb.v, k)));
    y[i] = va;
  }
}

}  // namespace

bool binaryKernelExists(BinaryOp op, DataType dtype) {
  bool logical = op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
  bool bitwise =
      op == BinaryOp::kBitwiseAnd || op == BinaryOp::kBitwiseOr || op == BinaryOp::kBitwiseXor;
  switch (dtype) {
    case DataType::kFloat:
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return !logical && !bitwise && op != BinaryOp::kMod;
    case DataType::kInt8:
    case DataType::kInt32:
    case DataType::kInt64:
      return !logical && op != BinaryOp::kPRelu;
    case DataType::kUint8:
      return !logical && op != BinaryOp::kPow && op != BinaryOp::kPRelu;
    case DataType::kBool:
      return logical || op == BinaryOp::kEqual;
    default:
      return false;
  }
}

bool mixedPowKernelExists(DataType base, DataType exponent) {
  return base != exponent && binaryKernelExists(BinaryOp::kPow, base) &&
         exponent != DataType::kBool && visitCudaType(exponent, [](auto) {});
}

cudaError_t launchBinary(const BinaryDeviceArgs& args, int sm_count, cudaStream_t stream) {
  if (args.plan.count == 0) return cudaSuccess;
  if (args.b_dtype != args.dtype) {
    if (args.op != BinaryOp::kPow || !mixedPowKernelExists(args.dtype, args.b_dtype)) {
      return cudaErrorInvalidValue;
    }
    visitCudaType(args.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      visitCudaType(args.b_dtype, [&](auto etag) {
        using E = typename decltype(etag)::type;
        if constexpr (kPowBase<T> && kPowExponent<E> && !std::is_same_v<T, E>) {
          mixedPowKernel<T, E><<<blocksFor(args.plan.count), kThreads, 0, stream>>>(args);
        }
      });
    });
    return cudaGetLastError();
  }
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (writesBool(args.op)) {
      binaryKernel<T, true><<<blocksFor(args.plan.count), kThreads, 0, stream>>>(args);
    } else if constexpr (kIsFloating<T>) {
      if (args.plan.linear && aligned16(args.a) && aligned16(args.b) && aligned16(args.y)) {
        binaryVecKernel<T><<<residentBlocksFor(args.plan.count / kVecElements<T>, sm_count),
                             kThreads, 0, stream>>>(args);
      } else if (broadcastVectorizable<T>(args)) {
        binaryBroadcastVecKernel<T>
            <<<residentBlocksFor(args.plan.count / kVecElements<T>, sm_count), kThreads, 0,
               stream>>>(args);
      } else {
        binaryKernel<T, false><<<blocksFor(args.plan.count), kThreads, 0, stream>>>(args);
      }
    } else {
      binaryKernel<T, false><<<blocksFor(args.plan.count), kThreads, 0, stream>>>(args);
    }
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
