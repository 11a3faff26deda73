// A stream for diagnostics (warnings, notes) whose lines cannot be forged by names in the model.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>

#include "onnxopt/support/status.h"

namespace onnxopt {

/// Forwards to another stream buffer, escaping control characters (escapeControlChars). A line
/// may end only where a write ends: a newline is kept only as the last character of a write; one
/// inside a write (a name holding "\nopt: error: ...") is escaped and cannot start a line.
/// StreamDiagnosticSink (diagnostics.h) writes each diagnostic, newline included, as one write.
class DiagnosticStreamBuf final : public std::streambuf {
 public:
  explicit DiagnosticStreamBuf(std::streambuf* target) : target_(target) {}

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    char c = traits_type::to_char_type(ch);
    return xsputn(&c, 1) == 1 ? ch : traits_type::eof();
  }

  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n <= 0) return 0;
    bool trailing_newline = s[n - 1] == '\n';
    std::string text = escapeControlChars(std::string_view(s, trailing_newline ? n - 1 : n));
    if (trailing_newline) text += '\n';
    auto size = static_cast<std::streamsize>(text.size());
    return target_->sputn(text.data(), size) == size ? n : 0;
  }

  int sync() override { return target_->pubsync(); }

 private:
  std::streambuf* target_;
};

/// An ostream over DiagnosticStreamBuf, e.g. `DiagnosticStream warnings(std::cerr);`.
class DiagnosticStream final : public std::ostream {
 public:
  explicit DiagnosticStream(std::ostream& target) : std::ostream(nullptr), buf_(target.rdbuf()) {
    rdbuf(&buf_);
  }

 private:
  DiagnosticStreamBuf buf_;
};

}  // namespace onnxopt
