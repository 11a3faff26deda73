// Kernel choices that are timed on the device (convolution algorithms and cuDNN graph plans),
// kept in a file that later processes reuse (`--tuning-cache FILE`, CudaOptions::tuning_cache),
// so that the search is paid for once per shape and device rather than once per process.
//
// The file is text, one entry per line, `KEY<TAB>VALUE`, after a first line naming the format.
// Keys name everything the choice depends on (the kernel family, the device and its library
// versions, the math policy, the shapes and types); values are the family's own. New entries are
// appended with one write each, so processes that share a file at once lose nothing but may time
// a shape twice; a later line with the same key wins. A last line cut short (a process killed
// while writing) is ignored.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "onnxopt/support/status.h"

namespace onnxopt::kernels {

class TuningCache {
 public:
  /// The cache of `path`, created empty when the file does not exist. A file that exists but
  /// cannot be read, or is not a tuning cache, is an error naming it (and the line).
  static StatusOr<std::unique_ptr<TuningCache>> open(const std::string& path);

  /// The value recorded for `key`, if any.
  std::optional<std::string> find(const std::string& key) const;
  /// Records `value` for `key` here and at the end of the file. Keys and values hold no tab or
  /// newline.
  Status record(const std::string& key, const std::string& value);

  const std::string& path() const { return path_; }
  size_t size() const { return entries_.size(); }

 private:
  explicit TuningCache(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::map<std::string, std::string> entries_;
};

}  // namespace onnxopt::kernels
