#include "onnxopt/ir/tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace onnxopt::ir {

StatusOr<int> openRegularFile(const std::string& path, uint64_t* size) {
  // O_NONBLOCK: open() on a FIFO would otherwise wait for a writer. fstat on the descriptor, not
  // stat on the path, so that the file checked is the file read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    return makeError(err == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                     "cannot open: {}", std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return makeError(StatusCode::kIoError, "cannot stat: {}", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "a special file";
    return makeError(StatusCode::kIoError, "is {}, not a regular file", what);
  }
  // Regular files ignore O_NONBLOCK; cleared all the same so that readers see a plain descriptor.
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (size != nullptr) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

StatusOr<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  uint64_t file_size = 0;
  auto opened = openRegularFile(path, &file_size);
  if (!opened.isOk()) return opened.status();
  int fd = *opened;
  auto size = static_cast<size_t>(file_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return makeError(StatusCode::kIoError, "cannot map: {}", std::strerror(err));
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
  if (!n || dataTypeBits(dtype_) == 0) return std::nullopt;
  return dataTypeStorageBytes(dtype_, static_cast<uint64_t>(*n));
}

void Tensor::setBytes(std::string bytes) {
  auto buffer = std::make_shared<OwnedBuffer>(std::move(bytes));
  data_ = buffer->data();
  offset_ = 0;
  size_ = buffer->size();
  lazy_ = false;
  buffer_ = std::move(buffer);
  external_.reset();
}

void Tensor::setView(std::shared_ptr<const Buffer> buffer, size_t offset, size_t size) {
  ONNXOPT_CHECK(offset <= buffer->size() && size <= buffer->size() - offset,
                "tensor view out of the buffer's range");
  lazy_ = buffer->lazy();
  // (a lazy buffer is not asked for its bytes here: data() asks when a pass reads them)
  data_ = lazy_ || buffer->data() == nullptr ? nullptr : buffer->data() + offset;
  offset_ = offset;
  size_ = size;
  buffer_ = std::move(buffer);
}

Tensor Tensor::subView(std::vector<int64_t> dims, size_t offset, size_t size) const {
  ONNXOPT_CHECK(offset <= size_ && size <= size_ - offset, "tensor view out of the tensor's range");
  Tensor t(dtype_, std::move(dims));
  t.buffer_ = buffer_;
  t.data_ = data_ == nullptr ? nullptr : data_ + offset;
  t.offset_ = offset_ + offset;
  t.lazy_ = lazy_;
  t.size_ = size;
  if (external_) {
    t.external_ = ExternalSource{external_->path, external_->offset + offset, size};
  }
  return t;
}

}  // namespace onnxopt::ir
