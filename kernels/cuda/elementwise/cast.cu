// Device code of Cast (cast.h): every pair of the CUDA element types, converted through the
// source's compute type with the reference kernels' rules (element_types.cuh convertNumber);
// 16-bit floats round to nearest even. Casts with a float8, float4 or packed 2-/4-bit integer
// side go element by element through low_precision.cuh's codecs (as the reference's
// loadNum/storeNum), one output byte per thread where elements are packed.
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/elementwise/elementwise_device.h"
#include "kernels/cuda/quant/low_precision.cuh"

namespace onnxopt::kernels::cuda {

namespace {

template <typename From, typename To>
__global__ void castKernel(CastDeviceArgs args) {
  const From* x = static_cast<const From*>(args.x);
  To* y = static_cast<To*>(args.y);
  ONNXOPT_GRID_STRIDE(i, args.plan.count) {
    int64_t off[1];
    broadcastOffsets<1>(args.plan, i, off);
    Compute<From> v = load(x, off[0]);
    store(y, i, convertNumber<Compute<To>>(v));
  }
}

/// A cast with a low-precision side over contiguous x and y (isLowPrecisionCast): one thread per
/// output byte (storeLowUnit) or per element of a CUDA element type.
__global__ void lowPrecisionCastKernel(CastDeviceArgs args) {
  int64_t count = args.plan.count;
  if (!isLowPrecisionType(args.to)) {
    ONNXOPT_GRID_STRIDE(i, count) {
      storeNative(args.to, args.y, i, loadNum(args.from, args.x, i));
    }
    return;
  }
  EncodeOptions opt{args.saturate, args.round_mode};
  ONNXOPT_GRID_STRIDE(u, lowUnits(args.to, count)) {
    storeLowUnit(args.to, args.y, u, count,
                 [&](int64_t i) { return encodeLow(args.to, loadNum(args.from, args.x, i), opt); });
  }
}

bool isCudaType(DataType t) {
  return visitCudaType(t, [](auto) {});
}

}  // namespace

bool isLowPrecisionCast(DataType from, DataType to) {
  return (isLowPrecisionType(from) || isLowPrecisionType(to)) &&
         (isLowPrecisionType(from) || isCudaType(from)) &&
         (isLowPrecisionType(to) || isCudaType(to));
}

bool castKernelExists(DataType from, DataType to) {
  return (isCudaType(from) && isCudaType(to)) || isLowPrecisionCast(from, to);
}

cudaError_t launchCast(const CastDeviceArgs& args, cudaStream_t stream) {
  if (args.plan.count == 0) return cudaSuccess;
  if (isLowPrecisionCast(args.from, args.to)) {
    lowPrecisionCastKernel<<<blocksFor(lowUnits(args.to, args.plan.count)), kThreads, 0, stream>>>(
        args);
    return cudaGetLastError();
  }
  visitCudaType(args.from, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    visitCudaType(args.to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      castKernel<From, To><<<blocksFor(args.plan.count), kThreads, 0, stream>>>(args);
    });
  });
  return cudaGetLastError();
}

}  // namespace onnxopt::kernels::cuda
