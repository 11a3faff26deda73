// Symbolic dimension expressions: integer polynomials over named symbols, with floor division,
// modulo, min and max kept as opaque atoms when they do not simplify.
//
// Canonical form: a sum of terms, each an integer coefficient times a sorted product of atoms (with
// exponents); zero terms dropped. Two expressions are equal iff their canonical forms are, so
// batch*seq // seq == batch and (N + 1) - 1 == N compare equal.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace onnxopt::ir {

/// Floor division on int64; callers exclude b == 0 and INT64_MIN / -1 (the two traps of `/`).
int64_t floorDivInt(int64_t a, int64_t b);

class SymExpr;

/// An atom: a symbol, or an operation that did not simplify (floor division, modulo, min, max).
struct SymAtom {
  enum class Kind : uint8_t { kSymbol, kFloorDiv, kMod, kMin, kMax };
  Kind kind = Kind::kSymbol;
  std::string key;  ///< canonical text; atoms compare by it
  std::shared_ptr<const SymExpr> lhs, rhs;

  bool operator<(const SymAtom& other) const { return key < other.key; }
  bool operator==(const SymAtom& other) const { return key == other.key; }
};

/// A product of atoms with positive exponents, sorted by atom key. Empty for the constant term.
using SymMonomial = std::vector<std::pair<SymAtom, int>>;

/// A canonical integer polynomial over atoms.
class SymExpr {
 public:
  SymExpr() = default;  // zero
  static SymExpr constant(int64_t value);
  static SymExpr symbol(const std::string& name);
  /// An expression whose computation overflowed (see overflowed()).
  static SymExpr overflowedExpr();

  bool isConstant() const;
  /// The value when constant.
  std::optional<int64_t> constantValue() const;
  /// The symbol name when the expression is exactly one symbol with coefficient 1.
  std::optional<std::string> symbolName() const;

  friend SymExpr operator+(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator-(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator*(const SymExpr& a, const SymExpr& b);
  /// Floor division: exact when the divisor divides the dividend as a polynomial (a*b / b,
  /// (1024*(F + 1)) / (F + 1)); constants fold; else an atom.
  /// Division (and mod) by zero, and INT64_MIN / -1, give an overflowed (unknown) expression.
  static SymExpr floorDiv(const SymExpr& a, const SymExpr& b);
  static SymExpr mod(const SymExpr& a, const SymExpr& b);
  static SymExpr min(const SymExpr& a, const SymExpr& b);
  static SymExpr max(const SymExpr& a, const SymExpr& b);
  /// ceil(a / b), as floorDiv(a + b - 1, b).
  static SymExpr ceilDiv(const SymExpr& a, const SymExpr& b);

  /// True when the expression cannot be negative (symbols are dims, so they are non-negative).
  bool isNonNegative() const;
  /// The constant c when this expression is exactly min(other, c).
  std::optional<SymExpr> minOperandBound(const SymExpr& other) const;

  /// True when computing this expression overflowed int64 somewhere (or divided by zero, or
  /// grew past a size bound): its value is unknown (never
  /// constant, never equal to anything, a Dim of unknown size), not a wrapped number.
  bool overflowed() const { return overflow_; }

  bool operator==(const SymExpr& other) const {
    return !overflow_ && !other.overflow_ && terms_ == other.terms_;
  }
  bool operator!=(const SymExpr& other) const { return !(*this == other); }

  /// Canonical text: "batch*seq", "2*N + 1", "floor(L/2)", "max(a, b)".
  std::string toString() const;

 private:
  /// Monomial -> coefficient; the empty monomial is the constant term.
  std::map<SymMonomial, int64_t> terms_;
  bool overflow_ = false;
  void addTerm(const SymMonomial& m, int64_t c);
  /// The q with this == q * divisor as integer polynomials over the atoms, else nullopt.
  std::optional<SymExpr> divideExactly(const SymExpr& divisor) const;
  static SymExpr atom(SymAtom::Kind kind, const SymExpr& a, const SymExpr& b);
};

}  // namespace onnxopt::ir
