// Tensor: constant data of the IR (initializers, tensor attributes). Its bytes either live in a
// buffer the tensor owns (moved, not copied, out of the protobuf message) or are a view of a
// memory-mapped external-data file, so multi-gigabyte weights are never copied into memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxopt/ir/types.h"
#include "onnxopt/support/status.h"

namespace onnxopt::ir {

/// Bytes held alive by tensors. Implementations: an owned string, or a read-only file mapping.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual const uint8_t* data() const = 0;
  virtual size_t size() const = 0;
  /// Whether data() fetches the bytes on its first call (a weight left in the caller's message
  /// until a pass reads it: the Python package's placeholders). size() is known without fetching.
  /// data() of a lazy buffer must be safe to call from any thread, and return the same pointer
  /// each time.
  virtual bool lazy() const { return false; }
};

/// A buffer that owns its bytes.
class OwnedBuffer final : public Buffer {
 public:
  explicit OwnedBuffer(std::string bytes) : bytes_(std::move(bytes)) {}
  const uint8_t* data() const override { return reinterpret_cast<const uint8_t*>(bytes_.data()); }
  size_t size() const override { return bytes_.size(); }

 private:
  std::string bytes_;
};

/// Opens `path` read-only if it is a regular file, and returns the descriptor (the caller closes
/// it) and, in `size`, the file's size. A FIFO, directory or device is refused with an error that
/// says which it is, without blocking: a FIFO is opened non-blocking, then checked with fstat.
/// Errors do not name the path; callers add it as context.
StatusOr<int> openRegularFile(const std::string& path, uint64_t* size = nullptr);

/// A read-only private mapping of a whole file.
class MappedFile final : public Buffer {
 public:
  /// Maps `path`; an empty file maps to an empty buffer. Errors are openRegularFile's (the path is
  /// not named: callers add it).
  static StatusOr<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile() override;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const override { return data_; }
  size_t size() const override { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

/// Where a tensor's bytes came from when they were read from an external-data file.
struct ExternalSource {
  std::string path;  ///< absolute path of the data file
  uint64_t offset = 0;
  uint64_t length = 0;
};

/// A dense tensor: element type, dims and data. Numeric data is little-endian raw bytes (as ONNX's
/// raw_data); string tensors hold a list of strings instead.
class Tensor {
 public:
  Tensor() = default;
  Tensor(DataType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {}

  DataType dtype() const { return dtype_; }
  void setDtype(DataType dtype) { dtype_ = dtype; }
  const std::vector<int64_t>& dims() const { return dims_; }
  void setDims(std::vector<int64_t> dims) { dims_ = std::move(dims); }
  /// Product of dims; nullopt when a dim is negative or the product overflows int64.
  std::optional<int64_t> numElements() const;

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  const std::string& docString() const { return doc_string_; }
  void setDocString(std::string doc) { doc_string_ = std::move(doc); }

  /// The raw bytes (empty for string tensors). May be unaligned when viewing external data. A view
  /// of a lazy buffer fetches them here, on the first call.
  const uint8_t* data() const { return lazy_ ? buffer_->data() + offset_ : data_; }
  size_t byteSize() const { return size_; }
  std::string_view bytes() const { return {reinterpret_cast<const char*>(data()), size_}; }
  /// Whether the bytes are all of `buffer`'s, viewed there (no copy was made since the view).
  /// Reads no bytes, so it leaves a lazy buffer unfetched.
  bool viewsAllOf(const Buffer* buffer) const {
    return buffer != nullptr && buffer_.get() == buffer && offset_ == 0 && size_ == buffer->size();
  }

  /// Takes ownership of `bytes` (a move, no copy).
  void setBytes(std::string bytes);
  /// Makes the tensor a view of `size` bytes of `buffer` at `offset`; the buffer stays alive with
  /// it.
  void setView(std::shared_ptr<const Buffer> buffer, size_t offset, size_t size);

  /// A tensor of `dims` viewing `size` bytes of this one's at `offset` (sharing its buffer, no
  /// copy; a view of external data stays one), with no name, doc string or unknown fields.
  Tensor subView(std::vector<int64_t> dims, size_t offset, size_t size) const;

  const std::vector<std::string>& strings() const { return strings_; }
  std::vector<std::string>& mutableStrings() { return strings_; }

  /// Set when the bytes are a view of an external-data file (for streaming them out without
  /// paging).
  const std::optional<ExternalSource>& externalSource() const { return external_; }
  void setExternalSource(std::optional<ExternalSource> source) { external_ = std::move(source); }

  /// Serialized protobuf fields onnxopt does not model (e.g. newer-IR metadata), written back
  /// verbatim.
  const std::string& unknownFields() const { return unknown_fields_; }
  void setUnknownFields(std::string fields) { unknown_fields_ = std::move(fields); }

  /// Bytes that the data should occupy for dtype and dims (dataTypeStorageBytes); nullopt on
  /// overflow (the importer refuses such tensors), for string tensors and unknown dtypes.
  std::optional<uint64_t> expectedByteSize() const;

 private:
  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> dims_;
  std::string name_;
  std::string doc_string_;
  std::shared_ptr<const Buffer> buffer_;
  const uint8_t* data_ = nullptr;  ///< unused (null) while lazy_
  size_t offset_ = 0;              ///< of the bytes in buffer_
  size_t size_ = 0;
  bool lazy_ = false;  ///< buffer_ is lazy: data() asks it
  std::vector<std::string> strings_;
  std::optional<ExternalSource> external_;
  std::string unknown_fields_;
};

/// A sparse tensor (SparseTensorProto): values, indices and the dense dims.
struct SparseTensor {
  Tensor values;
  Tensor indices;
  std::vector<int64_t> dims;
};

}  // namespace onnxopt::ir
