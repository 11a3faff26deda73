#include "onnxopt/ir/tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace onnxopt::ir {

StatusOr<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return makeError(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                     "cannot open '{}': {}", path, std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(StatusCode::kIoError, "'{}' is not a regular file", path);
  }
  size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return makeError(StatusCode::kIoError, "cannot map '{}': {}", path, std::strerror(err));
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return std::shared_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

std::optional<int64_t> Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims_) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

std::optional<uint64_t> Tensor::expectedByteSize() const {
  auto n = numElements();
  int bits = dataTypeBits(dtype_);
  if (!n || bits == 0) return std::nullopt;
  uint64_t total_bits = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(*n), static_cast<uint64_t>(bits), &total_bits)) {
    return std::nullopt;
  }
  return (total_bits + 7) / 8;
}

void Tensor::setBytes(std::string bytes) {
  auto buffer = std::make_shared<OwnedBuffer>(std::move(bytes));
  data_ = buffer->data();
  size_ = buffer->size();
  buffer_ = std::move(buffer);
  external_.reset();
}

void Tensor::setView(std::shared_ptr<const Buffer> buffer, size_t offset, size_t size) {
  ONNXOPT_CHECK(offset <= buffer->size() && size <= buffer->size() - offset,
                "tensor view out of the buffer's range");
  data_ = buffer->data() == nullptr ? nullptr : buffer->data() + offset;
  size_ = size;
  buffer_ = std::move(buffer);
}

}  // namespace onnxopt::ir
