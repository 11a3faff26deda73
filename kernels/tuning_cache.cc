// The tuning cache file (tuning_cache.h).
#include "onnxopt/kernels/tuning_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace onnxopt::kernels {
namespace {

constexpr const char* kHeader = "# onnxopt tuning cache v1";

Status writeAll(int fd, const std::string& text, const std::string& path) {
  // O_APPEND: each write lands at the end as one piece, whoever else appends.
  ssize_t n = ::write(fd, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) {
    return makeError(StatusCode::kIoError, "{}: cannot append to the tuning cache: {}", path,
                     std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace

StatusOr<std::unique_ptr<TuningCache>> TuningCache::open(const std::string& path) {
  std::unique_ptr<TuningCache> cache(new TuningCache(path));
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return makeError(StatusCode::kIoError, "{}: a folder, not a tuning cache file", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (::access(path.c_str(), F_OK) == 0) {
      return makeError(StatusCode::kIoError, "{}: cannot read the tuning cache", path);
    }
    return cache;  // a new file, written on the first record
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  size_t pos = 0;
  for (int line_no = 1; pos < text.size(); ++line_no) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;  // a last line cut short
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line_no == 1) {
      if (line != kHeader) {
        return invalidArgument("{}: not an onnxopt tuning cache (its first line is not '{}')", path,
                               kHeader);
      }
      continue;
    }
    size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0) {
      return invalidArgument("{}:{}: not a tuning cache entry (KEY<TAB>VALUE)", path, line_no);
    }
    cache->entries_[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return cache;
}

std::optional<std::string> TuningCache::find(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

Status TuningCache::record(const std::string& key, const std::string& value) {
  if (key.empty() || key.find_first_of("\t\n") != std::string::npos ||
      value.find_first_of("\t\n") != std::string::npos) {
    return invalidArgument("{}: a tuning cache key or value with a tab or newline", path_);
  }
  entries_[key] = value;
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) {
    return makeError(StatusCode::kIoError, "{}: cannot write the tuning cache: {}", path_,
                     std::strerror(errno));
  }
  Status st = Status::ok();
  // A new (or empty) file starts with the header; lseek reports the size under O_APPEND.
  if (::lseek(fd, 0, SEEK_END) == 0) st = writeAll(fd, std::string(kHeader) + "\n", path_);
  if (st.isOk()) st = writeAll(fd, key + "\t" + value + "\n", path_);
  ::close(fd);
  return st;
}

}  // namespace onnxopt::kernels
