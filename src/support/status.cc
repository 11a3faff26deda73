#include "onnxopt/support/status.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace onnxopt {

std::string escapeControlChars(std::string_view text) {
  auto is_control = [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  };
  if (std::none_of(text.begin(), text.end(), is_control)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (!is_control(c)) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    }
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
