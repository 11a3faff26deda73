// A recursive-descent reader of SymExpr's canonical text (dim_eval.h):
//   expr   := ["-"] term { (" + " | " - ") term }
//   term   := factor { "*" factor }
//   factor := integer | floor(expr/expr) | mod(expr, expr) | min(expr, expr) | max(expr, expr)
//           | symbol
// A symbol runs to the next '*', '/', ',', ')' or " + "/" - ". Arithmetic is checked: an overflow
// or a division by zero gives no value (the dim is then dynamic, never a wrapped number).
#include "dim_eval.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace onnxopt::runtime::plan_detail {
namespace {

class Reader {
 public:
  Reader(const std::string& text, const Bindings& bindings) : s_(text), b_(bindings) {}

  std::optional<int64_t> parseAll() {
    auto v = expr();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  bool at(const char* lit) const {
    return s_.compare(pos_, std::char_traits<char>::length(lit), lit) == 0;
  }
  bool eat(const char* lit) {
    if (!at(lit)) return false;
    pos_ += std::char_traits<char>::length(lit);
    return true;
  }

  std::optional<int64_t> expr() {
    bool negate = eat("-");
    auto v = term();
    if (!v) return std::nullopt;
    int64_t acc = *v;
    if (negate && __builtin_sub_overflow(int64_t{0}, acc, &acc)) return std::nullopt;
    while (true) {
      bool plus = at(" + ");
      if (!plus && !at(" - ")) return acc;
      pos_ += 3;
      auto t = term();
      if (!t) return std::nullopt;
      bool overflow =
          plus ? __builtin_add_overflow(acc, *t, &acc) : __builtin_sub_overflow(acc, *t, &acc);
      if (overflow) return std::nullopt;
    }
  }

  std::optional<int64_t> term() {
    auto v = factor();
    if (!v) return std::nullopt;
    int64_t acc = *v;
    while (eat("*")) {
      auto f = factor();
      if (!f || __builtin_mul_overflow(acc, *f, &acc)) return std::nullopt;
    }
    return acc;
  }

  std::optional<int64_t> binary(const char* separator, int kind) {
    auto a = expr();
    if (!a || !eat(separator)) return std::nullopt;
    auto b = expr();
    if (!b || !eat(")")) return std::nullopt;
    switch (kind) {
      case 0:
      case 1: {
        if (*b == 0 || (*a == INT64_MIN && *b == -1)) return std::nullopt;
        int64_t q = *a / *b, r = *a % *b;
        if (r != 0 && ((r < 0) != (*b < 0))) {
          --q;
          r += *b;
        }
        return kind == 0 ? q : r;  // floored division and modulo, as SymExpr's
      }
      case 2:
        return std::min(*a, *b);
      default:
        return std::max(*a, *b);
    }
  }

  std::optional<int64_t> factor() {
    if (eat("floor(")) return binary("/", 0);
    if (eat("mod(")) return binary(", ", 1);
    if (eat("min(")) return binary(", ", 2);
    if (eat("max(")) return binary(", ", 3);
    size_t start = pos_;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '*' || c == '/' || c == ',' || c == ')') break;
      if (at(" + ") || at(" - ")) break;
      ++pos_;
    }
    if (pos_ == start) return std::nullopt;
    std::string token = s_.substr(start, pos_ - start);
    bool digits = true;
    for (char c : token) digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
    if (digits) {
      int64_t v = 0;
      for (char c : token) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) {
          return std::nullopt;
        }
      }
      return v;
    }
    auto it = b_.find(token);
    if (it == b_.end()) return std::nullopt;
    return it->second;
  }

  const std::string& s_;
  const Bindings& b_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<int64_t> evalExprText(const std::string& text, const Bindings& bindings) {
  return Reader(text, bindings).parseAll();
}

std::optional<int64_t> evalDim(const ir::Dim& dim, const Bindings& bindings) {
  switch (dim.kind) {
    case ir::Dim::Kind::kValue:
      return dim.value >= 0 ? std::optional<int64_t>(dim.value) : std::nullopt;
    case ir::Dim::Kind::kParam: {
      auto it = bindings.find(dim.param);
      if (it == bindings.end()) return std::nullopt;
      return it->second;
    }
    case ir::Dim::Kind::kExpr:
      return evalExprText(dim.param, bindings);
    default:
      return std::nullopt;
  }
}

}  // namespace onnxopt::runtime::plan_detail
