// Status and StatusOr: the error type of every onnxopt API. No exception crosses the public API.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace onnxopt {

/// `text` with every control character (bytes 0x00-0x1f and 0x7f) written as an escape: \n, \r,
/// \t, or \xNN, and every byte that is not part of well-formed UTF-8 as \xNN. Diagnostics pass
/// names from the model through it, so that a name holding a newline cannot start a line of its
/// own (a forged "opt: error:" line), and a corrupted name cannot make the message undecodable.
/// Other bytes, backslashes included, stay as they are, so escaping twice changes nothing.
std::string escapeControlChars(std::string_view text);

/// What kind of failure a Status carries. Tools map these to exit codes.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    ///< Bad input: malformed model, bad option.
  kNotFound,           ///< A file or a named entity does not exist.
  kIoError,            ///< Reading or writing a file failed.
  kUnimplemented,      ///< Valid input that onnxopt does not support (yet).
  kResourceExhausted,  ///< A configured limit was exceeded.
  kInternal,           ///< A bug: an invariant of onnxopt itself does not hold.
};

/// The result of an operation that can fail: OK, or a code and a one-line message. The message is
/// kept on one line: control characters in it (from names in the model) are escaped.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(escapeControlChars(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Prefixes the message with context, e.g. the file or node the error was found in.
  Status withContext(const std::string& context) const {
    if (isOk()) return *this;
    return Status(code_, context + ": " + message_);  // the constructor escapes the context
  }

  std::string toString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// Builds an error Status with a fmt-style message.
template <typename... Args>
Status makeError(StatusCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status invalidArgument(fmt::format_string<Args...> format, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(format, std::forward<Args>(args)...));
}

/// Either a value of type T or an error Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.isOk() && "StatusOr built from an OK status without a value");
  }

  bool isOk() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(value_.has_value());
    return *value_;
  }
  const T& value() const& {
    assert(value_.has_value());
    return *value_;
  }
  T&& value() && {
    assert(value_.has_value());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace onnxopt

#define ONNXOPT_CONCAT_INNER(a, b) a##b
#define ONNXOPT_CONCAT(a, b) ONNXOPT_CONCAT_INNER(a, b)

/// Returns the Status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::onnxopt::Status _onnxopt_status = (expr);          \
    if (!_onnxopt_status.isOk()) return _onnxopt_status; \
  } while (0)

#define ONNXOPT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.isOk()) return tmp.status();               \
  lhs = std::move(tmp).value()

/// `ASSIGN_OR_RETURN(auto x, f());` binds x to f()'s value or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ONNXOPT_ASSIGN_OR_RETURN_IMPL(ONNXOPT_CONCAT(_onnxopt_statusor_, __LINE__), lhs, expr)

/// Aborts with a message when an internal invariant does not hold (a bug, not bad input).
#define ONNXOPT_CHECK(cond, msg)                                                 \
  do {                                                                           \
    if (!(cond)) ::onnxopt::detail::checkFailed(#cond, msg, __FILE__, __LINE__); \
  } while (0)

namespace onnxopt::detail {
[[noreturn]] void checkFailed(const char* cond, const std::string& msg, const char* file, int line);
}  // namespace onnxopt::detail
