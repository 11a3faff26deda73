// Large blocks backed by transparent huge pages where the kernel offers them.
//
// A graph of a million nodes touches about a gigabyte in small pieces; with 4 KB pages each first
// touch is a page fault, and on a 1M-node chain the faults were a sixth of -O2's time. Blocks of
// 2 MB and more come from mmap with MADV_HUGEPAGE instead ("madvise" is the usual THP mode), so a
// fault maps 2 MB at once. Where THP is off the advice is ignored and nothing else changes.
#pragma once

#include <cstddef>

namespace onnxopt::support {

/// The size from which a block is worth huge pages.
inline constexpr size_t kBigBlockBytes = size_t{2} << 20;

/// A block of `bytes` (a multiple of 4 KB is best), aligned to 2 MB; throws std::bad_alloc.
void* allocateBigBlock(size_t bytes);
/// Frees a block from allocateBigBlock with the same `bytes`.
void freeBigBlock(void* block, size_t bytes);

/// For protobuf arenas (ArenaOptions::block_alloc / block_dealloc): blocks of kBigBlockBytes or
/// more are big blocks, smaller ones come from malloc.
void* allocateArenaBlock(size_t bytes);
void freeArenaBlock(void* block, size_t bytes);

}  // namespace onnxopt::support
