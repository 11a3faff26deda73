// Device code of the unary elementwise family (unary.h): one kernel per element type, the op a
// switch that is uniform across the launch (memory-bound: the branch costs nothing measurable, and
// it keeps the instantiations to one per type).
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/elementwise/elementwise_device.h"

namespace onnxopt::kernels::cuda {

namespace {

template <typename C>
__device__ __forceinline__ C wrapNeg(C x) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(0) - static_cast<U>(x));
}

template <typename T>
__device__ __forceinline__ T lowestOf() {
  if constexpr (std::is_signed_v<T>)
    return static_cast<T>(std::make_unsigned_t<T>(1) << (sizeof(T) * 8 - 1));
  return T(0);
}

template <typename T>
__device__ __forceinline__ T highestOf() {
  if constexpr (std::is_signed_v<T>) return static_cast<T>(~lowestOf<T>());
  return static_cast<T>(~T(0));
}

__device__ __forceinline__ float sigmoid(float x) {
  if (x >= 0) return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

__device__ __forceinline__ float softplus(float x) {
  return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

__device__ __forceinline__ float applyFloat(const UnaryDeviceArgs& a, float x, float lo, float hi) {
  switch (a.op) {
    case UnaryOp::kAbs:
      return fabsf(x);
    case UnaryOp::kNeg:
      return -x;
    case UnaryOp::kRelu:
      return x > 0 ? x : 0.0f;
    case UnaryOp::kSign:
      return isnan(x) ? x : x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f;
    case UnaryOp::kSigmoid:
      return sigmoid(x);
    case UnaryOp::kTanh:
      return tanhf(x);
    case UnaryOp::kExp:
      return expf(x);
    case UnaryOp::kLog:
      return logf(x);
    case UnaryOp::kSqrt:
      return sqrtf(x);
    case UnaryOp::kReciprocal:
      return 1.0f / x;
    case UnaryOp::kErf:
      return erff(x);
    case UnaryOp::kFloor:
      return floorf(x);
    case UnaryOp::kCeil:
      return ceilf(x);
    case UnaryOp::kRound:
      return rintf(x);
    case UnaryOp::kSin:
      return sinf(x);
    case UnaryOp::kCos:
      return cosf(x);
    case UnaryOp::kGelu:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));  // x / sqrt(2), no division
    case UnaryOp::kGeluTanh: {
      const float k = sqrtf(2.0f / 3.14159265358979323846f);
      return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
    }
    case UnaryOp::kLeakyRelu:
      return x < 0 ? a.alpha * x : x;
    case UnaryOp::kElu:
      return x < 0 ? a.alpha * (expf(x) - 1.0f) : x;
    case UnaryOp::kSelu:
      return x > 0 ? a.gamma * x : a.gamma * (a.alpha * expf(x) - a.alpha);
    case UnaryOp::kHardSigmoid:
      return fmaxf(0.0f, fminf(1.0f, a.alpha * x + a.beta));
    case UnaryOp::kHardSwish:
      return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    case UnaryOp::kSoftplus:
      return softplus(x);
    case UnaryOp::kSoftsign:
      return x / (1.0f + fabsf(x));
    case UnaryOp::kClip:
      if (x < lo) x = lo;
      if (x > hi) x = hi;
      return x;
    case UnaryOp::kAcos:
      return acosf(x);
    case UnaryOp::kAcosh:
      return acoshf(x);
    case UnaryOp::kAsin:
      return asinf(x);
    case UnaryOp::kAsinh:
      return asinhf(x);
    case UnaryOp::kAtan:
      return atanf(x);
    case UnaryOp::kAtanh:
      return atanhf(x);
    case UnaryOp::kCosh:
      return coshf(x);
    case UnaryOp::kSinh:
      return sinhf(x);
    case UnaryOp::kTan:
      return tanf(x);
    case UnaryOp::kSwish:
      return x / (1.0f + expf(-a.alpha * x));
    case UnaryOp::kCelu:
      return fmaxf(0.0f, x) + fminf(0.0f, a.alpha * (expf(x / a.alpha) - 1.0f));
    case UnaryOp::kMish:
      return x * tanhf(softplus(x));
    case UnaryOp::kThresholdedRelu:
      return x > a.alpha ? x : 0.0f;
    case UnaryOp::kShrink:
      return x < -a.alpha ? x + a.beta : x > a.alpha ? x - a.beta : 0.0f;
    case UnaryOp::kNot:
    case UnaryOp::kIsNaN:  // bool outputs: unaryKernel's predicate branch
    case UnaryOp::kIsInf:
      break;
  }
  return x;
}

__device__ __forceinline__ bool applyPredicate(const UnaryDeviceArgs& a, float x) {
  if (a.op == UnaryOp::kIsNaN) return isnan(x);
  return isinf(x) && (x < 0 ? a.alpha != 0 : a.beta != 0);
}

__host__ __device__ __forceinline__ bool isPredicate(UnaryOp op) {
  return op == UnaryOp::kIsNaN || op == UnaryOp::kIsInf;
}

/// Clip's bounds: the optional scalar inputs (Clip >= 11) or the attributes; the type's range for
/// integers.
template <typename T>
__device__ __forceinline__ void boundsOf(const UnaryDeviceArgs& a, Compute<T>& lo, Compute<T>& hi) {
  if constexpr (kIsFloating<T>) {
    lo = a.lo != nullptr ? load(static_cast<const T*>(a.lo), 0) : a.alpha;
    hi = a.hi != nullptr ? load(static_cast<const T*>(a.hi), 0) : a.beta;
  } else if constexpr (!std::is_same_v<T, bool>) {
    lo = a.lo != nullptr ? *static_cast<const T*>(a.lo) : lowestOf<T>();
    hi = a.hi != nullptr ? *static_cast<const T*>(a.hi) : highestOf<T>();
  }
}

template <typename C>
__device__ __forceinline__ C applyInt(UnaryOp op, C x, C lo, C hi) {
  switch (op) {
    case UnaryOp::kAbs:
      if constexpr (std::is_signed_v<C>) return x < 0 ? wrapNeg(x) : x;
      return x;
    case UnaryOp::kNeg:
      return wrapNeg(x);
    case UnaryOp::kRelu:
      return x > 0 ? x : C(0);
    case UnaryOp::kSign:
      if constexpr (std::is_signed_v<C>) return x > 0 ? C(1) : x < 0 ? static_cast<C>(-1) : C(0);
      return x > 0 ? C(1) : C(0);
    case UnaryOp::kClip:
      if (x < lo) x = lo;
      if (x > hi) x = hi;
      return x;
    default:
      break;
  }
  return x;
}

template <typename T>
__global__ void unaryKernel(UnaryDeviceArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  using C = Compute<T>;
  C lo{}, hi{};
  boundsOf<T>(a, lo, hi);
  ONNXOPT_GRID_STRIDE(i, a.plan.count) {
    int64_t off[1];
    broadcastOffsets<1>(a.plan, i, off);
    C v = load(x, off[0]);
    if constexpr (kIsFloating<T>) {
      if (isPredicate(a.op)) {
        static_cast<bool*>(a.y)[i] = applyPredicate(a, v);
      } else {
        store(y, i, applyFloat(a, v, lo, hi));
      }
    } else if constexpr (std::is_same_v<T, bool>) {
      y[i] = !v;
    } else {
      y[i] = applyInt<C>(a.op, v, lo, hi);
    }
  }
}

/// A contiguous float input to a same-typed output (both 16-byte aligned): 16 bytes per thread
/// and step, the tail (count % kVecElements) by the first block's first threads. kOp >= 0 fixes
/// the op at compile time (the switch folds away: the GEMM epilogues' activations, whose erf or
/// tanh per element is the work, run at the copy rate instead of behind the op's branch), -1
/// reads it from the arguments.
template <typename T, int kOp>
__global__ void unaryVecKernel(UnaryDeviceArgs args) {
  UnaryDeviceArgs a = args;
  if constexpr (kOp >= 0) a.op = static_cast<UnaryOp>(kOp);
  using C = Compute<T>;
  constexpr int kV = kVecElements<T>;
  C lo{}, hi{};
  boundsOf<T>(a, lo, hi);
  const auto* x = static_cast<const Vec16<T>*>(a.x);
  auto* y = static_cast<Vec16<T>*>(a.y);
  int64_t vectors = a.plan.count / kV;
  ONNXOPT_GRID_STRIDE(i, vectors) {
    Vec16<T> v = x[i];
#pragma unroll
    for (int k = 0; k < kV; ++k) store(v.v, k, applyFloat(a, load(v.v, k), lo, hi));
    y[i] = v;
  }
  int64_t tail = vectors * kV + threadIdx.x;
  if (blockIdx.x == 0 && tail < a.plan.count) {
    store(static_cast<T*>(a.y), tail,
          applyFloat(a, load(static_cast<const T*>(a.x), tail), lo, hi));
  }
}

}  // namespace

bool unaryKernelExists(UnaryOp op, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return op != UnaryOp::kNot;  // IsNaN and IsInf: float in, bool out
    case DataType::kInt8:
    case DataType::kInt32:
    case DataType::kInt64:
      return op == UnaryOp::kAbs || op == UnaryOp::kNeg || op == UnaryOp::kRelu ||
             op == UnaryOp::kSign || op == UnaryOp::kClip;
    case DataType::kUint8:
      return op == UnaryOp::kAbs || op == UnaryOp::kSign || op == UnaryOp::kClip;
    case DataType::kBool:
      return op == UnaryOp::kNot;
    default:
      return false;
  }
}

cudaError_t launchUnary(const UnaryDeviceArgs& args, int sm_count, cudaStream_t stream) {
  if (args.plan.count == 0) return cudaSuccess;
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloating<T>) {
      if (args.plan.linear && !isPredicate(args.op) && aligned16(args.x) && aligned16(args.y)) {
        const unsigned blocks = residentBlocksFor(args.plan.count / kVecElements<T>, sm_count);
        switch (args.op) {
          case UnaryOp::kGelu:
            unaryVecKernel<T, static_cast<int>(UnaryOp::kGelu)>
                <<<blocks, kThreads, 0, stream>>>(args);
            break;
          case UnaryOp::kGeluTanh:
            unaryVecKernel<T, static_cast<int>(UnaryOp::kGeluTanh)>
                <<<blocks, kThreads, 0, stream>>>(args);
            break;
          case UnaryOp::kRelu:
            unaryVecKernel<T, static_cast<int>(UnaryOp::kRelu)>
                <<<blocks, kThreads, 0, stream>>>(args);
            break;
          default:
            unaryVecKernel<T, -1><<<blocks, kThreads, 0, stream>>>(args);
        }
        return;
      }
    }
    unaryKernel<T><<<blocksFor(args.plan.count), kThreads, 0, stream>>>(args);
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
