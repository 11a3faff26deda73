// Device half of Pad (pad.h, indexing_device.h): per output element, each dim's coordinate mapped
// to an input coordinate by the mode, or the constant.
#include <cstdint>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/movement/indexing_device.h"
#include "kernels/cuda/movement/movement_device.cuh"

namespace onnxopt::kernels::cuda {

namespace {

/// Where relative coordinate `j` (outside [0, m)) reads inside the kept range in the mode.
__device__ __forceinline__ int64_t padSource(PadMode mode, int64_t j, int64_t m) {
  if (mode == PadMode::kEdge) return j < 0 ? 0 : m - 1;
  if (mode == PadMode::kWrap) return ((j % m) + m) % m;
  if (m == 1) return 0;  // reflect
  int64_t period = 2 * (m - 1);
  j = ((j % period) + period) % period;
  return j >= m ? period - j : j;
}

template <typename Word>
__global__ void padKernel(PadDeviceArgs a) {
  const Word* in = static_cast<const Word*>(a.in);
  Word* out = static_cast<Word*>(a.out);
  Word value;
  if (a.value != nullptr) {
    value = *static_cast<const Word*>(a.value);
  } else {
    value = static_cast<Word>(a.value_bits);
  }
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t rest = i, src = 0;
    bool pad = false;
    for (int d = a.rank - 1; d >= 0; --d) {
      int64_t o = rest % a.dims[d];
      rest /= a.dims[d];
      int64_t j = o - a.shift[d];
      if (j < 0 || j >= a.kept[d]) {
        if (a.mode == PadMode::kConstant) {
          pad = true;
          break;
        }
        j = padSource(a.mode, j, a.kept[d]);
      }
      src += (a.lo[d] + j) * a.in_strides[d];
    }
    out[i] = pad ? value : in[src];
  }
}

}  // namespace

cudaError_t launchPad(const PadDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  return dispatchWord(args.element_bytes, [&](auto tag) {
    using Word = typename decltype(tag)::type;
    padKernel<Word><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  });
}

}  // namespace onnxopt::kernels::cuda
