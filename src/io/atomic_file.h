// Atomic file output (private to src/io): files are written in a staging folder beside their
// targets and renamed into place on commit.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "onnxopt/support/status.h"

namespace onnxopt::io {

/// A hidden folder created beside `target` (in the same folder, so on the same file system, and
/// renames out of it are atomic). Its name is short whatever the target's, so that it fits within
/// NAME_MAX where the target's name already nearly fills it. Removed with its contents when this
/// goes out of scope.
class StagingDir {
 public:
  static StatusOr<std::unique_ptr<StagingDir>> create(const std::string& target) {
    std::filesystem::path parent = std::filesystem::path(target).parent_path();
    std::string pattern =
        (parent.empty() ? std::filesystem::path(".opt-XXXXXX") : parent / ".opt-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return makeError(StatusCode::kIoError, "cannot create a file in '{}': {}",
                       parent.empty() ? std::string(".") : parent.string(), std::strerror(errno));
    }
    return std::unique_ptr<StagingDir>(new StagingDir(pattern));
  }
  ~StagingDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit StagingDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

/// A file created for writing (mode 0666 less the umask), closed when this goes out of scope.
class OutFile {
 public:
  static StatusOr<std::unique_ptr<OutFile>> create(const std::string& path,
                                                   const std::string& shown_as) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      return makeError(StatusCode::kIoError, "cannot create a file for '{}': {}", shown_as,
                       std::strerror(errno));
    }
    return std::unique_ptr<OutFile>(new OutFile(fd, shown_as));
  }
  ~OutFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  int fd() const { return fd_; }
  Status writeAll(const char* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n > (size_t{1} << 30) ? (size_t{1} << 30) : n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        return makeError(StatusCode::kIoError, "writing '{}': {}", shown_as_, std::strerror(errno));
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return Status::ok();
  }
  Status close() {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      return makeError(StatusCode::kIoError, "writing '{}': {}", shown_as_, std::strerror(errno));
    }
    return Status::ok();
  }

 private:
  OutFile(int fd, std::string shown_as) : fd_(fd), shown_as_(std::move(shown_as)) {}
  int fd_;
  std::string shown_as_;
};

}  // namespace onnxopt::io
