// einsum-to-matmul: an Einsum that is a matrix product becomes a MatMul.
//
//   Einsum<"P i j, Q j k -> R i k">(a, b) -> MatMul(a, b)
//     P, Q, R batch prefixes: P = Q = R, or one of P, Q empty and the other = R ("...",
//     letters, or nothing); i, j, k three distinct letters, none of them in the prefix; the
//     implicit form ("ij,jk", lower-case letters) has the output its letters used once in
//     alphabetical order after "..." when an operand has one. A prefix with "..." is "..." alone.
//
// MatMul broadcasts its batch dims as Einsum broadcasts "...", and a batch letter names equal
// dims in both. Both sum the same products over j; the order of the additions is the kernel's, as
// it is within either op, so the rewrite is an -O2 licence (float reassociation). An Einsum that
// would need a Transpose first (i j, k j) stays: one node is no worse than two.
#include <algorithm>
#include <cctype>
#include <map>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

using rewrite::PatternContext;

/// An operand's subscripts: "..." is the token '.', letters themselves.
using Term = std::string;

/// Splits "a b,...c->x" (spaces dropped) into operand terms and the output term; the output is
/// the implicit one when there is no "->". Nullopt when malformed.
std::optional<std::pair<std::vector<Term>, Term>> parseEquation(std::string eq) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  auto arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<Term> terms;
  auto tokenize = [](const std::string& s) -> std::optional<Term> {
    Term t;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.compare(i, 3, "...") == 0) {
        t.push_back('.');
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(s[i])) != 0) {
        t.push_back(s[i]);
      } else {
        return std::nullopt;
      }
    }
    return t;
  };
  size_t begin = 0;
  while (true) {
    size_t comma = lhs.find(',', begin);
    auto t = tokenize(lhs.substr(begin, comma == std::string::npos ? comma : comma - begin));
    if (!t) return std::nullopt;
    terms.push_back(*t);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (arrow != std::string::npos) {
    auto out = tokenize(eq.substr(arrow + 2));
    if (!out) return std::nullopt;
    return std::make_pair(terms, *out);
  }
  // Runtimes order upper- against lower-case letters differently: take lower-case only.
  std::map<char, int> count;
  bool ellipsis = false;
  for (const Term& t : terms) {
    for (char c : t) {
      if (c == '.') {
        ellipsis = true;
      } else if (std::islower(static_cast<unsigned char>(c)) == 0) {
        return std::nullopt;
      } else {
        ++count[c];
      }
    }
  }
  Term out = ellipsis ? "." : "";
  for (const auto& [c, n] : count) {
    if (n == 1) out.push_back(c);
  }
  return std::make_pair(terms, out);
}

/// True when a, b -> out is P i j, Q j k -> R i k as the file's rule says.
bool isMatMul(const Term& a, const Term& b, const Term& out) {
  if (a.size() < 2 || b.size() < 2 || out.size() < 2) return false;
  Term p = a.substr(0, a.size() - 2), q = b.substr(0, b.size() - 2);
  Term r = out.substr(0, out.size() - 2);
  char i = a[a.size() - 2], j = a.back(), k = b.back();
  if (b[b.size() - 2] != j || out[out.size() - 2] != i || out.back() != k) return false;
  if (i == j || j == k || i == k || i == '.' || j == '.' || k == '.') return false;
  bool prefixes = (p == q && q == r) || (p.empty() && q == r) || (q.empty() && p == r);
  // MatMul aligns batch dims from the right: "..." beside batch letters could pair a letter's
  // dim with one of another operand's "..." dims.
  bool mixed = r.size() > 1 && r.find('.') != Term::npos;
  if (!prefixes || mixed) return false;
  // Every letter once per operand (a repeated one takes a diagonal) and i, j, k outside P.
  for (const Term& t : {a, b, out}) {
    for (char c : t) {
      if (std::count(t.begin(), t.end(), c) != 1) return false;
    }
  }
  return true;
}

bool matMulType(ir::DataType t) {
  using D = ir::DataType;
  return t == D::kFloat || t == D::kDouble || t == D::kFloat16 || t == D::kBfloat16 ||
         t == D::kInt32 || t == D::kInt64 || t == D::kUint32 || t == D::kUint64;
}

class EinsumMatMulPattern final : public rewrite::Pattern {
 public:
  EinsumMatMulPattern() : Pattern("einsum-to-matmul", "Einsum", "", 1, 12) {}

  bool matchAndRewrite(ir::Node* node, PatternContext& ctx) const override {
    if (node->numInputs() != 2 || node->input(0) == nullptr || node->input(1) == nullptr) {
      return ctx.fail("not two operands");
    }
    const ir::Attribute* eq = node->findAttribute("equation");
    if (eq == nullptr || eq->kind != ir::Attribute::Kind::kString) {
      return ctx.fail("no equation");
    }
    auto parsed = parseEquation(eq->s);
    if (!parsed || parsed->first.size() != 2) return ctx.fail("equation malformed");
    const auto& [terms, out] = *parsed;
    if (!isMatMul(terms[0], terms[1], out)) return ctx.fail("'{}' is not a matrix product", eq->s);
    auto type = pass::elemTypeOf(node->input(0));
    if (!type || !matMulType(*type)) return ctx.fail("element type unknown or not MatMul's");
    // MatMul's bfloat16 arrives at opset 13.
    if (*type == ir::DataType::kBfloat16 && ctx.opset() < 13) return ctx.fail("bfloat16");
    ctx.rewriter().setOpType(node, "MatMul", "");
    ctx.rewriter().removeAttribute(node, "equation");
    return true;
  }
};

class EinsumToMatMulPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "einsum-to-matmul"; }
  std::string summary() const override { return "Turn Einsums that are a MatMul into MatMul"; }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<EinsumMatMulPattern>());
    return list;
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createEinsumToMatMulPass() {
  return std::make_unique<EinsumToMatMulPass>();
}

}  // namespace onnxopt::passes
