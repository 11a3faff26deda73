#include "support/big_blocks.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>

namespace onnxopt::support {

void* allocateBigBlock(size_t bytes) {
  // Over-allocate by one alignment and trim, so that the block starts on a 2 MB boundary (huge
  // pages map aligned ranges only).
  const size_t align = kBigBlockBytes;
  size_t span = bytes + align;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (start + align - 1) & ~(uintptr_t{align} - 1);
  if (aligned > start) ::munmap(raw, aligned - start);
  uintptr_t end = start + span;
  uintptr_t block_end = aligned + bytes;
  if (end > block_end) ::munmap(reinterpret_cast<void*>(block_end), end - block_end);
  ::madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void freeBigBlock(void* block, size_t bytes) {
  if (block != nullptr) ::munmap(block, bytes);
}

void* allocateArenaBlock(size_t bytes) {
  if (bytes >= kBigBlockBytes) return allocateBigBlock(bytes);
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void freeArenaBlock(void* block, size_t bytes) {
  if (bytes >= kBigBlockBytes) {
    freeBigBlock(block, bytes);
  } else {
    std::free(block);
  }
}

}  // namespace onnxopt::support
