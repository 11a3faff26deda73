// Atomic file output (private to src/io): write to a temporary file beside the target, rename on
// commit.
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

/// A temporary file beside the final path, removed unless committed by rename.
class TempFile {
 public:
  static StatusOr<std::unique_ptr<TempFile>> create(const std::string& final_path) {
    std::filesystem::path p(final_path);
    std::string pattern =
        (p.parent_path() / ("." + p.filename().string() + ".tmp.XXXXXX")).string();
    if (p.parent_path().empty()) pattern = "." + p.filename().string() + ".tmp.XXXXXX";
    int fd = ::mkstemp(pattern.data());
    if (fd < 0) {
      return makeError(StatusCode::kIoError, "cannot create a file beside '{}': {}", final_path,
                       std::strerror(errno));
    }
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    return std::unique_ptr<TempFile>(new TempFile(fd, pattern, final_path));
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
  }
  int fd() const { return fd_; }
  Status closeFile() {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      return makeError(StatusCode::kIoError, "writing '{}': {}", final_, std::strerror(errno));
    }
    return Status::ok();
  }
  Status commit() {
    if (fd_ >= 0) RETURN_IF_ERROR(closeFile());
    if (::rename(temp_.c_str(), final_.c_str()) != 0) {
      return makeError(StatusCode::kIoError, "cannot rename into '{}': {}", final_,
                       std::strerror(errno));
    }
    committed_ = true;
    return Status::ok();
  }

 private:
  TempFile(int fd, std::string temp, std::string final_path)
      : fd_(fd), temp_(std::move(temp)), final_(std::move(final_path)) {}
  int fd_;
  std::string temp_;
  std::string final_;
  bool committed_ = false;
};

}  // namespace onnxopt::io
