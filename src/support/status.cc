#include "onnxopt/support/status.h"

#include <cstdio>
#include <cstdlib>

namespace onnxopt {

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
