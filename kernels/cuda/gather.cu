// Device half of Gather, GatherElements and GatherND (gather.h, indexing_device.h): grid-stride
// loops that read one index per output element and move raw bits; an index out of range writes
// zero bits.
#include <cstdint>

#include "element_types.cuh"
#include "indexing_device.h"

namespace onnxopt::kernels::cuda {

namespace {

/// Index `i` of `index` (int32 or int64), wrapped into [0, dim); -1 when out of range.
__device__ __forceinline__ int64_t wrappedIndex(const void* index, bool int64_indices, int64_t i,
                                                int64_t dim) {
  int64_t v =
      int64_indices ? static_cast<const int64_t*>(index)[i] : static_cast<const int32_t*>(index)[i];
  if (v < 0) v += dim;
  return v >= 0 && v < dim ? v : -1;
}

template <typename Word>
__global__ void gatherKernel(GatherDeviceArgs a) {
  const Word* data = static_cast<const Word*>(a.data);
  Word* out = static_cast<Word*>(a.out);
  const int64_t count = a.outer * a.indices * a.inner;
  ONNXOPT_GRID_STRIDE(i, count) {
    int64_t in = i % a.inner;
    int64_t t = i / a.inner;
    int64_t j = t % a.indices;
    int64_t o = t / a.indices;
    int64_t v = wrappedIndex(a.index, a.int64_indices, j, a.axis_dim);
    out[i] = v < 0 ? Word(0) : data[(o * a.axis_dim + v) * a.inner + in];
  }
}

template <typename Word>
__global__ void gatherElementsKernel(GatherElementsDeviceArgs a) {
  const Word* data = static_cast<const Word*>(a.data);
  Word* out = static_cast<Word*>(a.out);
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t rest = i, src = 0, idx = 0;
    for (int d = a.rank - 1; d >= 0; --d) {
      int64_t c = rest % a.dims[d];
      rest /= a.dims[d];
      idx += c * a.index_strides[d];
      if (d != a.axis) src += c * a.data_strides[d];
    }
    int64_t v = wrappedIndex(a.index, a.int64_indices, idx, a.axis_dim);
    out[i] = v < 0 ? Word(0) : data[src + v * a.data_strides[a.axis]];
  }
}

template <typename Word>
__global__ void gatherNDKernel(GatherNDDeviceArgs a) {
  const Word* data = static_cast<const Word*>(a.data);
  Word* out = static_cast<Word*>(a.out);
  const IndexTuples& tp = a.tuples;
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t s = i % a.slice;
    int64_t t = i / a.slice;
    int64_t base = (t / tp.per_batch) * tp.batch_stride;
    bool ok = true;
    for (int d = 0; d < tp.depth; ++d) {
      int64_t v = wrappedIndex(a.index, tp.int64_indices, t * tp.depth + d, tp.dims[d]);
      ok = ok && v >= 0;
      base += v * tp.strides[d];
    }
    out[i] = ok ? data[base + s] : Word(0);
  }
}

template <template <typename> class Launch, typename Args>
cudaError_t bySize(int element_bytes, const Args& args, int64_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  unsigned blocks = blocksFor(count);
  switch (element_bytes) {
    case 1:
      Launch<uint8_t>::run(args, blocks, stream);
      break;
    case 2:
      Launch<uint16_t>::run(args, blocks, stream);
      break;
    case 4:
      Launch<uint32_t>::run(args, blocks, stream);
      break;
    case 8:
      Launch<uint64_t>::run(args, blocks, stream);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <typename Word>
struct GatherLaunch {
  static void run(const GatherDeviceArgs& a, unsigned blocks, cudaStream_t s) {
    gatherKernel<Word><<<blocks, kThreads, 0, s>>>(a);
  }
};

template <typename Word>
struct GatherElementsLaunch {
  static void run(const GatherElementsDeviceArgs& a, unsigned blocks, cudaStream_t s) {
    gatherElementsKernel<Word><<<blocks, kThreads, 0, s>>>(a);
  }
};

template <typename Word>
struct GatherNDLaunch {
  static void run(const GatherNDDeviceArgs& a, unsigned blocks, cudaStream_t s) {
    gatherNDKernel<Word><<<blocks, kThreads, 0, s>>>(a);
  }
};

}  // namespace

cudaError_t launchGather(const GatherDeviceArgs& args, cudaStream_t stream) {
  return bySize<GatherLaunch>(args.element_bytes, args, args.outer * args.indices * args.inner,
                              stream);
}

cudaError_t launchGatherElements(const GatherElementsDeviceArgs& args, cudaStream_t stream) {
  return bySize<GatherElementsLaunch>(args.element_bytes, args, args.count, stream);
}

cudaError_t launchGatherND(const GatherNDDeviceArgs& args, cudaStream_t stream) {
  return bySize<GatherNDLaunch>(args.element_bytes, args, args.count, stream);
}

}  // namespace onnxopt::kernels::cuda
