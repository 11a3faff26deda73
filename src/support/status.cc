#include "onnxopt/support/status.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace onnxopt {

namespace {

/// The length of the well-formed UTF-8 sequence starting at text[i] (RFC 3629: no overlong forms,
/// no surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
size_t utf8SequenceLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t n = lead >= 0xc2 && lead <= 0xdf   ? 2
             : lead >= 0xe0 && lead <= 0xef ? 3
             : lead >= 0xf0 && lead <= 0xf4 ? 4
                                            : 0;
  if (n == 0 || i + n > text.size()) return 0;
  // The second byte's range is narrower after E0 (overlong), ED (surrogates), F0 (overlong), F4 (> U+10FFFF).
  unsigned char lo = lead == 0xe0 ? 0xa0 : lead == 0xf0 ? 0x90 : 0x80;
  unsigned char hi = lead == 0xed ? 0x9f : lead == 0xf4 ? 0x8f : 0xbf;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = i + 2; k < i + n; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xbf) return 0;
  }
  return n;
}

bool isControl(unsigned char u) {
  return u < 0x20 || u == 0x7f;
}

bool needsEscape(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8SequenceLength(text, i);
    if (n == 0 || isControl(static_cast<unsigned char>(text[i]))) return true;
    i += n;
  }
  return false;
}

}  // namespace

std::string escapeControlChars(std::string_view text) {
  if (!needsEscape(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    size_t n = utf8SequenceLength(text, i);
    if (n > 1 || (n == 1 && !isControl(static_cast<unsigned char>(c)))) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    }
    ++i;
  }
  return out;
}

std::string Status::toString() const {
  if (isOk()) return "OK";
  return message_;
}

namespace detail {
void checkFailed(const char* cond, const std::string& msg, const char* file, int line) {
  std::fprintf(stderr, "onnxopt: internal error at %s:%d: %s (%s)\n", file, line, msg.c_str(),
               cond);
  std::abort();
}
}  // namespace detail

}  // namespace onnxopt
