// Device code of Cast (cast.h): every pair of the CUDA element types, converted through the
// source's compute type with the reference kernels' rules (element_types.cuh convertNumber);
// 16-bit floats round to nearest even.
#include <type_traits>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/elementwise/elementwise_device.h"

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

}  // namespace

bool castKernelExists(DataType from, DataType to) {
  bool ok = false;
  visitCudaType(from, [&](auto) { visitCudaType(to, [&](auto) { ok = true; }); });
  return ok;
}

cudaError_t launchCast(const CastDeviceArgs& args, cudaStream_t stream) {
  if (args.plan.count == 0) return cudaSuccess;
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
