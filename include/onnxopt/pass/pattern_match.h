// A small vocabulary of composable matchers, so that a fusion pattern reads like its rule.
//
//   // n = Div(x, Sqrt(Add(ReduceMean(Mul(x, x)), eps)))
//   Matcher square = singleUse(op("Mul", bind("x"), bind("x")));
//   Matcher mean = singleUse(op("ReduceMean", square, anyOrAbsent()));
//   Matcher sd = singleUse(op("Sqrt", singleUse(commutative("Add", mean, bind("eps", scalar())))));
//   const Matcher rms = op("Div", bind("x"), sd);
//   Match m = rms.match(node);
//   if (!m) return ctx.fail("{}", m.why());
//   ir::Value* x = m["x"];               // the bound values
//   double eps = *m.scalar("eps");
//   rewriter.eraseDeadNodes(m.nodes());  // the matched chain, users first
//
// A matcher matches a value: op() its producer, bind() the value itself. Matchers are built once
// (a pattern holds them as members) and shared cheaply; matching allocates only the bindings and
// the matched nodes. Every check is of the default domain, as the fusions are.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxopt/ir/graph.h"

namespace onnxopt::pass::match {

class Match;

/// A pattern over one value; see the functions below for the kinds.
class Matcher {
 public:
  /// Matches `value` (nullptr never matches).
  Match match(ir::Value* value) const;
  /// Matches the first output of `root` (the node a pattern is anchored on).
  Match match(ir::Node* root) const;

  /// The same matcher, giving `reason` as why() when the match fails inside it: of the failures,
  /// the one that passed the most checks is reported, with the innermost reason around it (the
  /// rank rule of scalar() keeps its own, which says more).
  Matcher orFail(std::string reason) const;

  struct Impl;
  explicit Matcher(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  friend class Match;
  bool matchInto(ir::Value* value, Match& m) const;
  bool matchOp(ir::Value* value, Match& m) const;
  std::shared_ptr<const Impl> impl_;
};

/// Any value that is present (an absent optional input does not match).
Matcher any();
/// An optional input: any value, or none (empty or omitted). Omitted trailing inputs of op() match
/// it, so `op("ReduceMean", x, anyOrAbsent())` takes ReduceMean with or without an axes input.
Matcher anyOrAbsent();
/// Any value, bound to `name`. A second occurrence of the name must be the same value.
Matcher bind(std::string name);
/// A value that `inner` matches, bound to `name` (same rule for a second occurrence).
Matcher bind(std::string name, Matcher inner);
/// A one-element numeric constant. As an operand of a binary op, one of higher rank than the other
/// operand (when its rank is known) is no scalar: [1,1,1] * x broadcasts a rank-2 x up to rank 3.
Matcher scalar();
/// A scalar (as above) within `tolerance` of `value`, relative to it (absolute when `value` is 0);
/// 0 asks for the exact value. A float16 or bfloat16 constant is also within a nonzero tolerance
/// when it is within its type's rounding of `value` (2^-11 / 2^-8 relative): it is `value` as
/// closely as that type holds it.
Matcher scalar(double value, double tolerance = 0.0);
/// `inner`, on a value read by exactly one use and not a graph output.
Matcher singleUse(Matcher inner);
/// The first of `alternatives` that matches.
Matcher oneOf(std::initializer_list<Matcher> alternatives);

/// The output of an `op_type` node of the default domain whose inputs the operands match, in
/// order. The node has exactly as many inputs as operands, except that omitted trailing inputs
/// match anyOrAbsent().
Matcher opOf(std::string op_type, std::vector<Matcher> operands);
/// Like opOf for a binary op whose operands may come in either order (Add, Mul).
Matcher commutative(std::string op_type, Matcher a, Matcher b);

template <typename... Operands>
Matcher op(std::string op_type, Operands... operands) {
  return opOf(std::move(op_type), {std::move(operands)...});
}

/// The outcome of a match: the bound values and the matched nodes, or why it failed.
class Match {
 public:
  explicit operator bool() const { return ok_; }

  /// The value bound to `name`; nullptr when nothing is (an untaken alternative).
  ir::Value* operator[](std::string_view name) const;
  /// The producer of the value bound to `name` (nullptr when none).
  ir::Node* node(std::string_view name) const;
  /// The number a scalar bound to `name` holds.
  std::optional<double> scalar(std::string_view name) const;
  /// Every node an op matched, once, users before producers (each after every node that reads
  /// it, when a bound name is first met where its producer is matched): once the root's uses are
  /// replaced, eraseDeadNodes(nodes()) erases the chain.
  const std::vector<ir::Node*>& nodes() const { return nodes_; }
  /// Why the match failed ("" when it did not).
  const std::string& why() const;

 private:
  friend class Matcher;
  struct Mark {
    size_t bindings = 0;
    size_t nodes = 0;
    int progress = 0;
  };
  Mark mark() const { return {bindings_.size(), nodes_.size(), progress_}; }
  void restore(const Mark& m);
  /// Records a failed check, which is the reported one when it got further than any before; the
  /// reason of a `specific` one is kept over the orFail reasons around it.
  bool fail(const std::string* reason, bool specific = false);
  bool pass() {
    ++progress_;
    return true;
  }

  std::shared_ptr<const Matcher::Impl> root_;  ///< keeps the names and reasons alive
  std::vector<std::pair<const std::string*, ir::Value*>> bindings_;
  std::vector<ir::Node*> nodes_;
  bool ok_ = false;
  int progress_ = 0;  ///< checks passed on the current path
  int best_ = -1;     ///< progress_ at the furthest failure
  const std::string* reason_ = nullptr;
  bool labeled_ = false;  ///< the furthest failure's reason is final (orFail's, or specific)
  // The binary node whose operand is being matched, for scalar()'s rank rule.
  const ir::Node* user_ = nullptr;
  size_t operand_ = 0;
};

}  // namespace onnxopt::pass::match
