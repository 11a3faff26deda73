#include "onnxopt/pass/pattern_match.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "onnxopt/pass/matchers.h"

namespace onnxopt::pass::match {

struct Matcher::Impl {
  enum class Kind { kAny, kAnyOrAbsent, kBind, kScalar, kSingleUse, kOp, kOneOf, kReason };
  Kind kind = Kind::kAny;
  std::string text{};      ///< the op type, the bound name, or the orFail reason
  std::string expected{};  ///< what a failed check of this matcher says
  std::vector<Matcher> children{};
  bool commutative = false;
  bool any_value = true;  ///< scalar(): any number
  double value = 0.0;
  double tolerance = 0.0;
};

namespace {

using Impl = Matcher::Impl;
using Kind = Impl::Kind;

Matcher make(Impl impl) {
  return Matcher(std::make_shared<const Impl>(std::move(impl)));
}

const std::string kAbsent = "an operand is absent";
const std::string kNotScalar = "not a one-element constant";
const std::string kRankGrowing = "a one-element constant of higher rank than the other operand";
const std::string kOtherUsers = "a matched value has other users";
const std::string kNoMatch = "no match";
const std::string kArity = "an op has another number of inputs";

bool near(double got, double want, double tolerance) {
  if (tolerance == 0.0) return got == want;
  return std::fabs(got - want) <= (want == 0.0 ? tolerance : tolerance * std::fabs(want));
}

/// The relative error of rounding a (normal) number to `t`: half its unit in the last place,
/// 2^-11 for float16 and 2^-8 for bfloat16 (a little more, for the doubles compared); 0 for the
/// wider types, whose rounding every tolerance a pattern asks for already covers.
double roundingOf(DataType t) {
  switch (t) {
    case DataType::kFloat16:
      return 1.01 / 2048;
    case DataType::kBfloat16:
      return 1.01 / 256;
    default:
      return 0.0;
  }
}

}  // namespace

Matcher any() {
  return make({.kind = Kind::kAny});
}

Matcher anyOrAbsent() {
  return make({.kind = Kind::kAnyOrAbsent});
}

Matcher bind(std::string name) {
  Impl impl{.kind = Kind::kBind, .expected = fmt::format("not the value bound to {}", name)};
  impl.text = std::move(name);
  return make(std::move(impl));
}

Matcher bind(std::string name, Matcher inner) {
  Impl impl{.kind = Kind::kBind, .expected = fmt::format("not the value bound to {}", name)};
  impl.text = std::move(name);
  impl.children.push_back(std::move(inner));
  return make(std::move(impl));
}

Matcher scalar() {
  return make({.kind = Kind::kScalar, .expected = kNotScalar});
}

Matcher scalar(double value, double tolerance) {
  return make({.kind = Kind::kScalar,
               .expected = fmt::format("not the scalar {}", value),
               .any_value = false,
               .value = value,
               .tolerance = tolerance});
}

Matcher singleUse(Matcher inner) {
  return make({.kind = Kind::kSingleUse, .children = {std::move(inner)}});
}

Matcher oneOf(std::initializer_list<Matcher> alternatives) {
  return make({.kind = Kind::kOneOf, .children = alternatives});
}

Matcher opOf(std::string op_type, std::vector<Matcher> operands) {
  Impl impl{.kind = Kind::kOp, .expected = fmt::format("not a {}", op_type)};
  impl.text = std::move(op_type);
  impl.children = std::move(operands);
  return make(std::move(impl));
}

Matcher commutative(std::string op_type, Matcher a, Matcher b) {
  Impl impl{.kind = Kind::kOp, .expected = fmt::format("not a {}", op_type), .commutative = true};
  impl.text = std::move(op_type);
  impl.children = {std::move(a), std::move(b)};
  return make(std::move(impl));
}

Matcher Matcher::orFail(std::string reason) const {
  return make({.kind = Kind::kReason, .text = std::move(reason), .children = {*this}});
}

Match Matcher::match(ir::Value* value) const {
  Match m;
  m.root_ = impl_;
  m.ok_ = matchInto(value, m);
  if (m.ok_) std::reverse(m.nodes_.begin(), m.nodes_.end());  // recorded producers first
  return m;
}

Match Matcher::match(ir::Node* root) const {
  return match(root != nullptr && root->numOutputs() > 0 ? root->output(0) : nullptr);
}

/// The producer of `value` is the op, and its inputs match the operands (either way round when
/// commutative). Its node is recorded after those of its operands.
bool Matcher::matchOp(ir::Value* value, Match& m) const {
  const Impl& p = *impl_;
  ir::Node* node = value != nullptr ? value->producer() : nullptr;
  if (node == nullptr || node->opType() != p.text || !node->domain().empty())
    return m.fail(&p.expected);
  const size_t have = node->numInputs();
  bool arity = have == p.children.size() ||
               (have < p.children.size() &&
                std::all_of(p.children.begin() + static_cast<ptrdiff_t>(have), p.children.end(),
                            [](const Matcher& c) { return c.impl_->kind == Kind::kAnyOrAbsent; }));
  if (!arity) return m.fail(&kArity);
  m.pass();
  auto operands = [&](bool swapped) {
    for (size_t i = 0; i < p.children.size(); ++i) {
      m.user_ = node;
      m.operand_ = swapped ? 1 - i : i;
      if (!p.children[i].matchInto(node->input(m.operand_), m)) return false;
    }
    return true;
  };
  Match::Mark before = m.mark();
  bool ok = operands(false);
  if (!ok && p.commutative) {
    m.restore(before);
    ok = operands(true);
  }
  if (!ok) return false;
  if (std::find(m.nodes_.begin(), m.nodes_.end(), node) == m.nodes_.end()) {
    m.nodes_.push_back(node);  // after its operands: reversed, users come first
  }
  return true;
}

bool Matcher::matchInto(ir::Value* value, Match& m) const {
  const Impl& p = *impl_;
  switch (p.kind) {
    case Kind::kAny:
      return value != nullptr ? m.pass() : m.fail(&kAbsent);
    case Kind::kAnyOrAbsent:
      return m.pass();
    case Kind::kBind: {
      if (value == nullptr) return m.fail(&kAbsent);
      auto found = std::find_if(m.bindings_.begin(), m.bindings_.end(),
                                [&](const auto& b) { return *b.first == p.text; });
      if (found != m.bindings_.end() && found->second != value) return m.fail(&p.expected);
      if (found == m.bindings_.end()) m.bindings_.emplace_back(&p.text, value);
      m.pass();
      return p.children.empty() || p.children[0].matchInto(value, m);
    }
    case Kind::kScalar: {
      auto t = constantTensor(value);
      auto c = t && t->numElements().value_or(0) == 1 ? elementAsDouble(*t, 0) : std::nullopt;
      if (!c) return m.fail(&kNotScalar);
      if (m.user_ != nullptr && m.user_->numInputs() == 2) {
        auto rank = static_cast<int64_t>(t->dims().size());
        auto other = rankOf(m.user_->input(1 - m.operand_));
        if (rank > 0 && other && rank > *other) return m.fail(&kRankGrowing, /*specific=*/true);
      }
      // A 16-bit float constant holds the value rounded to its type: sqrt(2) in float16 is
      // 1.4140625, 1.1e-4 away, and a pattern's tolerance for float constants would refuse it.
      double tolerance = p.tolerance > 0.0 ? std::max(p.tolerance, roundingOf(t->dtype())) : 0.0;
      if (!p.any_value && !near(*c, p.value, tolerance)) return m.fail(&p.expected);
      return m.pass();
    }
    case Kind::kSingleUse:
      if (value == nullptr || !hasSingleUse(value)) return m.fail(&kOtherUsers);
      m.pass();
      return p.children[0].matchInto(value, m);
    case Kind::kOp:
      return matchOp(value, m);
    case Kind::kOneOf: {
      Match::Mark before = m.mark();
      for (const Matcher& alternative : p.children) {
        if (alternative.matchInto(value, m)) return true;
        m.restore(before);
      }
      return false;
    }
    case Kind::kReason: {
      int best = m.best_;
      if (p.children[0].matchInto(value, m)) return true;
      if (m.best_ > best && !m.labeled_) {
        m.reason_ = &p.text;
        m.labeled_ = true;
      }
      return false;
    }
  }
  return false;
}

ir::Value* Match::operator[](std::string_view name) const {
  for (const auto& [bound, value] : bindings_) {
    if (*bound == name) return value;
  }
  return nullptr;
}

ir::Node* Match::node(std::string_view name) const {
  ir::Value* v = (*this)[name];
  return v != nullptr ? v->producer() : nullptr;
}

std::optional<double> Match::scalar(std::string_view name) const {
  ir::Value* v = (*this)[name];
  return v != nullptr ? scalarConstant(v) : std::nullopt;
}

const std::string& Match::why() const {
  static const std::string kNone;
  if (ok_) return kNone;
  return reason_ != nullptr ? *reason_ : kNoMatch;
}

void Match::restore(const Mark& m) {
  bindings_.resize(m.bindings);
  nodes_.resize(m.nodes);
  progress_ = m.progress;
}

bool Match::fail(const std::string* reason, bool specific) {
  if (progress_ > best_) {
    best_ = progress_;
    reason_ = reason;
    labeled_ = specific;
  }
  return false;
}

}  // namespace onnxopt::pass::match
