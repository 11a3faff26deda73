// The matcher vocabulary (pass/pattern_match.h): ops with operands, bound names, scalars within a
// tolerance and the rank rule, single use, alternatives, and the reasons a failure gives.
#include "onnxopt/pass/pattern_match.h"

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"

namespace onnxopt::pass::match {
namespace {

constexpr char kModel[] = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] x, float[2,3] w) => (float[2,3] y, float[2,3] z, float[2,3] u, float[1,2,3] r,
                                   float[2,3] n, float[2,3] b, float[2,3] q, float[2,3] p,
                                   float[1,3] s1, float[1,1] s2, float[2,3] q2, float[2,3] m2)
  <float half = {0.5}, float[1,1,1] half3 = {0.5}, float two = {2.0}, int64[1] axes = {0}> {
  sq = Sqrt(x)
  y = Mul(sq, half)
  sq2 = Sqrt(x)
  z = Mul(half, sq2)
  a = Add(x, w)
  u = Mul(a, x)
  r = Mul(x, half3)
  e = Exp(x)
  n = Neg(e)
  b = Abs(e)
  pw = Pow(w, two)
  q = Mul(pw, x)
  p = Mul(x, x)
  s1 = ReduceSum(x, axes)
  s2 = ReduceSum(x)
  pw2 = Pow(w, two)
  q2 = Mul(x, pw2)
  e2 = Exp(w)
  m2 = Mul(e2, e2)
}
)";

class PatternMatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto parsed = io::parseModelText(kModel);
    ASSERT_TRUE(parsed.isOk()) << parsed.status().message();
    model_ = std::move(parsed).value();
  }
  /// The node producing the value named `name`.
  ir::Node* node(const std::string& name) const {
    for (ir::Node* n : *model_->graph) {
      for (ir::Value* o : n->outputs()) {
        if (o != nullptr && o->name() == name) return n;
      }
    }
    ADD_FAILURE() << "no node produces " << name;
    return nullptr;
  }
  ir::Value* input(size_t i) const { return model_->graph->inputs()[i]; }

  std::unique_ptr<ir::Model> model_;
};

TEST_F(PatternMatchTest, OpWithOperandsBindsValuesAndListsNodesUsersFirst) {
  const Matcher m = op("Mul", op("Sqrt", bind("x")), bind("c", scalar(0.5)));
  Match r = m.match(node("y"));
  ASSERT_TRUE(r) << r.why();
  EXPECT_EQ(r["x"], input(0));
  EXPECT_EQ(r.scalar("c"), 0.5);
  EXPECT_EQ(r.node("x"), nullptr);  // a graph input has no producer
  EXPECT_EQ(r["unbound"], nullptr);
  EXPECT_EQ(r.nodes(), (std::vector<ir::Node*>{node("y"), node("sq")}));
  EXPECT_EQ(r.why(), "");
}

TEST_F(PatternMatchTest, WrongOpOrOperandOrderFails) {
  EXPECT_FALSE(op("Add", any(), any()).match(node("y")));
  const Matcher m = op("Mul", op("Sqrt", bind("x")), scalar(0.5));
  Match r = m.match(node("z"));  // Mul(half, Sqrt(x)): the operands are the other way round
  EXPECT_FALSE(r);
  EXPECT_EQ(r.why(), "not a Sqrt");
}

TEST_F(PatternMatchTest, CommutativeTakesEitherOrder) {
  const Matcher m = commutative("Mul", op("Sqrt", bind("x")), scalar(0.5));
  Match z = m.match(node("z"));
  ASSERT_TRUE(z) << z.why();
  EXPECT_EQ(z["x"], input(0));
  EXPECT_EQ(z.nodes(), (std::vector<ir::Node*>{node("z"), node("sq2")}));
  EXPECT_TRUE(m.match(node("y")));
}

TEST_F(PatternMatchTest, ANameBoundTwiceMustBindTheSameValue) {
  // u = Mul(Add(x, w), x)
  Match same = op("Mul", op("Add", bind("a"), bind("b")), bind("a")).match(node("u"));
  ASSERT_TRUE(same) << same.why();
  EXPECT_EQ(same["a"], input(0));
  EXPECT_EQ(same["b"], input(1));
  Match differ = op("Mul", op("Add", bind("a"), bind("a")), any()).match(node("u"));
  EXPECT_FALSE(differ);
  EXPECT_EQ(differ.why(), "not the value bound to a");
  // p = Mul(x, x) binds one name twice; q = Mul(Pow(w, 2), x) does not square x.
  const Matcher square = oneOf({op("Mul", bind("t"), bind("t")), op("Pow", bind("t"), scalar(2))});
  EXPECT_TRUE(square.match(node("p")));
  EXPECT_FALSE(op("Mul", square, bind("t")).match(node("q")));
}

TEST_F(PatternMatchTest, SingleUseRejectsAValueWithOtherUsers) {
  // e = Exp(x) is read by n = Neg(e) and b = Abs(e).
  EXPECT_TRUE(op("Neg", op("Exp", bind("x"))).match(node("n")));
  Match r = op("Neg", singleUse(op("Exp", bind("x")))).match(node("n"));
  EXPECT_FALSE(r);
  EXPECT_EQ(r.why(), "a matched value has other users");
  // A graph output is not single-use either (y is one).
  EXPECT_TRUE(singleUse(op("Sqrt", any())).match(node("sq")));
  EXPECT_FALSE(singleUse(op("Mul", any(), any())).match(node("y")));
}

TEST_F(PatternMatchTest, ScalarWithinTolerance) {
  EXPECT_TRUE(op("Mul", any(), scalar(0.5)).match(node("y")));
  EXPECT_TRUE(op("Mul", any(), scalar(0.5001, 1e-3)).match(node("y")));
  EXPECT_FALSE(op("Mul", any(), scalar(0.5001)).match(node("y")));  // exact by default
  Match far = op("Mul", any(), scalar(0.6, 1e-3)).match(node("y"));
  EXPECT_FALSE(far);
  EXPECT_EQ(far.why(), "not the scalar 0.6");
  EXPECT_FALSE(op("Mul", any(), scalar()).match(node("u")));  // x is not constant
}

TEST_F(PatternMatchTest, AScalarOfHigherRankThanTheOtherOperandIsNone) {
  // r = Mul(x: [2,3], half3: [1,1,1]) has rank 3: half3 broadcasts x up.
  Match r = op("Mul", bind("x"), scalar(0.5)).match(node("r"));
  EXPECT_FALSE(r);
  EXPECT_EQ(r.why(), "a one-element constant of higher rank than the other operand");
  // That reason says more than any around it.
  Match named = op("Mul", bind("x"), scalar(0.5)).orFail("not x * 0.5").match(node("r"));
  EXPECT_EQ(named.why(), "a one-element constant of higher rank than the other operand");
  // As the root, with no operand beside it, it is one.
  EXPECT_TRUE(scalar(0.5).match(node("r")->input(1)));
}

TEST_F(PatternMatchTest, AnyOrAbsentTakesOmittedTrailingInputs) {
  const Matcher with_axes = op("ReduceSum", bind("x"), anyOrAbsent());
  EXPECT_TRUE(with_axes.match(node("s1")));
  EXPECT_TRUE(with_axes.match(node("s2")));
  EXPECT_FALSE(op("ReduceSum", bind("x")).match(node("s1")));
  EXPECT_TRUE(op("ReduceSum", bind("x")).match(node("s2")));
  EXPECT_FALSE(op("ReduceSum", bind("x"), any()).match(node("s2")));
}

TEST_F(PatternMatchTest, TheFurthestFailureGivesItsInnermostReason) {
  const Matcher square = oneOf({op("Pow", bind("t"), scalar(2)).orFail("Pow is not t^2"),
                                op("Mul", bind("t"), bind("t")).orFail("no t*t")});
  // q2 = Mul(x, Pow(w, 2)) with t = x: the Pow alternative gets further (a Pow, but of w) than
  // the Mul one (no Mul at all), so its reason is reported, not the enclosing one.
  Match pow = op("Mul", bind("t"), square).orFail("no square").match(node("q2"));
  EXPECT_FALSE(pow);
  EXPECT_EQ(pow.why(), "Pow is not t^2");
  // q = Mul(Pow(w, 2), x): the square matches (t = w); then x is not t. That failure lies outside
  // both alternatives, so the enclosing reason names it.
  Match after = commutative("Mul", square, bind("t")).orFail("no square").match(node("q"));
  EXPECT_FALSE(after);
  EXPECT_EQ(after.why(), "no square");
  // Without any reason, the failed check says what it wanted.
  EXPECT_EQ(op("Neg", any()).match(node("q")).why(), "not a Neg");
}

TEST_F(PatternMatchTest, ANodeReachedTwiceIsListedOnce) {
  // m2 = Mul(e2, e2), e2 = Exp(w): both operands match through the same Exp.
  Match r = op("Mul", op("Exp", bind("w")), op("Exp", bind("w"))).match(node("m2"));
  ASSERT_TRUE(r) << r.why();
  EXPECT_EQ(r.nodes(), (std::vector<ir::Node*>{node("m2"), node("e2")}));
  EXPECT_EQ(r["w"], input(1));
}

}  // namespace
}  // namespace onnxopt::pass::match
