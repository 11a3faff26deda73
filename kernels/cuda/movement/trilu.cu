// Device half of Trilu and EyeLike (trilu.h, indexing_device.h): one thread per element, kept,
// set to one or zeroed by its place relative to the k-th diagonal.
#include <cstdint>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/movement/indexing_device.h"
#include "kernels/cuda/movement/movement_device.cuh"

namespace onnxopt::kernels::cuda {

namespace {

template <typename Word>
__global__ void triluKernel(TriluDeviceArgs a) {
  const Word* in = static_cast<const Word*>(a.in);
  Word* out = static_cast<Word*>(a.out);
  // Beyond +-(rows + cols) every k selects the same elements (the reference clamps the same way).
  int64_t k = a.k != nullptr ? *a.k : a.k_value;
  int64_t limit = a.rows + a.cols;
  k = k < -limit ? -limit : (k > limit ? limit : k);
  ONNXOPT_GRID_STRIDE(e, a.count) {
    int64_t j = e % a.cols;
    int64_t i = (e / a.cols) % a.rows;
    if (a.mode == TriangleMode::kDiagonal) {
      out[e] = j - i == k ? static_cast<Word>(a.one_bits) : Word(0);
    } else {
      bool keep = a.mode == TriangleMode::kUpper ? j - i >= k : j - i <= k;
      out[e] = keep ? in[e] : Word(0);
    }
  }
}

}  // namespace

cudaError_t launchTrilu(const TriluDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  return dispatchWord(args.element_bytes, [&](auto tag) {
    using Word = typename decltype(tag)::type;
    triluKernel<Word><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  });
}

}  // namespace onnxopt::kernels::cuda
