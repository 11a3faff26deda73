// Device half of the strided copy (copy.h): one grid-stride kernel per element size and index
// width, moving raw bits.
#include <cstdint>

#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/movement/copy.h"
#include "kernels/cuda/movement/movement_device.cuh"

namespace onnxopt::kernels::cuda {

namespace {

template <typename Word, typename Index>
__global__ void stridedCopyKernel(StridedCopy copy) {
  const Word* src = static_cast<const Word*>(copy.src);
  Word* dst = static_cast<Word*>(copy.dst);
  const Index count = static_cast<Index>(copy.count);
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    Index rest = i;
    Index s = 0, d = 0;
    for (int k = copy.rank - 1; k >= 0; --k) {
      Index dim = static_cast<Index>(copy.dims[k]);
      Index c = rest % dim;
      rest /= dim;
      s += c * static_cast<Index>(copy.src_strides[k]);
      d += c * static_cast<Index>(copy.dst_strides[k]);
    }
    dst[d] = src[s];
  }
}

/// A true transpose (the destination's innermost dim strided in the source, another dim `a`
/// contiguous in it) through 32 x 32 tiles in shared memory: a warp reads 32 source-contiguous
/// elements and writes 32 destination-contiguous ones, where the element-wise kernel's reads
/// (or writes) would each touch another sector. Block (32, 8); blockIdx.x walks (tile of dim a,
/// tile of the last dim b, the other dims' index), `rest` of them.
constexpr int kTile = 32;
constexpr int kTileRows = 8;

/// The source and destination offsets of index `block` over the dims other than `a` and the
/// last (the innermost of them varying fastest).
__device__ __forceinline__ void otherOffsets(const StridedCopy& copy, int a, int64_t block,
                                             int64_t* src, int64_t* dst) {
  for (int k = copy.rank - 2; k >= 0; --k) {
    if (k == a) continue;
    const int64_t c = block % copy.dims[k];
    block /= copy.dims[k];
    *src += c * copy.src_strides[k];
    *dst += c * copy.dst_strides[k];
  }
}

/// What block blockIdx.x of a tiled transpose moves: its tile of dim a and of the last dim b, and
/// the first element of its (a, b) plane in the source and the destination.
template <typename Word>
struct TransposeTile {
  int64_t ta, tb;
  const Word* in;
  Word* out;
};

template <typename Word>
__device__ __forceinline__ TransposeTile<Word> transposeTile(const StridedCopy& copy, int a,
                                                             int64_t tiles_a, int64_t tiles_b) {
  int64_t block = blockIdx.x;
  TransposeTile<Word> t;
  t.ta = block % tiles_a;
  block /= tiles_a;
  t.tb = block % tiles_b;
  block /= tiles_b;
  int64_t src = 0, dst = 0;
  otherOffsets(copy, a, block, &src, &dst);
  t.in = static_cast<const Word*>(copy.src) + src;
  t.out = static_cast<Word*>(copy.dst) + dst;
  return t;
}

template <typename Word>
__global__ void tiledTransposeKernel(StridedCopy copy, int a, int64_t tiles_a, int64_t tiles_b) {
  __shared__ Word tile[kTile][kTile + 1];
  const int b = copy.rank - 1;
  const auto [ta, tb, in, out] = transposeTile<Word>(copy, a, tiles_a, tiles_b);
  const int64_t na = copy.dims[a], nb = copy.dims[b];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t ia = ta * kTile + tx;  // reads: x along a (source-contiguous)
#pragma unroll
  for (int k = 0; k < kTile; k += kTileRows) {
    const int64_t ib = tb * kTile + ty + k;
    if (ia < na && ib < nb) tile[ty + k][tx] = in[ia + ib * copy.src_strides[b]];
  }
  __syncthreads();
  const int64_t ob = tb * kTile + tx;  // writes: x along b (destination-contiguous)
#pragma unroll
  for (int k = 0; k < kTile; k += kTileRows) {
    const int64_t oa = ta * kTile + ty + k;
    if (oa < na && ob < nb) out[oa * copy.dst_strides[a] + ob] = tile[tx][ty + k];
  }
}

/// The tiled transpose of 2-byte elements (fp16, bf16) through 64 x 64 tiles: each thread moves
/// two neighbours as one 4-byte word on both sides (a warp reads and writes 128 bytes a row,
/// where 32 x 32 tiles of 2-byte words move 64), and the tile's odd pitch of 65 elements keeps
/// the transposed reads off each other's banks. Block (32, 8); the caller checks that every
/// word is 4-byte aligned (pairAligned). A tile edge of odd length moves its last element alone.
constexpr int kPairTile = 64;

__global__ void tiledTransposePairKernel(StridedCopy copy, int a, int64_t tiles_a,
                                         int64_t tiles_b) {
  __shared__ uint16_t tile[kPairTile][kPairTile + 1];
  const int b = copy.rank - 1;
  const auto [ta, tb, in, out] = transposeTile<uint16_t>(copy, a, tiles_a, tiles_b);
  const int64_t na = copy.dims[a], nb = copy.dims[b];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t ia = ta * kPairTile + 2 * tx;  // reads: pairs along a (source-contiguous)
#pragma unroll
  for (int k = 0; k < kPairTile; k += kTileRows) {
    const int64_t ib = tb * kPairTile + ty + k;
    if (ib >= nb) continue;
    const uint16_t* p = in + ia + ib * copy.src_strides[b];
    if (ia + 1 < na) {
      const uint32_t w = *reinterpret_cast<const uint32_t*>(p);
      tile[ty + k][2 * tx] = static_cast<uint16_t>(w);
      tile[ty + k][2 * tx + 1] = static_cast<uint16_t>(w >> 16);
    } else if (ia < na) {
      tile[ty + k][2 * tx] = *p;
    }
  }
  __syncthreads();
  const int64_t ob = tb * kPairTile + 2 * tx;  // writes: pairs along b (destination-contiguous)
#pragma unroll
  for (int k = 0; k < kPairTile; k += kTileRows) {
    const int64_t oa = ta * kPairTile + ty + k;
    if (oa >= na) continue;
    uint16_t* q = out + oa * copy.dst_strides[a] + ob;
    if (ob + 1 < nb) {
      *reinterpret_cast<uint32_t*>(q) = static_cast<uint32_t>(tile[2 * tx][ty + k]) |
                                        (static_cast<uint32_t>(tile[2 * tx + 1][ty + k]) << 16);
    } else if (ob < nb) {
      *q = tile[2 * tx][ty + k];
    }
  }
}

/// Whether tiledTransposePairKernel's words are all 4-byte aligned: both pointers, and every
/// stride but the contiguous dim's on each side even (a pair starts at an even index of it).
bool pairAligned(const StridedCopy& copy, int a) {
  const int b = copy.rank - 1;
  if (reinterpret_cast<uintptr_t>(copy.src) % 4 != 0 ||
      reinterpret_cast<uintptr_t>(copy.dst) % 4 != 0) {
    return false;
  }
  for (int k = 0; k < copy.rank; ++k) {
    if (k != a && copy.src_strides[k] % 2 != 0) return false;
    if (k != b && copy.dst_strides[k] % 2 != 0) return false;
  }
  return true;
}

/// The tiled transpose's case of a short destination-innermost dim b (at most kShortInner: the
/// NCHW -> NHWC copy of an image's 3 channels filled 3 of each tile's 32 columns; its time is in
/// docs/gpu_benchmarks.md): each thread moves one index of the
/// source-contiguous dim a across all of b, so a warp's reads are contiguous per b and its writes
/// one contiguous run. blockIdx.x walks (chunk of kThreads along a, the other dims' index).
constexpr int64_t kShortInner = 8;

template <typename Word>
__global__ void shortInnerTransposeKernel(StridedCopy copy, int a, int64_t chunks_a) {
  const int b = copy.rank - 1;
  int64_t block = blockIdx.x;
  const int64_t ca = block % chunks_a;
  block /= chunks_a;
  int64_t src = 0, dst = 0;
  otherOffsets(copy, a, block, &src, &dst);
  const int64_t ia = ca * blockDim.x + threadIdx.x;
  if (ia >= copy.dims[a]) return;
  const Word* in = static_cast<const Word*>(copy.src) + src + ia;
  Word* out = static_cast<Word*>(copy.dst) + dst + ia * copy.dst_strides[a];
  for (int64_t ib = 0; ib < copy.dims[b]; ++ib) out[ib] = in[ib * copy.src_strides[b]];
}

/// The dim a tiled transpose reads contiguously: the destination's innermost dim is strided in
/// the source and another dim is contiguous there; -1 otherwise (or when the grid would
/// overflow).
int tiledDim(const StridedCopy& copy, int64_t* tiles_a, int64_t* tiles_b, int64_t* blocks) {
  const int b = copy.rank - 1;
  if (copy.rank < 2 || copy.dst_strides[b] != 1 || copy.src_strides[b] == 1) return -1;
  for (int a = 0; a < b; ++a) {
    if (copy.src_strides[a] != 1) continue;
    *tiles_a = (copy.dims[a] + kTile - 1) / kTile;
    *tiles_b = (copy.dims[b] + kTile - 1) / kTile;
    *blocks = *tiles_a * *tiles_b;
    for (int k = 0; k < b; ++k) {
      if (k != a) *blocks *= copy.dims[k];
    }
    return *blocks <= INT32_MAX ? a : -1;
  }
  return -1;
}

}  // namespace

cudaError_t launchStridedCopy(const StridedCopy& copy, cudaStream_t stream) {
  if (copy.count == 0) return cudaSuccess;
  int64_t tiles_a = 0, tiles_b = 0, tiled_blocks = 0;
  if (const int a = tiledDim(copy, &tiles_a, &tiles_b, &tiled_blocks); a >= 0) {
    const int64_t chunks_a = (copy.dims[a] + kThreads - 1) / kThreads;
    const int64_t short_blocks = tiled_blocks / tiles_a * chunks_a;  // tiles_b is 1 here
    if (copy.dims[copy.rank - 1] <= kShortInner && short_blocks <= INT32_MAX) {
      const auto grid = static_cast<unsigned>(short_blocks);
      return dispatchWord(copy.element_bytes, [&](auto tag) {
        using Word = typename decltype(tag)::type;
        shortInnerTransposeKernel<Word><<<grid, kThreads, 0, stream>>>(copy, a, chunks_a);
      });
    }
    const dim3 threads(kTile, kTileRows);
    if (copy.element_bytes == 2 && pairAligned(copy, a)) {
      const int64_t pair_a = (copy.dims[a] + kPairTile - 1) / kPairTile;
      const int64_t pair_b = (copy.dims[copy.rank - 1] + kPairTile - 1) / kPairTile;
      const int64_t pair_blocks = tiled_blocks / (tiles_a * tiles_b) * pair_a * pair_b;
      tiledTransposePairKernel<<<static_cast<unsigned>(pair_blocks), threads, 0, stream>>>(
          copy, a, pair_a, pair_b);
      return cudaGetLastError();
    }
    const auto grid = static_cast<unsigned>(tiled_blocks);
    return dispatchWord(copy.element_bytes, [&](auto tag) {
      using Word = typename decltype(tag)::type;
      tiledTransposeKernel<Word><<<grid, threads, 0, stream>>>(copy, a, tiles_a, tiles_b);
    });
  }
  if (copy.rank == 0 || (copy.rank == 1 && copy.src_strides[0] == 1 && copy.dst_strides[0] == 1)) {
    return cudaMemcpyAsync(
        copy.dst, copy.src,
        static_cast<size_t>(copy.count) * static_cast<size_t>(copy.element_bytes),
        cudaMemcpyDeviceToDevice, stream);
  }
  unsigned blocks = blocksFor(copy.count);
  auto launch = [&](auto tag) {
    using Word = typename decltype(tag)::type;
    if (copy.wide_index) {
      stridedCopyKernel<Word, int64_t><<<blocks, kThreads, 0, stream>>>(copy);
    } else {
      stridedCopyKernel<Word, int32_t><<<blocks, kThreads, 0, stream>>>(copy);
    }
  };
  if (copy.element_bytes == kMaxWordBytes) {  // planStridedCopy's widened words
    launch(TypeTag<uint4>{});
    return cudaGetLastError();
  }
  return dispatchWord(copy.element_bytes, launch);
}

}  // namespace onnxopt::kernels::cuda
