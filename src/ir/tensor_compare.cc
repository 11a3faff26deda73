#include "onnxopt/ir/tensor_compare.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxopt::ir {

namespace {

/// Reads a tensor's bytes a chunk at a time: in-memory data directly, external data with pread, so
/// the file mapping's pages are never faulted in (a multi-gigabyte model stays out of memory).
class ChunkReader {
 public:
  static constexpr size_t kChunk = size_t{4} << 20;

  explicit ChunkReader(const Tensor& t) : t_(t) {
    if (t.externalSource()) {
      fd_ = ::open(t.externalSource()->path.c_str(), O_RDONLY | O_CLOEXEC);
      buffer_.resize(kChunk);
    }
  }
  ~ChunkReader() {
    if (fd_ >= 0) ::close(fd_);
  }
  ChunkReader(const ChunkReader&) = delete;
  ChunkReader& operator=(const ChunkReader&) = delete;

  /// Bytes [offset, offset + n), n <= kChunk; nullopt on a read error.
  std::optional<std::string_view> read(uint64_t offset, size_t n) {
    if (!t_.externalSource()) return t_.bytes().substr(offset, n);
    if (fd_ < 0) return std::nullopt;
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd_, buffer_.data() + got, n - got,
                          static_cast<off_t>(t_.externalSource()->offset + offset + got));
      if (r <= 0) return std::nullopt;
      got += static_cast<size_t>(r);
    }
    return std::string_view(buffer_.data(), n);
  }

 private:
  const Tensor& t_;
  int fd_ = -1;
  std::string buffer_;
};

uint64_t fnv1a(uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

/// FNV-1a over 8-byte words (then the tail bytes), with a shift between words so that high bits
/// reach the low ones: eight times fewer multiplications than fnv1a on the same bytes.
uint64_t wordHash(uint64_t h, std::string_view bytes) {
  size_t words = bytes.size() / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + 8 * i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  return fnv1a(h, bytes.substr(8 * words));
}

template <typename T>
std::string_view asBytes(const T& v) {
  return {reinterpret_cast<const char*>(&v), sizeof v};
}

}  // namespace

uint64_t tensorHash(const Tensor& t) {
  uint64_t h = fnv1a(0xcbf29ce484222325ull, asBytes(static_cast<int32_t>(t.dtype())));
  for (int64_t d : t.dims()) h = fnv1a(h, asBytes(d));
  for (const std::string& s : t.strings()) h = fnv1a(h, s);
  // A sample of the data (head, middle, tail) is enough to bucket: tensorsEqual decides, and a
  // full hash would read every large weight of the model on each CSE run.
  constexpr uint64_t kSample = 512;
  ChunkReader reader(t);
  uint64_t size = t.byteSize();
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  if (size <= 3 * kSample) {
    ranges.emplace_back(0, size);
  } else {
    ranges = {{0, kSample}, {size / 2 - kSample / 2, kSample}, {size - kSample, kSample}};
  }
  for (const auto& [off, len] : ranges) {
    auto chunk = reader.read(off, len);
    if (!chunk) break;  // unreadable: the hash only buckets; equality decides
    h = wordHash(h, *chunk);
  }
  return h;
}

bool tensorsEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims() || a.byteSize() != b.byteSize() ||
      a.strings() != b.strings()) {
    return false;
  }
  const auto& ea = a.externalSource();
  const auto& eb = b.externalSource();
  if (ea && eb && ea->path == eb->path && ea->offset == eb->offset) return true;
  ChunkReader ra(a), rb(b);
  for (uint64_t off = 0; off < a.byteSize(); off += ChunkReader::kChunk) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(ChunkReader::kChunk, a.byteSize() - off));
    auto ca = ra.read(off, n);
    auto cb = rb.read(off, n);
    if (!ca || !cb || *ca != *cb) return false;
  }
  return true;
}

}  // namespace onnxopt::ir
