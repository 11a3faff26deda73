// Device code of the variadic Sum, Mean, Max and Min (variadic.h): each output element folds its
// element of every input (broadcast by zero strides) in input order, as the reference does: sums in
// float for the floating types, wrapping (in uint64, whose low bits are the same) for integers;
// Max and Min in the element's compute type, a NaN of an earlier input winning as in the reference.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/reduce/reduce_device.cuh"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

namespace {

/// The reference's Max/Min fold step: a NaN already in `acc` stays; a NaN `v` loses (it compares
/// false) except against a NaN.
template <typename C>
__device__ __forceinline__ C maxMinStep(bool max, C acc, C v) {
  if constexpr (kIsFloating<C>) {
    if (isnan(acc)) return acc;
  }
  return max ? (acc > v ? acc : v) : (acc < v ? acc : v);
}

template <typename T>
__global__ void variadicKernel(VariadicDeviceArgs args) {
  using A = std::conditional_t<kIsFloating<T>, float, uint64_t>;
  T* y = static_cast<T*>(args.y);
  ONNXOPT_GRID_STRIDE(i, args.count) {
    int64_t off[kMaxVariadicInputs] = {};
    int64_t rest = i;
    for (int d = args.rank - 1; d >= 0; --d) {
      int64_t c = rest % args.dims[d];
      rest /= args.dims[d];
      for (int k = 0; k < args.inputs; ++k) off[k] += c * args.strides[k][d];
    }
    if (args.op == VariadicOp::kMax || args.op == VariadicOp::kMin) {
      bool max = args.op == VariadicOp::kMax;
      Compute<T> m = load(static_cast<const T*>(args.x[0]), off[0]);
      for (int k = 1; k < args.inputs; ++k) {
        m = maxMinStep(max, m, load(static_cast<const T*>(args.x[k]), off[k]));
      }
      store(y, i, m);
      continue;
    }
    A acc = toAcc<A>(load(static_cast<const T*>(args.x[0]), off[0]));
    for (int k = 1; k < args.inputs; ++k) {
      acc += toAcc<A>(load(static_cast<const T*>(args.x[k]), off[k]));
    }
    if constexpr (kIsFloating<T>) {
      if (args.op == VariadicOp::kMean) acc = acc / static_cast<float>(args.inputs);
      store(y, i, acc);
    } else {
      y[i] = static_cast<T>(acc);
    }
  }
}

}  // namespace

bool variadicKernelExists(VariadicOp op, DataType dtype) {
  bool floating =
      dtype == DataType::kFloat || dtype == DataType::kFloat16 || dtype == DataType::kBfloat16;
  switch (op) {
    case VariadicOp::kSum:
      return isAccumulatedType(dtype);
    case VariadicOp::kMean:
      return floating;
    case VariadicOp::kMax:
    case VariadicOp::kMin:
      return isOrderedType(dtype);
  }
  return false;
}

cudaError_t launchVariadic(const VariadicDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  if (!variadicKernelExists(args.op, args.dtype)) return cudaErrorInvalidValue;
  visitCudaType(args.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || kIsHalfLike<T> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, int64_t> || std::is_same_v<T, int8_t> ||
                  std::is_same_v<T, uint8_t>) {
      variadicKernel<T><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
    }
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
