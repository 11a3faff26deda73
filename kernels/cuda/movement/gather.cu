// Device half of Gather, GatherElements and GatherND (gather.h, indexing_device.h): grid-stride
// loops that read one index per output element and move raw bits; an index out of range writes
// zero bits.
#include <cstdint>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/movement/indexing_device.h"
#include "kernels/cuda/movement/movement_device.cuh"

namespace onnxopt::kernels::cuda {

namespace {

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
    out[i] = v < 0 ? Word{} : data[(o * a.axis_dim + v) * a.inner + in];
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
  ONNXOPT_GRID_STRIDE(i, a.count) {
    int64_t base = tupleOffset(a.tuples, a.index, i / a.slice);
    out[i] = base < 0 ? Word{} : data[base / a.word_ratio + i % a.slice];
  }
}

template <typename Word>
__global__ void oneHotKernel(OneHotDeviceArgs a) {
  const Word* values = static_cast<const Word*>(a.values);
  Word* out = static_cast<Word*>(a.out);
  const int64_t count = a.outer * a.depth * a.inner;
  ONNXOPT_GRID_STRIDE(e, count) {
    int64_t in = e % a.inner;
    int64_t t = e / a.inner;
    int64_t d = t % a.depth;
    int64_t o = t / a.depth;
    int64_t i = o * a.inner + in;
    int64_t v = a.int64_indices ? static_cast<const int64_t*>(a.index)[i]
                                : static_cast<const int32_t*>(a.index)[i];
    if (v < 0) v += a.depth;
    out[e] = values[v == d ? 1 : 0];
  }
}

template <typename Word>
__global__ void reverseSequenceKernel(ReverseSequenceDeviceArgs a) {
  const Word* in = static_cast<const Word*>(a.in);
  Word* out = static_cast<Word*>(a.out);
  const int64_t count = a.d0 * a.d1 * a.inner;
  const int64_t steps = a.batch_first ? a.d1 : a.d0;
  ONNXOPT_GRID_STRIDE(e, count) {
    int64_t k = e % a.inner;
    int64_t i1 = (e / a.inner) % a.d1;
    int64_t i0 = e / a.inner / a.d1;
    int64_t b = a.batch_first ? i0 : i1;
    int64_t t = a.batch_first ? i1 : i0;
    int64_t len = a.lens[b];
    if (len >= 0 && len <= steps && t < len) t = len - 1 - t;
    int64_t s0 = a.batch_first ? b : t, s1 = a.batch_first ? t : b;
    out[e] = in[(s0 * a.d1 + s1) * a.inner + k];
  }
}

/// dispatchWord with 16-byte words (uint4) too: Gather and GatherND move a slice in the widest
/// word its bytes divide into (gather.cc).
template <typename F>
cudaError_t dispatchSliceWord(int word_bytes, F&& launch) {
  if (word_bytes != 16) return dispatchWord(word_bytes, launch);
  launch(TypeTag<uint4>{});
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchReverseSequence(const ReverseSequenceDeviceArgs& args, cudaStream_t stream) {
  int64_t count = args.d0 * args.d1 * args.inner;
  if (count == 0) return cudaSuccess;
  return dispatchWord(args.element_bytes, [&](auto tag) {
    using Word = typename decltype(tag)::type;
    reverseSequenceKernel<Word><<<blocksFor(count), kThreads, 0, stream>>>(args);
  });
}

cudaError_t launchOneHot(const OneHotDeviceArgs& args, cudaStream_t stream) {
  int64_t count = args.outer * args.depth * args.inner;
  if (count == 0) return cudaSuccess;
  return dispatchWord(args.element_bytes, [&](auto tag) {
    using Word = typename decltype(tag)::type;
    oneHotKernel<Word><<<blocksFor(count), kThreads, 0, stream>>>(args);
  });
}

cudaError_t launchGather(const GatherDeviceArgs& args, cudaStream_t stream) {
  int64_t count = args.outer * args.indices * args.inner;
  if (count == 0) return cudaSuccess;
  return dispatchSliceWord(args.element_bytes, [&](auto tag) {
    using Word = typename decltype(tag)::type;
    gatherKernel<Word><<<blocksFor(count), kThreads, 0, stream>>>(args);
  });
}

cudaError_t launchGatherElements(const GatherElementsDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  return dispatchWord(args.element_bytes, [&](auto tag) {
    using Word = typename decltype(tag)::type;
    gatherElementsKernel<Word><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  });
}

cudaError_t launchGatherND(const GatherNDDeviceArgs& args, cudaStream_t stream) {
  if (args.count == 0) return cudaSuccess;
  return dispatchSliceWord(args.element_bytes, [&](auto tag) {
    using Word = typename decltype(tag)::type;
    gatherNDKernel<Word><<<blocksFor(args.count), kThreads, 0, stream>>>(args);
  });
}

}  // namespace onnxopt::kernels::cuda
