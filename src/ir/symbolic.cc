#include "onnxopt/ir/symbolic.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace onnxopt::ir {
namespace {

/// Atoms nest their operands' text in their key; past this length an expression stands for an
/// unknown value instead (a chain of min/max over its own results would double it every step).
constexpr size_t kMaxKeyLength = 4096;

/// Past this many terms in a product, or this exponent, an expression stands for an unknown value
/// instead: squaring (N + 1) thirty times over would otherwise need 2^30 terms.
constexpr size_t kMaxTerms = 256;
constexpr int kMaxExponent = 1 << 16;

/// The product of two monomials; nullopt when an exponent would pass kMaxExponent.
std::optional<SymMonomial> multiply(const SymMonomial& a, const SymMonomial& b) {
  std::map<SymAtom, int> exps;
  for (const auto& [atom, e] : a) exps[atom] += e;
  for (const auto& [atom, e] : b) {
    if ((exps[atom] += e) > kMaxExponent) return std::nullopt;
  }
  return SymMonomial(exps.begin(), exps.end());
}

/// Total degree of a monomial.
int degree(const SymMonomial& m) {
  int d = 0;
  for (const auto& f : m) d += f.second;
  return d;
}

/// The graded lexicographic order on monomials (total degree, then exponents in atom order): a
/// monomial order, so the leading term of a product is the product of the leading terms.
bool gradedLexLess(const SymMonomial& a, const SymMonomial& b) {
  if (degree(a) != degree(b)) return degree(a) < degree(b);
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].first == b[j].first) {
      if (a[i].second != b[j].second) return a[i].second < b[j].second;
      ++i;
      ++j;
    } else {
      // The atom that comes first in key order is present in only one of them.
      return b[j].first < a[i].first;
    }
  }
  return j < b.size();
}

/// a / b for monomials when b divides a (every atom of b with at least its exponent in a).
std::optional<SymMonomial> divideMonomial(const SymMonomial& a, const SymMonomial& b) {
  std::map<SymAtom, int> exps(a.begin(), a.end());
  for (const auto& [atom, e] : b) {
    auto it = exps.find(atom);
    if (it == exps.end() || it->second < e) return std::nullopt;
    if ((it->second -= e) == 0) exps.erase(it);
  }
  return SymMonomial(exps.begin(), exps.end());
}

std::string monomialText(const SymMonomial& m) {
  std::string out;
  for (const auto& [atom, e] : m) {
    for (int i = 0; i < e; ++i) out += (out.empty() ? "" : "*") + atom.key;
  }
  return out;
}

}  // namespace

SymExpr SymExpr::overflowedExpr() {
  SymExpr e;
  e.overflow_ = true;
  return e;
}

SymExpr SymExpr::constant(int64_t value) {
  SymExpr e;
  e.addTerm({}, value);
  return e;
}

SymExpr SymExpr::symbol(const std::string& name) {
  SymAtom atom;
  atom.kind = SymAtom::Kind::kSymbol;
  atom.key = name;
  SymExpr e;
  e.addTerm({{atom, 1}}, 1);
  return e;
}

void SymExpr::addTerm(const SymMonomial& m, int64_t c) {
  if (c == 0) return;
  auto it = terms_.find(m);
  if (it == terms_.end()) {
    terms_.emplace(m, c);
    return;
  }
  if (__builtin_add_overflow(it->second, c, &it->second)) overflow_ = true;
  if (it->second == 0) terms_.erase(it);
}

bool SymExpr::isConstant() const {
  return !overflow_ && (terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()));
}

std::optional<int64_t> SymExpr::constantValue() const {
  if (overflow_) return std::nullopt;
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

std::optional<std::string> SymExpr::symbolName() const {
  if (overflow_ || terms_.size() != 1) return std::nullopt;
  const auto& [m, c] = *terms_.begin();
  if (c != 1 || m.size() != 1 || m[0].second != 1 || m[0].first.kind != SymAtom::Kind::kSymbol) {
    return std::nullopt;
  }
  return m[0].first.key;
}

SymExpr operator+(const SymExpr& a, const SymExpr& b) {
  SymExpr r = a;
  r.overflow_ |= b.overflow_;
  for (const auto& [m, c] : b.terms_) r.addTerm(m, c);
  return r;
}

SymExpr operator-(const SymExpr& a, const SymExpr& b) {
  SymExpr r = a;
  r.overflow_ |= b.overflow_;
  for (const auto& [m, c] : b.terms_) {
    int64_t neg = 0;
    if (__builtin_sub_overflow(int64_t{0}, c, &neg)) r.overflow_ = true;
    r.addTerm(m, neg);
  }
  return r;
}

SymExpr operator*(const SymExpr& a, const SymExpr& b) {
  if (a.overflow_ || b.overflow_ || a.terms_.size() * b.terms_.size() > kMaxTerms) {
    return SymExpr::overflowedExpr();
  }
  SymExpr r;
  for (const auto& [ma, ca] : a.terms_) {
    for (const auto& [mb, cb] : b.terms_) {
      int64_t p = 0;
      auto m = multiply(ma, mb);
      if (!m || __builtin_mul_overflow(ca, cb, &p)) return SymExpr::overflowedExpr();
      r.addTerm(*m, p);
    }
  }
  return r;
}

std::optional<SymExpr> SymExpr::divideExactly(const SymExpr& divisor) const {
  if (overflow_ || divisor.overflow_ || divisor.terms_.empty()) return std::nullopt;
  // Polynomial long division by leading terms. b divides r (over the rationals) only if b's
  // leading term divides r's, so a leading term that does not divide means "not exact"; a
  // quotient coefficient that is not an integer is given up on. What is returned satisfies
  // this == q * divisor as polynomials: for every value of the atoms with divisor != 0,
  // this / divisor is exactly q, so floor division and truncation both give q.
  auto leading = [](const SymExpr& e) {
    auto best = e.terms_.begin();
    for (auto it = e.terms_.begin(); it != e.terms_.end(); ++it) {
      if (gradedLexLess(best->first, it->first)) best = it;
    }
    return best;
  };
  const auto lead_b = leading(divisor);
  SymExpr rest = *this;
  SymExpr quotient;
  for (size_t step = 0; step < kMaxTerms; ++step) {
    if (rest.overflow_) return std::nullopt;
    if (rest.terms_.empty()) return quotient.overflow_ ? std::nullopt : std::optional(quotient);
    const auto lead_r = leading(rest);
    auto m = divideMonomial(lead_r->first, lead_b->first);
    const int64_t cr = lead_r->second;
    const int64_t cb = lead_b->second;
    if (!m || cr % cb != 0 || (cb == -1 && cr == std::numeric_limits<int64_t>::min())) {
      return std::nullopt;
    }
    SymExpr term;
    term.addTerm(*m, cr / cb);
    quotient.addTerm(*m, cr / cb);
    rest = rest - term * divisor;
  }
  return std::nullopt;
}

SymExpr SymExpr::atom(SymAtom::Kind kind, const SymExpr& a, const SymExpr& b) {
  if (a.overflow_ || b.overflow_) return overflowedExpr();
  SymAtom atom;
  atom.kind = kind;
  const SymExpr* x = &a;
  const SymExpr* y = &b;
  // min and max commute: order the operands canonically.
  if ((kind == SymAtom::Kind::kMin || kind == SymAtom::Kind::kMax) &&
      y->toString() < x->toString()) {
    std::swap(x, y);
  }
  atom.lhs = std::make_shared<SymExpr>(*x);
  atom.rhs = std::make_shared<SymExpr>(*y);
  switch (kind) {
    case SymAtom::Kind::kFloorDiv:
      atom.key = fmt::format("floor({}/{})", x->toString(), y->toString());
      break;
    case SymAtom::Kind::kMod:
      atom.key = fmt::format("mod({}, {})", x->toString(), y->toString());
      break;
    case SymAtom::Kind::kMin:
      atom.key = fmt::format("min({}, {})", x->toString(), y->toString());
      break;
    case SymAtom::Kind::kMax:
      atom.key = fmt::format("max({}, {})", x->toString(), y->toString());
      break;
    case SymAtom::Kind::kSymbol:
      break;
  }
  if (atom.key.size() > kMaxKeyLength) return overflowedExpr();
  SymExpr e;
  e.addTerm({{atom, 1}}, 1);
  return e;
}

SymExpr SymExpr::floorDiv(const SymExpr& a, const SymExpr& b) {
  auto ca = a.constantValue();
  auto cb = b.constantValue();
  if (a.overflow_ || b.overflow_ || (cb && *cb == 0)) return overflowedExpr();  // no value
  if (cb && *cb == 1) return a;
  if (ca && cb && *cb == -1 && *ca == std::numeric_limits<int64_t>::min()) return overflowedExpr();
  if (ca && cb && *cb != 0) return constant(floorDivInt(*ca, *cb));
  if (ca && *ca == 0) return constant(0);
  // Only exact division cancels: (1024*(F + 1)) / (F + 1) == 1024 and a*b / b == a, but
  // (2*N + 1) / 2 stays floor((2*N + 1)/2), and so does N/2: no polynomial.
  if (auto q = a.divideExactly(b)) return *q;
  return atom(SymAtom::Kind::kFloorDiv, a, b);
}

SymExpr SymExpr::ceilDiv(const SymExpr& a, const SymExpr& b) {
  return floorDiv(a + b - constant(1), b);
}

SymExpr SymExpr::mod(const SymExpr& a, const SymExpr& b) {
  auto ca = a.constantValue();
  auto cb = b.constantValue();
  if (a.overflow_ || b.overflow_ || (cb && *cb == 0)) return overflowedExpr();  // no value
  if (ca && cb && *cb == -1) return constant(0);
  if (ca && cb && *cb != 0) {
    int64_t r = *ca % *cb;  // floored modulo: the sign of the divisor, without overflow
    if (r != 0 && ((r < 0) != (*cb < 0))) r += *cb;
    return constant(r);
  }
  if (cb && *cb == 1) return constant(0);
  if (a.divideExactly(b)) return constant(0);
  return atom(SymAtom::Kind::kMod, a, b);
}

bool SymExpr::isNonNegative() const {
  if (overflow_) return false;
  // Symbols stand for dims, which are never negative; so are floor divisions and remainders of
  // non-negative operands, and min/max of them.
  for (const auto& [m, c] : terms_) {
    if (c < 0) return false;
    for (const auto& [atom, e] : m) {
      if (atom.kind != SymAtom::Kind::kSymbol &&
          !(atom.lhs && atom.rhs && atom.lhs->isNonNegative() && atom.rhs->isNonNegative())) {
        return false;
      }
    }
  }
  return true;
}

SymExpr SymExpr::min(const SymExpr& a, const SymExpr& b) {
  if (a.overflow_ || b.overflow_) return overflowedExpr();
  if (a == b) return a;
  // min(x, c) with c <= 0 and x >= 0 is c.
  if (auto cb = b.constantValue(); cb && *cb <= 0 && a.isNonNegative()) return b;
  if (auto ca = a.constantValue(); ca && *ca <= 0 && b.isNonNegative()) return a;
  auto ca = a.constantValue();
  auto cb = b.constantValue();
  if (ca && cb) return constant(std::min(*ca, *cb));
  return atom(SymAtom::Kind::kMin, a, b);
}

SymExpr SymExpr::max(const SymExpr& a, const SymExpr& b) {
  if (a.overflow_ || b.overflow_) return overflowedExpr();
  if (a == b) return a;
  // max(x, c) with c <= 0 and x >= 0 is x.
  if (auto cb = b.constantValue(); cb && *cb <= 0 && a.isNonNegative()) return a;
  if (auto ca = a.constantValue(); ca && *ca <= 0 && b.isNonNegative()) return b;
  auto ca = a.constantValue();
  auto cb = b.constantValue();
  if (ca && cb) return constant(std::max(*ca, *cb));
  return atom(SymAtom::Kind::kMax, a, b);
}

std::optional<SymExpr> SymExpr::minOperandBound(const SymExpr& other) const {
  // this == min(other, c) for a constant c?
  if (terms_.size() != 1) return std::nullopt;
  const auto& [m, c] = *terms_.begin();
  if (c != 1 || m.size() != 1 || m[0].second != 1 || m[0].first.kind != SymAtom::Kind::kMin) {
    return std::nullopt;
  }
  const SymAtom& atom = m[0].first;
  if (*atom.lhs == other && atom.rhs->isConstant()) return *atom.rhs;
  if (*atom.rhs == other && atom.lhs->isConstant()) return *atom.lhs;
  return std::nullopt;
}

std::string SymExpr::toString() const {
  if (overflow_) return "overflow";
  if (terms_.empty()) return "0";
  // Highest-degree terms first, the constant last: "2*N*S + N + 1".
  std::vector<std::pair<const SymMonomial*, int64_t>> order;
  for (const auto& [m, c] : terms_) order.emplace_back(&m, c);
  std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    size_t dx = 0, dy = 0;
    for (const auto& f : *x.first) dx += static_cast<size_t>(f.second);
    for (const auto& f : *y.first) dy += static_cast<size_t>(f.second);
    return dx > dy;
  });
  std::string out;
  for (const auto& [m, c] : order) {
    uint64_t mag = c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    if (out.empty()) {
      if (c < 0) out += "-";
    } else {
      out += c < 0 ? " - " : " + ";
    }
    std::string mono = monomialText(*m);
    if (mono.empty()) {
      out += std::to_string(mag);
    } else if (mag == 1) {
      out += mono;
    } else {
      out += std::to_string(mag) + "*" + mono;
    }
  }
  return out;
}

int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace onnxopt::ir
